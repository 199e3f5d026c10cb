"""Tamper evidence: a relay that lies is caught, and what it lied about is never written.

Device `b` talks to the relay through `WireProxy`, which rewrites the relay's answers the way a
malicious relay could (with valid transport checksums, so only end-to-end checks can notice).
After each lie about a record or a blob: the files it touched are quarantined (not written, no
temp file, reported), every file written is byte-identical to the truth, and once the relay
behaves again the next round heals them and converges. Replays and another vault's wrapped key
still stop the round.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from companion.credentials.store import FileStore
from companion.crypto import RolledBack, TamperedBlob, TamperedRecord, WrongPassphrase
from companion.sync.state.device import DeviceState
from tests.syncharness import (
    Device,
    Exchange,
    SyncCluster,
    WireProxy,
    encode_blob_frames,
    parse_frames,
)


@pytest.fixture
def setup(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        proxy = WireProxy(c.relay.url)
        a = c.add_device("laptop", "human")
        b = c.add_device("server", "agent", relay_url=proxy.url)
        try:
            yield c, proxy, a, b
        finally:
            proxy.close()


def _on_changes(mutate: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]):
    def hook(ex: Exchange) -> Exchange:
        if ex.method == "GET" and "/changes" in ex.path and ex.status == 200:
            body = json.loads(ex.response_body)
            if body["records"]:
                body["records"] = mutate(body["records"])
                ex.response_body = json.dumps(body).encode()
        return ex

    return hook


def _on_blobs(mutate: Callable[[list[tuple[str, bytes]]], list[tuple[str, bytes]]]):
    def hook(ex: Exchange) -> Exchange:
        if ex.method == "POST" and ex.path.endswith("/blobs-download") and ex.status == 200:
            ex.response_body = encode_blob_frames(mutate(parse_frames(ex.response_body)))
        return ex

    return hook


def _sealed(rec: dict[str, Any], fn: Callable[[bytes], bytes]) -> None:
    rec["sealed"] = base64.b64encode(fn(base64.b64decode(rec["sealed"]))).decode()


def _flip(data: bytes, at: int | None = None) -> bytes:
    i = len(data) // 2 if at is None else at
    return data[:i] + bytes([data[i] ^ 0x04]) + data[i + 1 :]


def _records_bitflip(recs):
    _sealed(recs[0], _flip)
    return recs


def _records_truncate(recs):
    _sealed(recs[0], lambda d: d[: len(d) - 20])
    return recs


def _records_moved(recs):
    recs[0]["file_id"], recs[1]["file_id"] = recs[1]["file_id"], recs[0]["file_id"]
    return recs


def _records_other_rev(recs):
    recs[0]["rev"] += 1
    recs[0]["parent_rev"] += 1
    return recs


def _blobs_bitflip(items):
    bid, data = items[0]
    return [(bid, _flip(data)), *items[1:]]


def _blobs_truncate(items):
    bid, data = items[0]
    return [(bid, data[:-16]), *items[1:]]


def _blobs_swap(items):
    if len(items) < 2:  # asked for one blob at a time, a swapping relay can only corrupt
        return _blobs_bitflip(items)
    (id0, d0), (id1, d1) = items[0], items[1]
    return [(id0, d1), (id1, d0), *items[2:]]


LIES = {
    "record bit flip": (_on_changes(_records_bitflip), TamperedRecord),
    "record truncated": (_on_changes(_records_truncate), TamperedRecord),
    "record moved to another file id": (_on_changes(_records_moved), TamperedRecord),
    "record served as another revision": (_on_changes(_records_other_rev), TamperedRecord),
    "blob bit flip": (_on_blobs(_blobs_bitflip), TamperedBlob),
    "blob truncated": (_on_blobs(_blobs_truncate), TamperedBlob),
    "two blobs swapped": (_on_blobs(_blobs_swap), TamperedBlob),
}


def _two_notes(a: Device) -> None:
    a.write("projects/alpha.md", "# Alpha\nthe first plan, with some words\n")
    a.write("projects/beta.md", "# Beta\nanother plan entirely, other words\n")
    a.sync()


def _assert_untouched(b: Device, before: dict[str, bytes]) -> None:
    assert b.files() == before
    assert b.temp_files() == []


@pytest.mark.parametrize("lie", sorted(LIES))
def test_a_lie_costs_only_the_files_it_touched(setup, lie: str) -> None:
    cluster, proxy, a, b = setup
    _two_notes(a)
    hook, error = LIES[lie]
    proxy.tamper = hook
    report = b.sync()  # one bad record or blob no longer stops the round
    assert report.quarantined
    written = b.files()
    assert len(written) < 2  # the lied-about file is not there...
    for rel, data in written.items():
        assert data == a.read(rel)  # ...and whatever is there is the truth
    assert b.temp_files() == []
    engine = b.engine()
    rows = engine.quarantined()
    assert rows and all(r.reason for r in rows)
    assert error.__name__ in {"TamperedRecord", "TamperedBlob"}
    assert engine.core.status.read().errors[-1].kind == "quarantine"
    proxy.tamper = None
    b.sync()
    assert b.sync().converged
    assert b.engine().quarantined() == []
    cluster.assert_converged()


def test_replayed_older_revision_is_refused(setup) -> None:
    cluster, proxy, a, b = setup
    for i in (1, 2):
        a.write("projects/alpha.md", f"version {i}\n")
        a.sync()
        b.sync()
    a.write("projects/alpha.md", "version 3\n")
    a.sync()
    old: dict[str, Any] = {}

    def replay(ex: Exchange) -> Exchange:
        if ex.method == "GET" and "/changes" in ex.path and ex.status == 200:
            body = json.loads(ex.response_body)
            if body["records"]:
                rec = body["records"][0]
                auth = {"Authorization": ex.request_headers["Authorization"]}
                base = ex.path.split("/changes")[0]
                url = f"{proxy.upstream}{base}/files/{rec['file_id']}/revs/1"
                old.update(httpx.get(url, headers=auth).json())
                old["seq"] = rec["seq"]
                body["records"] = [old]  # genuine, correctly sealed, but an old revision
                ex.response_body = json.dumps(body).encode()
        return ex

    proxy.tamper = replay
    with pytest.raises(RolledBack) as err:
        b.sync()
    assert "revision 1" in str(err.value) and "revision 2" in str(err.value)
    assert b.read("projects/alpha.md") == b"version 2\n"
    proxy.tamper = None
    b.sync()
    assert b.read("projects/alpha.md") == b"version 3\n"


def test_the_feed_is_read_page_by_page_and_a_replay_across_pages_is_refused(
    setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of two records: the next page travels while this one is opened; the order of a
    file's revisions is still checked across pages."""
    from companion.sync.remote import vault as remote

    monkeypatch.setattr(remote, "PULL_PAGE", 2)
    cluster, proxy, a, b = setup
    for i in (1, 2):
        a.write("projects/alpha.md", f"version {i}\n")
        a.sync()
    for i in range(3):
        a.write(f"knowledge/n{i}.md", f"note {i}\n")
    a.sync()
    old: dict[str, Any] = {}

    def replay_on_page_two(ex: Exchange) -> Exchange:
        if ex.method == "GET" and "/changes" in ex.path and "since=2&" in ex.path:
            body = json.loads(ex.response_body)
            auth = {"Authorization": ex.request_headers["Authorization"]}
            base = ex.path.split("/changes")[0]
            fid = a.engine().core.remote.file_id("projects/alpha.md")
            url = f"{proxy.upstream}{base}/files/{fid}/revs/1"
            old.update(httpx.get(url, headers=auth).json())
            body["records"][0] = old  # revision 1 of alpha, after page one listed revision 2
            ex.response_body = json.dumps(body).encode()
        return ex

    proxy.tamper = replay_on_page_two
    with pytest.raises(RolledBack):
        b.sync()
    assert old and b.read("projects/alpha.md") is None  # nothing of that pull was applied
    proxy.tamper = None
    b.sync()
    assert b.read("projects/alpha.md") == b"version 2\n"
    cluster.assert_converged()


def test_another_vaults_data_is_refused(setup) -> None:
    cluster, proxy, a, b = setup
    _two_notes(a)
    other = cluster.add_device(
        "stranger",
        "human",
        invite=cluster.relay.invite(new_vault=True, kind="human"),
        passphrase="other one",
    )
    other.write("projects/alpha.md", "# Alpha\nfrom another vault\n")
    other.sync()
    state = DeviceState.load(other.paths, other.vault)
    token = state.load_token(FileStore(other.paths.secrets_file))

    def other_vault(ex: Exchange) -> Exchange:
        if b.vault_id in ex.path and ("/changes" in ex.path or "/blobs" in ex.path):
            resp = httpx.request(
                ex.method,
                proxy.upstream + ex.path.replace(b.vault_id, other.vault_id),
                headers={"Authorization": f"Bearer {token}"},
                content=ex.request_body,
            )
            ex.status, ex.response_body = resp.status_code, resp.content
        return ex

    proxy.tamper = other_vault
    report = b.sync()
    assert report.quarantined  # none of the other vault's records opens here
    _assert_untouched(b, {})
    proxy.tamper = None
    b.sync()
    assert b.read("projects/alpha.md") == a.read("projects/alpha.md")


def test_another_vaults_wrapped_key_is_refused_at_join(setup, tmp_path: Path) -> None:
    cluster, proxy, a, b = setup
    other = cluster.add_device(
        "stranger",
        "human",
        invite=cluster.relay.invite(new_vault=True, kind="human"),
        passphrase="other one",
    )
    state = DeviceState.load(other.paths, other.vault)
    token = state.load_token(FileStore(other.paths.secrets_file))

    def other_key(ex: Exchange) -> Exchange:
        if ex.method == "GET" and ex.path.endswith("/key"):
            resp = httpx.get(
                proxy.upstream + ex.path.replace(cluster.vault_id, other.vault_id),
                headers={"Authorization": f"Bearer {token}"},
            )
            ex.status, ex.response_body = resp.status_code, resp.content
        return ex

    proxy.tamper = other_key
    with pytest.raises(WrongPassphrase):
        cluster.add_device("newcomer", "human", relay_url=proxy.url)


def test_a_record_damaged_in_transit_heals_by_asking_for_its_head_again(setup) -> None:
    """R9, Python's retry on its own: the feed delivers the damaged record once and the cursor
    moves past it, so nothing but `Puller.retry_quarantined` asking the relay for the file's
    head (`GET .../files/<id>`) can bring the note back, in the very next round."""
    cluster, proxy, a, b = setup
    _two_notes(a)
    fid = a.engine().core.remote.file_id("projects/alpha.md")

    def damage_alpha(recs):
        for rec in recs:
            if rec["file_id"] == fid:
                _sealed(rec, _flip)
        return recs

    proxy.tamper = _on_changes(damage_alpha)
    report = b.sync()
    assert report.quarantined == [fid]  # unknown here: named by its id
    assert b.read("projects/alpha.md") is None
    assert b.read("projects/beta.md") == a.read("projects/beta.md")
    seq_max = max(r.seq for r in b.engine().core.remote.client.changes(0).records)
    assert b.engine().puller.cursor == seq_max  # past the damaged record: not read again
    proxy.tamper = None
    proxy.exchanges.clear()
    report = b.sync()
    heads = [
        ex for ex in proxy.exchanges if ex.method == "GET" and ex.path.endswith(f"/files/{fid}")
    ]
    assert heads, "the quarantined file's head was not asked for again"
    assert not any("/changes" in ex.path and "since=0" in ex.path for ex in proxy.exchanges)
    assert b.read("projects/alpha.md") == a.read("projects/alpha.md")
    assert b.engine().quarantined() == []
    assert report.quarantined == []


def test_a_quarantined_head_the_relay_does_not_have_rereads_the_feed(setup) -> None:
    """R9: the feed listed a file the relay has no head for (a lie, or a file since purged):
    the retry finds nothing, releases the quarantine and reads the feed again from the start."""
    cluster, proxy, a, b = setup
    _two_notes(a)
    ghost = "cd" * 32

    def add_ghost(recs):
        fake = dict(recs[0])
        fake["file_id"] = ghost
        _sealed(fake, _flip)
        return [*recs, fake]

    proxy.tamper = _on_changes(add_ghost)
    b.sync()
    assert [q.file_id for q in b.engine().quarantined()] == [ghost]
    proxy.tamper = None
    proxy.exchanges.clear()
    b.sync()
    assert b.engine().quarantined() == []
    assert any("/changes" in ex.path and "since=0" in ex.path for ex in proxy.exchanges)
    cluster.assert_converged()


def test_a_record_altered_in_transit_is_not_taken_for_a_restored_relay(setup) -> None:
    """The cursor's mark (what this device saw at its cursor, R3) is taken only from a record
    that verified: one altered in transit names bytes the relay does not hold, and the next
    pull would compare the relay's `at_since` with it and take the relay for a restored one."""
    cluster, proxy, a, b = setup
    _two_notes(a)
    last = a.engine().core.remote.client.changes(0).records[-1]

    def damage_last(recs):
        for rec in recs:
            if rec["file_id"] == last.file_id:
                _sealed(rec, _flip)
        return recs

    proxy.tamper = _on_changes(damage_last)
    assert b.sync().quarantined == [last.file_id]
    proxy.tamper = None
    a.write("projects/gamma.md", "# Gamma\n")
    a.sync()
    report = b.sync()
    assert not report.relay_restored
    assert all(e.kind != "relay_restored" for e in b.engine().core.status.read().errors)
    assert b.engine().core.index.quarantine.rows() == []
    cluster.assert_converged()
