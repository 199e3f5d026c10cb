"""RelayClient against a real relay (uvicorn on 127.0.0.1): the API the sync engine uses."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time

import pytest

from companion.errors import CompanionError
from companion.relay.limits import Limits
from companion.relay.testing import running_relay, self_signed_cert
from companion.relayclient.client import (
    AuthError,
    ConflictError,
    MissingBlobsError,
    NotFoundError,
    Record,
    RelayClient,
    RelayError,
    RelayUnreachable,
)
from tests.relaybackends import NAMES, Backend, damage


def fid(n: int) -> str:
    return f"{n:032x}"


@pytest.fixture(scope="module", params=NAMES)
def relay(tmp_path_factory, request):
    limits = Limits(max_changes_per_page=3, max_blobs_per_batch=4, max_batch_bytes=64 * 1024)
    backend = Backend(request.param)
    path = tmp_path_factory.mktemp("relay")
    with running_relay(path, limits=limits, storage=backend.storage(path)) as r:
        yield r


@pytest.fixture(scope="module")
def pair(relay):
    """Two devices of one vault: a person's laptop and the agent's server."""
    laptop = RelayClient(relay.url)
    j1 = laptop.join(relay.invite(new_vault=True, kind="human"), "laptop", "human")
    server = RelayClient(relay.url)
    j2 = server.join(relay.invite(vault_id=j1.vault_id), "server", "agent")
    assert j1.is_new_vault and j1.vault_id == j2.vault_id
    yield laptop, server
    laptop.close()
    server.close()


def test_errors_are_companion_errors():
    for cls in (RelayUnreachable, AuthError, ConflictError, NotFoundError, MissingBlobsError):
        assert issubclass(cls, RelayError) and issubclass(cls, CompanionError)


def wrapped(tag: int) -> bytes:
    """89 bytes with a wrapped key's clear header (what the relay checks)."""
    return struct.pack(">BIII", 1, 8192, 1, 1) + bytes([tag]) * 76


def test_join_key_blob_and_second_device(relay):
    c = RelayClient(relay.url)
    j = c.join(relay.invite(new_vault=True, kind="human"), "laptop")
    assert j.is_new_vault and (j.token, j.device_id, j.vault_id) == tuple(j)[:3]
    assert j.kind == "human"
    assert c.get_key_blob() is None
    c.put_key_blob(wrapped(1))
    with pytest.raises(ConflictError):
        c.put_key_blob(wrapped(9), expected_absent=True)
    with pytest.raises(ConflictError):
        c.put_key_blob(wrapped(8), expected_absent=False, replaces=b"stale")
    c.put_key_blob(wrapped(2), expected_absent=False, replaces=wrapped(1))
    assert [w.key for w in c.key_history()] == [wrapped(2), wrapped(1)]
    other = RelayClient(relay.url)
    j2 = other.join(relay.invite(vault_id=j.vault_id), "server", "agent")
    assert not j2.is_new_vault and other.get_key_blob() == wrapped(2) and j2.kind == "agent"
    assert {d.name for d in other.devices()} == {"laptop", "server"}
    with pytest.raises(ConflictError) as e:  # the invite fixes the kind
        RelayClient(relay.url).join(relay.invite(vault_id=j.vault_id), "liar", "human")
    assert e.value.code == "kind_mismatch"
    c.close()
    other.close()


def test_commit_conflict_result_and_replay(pair):
    laptop, server = pair
    assert laptop.commit([Record(fid(1), 1, 0, b"laptop v1")]).ok
    res = server.commit([Record(fid(1), 1, 0, b"server v1"), Record(fid(2), 1, 0, b"new")])
    assert not res.ok
    (conflict,) = res.conflicts
    assert conflict.file_id == fid(1) and conflict.head.sealed == b"laptop v1"
    assert conflict.head.device_id == laptop.devices()[0].device_id
    assert server.head(fid(2)) is None  # all or nothing
    again = laptop.commit([Record(fid(1), 1, 0, b"laptop v1")])
    assert again.ok and again.results[0].status == "duplicate"
    assert server.commit([Record(fid(1), 2, 1, b"server v2")]).ok
    assert [r.rev for r in laptop.history(fid(1))] == [2, 1]
    assert laptop.record(fid(1), 1).sealed == b"laptop v1"
    assert laptop.record(fid(1), 9) is None and laptop.history(fid(99)) == []


def test_changes_follow_pages(pair):
    laptop, server = pair
    start = laptop.changes_page(0).vault_seq
    server.commit([Record(fid(100 + i), 1, 0, b"p") for i in range(7)])
    page = laptop.changes_page(start)
    assert len(page.records) == 3 and page.more  # the relay's page size is 3 here
    got = laptop.changes(start)
    assert [r.file_id for r in got.records] == [fid(100 + i) for i in range(7)]
    assert got.seq == start + 7 and laptop.changes(got.seq) == ([], got.seq)


def test_long_poll_wakes_when_a_commit_lands(pair):
    laptop, server = pair
    since = laptop.changes_page(0).vault_seq
    out: dict = {}

    def wait() -> None:
        t0 = time.monotonic()
        out["changes"] = laptop.changes(since, wait=20)
        out["elapsed"] = time.monotonic() - t0

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)
    assert t.is_alive()  # it is waiting, not returning empty
    server.commit([Record(fid(500), 1, 0, b"wake up")])
    t.join(timeout=20)
    assert not t.is_alive()
    assert [r.file_id for r in out["changes"].records] == [fid(500)]
    assert out["elapsed"] < 10  # well before its 20 s timeout: woken by the commit


def test_blobs_single_and_batched(pair):
    laptop, server = pair
    blobs = {f"{i:032x}": os.urandom(10_000 + i) for i in range(1, 11)}
    assert sorted(laptop.has_blobs(blobs)) == sorted(blobs)
    first = next(iter(blobs))
    assert laptop.put_blob(first, blobs[first]) is True
    assert laptop.put_blob(first, blobs[first]) is False  # dedup
    created = laptop.put_blobs(blobs)  # several batches (4 blobs / 64 KiB each here)
    assert sorted(created) == sorted(set(blobs) - {first})
    assert laptop.has_blobs(blobs) == []
    assert server.get_blob(first) == blobs[first]
    assert server.get_blobs(list(blobs)) == blobs
    with pytest.raises(NotFoundError):
        server.get_blob("99" * 16)
    with pytest.raises(NotFoundError):
        server.get_blobs([first, "99" * 16])


def test_commit_with_missing_blob_raises_typed_error(pair):
    laptop, _ = pair
    with pytest.raises(MissingBlobsError) as e:
        laptop.commit([Record(fid(600), 1, 0, b"x", ("77" * 16,))])
    assert e.value.missing == ["77" * 16]


def test_leases(pair):
    laptop, server = pair
    a = server.lease("dream-2026-11-29", 600)
    assert a.acquired
    b = laptop.lease("dream-2026-11-29", 600)
    assert not b.acquired and b.holder == a.holder
    assert server.release_lease("dream-2026-11-29")
    assert laptop.lease("dream-2026-11-29", 600).acquired


def test_revoked_device_gets_auth_error_without_its_token(relay):
    c = RelayClient(relay.url)
    j = c.join(relay.invite(new_vault=True, kind="human"), "old-phone", "human")
    relay.revoke(j.device_id)
    with pytest.raises(AuthError) as e:
        c.changes(0)
    assert "revoked" in str(e.value) and j.token not in str(e.value)
    assert e.value.status == 401
    with pytest.raises(AuthError):
        RelayClient(relay.url).join("0123456789abcdef-" + "a" * 26, "x", "human")
    c.close()


def test_unreachable_relay():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = RelayClient(f"http://127.0.0.1:{port}", "0123456789abcdef." + "a" * 43, "0" * 16, timeout=2)
    with pytest.raises(RelayUnreachable, match="cannot reach"):
        c.changes(0)
    with pytest.raises(RelayUnreachable):
        c.health()
    c.close()


def test_not_joined_yet():
    with pytest.raises(AuthError, match="not joined"):
        RelayClient("http://127.0.0.1:9").commit([])


def test_tls(tmp_path):
    certfile, keyfile = self_signed_cert(tmp_path)
    with running_relay(
        tmp_path / "relay", ssl_certfile=str(certfile), ssl_keyfile=str(keyfile)
    ) as relay:
        assert relay.url.startswith("https://127.0.0.1:")
        c = RelayClient(relay.url, verify=str(certfile))
        c.join(relay.invite(kind="human"), "laptop", "human")
        assert c.commit([Record(fid(1), 1, 0, b"over tls")]).ok
        c.close()
        untrusting = RelayClient(relay.url, timeout=5)  # system CAs do not know this cert
        with pytest.raises(RelayUnreachable):
            untrusting.health()
        untrusting.close()


def test_default_trust_is_the_systems_own(tmp_path, monkeypatch):
    """With the default `verify=True` the client trusts what the operating system's TLS
    settings trust (here a private CA named by SSL_CERT_FILE, as an administrator would install
    one), and only that: the same relay is refused without it."""
    certfile, keyfile = self_signed_cert(tmp_path)
    with running_relay(
        tmp_path / "relay", ssl_certfile=str(certfile), ssl_keyfile=str(keyfile)
    ) as relay:
        monkeypatch.setenv("SSL_CERT_FILE", str(certfile))
        with RelayClient(relay.url, timeout=5) as trusting:
            assert trusting.health()["status"] == "ok"
        monkeypatch.delenv("SSL_CERT_FILE")
        with RelayClient(relay.url, timeout=5) as untrusting, pytest.raises(RelayUnreachable):
            untrusting.health()


def test_batched_download_with_a_blob_damaged_on_the_relay(relay, pair, caplog):
    """A blob that fails its checksum mid-batch ends the stream at a frame boundary: the
    client names the blob (NotFoundError, so it can be uploaded again), the relay logs no
    internal error, and the connection stays usable."""
    laptop, server = pair
    good, bad = "a1" * 16, "b2" * 16
    laptop.put_blobs({good: b"good bytes", bad: b"bytes to damage"})
    damage(relay.storage, laptop.vault_id, bad, b"damaged bytes!!")
    with pytest.raises(NotFoundError) as e:
        server.get_blobs([good, bad])
    assert bad in str(e.value) and good not in str(e.value)
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]
    assert server.get_blob(good) == b"good bytes"
    assert laptop.has_blobs([bad]) == [bad]  # set aside: a device that has it uploads it again


@pytest.mark.parametrize(
    "url", ["http://relay.example.org", "http://192.0.2.7:8787", "http://[2001:db8::1]:8787",
            "http://0.0.0.0:8787", "HTTP://Relay.Example.org/", "http://[::ffff:192.0.2.7]:1"],
)  # fmt: skip
def test_plain_http_to_another_host_is_refused(url):
    from companion.relayclient.errors import InsecureRelayUrl

    with pytest.raises(InsecureRelayUrl) as e:
        RelayClient(url)
    msg = str(e.value)
    assert "\n" not in msg and "token" in msg and "in clear" in msg and "--insecure-http" in msg
    assert e.value.exit_code == 2
    RelayClient(url, insecure_http=True).close()  # the explicit escape hatch


@pytest.mark.parametrize(
    "url", ["https://relay.example.org:abc", "https://relay.example.org:99999",
            "https://relay.example.org:0", "relay.example.org", "ftp://relay.example.org",
            "https:///v1", "https://user:pa55word@relay.example.org:x"],
)  # fmt: skip
def test_a_malformed_relay_url_is_a_clear_input_error(url):
    from companion.relayclient.errors import InvalidRelayUrl

    with pytest.raises(InvalidRelayUrl) as e:
        RelayClient(url)
    assert e.value.exit_code == 2 and "is not a relay URL" in str(e.value)
    assert "pa55word" not in str(e.value)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8787", "http://127.3.4.5", "http://localhost:1", "http://[::1]:9",
            "http://relay.localhost", "https://relay.example.org", "http://[::ffff:127.0.0.1]:9"],
)  # fmt: skip
def test_loopback_and_https_need_no_flag(url):
    RelayClient(url).close()
