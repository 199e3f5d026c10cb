"""`RelayClient`: the synchronous client the sync engine uses to talk to a relay.

One instance per relay and device; safe to share between threads (httpcore pools
connections), so a long-poll can wait in one thread while another commits. Every failure is a
typed `RelayError` (see `errors.py`); a conflicting commit is not an error but a
`CommitResult` listing each conflict with the current head.
"""

from __future__ import annotations

import hashlib
import importlib
import json as jsonlib
import socket
import ssl
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

# isort: off
import companion.relayclient.lean  # noqa: F401  (first: httpcore without its unused extras)
import httpcore

# isort: on

from companion.logs import redact, register_secret
from companion.relay import replies
from companion.relay.blobframes import MEDIA_TYPE as FRAMES_TYPE
from companion.relay.blobframes import FrameError, FrameHeader, FrameParser, encode_frames
from companion.relayclient.errors import (
    AuthError,
    ConflictError,
    InsecureRelayUrl,
    InvalidRelayUrl,
    MissingBlobsError,
    NotFoundError,
    QuotaExceeded,
    RelayBusy,
    RelayError,
    RelayUnreachable,
)
from companion.relayclient.hosts import is_loopback_host
from companion.relayclient.proxy import ProxyChoice, ProxySettingError, proxy_for

__all__ = [
    "AuthError",
    "Changes",
    "ChangesPage",
    "CommitResult",
    "ConflictError",
    "DeviceInfo",
    "InsecureRelayUrl",
    "InvalidRelayUrl",
    "JoinResult",
    "KeyWrap",
    "Lease",
    "MissingBlobsError",
    "NotFoundError",
    "Record",
    "RecordResult",
    "RelayBusy",
    "RelayClient",
    "RelayError",
    "RelayUnreachable",
]


@dataclass(frozen=True)
class Record:
    """A record on the wire. `seq`, `device_id`, `committed_at` and the committing device's
    `device_kind` and `device_name` (as the relay recorded them at join) are set by the relay."""

    file_id: str
    rev: int
    parent_rev: int
    sealed: bytes
    blobs: tuple[str, ...] = ()
    seq: int | None = None
    device_id: str | None = None
    committed_at: float | None = None
    device_kind: str | None = None
    device_name: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {
            "file_id": self.file_id,
            "rev": self.rev,
            "parent_rev": self.parent_rev,
            "sealed": replies.b64encode(self.sealed),
            "blobs": list(self.blobs),
        }

    @classmethod
    def from_reply(cls, d: dict[str, Any]) -> Record:
        """From a `replies.RECORD` answer."""
        return cls(
            d["file_id"], d["rev"], d["parent_rev"], d["sealed"], tuple(d["blobs"]), d["seq"],
            d["device_id"], d["committed_at"], d["device_kind"], d["device_name"],
        )  # fmt: skip


@dataclass(frozen=True)
class RecordResult:
    file_id: str
    rev: int
    status: str  # committed | duplicate | conflict | aborted
    seq: int | None = None
    head: Record | None = None  # the current head, on conflict (None: the file does not exist)

    @property
    def ok(self) -> bool:
        return self.status in ("committed", "duplicate")


@dataclass(frozen=True)
class CommitResult:
    """All or nothing: `committed` is True when every record is stored (new or duplicate)."""

    committed: bool
    seq: int
    results: list[RecordResult]

    @property
    def ok(self) -> bool:
        return self.committed

    @property
    def conflicts(self) -> list[RecordResult]:
        return [r for r in self.results if r.status == "conflict"]


class JoinResult(NamedTuple):
    token: str
    device_id: str
    vault_id: str
    is_new_vault: bool
    kind: str = "agent"  # the invite's: the relay fixes it


class KeyWrap(NamedTuple):
    key: bytes
    sha256: str
    set_at: float
    device_id: str


class Changes(NamedTuple):
    records: list[Record]
    seq: int


class SeqMark(NamedTuple):
    """The record at one sequence number of the feed: its file, its revision and the SHA-256
    (hex) of its sealed bytes (`seq_mark`)."""

    file_id: str
    rev: int
    sha256: str


def seq_mark(rec: Record) -> SeqMark:
    return SeqMark(rec.file_id, rec.rev, _sha(rec.sealed))


class ChangesPage(NamedTuple):
    records: list[Record]
    seq: int
    vault_seq: int
    more: bool
    # the record the relay holds at `seq == since`; None when since is 0, when none is there
    # (retention pruned it) or from a relay that predates the field
    at_since: SeqMark | None = None


class Lease(NamedTuple):
    name: str
    holder: str
    expires: float
    acquired: bool


class DeviceInfo(NamedTuple):
    device_id: str
    name: str
    kind: str
    created: float
    revoked: float | None
    quota: dict[str, Any] | None = None  # an agent device's daily quota and usage


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


DEFAULT_RETRY_AFTER = 5.0
MAX_RETRY_AFTER = 3600.0


def _retry_after(value: str | None) -> float:
    """Retry-After in seconds (delta-seconds or an HTTP date), bounded to [1 s, 1 h]."""
    if not value:
        return DEFAULT_RETRY_AFTER
    try:
        seconds = float(value.strip())
    except ValueError:
        import email.utils  # an HTTP date: rare, and its parser costs a quiet sync ~5 ms

        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return DEFAULT_RETRY_AFTER
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return DEFAULT_RETRY_AFTER
    return min(MAX_RETRY_AFTER, max(1.0, seconds))


def check_relay_url(url: str, insecure_http: bool = False) -> None:
    """Refuse what is not an http(s) URL with a host and a valid port, and plain http:// to
    anything but this machine unless `insecure_http`."""
    parts = urlsplit(url.strip())
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or not port_ok:
        raise InvalidRelayUrl(
            f"{redact(url)!r} is not a relay URL: expected https://host[:port] "
            "(e.g. https://relay.example.org)"
        )
    plain = parts.scheme.lower() == "http"
    if plain and not insecure_http and not is_loopback_host(parts.hostname):
        raise InsecureRelayUrl(
            f"refusing plain http:// to {parts.hostname}: the device token would travel in "
            "clear; use https://, or pass --insecure-http if this network is trusted"
        )


def _proxy(choice: ProxyChoice) -> httpcore.Proxy:
    """The proxy for httpcore: credentials from the URL's user info go in `auth`, so the proxy
    gets them in a Proxy-Authorization header (basic) or the SOCKS5 handshake."""
    if choice.is_socks:
        try:
            importlib.import_module("socksio")  # httpcore's SOCKS support, an optional extra
        except ImportError:
            raise ProxySettingError(
                f"the relay is reached through the SOCKS proxy {choice.shown}, which needs the "
                "socksio package: pip install 'httpx[socks]' (or socksio)"
            ) from None
    parts = urlsplit(choice.url)
    auth = None
    if parts.username is not None or parts.password is not None:
        auth = (unquote(parts.username or ""), unquote(parts.password or ""))
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    return httpcore.Proxy(urlunsplit((parts.scheme, netloc, parts.path, "", "")), auth=auth)


class Reply:
    """An answer from the relay, read whole: status, reason, headers (names in lower case)
    and body."""

    __slots__ = ("content", "headers", "reason_phrase", "status_code")

    def __init__(
        self, status_code: int, reason_phrase: str, headers: dict[str, str], content: bytes
    ) -> None:
        self.status_code = status_code
        self.reason_phrase = reason_phrase
        self.headers = headers
        self.content = content

    def json(self) -> Any:
        return jsonlib.loads(self.content)


def _reply_head(resp: httpcore.Response) -> tuple[int, str, dict[str, str]]:
    reason = resp.extensions.get("reason_phrase", b"")
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in resp.headers}
    return resp.status, reason.decode("latin-1") if isinstance(reason, bytes) else "", headers


# What goes wrong on the way to the relay (not an answer from it): httpcore's timeouts first.
_TRANSPORT_ERRORS = (
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.ProxyError,
    httpcore.UnsupportedProtocol,
)


class RelayClient:
    """A device's connection to one relay.

    `verify` is True (what the operating system trusts, `SSL_CERT_FILE` / `SSL_CERT_DIR`
    included, and certifi's CAs), False (no verification: tests only), or a path to a CA
    bundle / self-signed certificate to trust (then only that). Plain `http://` is refused
    (`InsecureRelayUrl`) except to this machine (loopback) or with `insecure_http=True`: the
    bearer token would cross the network in clear.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        vault_id: str | None = None,
        *,
        timeout: float = 30.0,
        verify: bool | str = True,
        insecure_http: bool = False,
    ) -> None:
        check_relay_url(base_url, insecure_http)
        self.base_url = base_url.rstrip("/")
        self.vault_id = vault_id
        self._token: str | None = None
        self._limits: dict[str, float] | None = None
        tls: ssl.SSLContext | None = None  # None: httpcore's default, the system's and certifi's
        if not self.base_url.lower().startswith("https://"):
            pass  # no TLS on this connection: loading a CA bundle would cost 0.1-0.8 s
        elif isinstance(verify, str):
            tls = ssl.create_default_context(cafile=verify)
        elif not verify:
            tls = ssl.create_default_context()
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        self.proxy = proxy_for(self.base_url)  # the platform's proxy settings (`proxy.py`)
        self._pool = httpcore.ConnectionPool(
            ssl_context=tls,
            proxy=None if self.proxy is None else _proxy(self.proxy),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            retries=2,  # connection attempts only: a request is never sent twice
            # TCP_NODELAY: without it, the last piece of a body waits for a delayed ACK (~40 ms)
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        self._headers: dict[str, str] = {"User-Agent": "vault-companion", "Accept": "*/*"}
        self.timeout = timeout
        self.where = f"the relay at {self.base_url}" + (
            f" (through the proxy {self.proxy.shown})" if self.proxy else ""
        )  # how messages name it
        if token:
            self.set_token(token)

    # plumbing --------------------------------------------------------------------------------
    def set_token(self, token: str) -> None:
        register_secret(token)
        self._token = token
        self._headers["Authorization"] = f"Bearer {token}"

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> RelayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _vault_path(self, suffix: str) -> str:
        if not self.vault_id or not self._token:
            raise AuthError("this device has not joined a vault on the relay yet")
        return f"/v1/vaults/{self.vault_id}{suffix}"

    def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        wait: float = 0,
    ) -> tuple[str, list[tuple[str, str]], bytes | None, dict[str, Any]]:
        """What httpcore needs for one request: URL, headers, body and timeouts (a long-poll of
        `wait` seconds reads for that much longer)."""
        url = self.base_url + path + (f"?{urlencode(params)}" if params else "")
        hdrs = dict(self._headers)
        if json is not None:
            content = jsonlib.dumps(json, separators=(",", ":")).encode()
            hdrs["Content-Type"] = "application/json"
        if headers:
            hdrs.update(headers)
        t = self.timeout + wait
        timeouts = {"connect": min(self.timeout, 10.0), "read": t, "write": t, "pool": t}
        return url, list(hdrs.items()), content, {"timeout": timeouts}

    def _request(self, method: str, path: str, *, accept: tuple[int, ...] = (), **kw: Any) -> Reply:
        """Send; raise the matching RelayError for any status >= 400 not in `accept`."""
        url, headers, content, ext = self._send(method, path, **kw)
        try:
            resp = self._pool.request(method, url, headers=headers, content=content, extensions=ext)
        except httpcore.TimeoutException:
            raise RelayUnreachable(f"{self.where} did not answer in time") from None
        except _TRANSPORT_ERRORS as exc:
            raise RelayUnreachable(
                f"cannot reach {self.where}: {type(exc).__name__}"
                + (f" ({exc})" if str(exc) else "")
            ) from None
        reply = Reply(*_reply_head(resp), resp.content)
        if reply.status_code >= 400 and reply.status_code not in accept:
            self._raise(reply)
        return reply

    def _not_a_relay(self, resp: Reply) -> str:
        """One line for an answer no relay gives (a web server's HTML page): what came back,
        never the page itself."""
        kind = resp.headers.get("content-type", "").split(";")[0].strip() or "no content type"
        return (
            f"{self.base_url} answered {resp.status_code} {resp.reason_phrase} ({kind}): "
            "that is not a relay; give the relay's base URL (URL/v1/health must answer)"
        )

    def _raise(self, resp: Reply, **extra: Any) -> None:
        status = resp.status_code
        try:
            body = resp.json()
        except ValueError:
            body = None
        relay_body = isinstance(body, dict) and "error" in body
        code = str(body.get("error")) if relay_body else None  # type: ignore[union-attr]
        if status == 429 and code == "quota_exceeded":
            wait = _retry_after(resp.headers.get("retry-after"))
            message = str(body.get("message"))  # type: ignore[union-attr]
            raise QuotaExceeded(
                f"the relay at {self.base_url} holds this device's writes: {message}",
                retry_after=wait,
                status=status,
                code=code,
            )
        if status in (429, 503):
            wait = _retry_after(resp.headers.get("retry-after"))
            what = "asks this device to slow down" if status == 429 else "is unavailable"
            raise RelayBusy(
                f"the relay at {self.base_url} {what} ({status}); retrying in {wait:.0f} s",
                retry_after=wait,
                status=status,
                code=code,
            )
        if status in (502, 504):
            raise RelayUnreachable(
                f"the relay at {self.base_url} is unavailable ({status})", status=status
            )
        if not relay_body:
            raise RelayError(self._not_a_relay(resp), status=status, code=None)
        assert isinstance(body, dict)
        message = str(body.get("message"))
        text = f"relay refused the request ({status} {code}): {message}"
        if status in (401, 403, 410):
            raise AuthError(text, status=status, code=code)
        if status == 404:
            raise NotFoundError(text, status=status, code=code)
        if status == 409:
            raise ConflictError(text, status=status, code=code)
        if code == "missing_blobs":
            raise MissingBlobsError(text, list(body.get("missing", [])), status=status, code=code)
        raise RelayError(text, status=status, code=code)

    def _parse(self, shape: replies.Shape, resp: Reply) -> dict[str, Any]:
        try:
            return replies.read_reply(shape, resp.content)
        except replies.ReplyError:
            kind = resp.headers.get("content-type", "").split(";")[0].strip()
            if kind != "application/json":  # a web page, a captive portal: not a relay
                raise RelayError(self._not_a_relay(resp)) from None
            raise RelayError(
                f"the relay at {self.base_url} sent an answer this client cannot read"
            ) from None

    def limits(self) -> dict[str, float]:
        if self._limits is None:
            self._limits = self.health()["limits"]
        return self._limits

    # relay and devices -----------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return self._parse(replies.HEALTH, self._request("GET", "/v1/health"))

    def join(self, invite: str, device_name: str, kind: str | None = None) -> JoinResult:
        """Redeem a one-time invite; this client then uses the new device's token.

        The invite fixes the device's kind (returned); `kind`, when given, must match it, else
        `ConflictError` (code `kind_mismatch`) and the invite stays unused."""
        body: dict[str, Any] = {"invite": invite, "device_name": device_name}
        if kind is not None:
            body["kind"] = kind
        resp = self._request("POST", "/v1/join", json=body)
        out = self._parse(replies.JOIN, resp)
        self.set_token(out["token"])
        self.vault_id = out["vault_id"]
        return JoinResult(
            out["token"], out["device_id"], out["vault_id"], out["new_vault"], out["kind"]
        )

    def leave(self) -> None:
        """Revoke this device's own token (e.g. it joined with the wrong passphrase)."""
        self._request("POST", self._vault_path("/leave"))

    def devices(self) -> list[DeviceInfo]:
        out = self._parse(replies.DEVICES, self._request("GET", self._vault_path("/devices")))
        return [
            DeviceInfo(d["device_id"], d["name"], d["kind"], d["created"], d["revoked"], d["quota"])
            for d in out["devices"]
        ]

    # the wrapped vault key -------------------------------------------------------------------
    def get_key_blob(self) -> bytes | None:
        """The wrapped vault key, or None when no device has set it yet."""
        try:
            resp = self._request("GET", self._vault_path("/key"))
        except NotFoundError as exc:
            if exc.code == "key_not_set":
                return None
            raise
        key: bytes = self._parse(replies.KEY, resp)["key"]
        return key

    def put_key_blob(
        self, blob: bytes, expected_absent: bool = True, replaces: bytes | None = None
    ) -> None:
        """Set the wrapped key (`expected_absent`: only if no device set it first), or replace
        the blob `replaces` (a rewrap after a passphrase change). ConflictError otherwise."""
        if expected_absent:
            if_match = None
        elif replaces is None:
            raise ValueError("replacing the vault key needs the blob it replaces")
        else:
            if_match = _sha(replaces)
        self._request(
            "PUT",
            self._vault_path("/key"),
            json={"key": replies.b64encode(blob), "if_match": if_match},
        )

    def key_history(self) -> list[KeyWrap]:
        """Every wrapped key the vault has had, newest (the current one) first."""
        resp = self._request("GET", self._vault_path("/key/history"))
        wraps = self._parse(replies.KEY_HISTORY, resp)["wraps"]
        return [KeyWrap(w["key"], w["sha256"], w["set_at"], w["device_id"]) for w in wraps]

    # records ---------------------------------------------------------------------------------
    def commit(self, records: Sequence[Record]) -> CommitResult:
        """Commit records all-or-nothing; conflicts come back in the result, not as errors."""
        payload = {"records": [r.to_wire() for r in records]}
        resp = self._request("POST", self._vault_path("/commit"), json=payload, accept=(409,))
        if resp.status_code == 409:
            return self._commit_result(self._parse(replies.COMMIT_CONFLICT, resp))
        return self._commit_result(self._parse(replies.COMMIT, resp))

    def _commit_result(self, out: dict[str, Any]) -> CommitResult:
        return CommitResult(
            out["committed"],
            out["seq"],
            [
                RecordResult(
                    x["file_id"],
                    x["rev"],
                    x["status"],
                    x["seq"],
                    Record.from_reply(x["head"]) if x["head"] else None,
                )  # fmt: skip
                for x in out["results"]
            ],
        )

    def changes_page(self, since: int = 0, wait: float = 0, limit: int = 1000) -> ChangesPage:
        """One page of records committed after `since` (long-polls up to `wait` seconds)."""
        resp = self._request(
            "GET",
            self._vault_path("/changes"),
            params={"since": since, "wait": wait, "limit": limit},
            wait=wait,
        )
        out = self._parse(replies.CHANGES, resp)
        at = out["at_since"]
        return ChangesPage(
            [Record.from_reply(x) for x in out["records"]], out["seq"], out["vault_seq"],
            out["more"], SeqMark(at["file_id"], at["rev"], at["sha256"]) if at else None,
        )  # fmt: skip

    def changes(self, since: int = 0, wait: float = 0) -> Changes:
        """Every record committed after `since` (following pages), and the seq to pass next."""
        page = self.changes_page(since, wait)
        records = list(page.records)
        while page.more:
            page = self.changes_page(page.seq, 0)
            records.extend(page.records)
        return Changes(records, page.seq)

    def head(self, file_id: str) -> Record | None:
        try:
            resp = self._request("GET", self._vault_path(f"/files/{file_id}"))
        except NotFoundError:
            return None
        return Record.from_reply(self._parse(replies.RECORD, resp))

    def history(self, file_id: str, limit: int = 100) -> list[Record]:
        """Retained revisions of a file, newest first (empty when the file is unknown)."""
        try:
            resp = self._request(
                "GET", self._vault_path(f"/files/{file_id}/history"), params={"limit": limit}
            )
        except NotFoundError:
            return []
        return [Record.from_reply(x) for x in self._parse(replies.HISTORY, resp)["records"]]

    def record(self, file_id: str, rev: int) -> Record | None:
        try:
            resp = self._request("GET", self._vault_path(f"/files/{file_id}/revs/{rev}"))
        except NotFoundError:
            return None
        return Record.from_reply(self._parse(replies.RECORD, resp))

    # blobs -----------------------------------------------------------------------------------
    def has_blobs(self, blob_ids: Iterable[str]) -> list[str]:
        """The ids among `blob_ids` the relay does not have (upload those)."""
        ids = list(dict.fromkeys(blob_ids))
        step = int(self.limits()["max_blobs_per_batch"])
        missing: list[str] = []
        for i in range(0, len(ids), step):
            resp = self._request(
                "POST", self._vault_path("/blobs-missing"), json={"ids": ids[i : i + step]}
            )
            missing.extend(self._parse(replies.MISSING, resp)["missing"])
        return missing

    def put_blob(self, blob_id: str, data: bytes) -> bool:
        """Upload one blob; False when the relay already had it (deduplicated)."""
        resp = self._request(
            "PUT",
            self._vault_path(f"/blobs/{blob_id}"),
            content=data,
            headers={"Content-Type": "application/octet-stream", "X-Content-SHA256": _sha(data)},
        )
        created: bool = self._parse(replies.BLOB_PUT, resp)["created"]
        return created

    def get_blob(self, blob_id: str) -> bytes:
        """Download one blob, checked against the relay's checksum (NotFoundError if absent)."""
        resp = self._request("GET", self._vault_path(f"/blobs/{blob_id}"))
        data = resp.content
        if resp.headers.get("x-content-sha256") != _sha(data):
            raise RelayError(f"blob {blob_id} arrived damaged (checksum mismatch)")
        return data

    def put_blobs(self, blobs: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> list[str]:
        """Upload many blobs in streamed batches; returns the ids that were new to the relay."""
        items = list(blobs.items() if isinstance(blobs, Mapping) else blobs)
        lim = self.limits()
        max_bytes, max_n = int(lim["max_batch_bytes"]), int(lim["max_blobs_per_batch"])
        created: list[str] = []
        batch: list[tuple[str, str, bytes]] = []
        size = 0
        for blob_id, data in items:
            frame = len(data) + len(blob_id) + 41
            if batch and (size + frame > max_bytes or len(batch) >= max_n):
                created += self._put_batch(batch, size)
                batch, size = [], 0
            batch.append((blob_id, _sha(data), data))
            size += frame
        if batch:
            created += self._put_batch(batch, size)
        return created

    def _put_batch(self, batch: list[tuple[str, str, bytes]], size: int) -> list[str]:
        resp = self._request(
            "POST",
            self._vault_path("/blobs-upload"),
            content=encode_frames(batch),
            headers={"Content-Type": FRAMES_TYPE, "Content-Length": str(size)},
        )
        return [b["blob_id"] for b in self._parse(replies.BATCH_PUT, resp)["blobs"] if b["created"]]

    def get_blobs(self, blob_ids: Iterable[str]) -> dict[str, bytes]:
        """Download many blobs in streamed batches, each checked against its checksum."""
        return dict(self.iter_blobs(blob_ids))

    def iter_blobs(self, blob_ids: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """Like `get_blobs`, yielding each blob as it arrives (bounded memory)."""
        ids = list(dict.fromkeys(blob_ids))
        lim = self.limits()
        step = int(lim["max_blobs_per_batch"])
        for i in range(0, len(ids), step):
            yield from self._fetch_batch(ids[i : i + step], int(lim["max_blob_bytes"]))

    def _fetch_batch(self, ids: list[str], max_blob: int) -> Iterator[tuple[str, bytes]]:
        url, headers, content, ext = self._send(
            "POST", self._vault_path("/blobs-download"), json={"ids": ids}
        )
        try:
            with self._pool.stream(
                "POST", url, headers=headers, content=content, extensions=ext
            ) as resp:
                if resp.status >= 400:
                    self._raise(Reply(*_reply_head(resp), resp.read()))
                parser = FrameParser(max_blob)
                header: FrameHeader | None = None
                parts: list[bytes | memoryview] = []
                got = 0
                for chunk in resp.iter_stream():
                    for ev in parser.feed(chunk):
                        if isinstance(ev, FrameHeader):
                            header, parts = ev, []
                        elif ev is None:
                            assert header is not None
                            data = b"".join(parts)
                            if _sha(data) != header.sha256:
                                raise RelayError(f"blob {header.blob_id} arrived damaged")
                            got += 1
                            yield header.blob_id, data
                        else:
                            parts.append(ev)
                parser.close()
        except httpcore.TimeoutException:
            raise RelayUnreachable(f"{self.where} did not answer in time") from None
        except _TRANSPORT_ERRORS as exc:
            raise RelayUnreachable(
                f"lost {self.where} during a download: {type(exc).__name__}"
            ) from None
        except FrameError as exc:
            raise RelayError(f"the relay sent a malformed blob batch: {exc}") from None
        if got != len(ids):
            # The relay ends a batch early when a blob turns out damaged (it sets it aside and
            # forgets it, so the same id can be uploaded again) or was pruned meanwhile.
            gone = self.has_blobs(ids[got:])
            if gone:
                raise NotFoundError(
                    f"the relay no longer has {len(gone)} blob(s) ({', '.join(gone[:3])}"
                    f"{', ...' if len(gone) > 3 else ''}): damaged or removed on the relay "
                    "(its log says which)"
                )
            raise RelayError(f"the relay sent {got} of {len(ids)} blobs")

    # leases ----------------------------------------------------------------------------------
    def lease(self, name: str, ttl: float) -> Lease:
        """Take or renew the named lease; `acquired` is False when another device holds it."""
        resp = self._request("POST", self._vault_path(f"/leases/{name}"), json={"ttl": ttl})
        out = self._parse(replies.LEASE, resp)
        return Lease(out["name"], out["holder"], out["expires"], out["acquired"])

    def release_lease(self, name: str) -> bool:
        resp = self._request("DELETE", self._vault_path(f"/leases/{name}"))
        released: bool = self._parse(replies.RELEASE, resp)["released"]
        return released
