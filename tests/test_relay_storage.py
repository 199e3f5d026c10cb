"""The relay's stores (SQLite, and PostgreSQL on a real server): compare-and-swap, batch
atomicity, changes, blobs, retention, leases, invites. Every test runs on both stores unless it
is about SQLite's files."""

from __future__ import annotations

import dataclasses
import hashlib
import sqlite3
import threading

import pytest

from companion.relay.sqlite_storage import SqliteStorage
from companion.relay.storage import (
    BlobIdTaken,
    ChecksumMismatch,
    Device,
    InviteRefused,
    KeyBlobConflict,
    NewRecord,
    NotFound,
    RetentionPolicy,
    UnknownVault,
)
from tests.relaybackends import damage, leftovers

V = "00000000000000aa"
DEV = "d0000000000000d1"
DAY = 86400.0


def fid(n: int) -> str:
    return f"{n:032x}"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def store(tmp_path, backend):
    s = backend.storage(tmp_path / "relay")
    s.create_vault(V, 1000.0)
    yield s
    s.close()


def put_blob(store: SqliteStorage, blob_id: str, data: bytes, now: float = 1000.0, vault=V):
    return store.put_blob(vault, blob_id, data, now).info


def test_cas_new_file_then_next_revision(store):
    out = store.commit(V, DEV, [NewRecord(fid(1), 1, 0, b"a")], 1000.0)
    assert out.committed and out.seq == 1
    assert [r.status for r in out.results] == ["committed"]
    out = store.commit(V, DEV, [NewRecord(fid(1), 2, 1, b"b")], 1001.0)
    assert out.committed and out.seq == 2
    head = store.head(V, fid(1))
    assert (head.rev, head.sealed, head.seq, head.device_id) == (2, b"b", 2, DEV)


def test_stale_parent_is_refused_with_current_head_and_never_overwrites(store):
    store.commit(V, DEV, [NewRecord(fid(1), 1, 0, b"a")], 1000.0)
    store.commit(V, DEV, [NewRecord(fid(1), 2, 1, b"b")], 1000.0)
    out = store.commit(V, DEV, [NewRecord(fid(1), 2, 1, b"other")], 1000.0)
    assert not out.committed
    (res,) = out.results
    assert res.status == "conflict"
    assert res.head is not None and (res.head.rev, res.head.sealed) == (2, b"b")
    assert store.head(V, fid(1)).sealed == b"b"
    # a "new file" against an existing one is a conflict too
    out = store.commit(V, DEV, [NewRecord(fid(1), 1, 0, b"new")], 1000.0)
    assert out.results[0].status == "conflict"
    # a parent from the future is refused (the head is rev 2)
    out = store.commit(V, DEV, [NewRecord(fid(1), 5, 4, b"x")], 1000.0)
    assert out.results[0].status == "conflict"
    assert store.head(V, fid(1)).rev == 2


def test_batch_is_all_or_nothing(store):
    store.commit(V, DEV, [NewRecord(fid(1), 1, 0, b"a")], 1000.0)
    batch = [
        NewRecord(fid(2), 1, 0, b"fresh"),
        NewRecord(fid(1), 1, 0, b"stale"),
        NewRecord(fid(3), 1, 0, b"fresh too"),
    ]
    out = store.commit(V, DEV, batch, 1000.0)
    assert not out.committed
    assert [r.status for r in out.results] == ["aborted", "conflict", "aborted"]
    assert out.seq == 1
    assert store.head(V, fid(2)) is None and store.head(V, fid(3)) is None
    assert store.get_vault(V).seq == 1


def test_replay_of_identical_record_is_idempotent(store):
    rec = NewRecord(fid(1), 1, 0, b"same")
    first = store.commit(V, DEV, [rec], 1000.0)
    again = store.commit(V, DEV, [rec], 1001.0)
    assert again.committed
    assert again.results[0].status == "duplicate" and again.results[0].seq == first.seq
    assert store.get_vault(V).seq == 1  # nothing new was written
    # still a duplicate after the file moved on
    store.commit(V, DEV, [NewRecord(fid(1), 2, 1, b"next")], 1002.0)
    assert store.commit(V, DEV, [rec], 1003.0).results[0].status == "duplicate"
    # different bytes at an existing rev: conflict
    out = store.commit(V, DEV, [NewRecord(fid(1), 1, 0, b"different")], 1004.0)
    assert out.results[0].status == "conflict" and out.results[0].head.rev == 2


def test_records_must_reference_uploaded_blobs(store):
    b1, b2 = "b1" * 16, "b2" * 16
    put_blob(store, b1, b"one")
    out = store.commit(V, DEV, [NewRecord(fid(1), 1, 0, b"x", (b1, b2))], 1000.0)
    assert not out.committed and out.missing_blobs == [b2]
    assert store.head(V, fid(1)) is None
    put_blob(store, b2, b"two")
    assert store.commit(V, DEV, [NewRecord(fid(1), 1, 0, b"x", (b1, b2))], 1000.0).committed
    assert store.head(V, fid(1)).blobs == (b1, b2)


def test_blobs_are_per_vault(store):
    other = "00000000000000bb"
    store.create_vault(other, 1000.0)
    b = "cc" * 16
    put_blob(store, b, b"secret", vault=other)
    assert store.missing_blobs(V, [b]) == [b]
    with pytest.raises(NotFound):
        store.read_blob(V, b)


def test_unknown_vault(store):
    with pytest.raises(UnknownVault):
        store.commit("ffffffffffffffff", DEV, [NewRecord(fid(1), 1, 0, b"x")], 1000.0)
    with pytest.raises(UnknownVault):
        store.changes("ffffffffffffffff", 0, 10, 1 << 20)


def test_changes_pages_in_seq_order(store):
    for i in range(1, 8):
        store.commit(V, DEV, [NewRecord(fid(i), 1, 0, bytes([i]) * 10)], 1000.0)
    page = store.changes(V, 0, 3, 1 << 20)
    assert [r.seq for r in page.records] == [1, 2, 3] and page.more and page.seq == 3
    page = store.changes(V, page.seq, 100, 1 << 20)
    assert [r.seq for r in page.records] == [4, 5, 6, 7] and not page.more and page.seq == 7
    page = store.changes(V, 7, 100, 1 << 20)
    assert page.records == [] and page.seq == 7 and page.vault_seq == 7
    # a byte budget still returns at least one record per page
    page = store.changes(V, 0, 100, 15)
    assert len(page.records) == 1 and page.more


def test_changes_say_which_record_sits_at_since(store):
    """`at_since`: the record at `seq == since`, named by file, revision and the SHA-256 of
    its sealed bytes, read in the same snapshot; none for 0, or where no record is."""
    for i in range(1, 4):
        store.commit(V, DEV, [NewRecord(fid(i), 1, 0, bytes([i]) * 10)], 1000.0)
    assert store.changes(V, 0, 10, 1 << 20).at_since is None
    page = store.changes(V, 2, 10, 1 << 20)
    assert [r.seq for r in page.records] == [3]
    mark = page.at_since
    assert (mark.file_id, mark.rev, mark.sha256) == (fid(2), 1, sha(bytes([2]) * 10))
    last = store.changes(V, 3, 10, 1 << 20)
    assert last.records == [] and last.at_since.file_id == fid(3)
    assert store.changes(V, 9, 10, 1 << 20).at_since is None  # ahead: nothing there


def test_at_since_is_none_where_retention_pruned_the_record(store):
    for rev in range(1, 5):
        store.commit(V, DEV, [NewRecord(fid(1), rev, rev - 1, f"v{rev}".encode())], 1000.0)
    store.prune(RetentionPolicy(keep_days=1, keep_last=1, blob_grace_s=DAY), 1000.0 + 3 * DAY)
    assert store.changes(V, 1, 10, 1 << 20).at_since is None  # pruned: no claim either way
    assert store.changes(V, 4, 10, 1 << 20).at_since.rev == 4


def test_history_and_single_revisions(store):
    for rev in range(1, 5):
        store.commit(V, DEV, [NewRecord(fid(1), rev, rev - 1, f"v{rev}".encode())], 1000.0)
    hist = store.history(V, fid(1), 10)
    assert [r.rev for r in hist] == [4, 3, 2, 1]
    assert store.get_record(V, fid(1), 2).sealed == b"v2"
    assert store.get_record(V, fid(1), 9) is None


def test_retention_keeps_recent_and_last_k_and_collects_blobs(store):
    old_blob, new_blob = "0b" * 16, "0c" * 16
    put_blob(store, old_blob, b"old", now=1000.0)
    put_blob(store, new_blob, b"new", now=1000.0)
    # file 1: 5 old revisions (day 0), the first referencing old_blob
    store.commit(V, DEV, [NewRecord(fid(1), 1, 0, b"r1", (old_blob,))], 1000.0)
    for rev in range(2, 6):
        store.commit(V, DEV, [NewRecord(fid(1), rev, rev - 1, b"r", (new_blob,))], 1000.0)
    # file 2: 3 revisions, recent
    for rev in range(1, 4):
        store.commit(V, DEV, [NewRecord(fid(2), rev, rev - 1, b"s")], 1000.0 + 40 * DAY)
    now = 1000.0 + 40 * DAY
    stats = store.prune(RetentionPolicy(keep_days=30, keep_last=2, blob_grace_s=DAY), now)
    assert [r.rev for r in store.history(V, fid(1), 10)] == [5, 4]  # old: only the last 2
    assert [r.rev for r in store.history(V, fid(2), 10)] == [3, 2, 1]  # recent: all kept
    assert stats.records == 3
    assert stats.blobs == 1 and store.missing_blobs(V, [old_blob, new_blob]) == [old_blob]
    if isinstance(store, SqliteStorage):
        assert not store.blob_path(V, old_blob).exists()
    assert leftovers(store) == []  # the bytes went with it
    assert store.read_blob(V, new_blob)[1] == b"new"
    # the head is never pruned, even with keep_last=1 and everything old
    store.prune(RetentionPolicy(keep_days=0, keep_last=1, blob_grace_s=0), now + 100 * DAY)
    assert store.head(V, fid(1)).rev == 5 and store.head(V, fid(2)).rev == 3


def test_prune_spares_fresh_unreferenced_blobs(store):
    b = "0d" * 16
    put_blob(store, b, b"awaiting its commit", now=1000.0)
    store.prune(RetentionPolicy(blob_grace_s=DAY), 1000.0 + 3600)
    assert store.missing_blobs(V, [b]) == []


def test_blob_checksum_dedup_and_id_taken(store):
    b = "ab" * 16
    sink = store.blob_sink(V, b, sha(b"right"), 1000.0)
    sink.write(b"wrong")
    with pytest.raises(ChecksumMismatch):
        sink.seal()
    assert store.missing_blobs(V, [b]) == [b]
    assert leftovers(store) == []  # nothing partial left behind
    first = store.put_blob(V, b, b"right", 1000.0)
    assert first.created and (first.info.size, first.info.sha256) == (5, sha(b"right"))
    again = store.put_blob(V, b, b"right", 1000.0)  # dedup: same id, same bytes
    assert not again.created and again.info == first.info
    with pytest.raises(BlobIdTaken):
        put_blob(store, b, b"other bytes")
    assert store.read_blob(V, b)[1] == b"right"


def test_group_publish(store):
    sinks = []
    for i, data in enumerate([b"a", b"bb", b"a"]):  # the third repeats the first's id
        sink = store.blob_sink(V, f"{i % 2:032x}", sha(data), 1000.0)
        sink.write(data)
        sink.seal()
        sinks.append(sink)
    assert store.missing_blobs(V, [f"{0:032x}"]) == [f"{0:032x}"]  # sealed is not visible
    out = store.publish_blobs(V, sinks)
    assert [p.created for p in out] == [True, True, False]
    assert store.read_blob(V, f"{1:032x}")[1] == b"bb"
    assert leftovers(store) == []
    clash = store.blob_sink(V, f"{0:032x}", sha(b"other"), 1000.0)
    clash.write(b"other")
    clash.seal()
    fresh = store.blob_sink(V, f"{2:032x}", sha(b"c"), 1000.0)
    fresh.write(b"c")
    fresh.seal()
    with pytest.raises(BlobIdTaken):
        store.publish_blobs(V, [clash, fresh])
    assert store.read_blob(V, f"{0:032x}")[1] == b"a"  # never overwritten
    assert store.read_blob(V, f"{2:032x}")[1] == b"c"  # the rest of the group published


def test_corrupt_blob_is_detected_on_read_and_set_aside(store):
    b = "ef" * 16
    put_blob(store, b, b"pristine bytes")
    damage(store, V, b, b"tampered bytes")
    from companion.relay.storage import BlobCorrupt

    with pytest.raises(BlobCorrupt):
        store.read_blob(V, b)
    assert store.missing_blobs(V, [b]) == [b]  # a client can upload it again
    put_blob(store, b, b"pristine bytes")
    assert store.read_blob(V, b)[1] == b"pristine bytes"


def test_key_blob_compare_and_swap(store):
    assert store.get_key_blob(V) is None
    with pytest.raises(KeyBlobConflict):
        store.put_key_blob(V, b"k2", sha(b"k1"), 1000.0)  # nothing to replace yet
    store.put_key_blob(V, b"k1", None, 1000.0)
    with pytest.raises(KeyBlobConflict):
        store.put_key_blob(V, b"k1bis", None, 1000.0)  # a second "first device"
    with pytest.raises(KeyBlobConflict):
        store.put_key_blob(V, b"k2", sha(b"stale"), 1000.0)
    store.put_key_blob(V, b"k2", sha(b"k1"), 1001.0, DEV)
    assert store.get_key_blob(V) == b"k2"
    assert store.get_vault(V).has_key
    assert [(w.key, w.sha256, w.set_at, w.device_id) for w in store.key_history(V)] == [
        (b"k2", sha(b"k2"), 1001.0, DEV),
        (b"k1", sha(b"k1"), 1000.0, ""),
    ]


def test_invites_are_one_time_and_expire(store):
    h = hashlib.sha256(b"code").digest()
    store.add_invite(V, h, 1000.0, 2000.0, "human")
    dev = Device(DEV, V, "laptop", "human", b"t" * 32, 1000.0)
    with pytest.raises(InviteRefused) as e:
        store.redeem_invite("00000000000000bb", h, dev, 1500.0)  # names another vault
    assert e.value.reason == "unknown"
    _, stored = store.redeem_invite(V, h, dev, 1500.0)
    assert stored.kind == "human"
    dev2 = Device("d0000000000000d2", V, "x", "", b"u" * 32, 1500.0)
    with pytest.raises(InviteRefused) as e:
        store.redeem_invite(V, h, dev2, 1600.0)
    assert e.value.reason == "used"
    h2 = hashlib.sha256(b"code2").digest()
    store.add_invite(V, h2, 1000.0, 2000.0)
    with pytest.raises(InviteRefused) as e:
        store.redeem_invite(V, h2, dev2, 2000.0)
    assert e.value.reason == "expired"
    h3 = hashlib.sha256(b"code3").digest()
    store.add_invite(V, h3, 1000.0, 2000.0)  # agent by default
    with pytest.raises(InviteRefused) as e:
        store.redeem_invite(V, h3, dataclasses.replace(dev2, kind="human"), 1500.0)
    assert (e.value.reason, e.value.invite_kind) == ("kind_mismatch", "agent")
    _, stored = store.redeem_invite(V, h3, dev2, 1500.0)  # still unused; no kind: the invite's
    assert stored.kind == "agent"
    assert [d.device_id for d in store.list_devices(V)] == [DEV, dev2.device_id]


def test_revoke_device(store):
    h = hashlib.sha256(b"code").digest()
    store.add_invite(V, h, 1000.0, 2000.0)
    store.redeem_invite(V, h, Device(DEV, V, "laptop", "agent", b"t" * 32, 1000.0), 1000.0)
    assert store.revoke_device(DEV, 1100.0).revoked == 1100.0
    assert store.revoke_device(DEV, 1200.0).revoked == 1100.0  # idempotent
    with pytest.raises(NotFound):
        store.revoke_device("ffffffffffffffff", 1000.0)


def test_leases(store):
    a, b = "a" * 16, "b" * 16
    assert store.acquire_lease(V, "dream-2026-11-29", a, 60, 1000.0).holder == a
    assert store.acquire_lease(V, "dream-2026-11-29", b, 60, 1010.0).holder == a
    assert store.acquire_lease(V, "dream-2026-11-29", a, 60, 1020.0).expires == 1080.0  # renew
    assert not store.release_lease(V, "dream-2026-11-29", b)
    assert store.acquire_lease(V, "dream-2026-11-29", b, 60, 1081.0).holder == b  # expired
    assert store.release_lease(V, "dream-2026-11-29", b)
    assert store.acquire_lease(V, "dream-2026-11-29", a, 60, 1082.0).holder == a


def test_concurrent_committers_never_both_win(store):
    """Many threads race to write rev 1 of the same file: exactly one wins each round."""
    wins: list[int] = []
    barrier = threading.Barrier(8)

    def racer(i: int) -> None:
        barrier.wait()
        for n in range(20):
            out = store.commit(V, DEV, [NewRecord(fid(100 + n), 1, 0, bytes([i]))], 1000.0)
            if out.committed:
                wins.append(n)

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == list(range(20))
    assert store.get_vault(V).seq == 20


def test_a_failed_transaction_leaves_nothing(tmp_path, monkeypatch):
    """An error between the inserts and COMMIT rolls the whole batch back."""
    store = SqliteStorage(tmp_path / "relay")
    store.create_vault(V, 1000.0)
    real = store._conn()

    class Exploding:
        def __init__(self, conn):
            self._c = conn

        def __getattr__(self, name):
            return getattr(self._c, name)

        def execute(self, sql, *args):
            if sql.startswith("UPDATE vaults SET seq"):
                raise sqlite3.OperationalError("disk I/O error (simulated)")
            return self._c.execute(sql, *args)

    monkeypatch.setattr(store, "_conn", lambda: Exploding(real))
    with pytest.raises(sqlite3.OperationalError):
        store.commit(V, DEV, [NewRecord(fid(1), 1, 0, b"a"), NewRecord(fid(2), 1, 0, b"b")], 1.0)
    monkeypatch.undo()
    assert store.head(V, fid(1)) is None and store.head(V, fid(2)) is None
    assert store.get_vault(V).seq == 0
    assert store.commit(V, DEV, [NewRecord(fid(1), 1, 0, b"a")], 1.0).seq == 1
    store.close()


def test_reopen_keeps_everything(tmp_path):  # SQLite: its files
    s = SqliteStorage(tmp_path / "relay")
    s.create_vault(V, 1.0)
    s.commit(V, DEV, [NewRecord(fid(1), 1, 0, b"a")], 1.0)
    put_blob(s, "aa" * 16, b"blob")
    s.close()
    s = SqliteStorage(tmp_path / "relay")
    assert s.head(V, fid(1)).sealed == b"a"
    assert s.read_blob(V, "aa" * 16)[1] == b"blob"
    assert s.db_path.stat().st_mode & 0o077 == 0  # owner-only
    s.close()


def test_read_blobs_in_groups_bounded_by_bytes(store):
    """read_blobs reads in order until the byte budget is reached (at least one blob), and a
    missing or damaged blob ends the group with its error."""
    from companion.relay.storage import BlobCorrupt

    ids = [f"{i:032x}" for i in range(1, 7)]
    for i, b in enumerate(ids):
        put_blob(store, b, bytes([i]) * 100)
    group = store.read_blobs(V, ids, 250)
    assert [info.blob_id for info, _ in group] == ids[:3]  # 300 bytes >= 250: stop
    assert store.read_blobs(V, ids, 1)[0][1] == bytes([0]) * 100  # always at least one
    assert len(store.read_blobs(V, ids, 10**6)) == 6
    damage(store, V, ids[2], b"x" * 100)
    group = store.read_blobs(V, ids, 10**6)
    assert len(group) == 3 and isinstance(group[2], BlobCorrupt)
    group = store.read_blobs(V, [ids[0], "ff" * 16, ids[1]], 10**6)
    assert len(group) == 2 and isinstance(group[1], NotFound)


def _files_under(folder) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_small_blobs_live_in_the_database_large_ones_in_files(tmp_path):
    """A note-sized blob is a row (one file per note made the first upload of a vault as slow
    as creating 10,000 files); a large one streams to a file. Both read back, are checked,
    pruned and exported alike."""
    from companion.relay.sqlite_storage import INLINE_MAX

    s = SqliteStorage(tmp_path / "relay")
    s.create_vault(V, 1000.0)
    small, large = "aa" * 16, "bb" * 16
    big = bytes(range(256)) * (INLINE_MAX // 256 + 1)
    for blob_id, data in ((small, b"x" * 100), (large, big)):
        sink = s.blob_sink(V, blob_id, sha(data), 1000.0)
        for i in range(0, len(data), 4096):  # written in pieces, as a request body arrives
            sink.write(data[i : i + 4096])
        sink.seal()
        s.publish_blobs(V, [sink])
    assert _files_under(s.blob_dir) == [large]
    assert s.read_blob(V, small)[1] == b"x" * 100 and s.read_blob(V, large)[1] == big
    assert leftovers(s) == []
    # damage to the row is caught like damage to a file
    damage(s, V, small, b"y" * 100)
    from companion.relay.storage import BlobCorrupt

    with pytest.raises(BlobCorrupt):
        s.read_blob(V, small)
    assert s.missing_blobs(V, [small]) == [small]
    assert _files_under(s.data_dir / "quarantine")  # the damaged bytes are set aside
    # prune forgets the row
    s.prune(RetentionPolicy(keep_days=0, keep_last=1, blob_grace_s=0), 5000.0)
    assert s.missing_blobs(V, [large]) == [large] and _files_under(s.blob_dir) == []
    assert s._conn().execute("SELECT COUNT(*) FROM blob_data").fetchone()[0] == 0
    s.close()
