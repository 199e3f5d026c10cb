"""The encrypted view of the relay: plaintext paths and contents in, verified changes out.

`RemoteVault` wraps a `RelayClient` with the vault key. Everything it returns has been checked:
each record is opened under its vault id, file id and revision (so a record moved to another
file, another revision or another vault is refused), names the path its file id belongs to,
and does not take a file back to an older revision than this device has seen
(`check_not_rolled_back`). Every content blob is opened under its own id and the assembled
content must match the record's length and SHA-256. A failed check raises a `TamperDetected`
error with a clear message, before the caller writes anything.

Batching: blob existence checks, uploads and downloads go in batches, records are committed
many per request, and one HTTP client (keep-alive) is reused, so a sync of thousands of notes
takes a handful of round trips.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from companion import crypto  # its functions load `cryptography` when first called
from companion.crypto.errors import RolledBack, TamperDetected, TamperedRecord, UnsupportedVersion
from companion.logs import get_logger
from companion.relayclient.client import ChangesPage, Record, RelayClient, SeqMark, seq_mark
from companion.relayclient.errors import ConflictError, MissingBlobsError, RelayError

if TYPE_CHECKING:
    from companion.crypto import ChunkRef, FileMeta, VaultKey
    from companion.crypto.signing import DeviceKey, Trusted

log = get_logger("sync.remote")

UPLOAD_BATCH_BYTES = 16 * 1024 * 1024  # sealed bytes per upload request (bounds memory)
PULL_PAGE = 5000  # records per page of the change feed asked for (the relay may cap it lower)
DOWNLOAD_BATCH = 250  # blob ids per download batch
# batches in flight at once: enough to hide a round trip; more only contend for the
# interpreter lock (10,000 notes on loopback: 4 threads 3.8-3.9 s, 1 thread 3.4-3.5 s)
DOWNLOAD_THREADS = 2


HUMAN = "human"
AGENT = "agent"


class RecordTrust(Protocol):
    """Who may write as whom (`companion.sync.state.trust.DeviceTrust`, docs/trust.md)."""

    def trusted(self) -> Mapping[str, Trusted] | None: ...

    def signer(self) -> DeviceKey | None: ...


@dataclass(frozen=True)
class RemoteChange:
    """One verified revision of one file on the relay.

    `author_kind` is who wrote it. On a device anchored in the person's roster
    (docs/trust.md) it is `trusted_kind`: the roster's kind of the device whose valid signature
    the record carries, else agent; the relay's word does not count. Without an anchor
    (version 1), the relay (the kind its invite fixed for the token that committed it) and the
    sealed record must agree; `open` refuses a record on which they disagree. A relay that
    does not say (an older relay) leaves it unconfirmed, and an unconfirmed author counts as
    an agent: a person's precedence is never granted on a claim alone.
    """

    path: str
    file_id: str
    rev: int
    parent_rev: int
    meta: FileMeta
    sealed: bytes
    seq: int | None = None
    device_id: str | None = None
    committed_at: float | None = None
    relay_kind: str | None = None  # the relay's record of the committing device
    relay_name: str | None = None
    trusted_kind: str | None = None  # the roster's verdict (docs/trust.md §5); None: no anchor

    @property
    def deleted(self) -> bool:
        return self.meta.deleted

    @property
    def author_kind(self) -> str:
        if self.trusted_kind is not None:
            return self.trusted_kind
        return HUMAN if self.relay_kind == HUMAN and self.meta.device_kind == HUMAN else AGENT

    @property
    def author_name(self) -> str:
        return self.relay_name or self.meta.device_name or "another device"

    def to_payload(self) -> dict[str, object]:
        """JSON-able form for the engine's persistent inbox (still sealed: re-verified on use)."""
        return {
            "file_id": self.file_id,
            "rev": self.rev,
            "parent_rev": self.parent_rev,
            "sealed": base64.b64encode(self.sealed).decode("ascii"),
            "seq": self.seq,
            "device_id": self.device_id,
            "committed_at": self.committed_at,
            "device_kind": self.relay_kind,
            "device_name": self.relay_name,
        }


@dataclass(frozen=True)
class Refused:
    """A record this device could not open or verify: quarantined, never applied.

    Only the relay's side of it is known (the path is sealed inside); the engine maps the file
    id to a path when it knows the file.
    """

    file_id: str
    rev: int
    seq: int | None
    reason: str
    device_id: str | None = None
    device_name: str | None = None


@dataclass(frozen=True)
class Outgoing:
    """A record to commit: `meta` (chunks already uploaded) on top of `parent_rev`."""

    meta: FileMeta
    parent_rev: int

    @property
    def rev(self) -> int:
        return self.parent_rev + 1


@dataclass
class PushResult:
    """Per path: committed ``(rev, seq)``, or the verified head that beat us (None: no head),
    or a head that beat us and cannot be opened (quarantined); `deferred`: records not sent
    because another record of their group (the other half of a rename) lost its race."""

    committed: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    marks: dict[int, SeqMark] = field(default_factory=dict)  # seq -> our record there
    conflicts: dict[str, RemoteChange | None] = field(default_factory=dict)
    refused_heads: dict[str, Refused] = field(default_factory=dict)
    deferred: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Pulled:
    changes: list[RemoteChange]  # every verified record, in relay order
    seq: int  # pass as `since` next time
    vault_seq: int
    refused: list[Refused] = field(default_factory=list)  # the newest record of these files
    mark: SeqMark | None = None  # the record at `seq` when the feed listed one


class RelayRestored(Exception):
    """The relay holds another record at this device's cursor than the one this device saw
    there: it was restored from a backup and other devices committed past the cursor since
    (docs/protocol.md R3). Handled like `since_ahead`."""


class RelayLostRevision(RolledBack):
    """A commit was refused and the relay's head of the file is older than the revision this
    device committed on, or the relay has none: it lost that revision, restored from a backup
    the pull did not notice (docs/protocol.md R3). The round resyncs once, as for
    `since_ahead`; the same refusal after that stops it like any rollback."""


class RemoteVault:
    """A vault on a relay, seen through its key. Thread-safe as far as `RelayClient` is."""

    def __init__(
        self,
        client: RelayClient,
        key: VaultKey | Callable[[], VaultKey],
        vault_id: str,
        trust: RecordTrust | None = None,
    ) -> None:
        """`key` is the vault key, or a function that builds it (`DeviceState.key_loader`):
        then it is built on first use, so a round that seals and opens nothing does not load
        `cryptography`. `trust`: this device's roster and signing key (docs/trust.md); without
        it records are neither signed nor judged by a roster."""
        self.client = client
        self.vault_id = vault_id
        self.trust = trust
        self._key: VaultKey | None = None
        self._load_key: Callable[[], VaultKey] | None = None
        if callable(key):
            self._load_key = key
        else:
            self._key = key
        self._key_lock = threading.Lock()

    @property
    def key(self) -> VaultKey:
        if self._key is None:
            with self._key_lock:  # download threads may ask at once
                if self._key is None:
                    assert self._load_key is not None
                    self._key = self._load_key()
        return self._key

    # ------------------------------------------------------------------ ids and records

    def file_id(self, path: str) -> str:
        return crypto.file_id(self.key, path)

    def blob_id(self, chunk: bytes) -> str:
        return crypto.blob_id(self.key, chunk)

    def open(self, rec: Record) -> RemoteChange:
        """Verify one record from the relay (`TamperedRecord` when it is not what it claims).

        Besides the seal (vault, file id, revision, path), the sealed author must be the
        device the relay says committed it: same device id, name and kind. An agent device
        cannot pass for the person by what it seals, nor the relay by what it says. On a
        device with an anchor, the person's roster then decides the author (`trusted_kind`),
        and a record of a vouched device whose signature does not verify is refused.
        """
        if rec.rev != rec.parent_rev + 1:
            raise TamperedRecord(
                f"record rev {rec.rev} of file {rec.file_id[:12]} claims parent {rec.parent_rev}"
            )
        meta = crypto.open_record(self.key, self.vault_id, rec.file_id, rec.rev, rec.sealed)
        _check_author(rec, meta)
        trusted_kind = self._judge(rec, meta)
        return RemoteChange(
            path=meta.path,
            file_id=rec.file_id,
            rev=rec.rev,
            parent_rev=rec.parent_rev,
            meta=meta,
            sealed=rec.sealed,
            seq=rec.seq,
            device_id=rec.device_id,
            committed_at=rec.committed_at,
            relay_kind=rec.device_kind,
            relay_name=rec.device_name,
            trusted_kind=trusted_kind,
        )

    def _judge(self, rec: Record, meta: FileMeta) -> str | None:
        """The roster's author kind of an opened record (None: no anchor, version 1's rule)."""
        trusted = self.trust.trusted() if self.trust is not None else None
        if trusted is None:
            return None
        from companion.crypto.signing import TAMPERED, author_kind

        kind = author_kind(trusted, self.vault_id, rec.file_id, rec.rev, meta, rec.device_kind)
        if kind == TAMPERED:
            raise TamperedRecord(
                f"record rev {rec.rev} of file {rec.file_id[:12]} names device "
                f"{meta.device_id[:12]}, which the person vouched for, but its signature does "
                "not verify under that device's key: refused as tampering"
            )
        return kind

    def try_open(self, rec: Record) -> RemoteChange | Refused:
        """`open`, with a record that fails verification returned as `Refused`."""
        try:
            return self.open(rec)
        except (TamperedRecord, UnsupportedVersion) as exc:
            return Refused(rec.file_id, rec.rev, rec.seq, str(exc), rec.device_id, rec.device_name)

    def open_payload(self, payload: Mapping[str, object]) -> RemoteChange:
        """Re-verify an inbox entry written by `RemoteChange.to_payload`."""
        try:
            rec = Record(
                file_id=str(payload["file_id"]),
                rev=int(payload["rev"]),  # type: ignore[call-overload]
                parent_rev=int(payload["parent_rev"]),  # type: ignore[call-overload]
                sealed=base64.b64decode(str(payload["sealed"])),
                seq=payload.get("seq"),  # type: ignore[arg-type]
                device_id=payload.get("device_id"),  # type: ignore[arg-type]
                committed_at=payload.get("committed_at"),  # type: ignore[arg-type]
                device_kind=payload.get("device_kind"),  # type: ignore[arg-type]
                device_name=payload.get("device_name"),  # type: ignore[arg-type]
            )
        except (KeyError, ValueError, TypeError):
            raise TamperedRecord("a queued remote change is malformed") from None
        return self.open(rec)

    # ------------------------------------------------------------------ pulling

    def pull(
        self,
        since: int,
        seen_revs: Callable[[list[str]], Mapping[str, int]],
        *,
        wait: float = 0,
        held_revs: Callable[[list[str]], Mapping[str, int]] | None = None,
        mark: SeqMark | None = None,
    ) -> Pulled:
        """Every record committed after `since`, verified, with the rollback checks.

        `mark` is the record this device saw at `since`: a relay that names another one there
        (`at_since`) is `RelayRestored`. One that names none (since pruned, or an older relay
        without the field) is not checked.

        `seen_revs(paths)` maps each path to the highest revision of that file this device
        already holds (paths it holds nothing of may be left out). A legitimate relay lists a
        file's revisions in increasing order, and the newest one it lists is never older than
        what this device has seen; anything else is a replay.

        A record that cannot be opened or verified does not stop the pull: when it is the
        newest record of its file, the file is returned in `Pulled.refused` (and none of its
        older records are applied), so one bad record costs one file, not the vault.

        `held_revs(file_ids)` maps file ids to the revision this device holds: a record of
        exactly that revision (our own commits coming back, mostly), or an older one followed
        by a newer record of its file, is not opened at all; a newest record older than what
        this device holds is still opened, and refused as a replay.
        """
        last_rev: dict[str, int] = {}
        held: dict[str, int] = {}
        records: list[Record] = []
        early: dict[int, RemoteChange | Refused] = {}  # opened as its page came, by position
        page = None
        for n, page in enumerate(self._pages(since, wait)):
            at = page.at_since
            if n == 0 and mark is not None and at is not None and at != mark:
                raise RelayRestored(
                    f"the relay holds revision {at.rev} of file {at.file_id[:12]} at seq "
                    f"{since}, where this device saw revision {mark.rev} of file "
                    f"{mark.file_id[:12]}: it was restored from a backup"
                )
            if held_revs is not None:
                fresh = list({r.file_id for r in page.records if r.file_id not in last_rev})
                held.update(held_revs(fresh) if fresh else {})
            for r in page.records:
                prev_rev = last_rev.get(r.file_id)
                if prev_rev is not None and r.rev <= prev_rev:
                    raise RolledBack(
                        f"the relay listed revision {r.rev} of file {r.file_id[:12]} after "
                        f"revision {prev_rev}: refusing a replayed older revision"
                    )
                last_rev[r.file_id] = r.rev
                if r.rev > held.get(r.file_id, 0):  # needed whatever later pages hold
                    early[len(records)] = self.try_open(r)
                records.append(r)
        assert page is not None

        def needed_late(r: Record) -> bool:
            """Older than what this device holds: opened only as the newest of its file (to be
            refused as a replay); else it is our own commit coming back, or superseded."""
            have = held.get(r.file_id, 0)
            return held_revs is None or (r.rev < have and r.rev == last_rev[r.file_id])

        opened = [
            early[i] if i in early else self.try_open(r)
            for i, r in enumerate(records)
            if i in early or needed_late(r)
        ]
        newest: dict[str, RemoteChange | Refused] = {}
        for item in opened:
            newest[item.file_id] = item
        refused = [x for x in newest.values() if isinstance(x, Refused)]
        bad_files = {x.file_id for x in refused}
        changes = [x for x in opened if isinstance(x, RemoteChange) and x.file_id not in bad_files]
        live = [x for x in newest.values() if isinstance(x, RemoteChange)]
        seen = seen_revs([ch.path for ch in live])
        for ch in live:
            crypto.check_not_rolled_back(seen.get(ch.path), ch.rev, file_id=ch.file_id)
        # the mark only of a record that verified: one altered in transit (a lying relay) would
        # name bytes the relay does not hold, and the next pull would take it for a restore
        last = None
        if records and records[-1].seq == page.seq:
            r = records[-1]
            i = len(records) - 1
            was_opened = i in early or needed_late(r)
            if any(x.file_id == r.file_id and x.rev == r.rev for x in changes) or (
                not was_opened and isinstance(self.try_open(r), RemoteChange)
            ):
                last = seq_mark(r)
        return Pulled(changes, page.seq, page.vault_seq, refused, last)

    def _pages(self, since: int, wait: float) -> Iterator[ChangesPage]:
        """The change feed after `since`, page by page; the next page travels while the caller
        opens this one's records."""
        page = self.client.changes_page(since, wait, limit=PULL_PAGE)
        if not page.more:
            yield page
            return
        with ThreadPoolExecutor(1, thread_name_prefix="sync-pages") as ahead:
            while True:
                after = ahead.submit(self.client.changes_page, page.seq, 0, limit=PULL_PAGE)
                yield page
                page = after.result()
                if not page.more:
                    yield page
                    return

    def first_change_after(self, since: int, wait: float) -> int | None:
        """Long-poll: the seq of the first record committed after `since`, as soon as there is
        one (None when `wait` seconds pass first). Nothing is decrypted."""
        page = self.client.changes_page(since, wait, limit=1)
        if not page.records:
            return None
        first = page.records[0].seq
        if first is None or first <= since:  # a correct relay never does: no spinning on it
            raise RelayError(
                f"the relay answered a wait for changes after {since} with an older record "
                f"({first})"
            )
        return first

    def _open_for(self, fid: str, rec: Record) -> RemoteChange:
        if rec.file_id != fid:
            raise TamperedRecord(
                f"asked the relay for file {fid[:12]}, it sent a record of file {rec.file_id[:12]}"
            )
        return self.open(rec)

    def head(self, path: str) -> RemoteChange | None:
        fid = self.file_id(path)
        rec = self.client.head(fid)
        return None if rec is None else self._open_for(fid, rec)

    def record(self, path: str, rev: int) -> RemoteChange | None:
        fid = self.file_id(path)
        rec = self.client.record(fid, rev)
        if rec is None:
            return None
        if rec.rev != rev:
            raise TamperedRecord(f"asked the relay for revision {rev}, it sent {rec.rev}")
        return self._open_for(fid, rec)

    def history(self, path: str, limit: int = 1000) -> list[RemoteChange | Refused]:
        """Retained revisions of `path`, newest first, each verified; a revision that fails
        verification is listed as `Refused` (shown as such, never restorable)."""
        fid = self.file_id(path)
        out: list[RemoteChange | Refused] = []
        for r in self.client.history(fid, limit):
            if r.file_id != fid:
                raise TamperedRecord(
                    f"asked the relay for file {fid[:12]}, it sent a record of file "
                    f"{r.file_id[:12]}"
                )
            out.append(self.try_open(r))
        for a, b in zip(out, out[1:], strict=False):
            if b.rev >= a.rev:
                raise TamperedRecord("the relay's history of a file is out of order")
        return out

    # ------------------------------------------------------------------ content

    def fetch(
        self, metas: Sequence[FileMeta], *, streams: dict[str, bytes] | None = None
    ) -> dict[str, bytes]:
        """Contents of live files (by SHA-256), every blob and every file verified. `streams`,
        when given, receives blob id -> the zlib stream each compressed blob's frame held
        (`open_blob_with_stream`)."""
        ids = list(dict.fromkeys(c.blob_id for m in metas if not m.deleted for c in m.chunks))
        batches = [ids[i : i + DOWNLOAD_BATCH] for i in range(0, len(ids), DOWNLOAD_BATCH)]
        chunks: dict[str, bytes] = {}
        got_streams: dict[str, bytes] = {}
        if len(batches) > 1:
            with ThreadPoolExecutor(DOWNLOAD_THREADS, thread_name_prefix="sync-get") as pool:
                for part, part_streams in pool.map(self._fetch_batch, batches):
                    chunks.update(part)
                    got_streams.update(part_streams)
        elif batches:
            chunks, got_streams = self._fetch_batch(batches[0])
        out: dict[str, bytes] = {}
        for m in metas:
            if m.deleted or m.sha256 in out:
                continue
            out[m.sha256] = crypto.assemble(m, [chunks[c.blob_id] for c in m.chunks])
        if streams is not None:
            streams.update(got_streams)
        return out

    def _fetch_batch(self, ids: list[str]) -> tuple[dict[str, bytes], dict[str, bytes]]:
        """The verified chunks of a batch of blob ids, and the zlib streams their frames held."""
        got = self.client.get_blobs(ids)
        out, streams = {}, {}
        for bid in ids:
            sealed = got.get(bid)
            if sealed is None:
                raise TamperDetected(f"the relay did not send blob {bid[:12]}")
            out[bid], stream = crypto.open_blob_with_stream(self.key, self.vault_id, bid, sealed)
            if stream is not None:
                streams[bid] = stream
        return out, streams

    def fetch_one(self, meta: FileMeta) -> bytes:
        return self.fetch([meta])[meta.sha256]

    def iter_chunks(
        self, meta: FileMeta, only: Iterable[int] | None = None
    ) -> Iterator[tuple[int, bytes]]:
        """A large file's chunks (index, verified plaintext) one by one, for resumable writes;
        `only` limits it to the chunks still missing."""
        wanted = None if only is None else set(only)
        for i, ref in enumerate(meta.chunks):
            if wanted is not None and i not in wanted:
                continue
            sealed = self.client.get_blob(ref.blob_id)
            chunk = crypto.open_blob(self.key, self.vault_id, ref.blob_id, sealed)
            yield i, chunk

    def upload(
        self,
        chunks: Mapping[str, bytes] | Iterable[tuple[str, bytes]],
        *,
        streams: dict[str, bytes] | None = None,
    ) -> int:
        """Make sure the relay has these chunks (keyed by blob id); returns how many were sent.

        One batched existence check, then the missing ones sealed and sent in batches of about
        `UPLOAD_BATCH_BYTES` so memory stays bounded. `streams`, when given, receives blob id ->
        the zlib stream of each chunk sealed compressed (`seal_blob_with_stream`).
        """
        items = dict(chunks.items() if isinstance(chunks, Mapping) else chunks)
        if not items:
            return 0
        missing = [bid for bid in self.client.has_blobs(items) if bid in items]
        sent = 0
        batch: list[tuple[str, bytes]] = []
        size = 0
        for bid in missing:
            _, sealed, stream = crypto.seal_blob_with_stream(self.key, self.vault_id, items[bid])
            if streams is not None and stream is not None:
                streams[bid] = stream
            batch.append((bid, sealed))
            size += len(sealed)
            if size >= UPLOAD_BATCH_BYTES:
                sent += self._put(batch)
                batch, size = [], 0
        if batch:
            sent += self._put(batch)
        return sent

    def _put(self, batch: list[tuple[str, bytes]]) -> int:
        """Upload a batch. "Taken" means another upload of the same plaintext (sealed with
        another nonce, e.g. by a process killed mid-sync) got there first: that is as good,
        since a blob is only ever accepted after it opens under its own id on download."""
        for _attempt in range(3):
            try:
                self.client.put_blobs(batch)
                return len(batch)
            except ConflictError as exc:
                if exc.code != "blob_id_taken":
                    raise
                still = set(self.client.has_blobs(bid for bid, _ in batch))
                batch = [(bid, data) for bid, data in batch if bid in still]
                if not batch:
                    return 0
        raise ConflictError("the relay keeps refusing blob uploads as taken", code="blob_id_taken")

    def upload_one(self, bid: str, chunk: bytes) -> None:
        """Upload a single chunk if the relay lacks it (large files, chunk by chunk)."""
        if self.client.has_blobs([bid]):
            _, sealed = crypto.seal_blob(self.key, self.vault_id, chunk)
            try:
                self.client.put_blob(bid, sealed)
            except ConflictError as exc:
                if exc.code != "blob_id_taken":
                    raise

    # ------------------------------------------------------------------ committing

    def commit(
        self,
        groups: Sequence[Sequence[Outgoing]],
        *,
        reupload: Callable[[list[str]], None] | None = None,
        max_records: int | None = None,
    ) -> PushResult:
        """Commit records; each group (e.g. the two halves of a rename) lands in one request,
        all of it or none of it.

        Conflicts come back verified in `PushResult.conflicts`; the rest is retried without
        them and without the other records of their groups (`PushResult.deferred`).
        `reupload(ids)` is called if the relay lost blobs between upload and commit.
        """
        limit = max_records or int(self.client.limits().get("max_records_per_commit", 1000))
        result = PushResult()
        batch: list[list[Outgoing]] = []
        size = 0
        for group in groups:
            if batch and size + len(group) > limit:
                self._commit_batch(batch, result, reupload)
                batch, size = [], 0
            batch.append(list(group))
            size += len(group)
        if batch:
            self._commit_batch(batch, result, reupload)
        return result

    def _commit_batch(
        self,
        groups: list[list[Outgoing]],
        result: PushResult,
        reupload: Callable[[list[str]], None] | None,
    ) -> None:
        now = time.time_ns()
        signer = self.trust.signer() if self.trust is not None else None
        if signer is not None:
            from companion.crypto.signing import sign_meta
        # seal once: a retry must resend identical bytes so the relay sees a duplicate
        sealed_by_fid: dict[str, tuple[Outgoing, Record]] = {}
        group_of: dict[str, int] = {}
        members: dict[int, list[str]] = {}
        for g, group in enumerate(groups):
            for out in group:
                meta = out.meta
                if meta.recorded_ns is None:
                    meta = replace(meta, recorded_ns=now)
                if signer is not None:  # docs/trust.md §4: every record this device writes
                    fid = crypto.file_id(self.key, meta.path)
                    meta = sign_meta(signer, self.vault_id, fid, out.rev, meta)
                fid, sealed = crypto.seal_record(self.key, self.vault_id, out.rev, meta)
                blobs = tuple(c.blob_id for c in meta.chunks)
                sealed_by_fid[fid] = (out, Record(fid, out.rev, out.parent_rev, sealed, blobs))
                group_of[fid] = g
                members.setdefault(g, []).append(fid)
        todo = list(sealed_by_fid)
        for _attempt in range(4):
            if not todo:
                return
            try:
                res = self.client.commit([sealed_by_fid[fid][1] for fid in todo])
            except MissingBlobsError as exc:
                if reupload is None:
                    raise
                reupload(exc.missing)
                continue
            retry = []
            lost: set[int] = set()  # groups with a record that lost its race
            for r in res.results:
                out = sealed_by_fid[r.file_id][0]
                if r.status == "conflict":
                    lost.add(group_of[r.file_id])
                    head = self._conflict_head(out, r.head)
                    if isinstance(head, Refused):
                        result.refused_heads[out.meta.path] = head
                    else:
                        result.conflicts[out.meta.path] = head
                elif r.status == "duplicate" or (res.committed and r.status == "committed"):
                    result.committed[out.meta.path] = (r.rev, r.seq)
                    if r.seq is not None:
                        result.marks[r.seq] = seq_mark(sealed_by_fid[r.file_id][1])
                else:
                    retry.append(r.file_id)
            if res.committed:
                return
            for fid in retry:
                if group_of[fid] in lost:
                    result.deferred.add(sealed_by_fid[fid][0].meta.path)
            todo = [fid for fid in retry if group_of[fid] not in lost]
        if todo:
            log.warning("gave up committing %d records after repeated aborts", len(todo))

    def _conflict_head(self, out: Outgoing, head: Record | None) -> RemoteChange | Refused | None:
        """The verified head that beat `out`. One older than our parent, or none, means the
        relay lost that revision (`RelayLostRevision`: the round resyncs, R3)."""
        lost = (
            f"the relay has no revision of a file this device synced at revision "
            f"{out.parent_rev}: it lost data or was restored from an older backup"
        )
        if head is None:
            if out.parent_rev > 0:
                raise RelayLostRevision(lost)
            return None
        if head.file_id != self.file_id(out.meta.path):
            raise TamperedRecord("the relay answered a commit with another file's head")
        if head.rev < out.parent_rev:  # what it lost, whatever it holds from before
            raise RelayLostRevision(f"{lost} (its head is revision {head.rev})")
        ch = self.try_open(head)
        if isinstance(ch, Refused):
            if head.rev <= out.parent_rev:
                raise RolledBack(
                    f"the relay answered a commit on revision {out.parent_rev} with an older "
                    f"head (revision {head.rev})"
                )
            return ch
        if ch.path != out.meta.path and self.file_id(ch.path) != self.file_id(out.meta.path):
            raise TamperedRecord("the relay answered a commit with another file's head")
        crypto.check_not_rolled_back(out.parent_rev, ch.rev, file_id=ch.file_id)
        return ch


def _check_author(rec: Record, meta: FileMeta) -> None:
    """The sealed author must be the device whose token committed the record."""
    where = f"record rev {rec.rev} of file {rec.file_id[:12]}"
    if rec.device_id is not None and meta.device_id and rec.device_id != meta.device_id:
        raise TamperedRecord(
            f"{where} was sealed by device {meta.device_id[:12]} but committed with the token "
            f"of device {rec.device_id[:12]}: refused as tampering"
        )
    if rec.device_kind is not None and rec.device_kind != meta.device_kind:
        raise TamperedRecord(
            f"{where} claims to come from a {meta.device_kind or 'unnamed'} device, but the "
            f"relay registered the device that committed it as {rec.device_kind}: refused as "
            "tampering"
        )
    if rec.device_name is not None and rec.device_name != meta.device_name:
        raise TamperedRecord(
            f"{where} claims to come from {meta.device_name!r}, but the relay registered the "
            f"device that committed it as {rec.device_name!r}: refused as tampering"
        )


def chunk_refs(remote: RemoteVault, chunks: Sequence[bytes]) -> tuple[ChunkRef, ...]:
    return tuple(crypto.ChunkRef(remote.blob_id(c), len(c)) for c in chunks)
