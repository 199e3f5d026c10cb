"""The relay under abuse (issue #12, items 8, 10 and 12), against a real relay on loopback:
no body is read before the token is checked, each route has its own body limit, the failed-auth
limiter never locks out a valid token, clients back off on 429/503, and a revoked device's
waiting long-poll gets nothing committed after its revocation."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from companion.relay.backends import limiter_for
from companion.relay.testing import running_relay
from companion.relayclient.client import AuthError, Record, RelayBusy, RelayClient, RelayUnreachable
from tests.relaybackends import NAMES, Backend
from tests.relayproxy import RelayProxy

MiB = 1024 * 1024


@pytest.fixture(scope="module", params=NAMES)
def relay(tmp_path_factory, request):
    path = tmp_path_factory.mktemp("relay")
    with running_relay(path, storage=Backend(request.param).storage(path)) as r:
        yield r


@pytest.fixture(scope="module")
def device(relay):
    c = RelayClient(relay.url)
    c.join(relay.invite(new_vault=True, kind="human"), "laptop")
    yield c
    c.close()


def raw_request(url: str, head: str, timeout: float = 5.0) -> tuple[int, bytes, bool]:
    """Send only a request's head (no body) on a fresh connection; return the status, the
    response bytes and whether the relay then closed the connection."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(head.encode("latin-1"))
        data = b""
        closed = False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                closed = True
                break
            data += chunk
    assert data.startswith(b"HTTP/1.1 "), f"no answer before the body was sent: {data!r}"
    return int(data.split()[1]), data, closed


def head(method: str, path: str, length: int, token: str | None = None,
         ctype: str = "application/json") -> str:  # fmt: skip
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        f"{method} {path} HTTP/1.1\r\nHost: relay\r\n{auth}Content-Type: {ctype}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    )


# -- item 8: authenticate before any body; per-route limits ---------------------------------------


@pytest.mark.parametrize(
    "token", [None, "0123456789abcdef." + "A" * 43, "garbage"], ids=["none", "wrong", "malformed"]
)
@pytest.mark.parametrize(
    "method, suffix, ctype",
    [
        ("POST", "/commit", "application/json"),
        ("PUT", "/blobs/" + "ab" * 16, "application/octet-stream"),
        ("POST", "/blobs-upload", "application/x-companion-blobs"),
        ("PUT", "/key", "application/json"),
    ],
)
def test_an_unauthenticated_large_body_is_refused_before_it_is_sent(
    relay, device, token, method, suffix, ctype
):
    path = f"/v1/vaults/{device.vault_id}{suffix}"
    status, data, closed = raw_request(relay.url, head(method, path, 30 * MiB, token, ctype))
    assert status == 401 and b'"unauthorized"' in data
    assert closed, "the relay must close the connection instead of reading 30 MiB"
    assert device.health()["status"] == "ok"


@pytest.mark.parametrize(
    "method, suffix, length",
    [
        ("PUT", "/key", 1 * MiB),  # a wrapped key is 89 bytes
        ("POST", "/leases/dream-2026-01-01", 64 * 1024),
        ("POST", "/blobs-missing", 2 * MiB),
        ("POST", "/blobs-download", 2 * MiB),
        ("POST", "/leave", 64 * 1024),
    ],
)
def test_small_routes_have_small_body_limits(relay, device, method, suffix, length):
    own = RelayClient(relay.url)  # its own device: a route that ran anyway must not hurt others
    own.join(relay.invite(vault_id=device.vault_id, kind="human"), "probe")
    path = f"/v1/vaults/{own.vault_id}{suffix}"
    status, data, closed = raw_request(relay.url, head(method, path, length, own._token))
    assert status == 413 and b'"too_large"' in data and closed
    assert own.changes(0).seq >= 0  # nothing ran: the device was not revoked by /leave
    own.close()


def test_join_takes_a_tiny_body_only(relay):
    status, data, closed = raw_request(relay.url, head("POST", "/v1/join", 1 * MiB))
    assert status == 413 and closed


def test_commit_and_blob_routes_keep_their_large_limits(relay, device):
    records = [Record(f"{i:032x}", 1, 0, b"s" * 600_000) for i in range(8)]  # ~6.4 MiB of JSON
    assert device.commit(records).ok
    assert device.put_blob("cd" * 16, b"b" * (8 * MiB))


# -- item 10: the failed-auth limiter never locks out a valid token -------------------------------


def test_failures_from_an_address_do_not_lock_out_valid_tokens_or_invites(tmp_path, backend):
    store = backend.storage(tmp_path / "r")
    limiter = limiter_for(store)  # shared through the database on PostgreSQL
    limiter.capacity, limiter.rate = 3.0, 1 / 3600
    with running_relay(tmp_path / "r", limiter=limiter, storage=store) as relay:
        good = RelayClient(relay.url)
        good.join(relay.invite(kind="human"), "laptop")
        bad = RelayClient(relay.url, "0123456789abcdef." + "B" * 43, good.vault_id)
        for _ in range(3):
            with pytest.raises(AuthError) as e:
                bad.changes(0)
            assert e.value.status == 401
        with pytest.raises(RelayBusy) as busy:  # this address is now over its limit ...
            bad.changes(0)
        assert busy.value.status == 429 and busy.value.retry_after >= 1
        assert good.changes(0).seq == 0  # ... but a valid token from it is served
        assert good.commit([Record("ab" * 16, 1, 0, b"x")]).ok
        newcomer = RelayClient(relay.url)  # and a valid invite is redeemed
        assert newcomer.join(relay.invite(), "server").kind == "agent"
        with pytest.raises(RelayBusy):  # while a wrong invite is still refused with 429
            RelayClient(relay.url).join("0123456789abcdef-" + "a" * 26, "x")
        for c in (good, bad, newcomer):
            c.close()


@pytest.mark.parametrize("status", [429, 503])
def test_the_client_raises_relay_busy_with_retry_after(relay, device, status):
    with RelayProxy(relay.url) as proxy:
        c = RelayClient(proxy.url, device._token, device.vault_id)
        assert c.changes(0).seq >= 0
        proxy.refuse(status, retry_after=7)
        with pytest.raises(RelayBusy) as e:
            c.changes(0)
        assert e.value.status == status and e.value.retry_after == 7
        assert isinstance(e.value, RelayUnreachable)  # callers queue and retry, as offline
        assert device._token not in str(e.value)
        proxy.allow()
        assert c.changes(0).seq >= 0
        c.close()


# -- item 12: a revoked device's long-poll ---------------------------------------------------------


def test_a_device_revoked_while_its_long_poll_waits_gets_nothing_new(relay):
    laptop = RelayClient(relay.url)
    j = laptop.join(relay.invite(new_vault=True, kind="human"), "laptop")
    thief = RelayClient(relay.url)
    t = thief.join(relay.invite(vault_id=j.vault_id), "stolen-server")
    since = thief.changes(0).seq
    out: dict = {}

    def poll() -> None:
        try:
            out["changes"] = thief.changes(since, wait=20)
        except Exception as exc:  # noqa: BLE001 - handed to the assertion below
            out["error"] = exc

    waiter = threading.Thread(target=poll)
    waiter.start()
    deadline = time.monotonic() + 10
    while not relay.app.state.relay.notifier._events and time.monotonic() < deadline:
        time.sleep(0.01)  # the long-poll is waiting on the vault's event
    relay.revoke(t.device_id)
    laptop.commit([Record("ef" * 16, 1, 0, b"written after the revocation")])
    waiter.join(20)
    assert not waiter.is_alive()
    assert "changes" not in out, "the revoked device received records committed after revocation"
    assert isinstance(out["error"], AuthError) and "revoked" in str(out["error"])
    laptop.close()
    thief.close()
