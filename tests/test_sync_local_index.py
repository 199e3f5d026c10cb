"""The SQLite sync index: entries, tombstones, merge bases, key/value, outbox, persistence."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion.paths import device_paths
from companion.sync.index import (
    BASE_TEXT_LIMIT,
    Entry,
    SyncIndex,
    SyncIndexError,
    index_path,
    vault_key,
)


def entry(path: str, sha: str = "a" * 64, **kw: object) -> Entry:
    base: dict[str, object] = {"size": 3, "mtime_ns": 10, "inode": 7}
    base.update(kw)
    return Entry(path=path, sha256=sha, **base)  # type: ignore[arg-type]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SyncIndex]:
    idx = SyncIndex(tmp_path / "i" / "index.sqlite")
    yield idx
    idx.close()


def test_index_path_lives_under_the_data_dir_per_vault(tmp_path: Path) -> None:
    data = device_paths().data_dir
    v1, v2 = tmp_path / "My Vault", tmp_path / "other"
    v1.mkdir()
    v2.mkdir()
    p1 = index_path(data, v1)
    assert p1.parent.parent == data / "sync"
    assert p1.name == "index.sqlite"
    assert p1.parent.name.startswith("My_Vault-")
    assert index_path(data, v1) == p1  # stable
    assert index_path(data, v2) != p1
    assert vault_key(v1) == vault_key(str(v1) + "/")


def test_put_get_roundtrip_and_tombstones(index: SyncIndex) -> None:
    e = entry(
        "knowledge/Note.md",
        rev=3,
        file_id="f" * 64,
        is_text=True,
        device="laptop",
        device_kind="human",
        inode=-5,  # folded 64-bit inodes can be negative
    )
    index.put(e)
    got = index.get("knowledge/Note.md")
    assert got is not None
    assert got.rev == 3 and got.file_id == "f" * 64 and got.is_text and got.inode == -5
    assert got.device == "laptop" and got.device_kind == "human" and got.updated_ns > 0
    assert index.count_live() == 1
    index.mark_deleted("knowledge/Note.md", rev=4, device="server", device_kind="agent")
    t = index.get("knowledge/Note.md")
    assert t is not None and t.deleted and t.rev == 4 and t.device == "server"
    assert index.count_live() == 0
    assert index.live_stats() == {}
    index.forget("knowledge/Note.md")
    assert index.get("knowledge/Note.md") is None


def test_live_stats_prefix_and_fold(index: SyncIndex) -> None:
    index.put_many(
        [
            entry("a.md", mtime_ns=1, size=2, inode=3),
            entry("dir/b.md", mtime_ns=4),
            entry("dir/sub/c.md"),
            entry("dir0.md"),
            entry("dirx/d.md"),
            entry("Dir/B.md"),
        ]
    )
    assert index.live_stats()["a.md"] == (1, 2, 3)
    assert set(index.live_stats(prefix="dir/")) == {"dir/b.md", "dir/sub/c.md"}
    assert set(index.live_stats(fold_key="dir/b.md")) == {"dir/b.md", "Dir/B.md"}
    assert index.paths_with_fold("dir/b.md") == ["Dir/B.md", "dir/b.md"]


def test_update_stats_keeps_content_fields(index: SyncIndex) -> None:
    index.put(entry("a.md", rev=2))
    index.update_stats([("a.md", (99, 3, 8))])
    got = index.get("a.md")
    assert got is not None and got.stat_key() == (99, 3, 8) and got.rev == 2


def test_iter_entries_streams_in_path_order(index: SyncIndex) -> None:
    index.put_many(entry(f"n{i:04d}.md") for i in range(2500))
    index.mark_deleted("n0001.md", rev=1)
    paths = [e.path for e in index.iter_entries(batch=300)]
    assert len(paths) == 2499 and paths == sorted(paths) and "n0001.md" not in paths
    assert len(list(index.iter_entries(include_deleted=True))) == 2500


def test_merge_base_compressed_and_limited(index: SyncIndex) -> None:
    text = ("a line of a note\n" * 5000).encode()
    assert index.set_base("n.md", text) is True
    assert index.get_base("n.md") == text
    raw = sqlite3.connect(index.path).execute("SELECT length(data) FROM bases").fetchone()[0]
    assert raw < len(text) / 10  # stored compressed
    assert index.set_base("n.md", b"x" * (BASE_TEXT_LIMIT + 1)) is False
    assert index.get_base("n.md") is None
    index.set_base("old.md", b"base")
    index.move_base("old.md", "new.md")
    assert index.get_base("new.md") == b"base" and index.get_base("old.md") is None
    index.put(entry("new.md"))
    index.mark_deleted("new.md", rev=2)
    assert index.get_base("new.md") is None


def test_batch_operations_match_the_single_ones(index: SyncIndex) -> None:
    """get_many / set_bases / complete_many: the same results as one call per item."""
    from concurrent.futures import ThreadPoolExecutor

    paths = [f"d{i % 7}/n{i}.md" for i in range(1200)]  # more than one SQL chunk
    index.put_many(entry(p, rev=i + 1) for i, p in enumerate(paths))
    index.mark_deleted(paths[5], rev=99)
    got = index.get_many([*paths, "missing.md", paths[0]])
    assert set(got) == set(paths)
    assert all(got[p] == index.get(p) for p in paths)
    assert got[paths[5]].deleted
    assert index.get_many([]) == {}

    index.set_base("gone.md", b"old base")
    texts = {p: f"text of {p}\n".encode() * 50 for p in paths[:300]}
    items = [*texts.items(), ("gone.md", None), ("huge.md", b"x" * (BASE_TEXT_LIMIT + 1))]
    with ThreadPoolExecutor(4) as pool:
        index.set_bases(items, mapper=pool.map)
    assert all(index.get_base(p) == t for p, t in texts.items())
    assert index.get_base("gone.md") is None and index.get_base("huge.md") is None

    ops = [index.enqueue("push", p) for p in paths[:50]]
    index.complete_many(ops[:40])
    assert sorted(op.id for op in index.pending()) == ops[40:]

    # enqueue_many with replace: like one enqueue(replace=True) per item, in order
    index.enqueue("inbox", "a.md", {"rev": 1})
    index.enqueue("inbox", "b.md", {"rev": 1})
    index.enqueue_many("inbox", [("a.md", {"rev": 2}), ("c.md", {"rev": 1})], replace=True)
    inbox = [(op.path, op.payload) for op in index.pending() if op.kind == "inbox"]
    assert inbox == [("b.md", {"rev": 1}), ("a.md", {"rev": 2}), ("c.md", {"rev": 1})]


def test_meta_and_outbox_survive_reopen(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    with SyncIndex(db) as idx:
        idx.set_meta("vault_id", "v1")
        idx.set_meta("last_seq", "41")
        idx.set_meta("last_seq", "42")
        a = idx.enqueue("push", "a.md", {"sha256": "x"})
        idx.enqueue("push", "b.md")
        idx.enqueue("delete", "a.md", replace=True)
        idx.put(entry("kept.md"))
    with SyncIndex(db) as idx:
        assert idx.get_meta("vault_id") == "v1" and idx.get_meta("last_seq") == "42"
        assert idx.get_meta("missing", "d") == "d"
        ops = idx.pending()
        assert [(o.kind, o.path) for o in ops] == [("push", "b.md"), ("delete", "a.md")]
        assert all(o.id != a for o in ops)
        idx.record_failure(ops[0].id, "relay unreachable")
        idx.complete(ops[1].id)
        (op,) = idx.pending()
        assert op.attempts == 1 and op.last_error == "relay unreachable"
        assert idx.get("kept.md") is not None


def test_transaction_rolls_back_on_error(index: SyncIndex) -> None:
    with pytest.raises(RuntimeError), index.transaction():
        index.put(entry("a.md"))
        index.set_meta("k", "v")
        raise RuntimeError("boom")
    assert index.get("a.md") is None and index.get_meta("k") is None


def test_wal_mode_and_thread_safety(index: SyncIndex) -> None:
    mode = sqlite3.connect(index.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for i in range(200):
                index.put(entry(f"t{k}/{i}.md"))
                index.get(f"t{k}/{i}.md")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and index.count_live() == 800


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    SyncIndex(db).close()
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version=99")
    con.commit()
    con.close()
    with pytest.raises(SyncIndexError, match="newer version"):
        SyncIndex(db)


def test_corrupt_file_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(SyncIndexError, match="cannot open"):
        SyncIndex(db)
