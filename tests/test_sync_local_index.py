"""The SQLite sync index: entries, tombstones, merge bases, key/value, inbox, requests,
migration."""

from __future__ import annotations

import random
import sqlite3
import threading
import zlib
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.paths import device_paths
from companion.sync.local.pathsafe import fold
from companion.sync.round.conflicts import (
    case_collision_name,
    conflict_copy_name,
    unicode_twin_name,
)
from companion.sync.state.applied import AppliedRow
from companion.sync.state.bases import BASE_TEXT_LIMIT, pack_bases
from companion.sync.state.files import Entry
from companion.sync.state.held import HeldRow
from companion.sync.state.index import (
    SCHEMA_VERSION,
    SyncIndex,
    SyncIndexError,
    index_path,
    vault_key,
)
from companion.sync.state.quarantine import QuarantineRow


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
    index.files.put(e)
    got = index.files.get("knowledge/Note.md")
    assert got is not None
    assert got.rev == 3 and got.file_id == "f" * 64 and got.is_text and got.inode == -5
    assert got.device == "laptop" and got.device_kind == "human" and got.updated_ns > 0
    assert index.files.count_live() == 1
    index.files.mark_deleted("knowledge/Note.md", rev=4, device="server", device_kind="agent")
    t = index.files.get("knowledge/Note.md")
    assert t is not None and t.deleted and t.rev == 4 and t.device == "server"
    assert index.files.count_live() == 0
    assert index.files.live_stats() == {}
    index.files.forget("knowledge/Note.md")
    assert index.files.get("knowledge/Note.md") is None


_FIXTURE = [HealthCheck.function_scoped_fixture]  # tmp_path_factory makes a folder per example
_NAMES = st.sampled_from(
    ["Home.md", "a/b.md", "Meeting (conflict resolution).md", "x (case conflict).md",
     "n (conflict pc 2026-01-02 0304).md", "Makefile", "é/ñ (unicode conflict 2).txt"]
)  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=_FIXTURE)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["put", "put_deleted", "mark_deleted", "forget"]), _NAMES),
        max_size=25,
    )
)
def test_the_live_count_and_the_copies_follow_every_write(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str]]
) -> None:
    """`count_live` (all rows less the tombstones) and `kept_copy_candidates` (a partial index)
    always equal the plain reading of every row, whatever sequence of writes came before."""
    with SyncIndex(tmp_path_factory.mktemp("i") / "index.sqlite") as idx:
        for op, path in steps:
            if op == "put":
                idx.files.put(entry(path))
            elif op == "put_deleted":
                idx.files.put(entry(path, deleted=True))
            elif op == "mark_deleted":
                idx.files.mark_deleted(path, rev=9)
            else:
                idx.files.forget(path)
        live = sorted(e.path for e in idx.files.iter_entries())
        assert idx.files.count_live() == len(live)
        like = [p for p in live if any(t in p.lower() for t in
                (" (conflict ", " (case conflict", " (unicode conflict"))]  # fmt: skip
        assert idx.files.kept_copy_candidates() == like


@given(
    stem=st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20).filter(
        lambda s: "/" not in s and s.strip(".") != ""
    ),
    ext=st.sampled_from(["", ".md", ".canvas", ".tar.gz"]),
    device=st.text(min_size=1, max_size=12),
)
@settings(max_examples=80, deadline=None, suppress_health_check=_FIXTURE)
def test_every_kept_name_the_sync_writes_is_found_by_the_index(
    tmp_path_factory: pytest.TempPathFactory, stem: str, ext: str, device: str
) -> None:
    """The partial index's patterns catch every name `conflicts` writes for a kept copy, and
    `views.copy_paths` keeps them: status and the tray list every copy in the vault."""
    from datetime import datetime

    from companion.sync.round.views import copy_paths

    path = f"notes/{stem}{ext}"
    kept = [
        conflict_copy_name(path, device, datetime(2026, 1, 2, 3, 4)),
        case_collision_name(path),
        unicode_twin_name(path),
    ]
    with SyncIndex(tmp_path_factory.mktemp("i") / "index.sqlite") as idx:
        idx.files.put(entry(path))
        for name in kept:
            idx.files.put(entry(name))
        assert copy_paths(idx.files.kept_copy_candidates()) == sorted(kept)


def test_an_index_without_the_newer_indexes_gets_them_and_is_read_the_same(
    tmp_path: Path,
) -> None:
    """An index an older companion wrote has no `files_tombstones` / `files_kept_copies`: the
    next writable open adds them; a read-only reader before that gives the same answers."""
    db = tmp_path / "index.sqlite"
    with SyncIndex(db) as idx:
        idx.files.put(entry("a.md"))
        idx.files.put(entry("a (conflict pc 2026-01-02 0304).md"))
        idx.files.put(entry("b.md", deleted=True))
    with closing(sqlite3.connect(db)) as raw:
        raw.execute("DROP INDEX files_tombstones")
        raw.execute("DROP INDEX files_kept_copies")
        raw.commit()
    with SyncIndex(db, readonly=True) as ro:
        assert ro.files.count_live() == 2
        assert ro.files.kept_copy_candidates() == ["a (conflict pc 2026-01-02 0304).md"]
    with SyncIndex(db) as idx:
        assert idx.files.count_live() == 2
    with closing(sqlite3.connect(db)) as raw:
        names = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"files_tombstones", "files_kept_copies"} <= names


def test_live_stats_prefix_and_fold(index: SyncIndex) -> None:
    index.files.put_many(
        [
            entry("a.md", mtime_ns=1, size=2, inode=3),
            entry("dir/b.md", mtime_ns=4),
            entry("dir/sub/c.md"),
            entry("dir0.md"),
            entry("dirx/d.md"),
            entry("Dir/B.md"),
        ]
    )
    assert index.files.live_stats()["a.md"] == (1, 2, 3, 0)
    assert set(index.files.live_stats(prefix="dir/")) == {"dir/b.md", "dir/sub/c.md"}
    assert set(index.files.live_stats(fold_key="dir/b.md")) == {"dir/b.md", "Dir/B.md"}
    assert index.files.paths_with_fold("dir/b.md") == ["Dir/B.md", "dir/b.md"]


def test_update_stats_keeps_content_fields(index: SyncIndex) -> None:
    index.files.put(entry("a.md", rev=2))
    index.files.update_stats([("a.md", (99, 3, 8, 77))])
    got = index.files.get("a.md")
    assert got is not None and got.stat_key() == (99, 3, 8, 77) and got.rev == 2
    index.files.forget_stats(["a.md"])  # the next scan must hash it
    got = index.files.get("a.md")
    assert got is not None and got.stat_key() == (0, 3, 0, 0) and got.sha256 == "a" * 64


def test_iter_entries_streams_in_path_order(index: SyncIndex) -> None:
    index.files.put_many(entry(f"n{i:04d}.md") for i in range(2500))
    index.files.mark_deleted("n0001.md", rev=1)
    paths = [e.path for e in index.files.iter_entries(batch=300)]
    assert len(paths) == 2499 and paths == sorted(paths) and "n0001.md" not in paths
    assert len(list(index.files.iter_entries(include_deleted=True))) == 2500


def test_the_rotation_slice_is_bounded_by_bytes_and_always_moves_on(index: SyncIndex) -> None:
    """A full round re-hashes up to `limit` files but no more than `max_bytes` of them: 64
    photos of 30 MB would otherwise make one quiet round read 1.9 GB. A file over the budget is
    a slice of its own, so the rotation still goes round the whole vault."""
    mib = 1 << 20
    index.files.put_many([entry(f"a/photo{i}.jpg", size=3 * mib) for i in range(4)])
    index.files.put(entry("b/video.mp4", size=50 * mib))
    index.files.put_many([entry(f"c/n{i}.md", size=2000) for i in range(5)])
    index.files.put(entry("c/gone.md", size=2000, deleted=True))

    def slice_(after: str) -> list[str]:
        return [e.path for e in index.files.rotation(after, 64, max_bytes=7 * mib)]

    assert slice_("") == ["a/photo0.jpg", "a/photo1.jpg"]  # 6 MiB; a third would pass 7
    assert slice_("a/photo1.jpg") == ["a/photo2.jpg", "a/photo3.jpg"]
    assert slice_("a/photo3.jpg") == ["b/video.mp4"]  # alone: over the budget by itself
    wrapped = [f"c/n{i}.md" for i in range(5)] + ["a/photo0.jpg", "a/photo1.jpg"]
    assert slice_("b/video.mp4") == wrapped  # round to the start, within the budget
    assert [e.path for e in index.files.rotation("", 3)] == ["a/photo0.jpg", "a/photo1.jpg",
                                                       "a/photo2.jpg"]  # fmt: skip


def test_merge_base_compressed_and_limited(index: SyncIndex) -> None:
    text = ("a line of a note\n" * 5000).encode()
    assert index.bases.set("n.md", text) is True
    assert index.bases.get("n.md") == text
    raw = sqlite3.connect(index.path).execute("SELECT length(data) FROM bases").fetchone()[0]
    assert raw < len(text) / 10  # stored compressed
    assert index.bases.set("n.md", b"x" * (BASE_TEXT_LIMIT + 1)) is False
    assert index.bases.get("n.md") is None
    index.bases.set("old.md", b"base")
    index.bases.move("old.md", "new.md")
    assert index.bases.get("new.md") == b"base" and index.bases.get("old.md") is None
    index.files.put(entry("new.md"))
    index.files.mark_deleted("new.md", rev=2)
    assert index.bases.get("new.md") is None


def test_batch_operations_match_the_single_ones(index: SyncIndex) -> None:
    """files.get_many / bases.set_many / complete_many: the same results as one call per item."""
    from concurrent.futures import ThreadPoolExecutor

    paths = [f"d{i % 7}/n{i}.md" for i in range(1200)]  # more than one SQL chunk
    index.files.put_many(entry(p, rev=i + 1) for i, p in enumerate(paths))
    index.files.mark_deleted(paths[5], rev=99)
    got = index.files.get_many([*paths, "missing.md", paths[0]])
    assert set(got) == set(paths)
    assert all(got[p] == index.files.get(p) for p in paths)
    assert got[paths[5]].deleted
    assert index.files.get_many([]) == {}

    index.bases.set("gone.md", b"old base")
    texts = {p: f"text of {p}\n".encode() * 50 for p in paths[:300]}
    items = [*texts.items(), ("gone.md", None), ("huge.md", b"x" * (BASE_TEXT_LIMIT + 1))]
    with ThreadPoolExecutor(4) as pool:
        index.bases.set_many(items, mapper=pool.map)
    assert all(index.bases.get(p) == t for p, t in texts.items())
    assert index.bases.get("gone.md") is None and index.bases.get("huge.md") is None

    # bases compressed ahead (some of them, on another thread) are stored as if compressed here
    index.bases.set("gone.md", b"old base")
    edited = [(p, t + b"v2") for p, t in texts.items()] + [("gone.md", None)]
    ahead = pack_bases(edited[:100] + [("gone.md", None)])
    assert len(ahead) == 100 and "gone.md" not in ahead
    index.bases.set_many(edited, packed=ahead)
    assert all(index.bases.get(p) == t for p, t in edited[:-1])
    assert index.bases.get("gone.md") is None

    index.inbox.add((p, {"rev": 1}) for p in paths[:50])
    rows = index.inbox.rows()
    index.inbox.done(r.id for r in rows[:40])
    assert [r.path for r in index.inbox.rows()] == paths[40:50]

    # one queued change per path: a newer one replaces it (and clears its problem)
    index.inbox.done(r.id for r in index.inbox.rows())
    index.inbox.add([("a.md", {"rev": 1}), ("b.md", {"rev": 1})])
    index.inbox.problem(index.inbox.rows()[0].id, "a symbolic link on its way")
    assert [r.problem for r in index.inbox.rows()] == ["a symbolic link on its way", ""]
    index.inbox.add([("a.md", {"rev": 2}), ("c.md", {"rev": 1})])
    inbox = [(r.path, r.payload, r.problem) for r in index.inbox.rows()]
    assert inbox == [("a.md", {"rev": 2}, ""), ("b.md", {"rev": 1}, ""), ("c.md", {"rev": 1}, "")]
    assert index.inbox.count() == 3


def test_meta_inbox_and_requests_survive_reopen(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    with SyncIndex(db) as idx:
        idx.meta.set("vault_id", "v1")
        idx.meta.set("last_seq", "41")
        idx.meta.set("last_seq", "42")
        idx.inbox.add([("a.md", {"rev": 1}), ("b.md", {"rev": 3})])
        idx.files.put(entry("kept.md"))
        rid = idx.requests.add("restore", {"path": "a.md", "rev": 1})
        idx.applied.record([AppliedRow("a.md", "f" * 64, b"before\n", 10)])
    with SyncIndex(db) as idx:
        assert idx.meta.get("vault_id") == "v1" and idx.meta.get("last_seq") == "42"
        assert idx.meta.get("missing", "d") == "d"
        assert [(r.path, r.payload) for r in idx.inbox.rows()] == [
            ("a.md", {"rev": 1}), ("b.md", {"rev": 3}),
        ]  # fmt: skip
        assert idx.files.get("kept.md") is not None
        (req,) = idx.requests.rows("pending")
        assert (req.id, req.kind, req.args) == (rid, "restore", {"path": "a.md", "rev": 1})
        assert idx.requests.set(rid, "running", only_if="pending")
        assert not idx.requests.set(rid, "cancelled", only_if="pending")
        idx.requests.set(rid, "done", {"code": 0})
        assert idx.requests.get(rid).result == {"code": 0}  # type: ignore[union-attr]
        assert idx.applied.get_many(["a.md", "x.md"]) == {
            "a.md": AppliedRow("a.md", "f" * 64, b"before\n", 10)
        }
        idx.applied.prune(11)
        assert idx.applied.get_many(["a.md"]) == {}


def test_a_command_waiting_on_its_request_reads_only_its_own_row(tmp_path: Path) -> None:
    """`requests.wait` looks its request up every few milliseconds, and finished requests are
    kept a day. The lookup used to decode every row of the table each time, so one damaged
    row broke every waiting command and the cost grew with each request of the day."""
    db = tmp_path / "index.sqlite"
    with SyncIndex(db) as idx:
        other = idx.requests.add("round", {})
        mine = idx.requests.add("restore", {"path": "a.md", "rev": 1})
        with closing(sqlite3.connect(db)) as con, con:
            con.execute("UPDATE requests SET args='{not json', result='[' WHERE id=?", (other,))
        idx.requests.set(mine, "done", {"code": 0})
        got = idx.requests.get(mine)
        assert got is not None and (got.kind, got.args, got.result) == (
            "restore", {"path": "a.md", "rev": 1}, {"code": 0},
        )  # fmt: skip
        assert idx.requests.get(mine + 1) is None


def test_an_index_of_schema_1_is_migrated(tmp_path: Path) -> None:
    """The inbox used to be the `outbox` table; files had no ctime column."""
    db = tmp_path / "index.sqlite"
    con = sqlite3.connect(db)
    con.executescript(
        """
        CREATE TABLE files (path TEXT PRIMARY KEY, fold TEXT NOT NULL, file_id TEXT NOT NULL
            DEFAULT '', rev INTEGER NOT NULL DEFAULT 0, sha256 TEXT NOT NULL DEFAULT '',
            size INTEGER NOT NULL DEFAULT 0, mtime_ns INTEGER NOT NULL DEFAULT 0,
            inode INTEGER NOT NULL DEFAULT 0, is_text INTEGER NOT NULL DEFAULT 0,
            deleted INTEGER NOT NULL DEFAULT 0, device TEXT NOT NULL DEFAULT '',
            device_kind TEXT NOT NULL DEFAULT '', updated_ns INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,
            path TEXT NOT NULL, payload TEXT NOT NULL DEFAULT '{}', created_ns INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT NOT NULL DEFAULT '');
        INSERT INTO files (path, fold, rev, sha256, size, mtime_ns, inode)
            VALUES ('a.md', 'a.md', 3, 'ab', 2, 5, 6);
        INSERT INTO outbox (kind, path, payload, created_ns)
            VALUES ('remote', 'b.md', '{"rev": 4}', 1);
        PRAGMA user_version=1;
        """
    )
    con.close()
    with SyncIndex(db, readonly=True) as ro:  # a reader beside an engine not upgraded yet
        assert ro.files.get("a.md") is not None and ro.files.get("a.md").ctime_ns == 0  # type: ignore[union-attr]
        assert [r.path for r in ro.inbox.rows()] == ["b.md"]
    with SyncIndex(db) as idx:
        got = idx.files.get("a.md")
        assert got is not None and got.stat_key() == (5, 2, 6, 0) and got.rev == 3
        assert [(r.path, r.payload) for r in idx.inbox.rows()] == [("b.md", {"rev": 4})]
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "outbox" not in tables and {"inbox", "applied", "requests", "bases"} <= tables
    con.close()


def test_an_index_of_schema_3_gets_the_fold_both_engines_share(tmp_path: Path) -> None:
    """Schema 4 folds names as the plugin does (upper, then lower case): a schema 3 index
    kept `str.casefold()` keys, under which `ı.md` and `I.md` did not meet (issue 43, R11)."""
    db = tmp_path / "index.sqlite"
    SyncIndex(db).close()
    con = sqlite3.connect(db)
    con.execute(
        "INSERT INTO files (path, fold, rev, sha256, size, mtime_ns, inode) "
        "VALUES ('\u0131.md', '\u0131.md', 1, 'ab', 2, 5, 6)"
    )
    con.execute("PRAGMA user_version=3")
    con.commit()
    con.close()
    with SyncIndex(db) as idx:
        assert idx.files.paths_with_fold(fold("I.md")) == ["\u0131.md"]
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    con.close()


def test_an_index_of_schema_2_is_migrated_with_its_bases(tmp_path: Path) -> None:
    """Schema 3 keeps file contents (merge bases, the stale-save window's previous versions)
    in rowid tables; what a schema 2 index held is carried over."""
    db = tmp_path / "index.sqlite"
    SyncIndex(db).close()
    con = sqlite3.connect(db)
    con.executescript(
        """
        DROP TABLE bases;
        DROP TABLE applied;
        CREATE TABLE bases (path TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;
        CREATE TABLE applied (path TEXT PRIMARY KEY, prev_sha TEXT NOT NULL, prev_data BLOB,
            applied_ns INTEGER NOT NULL) WITHOUT ROWID;
        PRAGMA user_version=2;
        """
    )
    con.execute("INSERT INTO bases VALUES ('a.md', ?)", (zlib.compress(b"base text\n"),))
    con.execute("INSERT INTO applied VALUES ('a.md', 'ab', ?, 7)", (b"before\n",))
    con.commit()
    con.close()
    with SyncIndex(db) as idx:
        assert idx.bases.get("a.md") == b"base text\n"
        idx.bases.set("b.md", b"another\n")
        assert idx.bases.get("b.md") == b"another\n"
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("SELECT prev_sha, prev_data, applied_ns FROM applied").fetchall() == [
        ("ab", b"before\n", 7)
    ]
    ddl = dict(con.execute("SELECT name, sql FROM sqlite_master WHERE type='table'").fetchall())
    assert "WITHOUT ROWID" not in ddl["bases"] and "WITHOUT ROWID" not in ddl["applied"]
    assert not {"bases_v3", "applied_v3"} & set(ddl)
    con.close()


def test_merge_bases_take_about_their_own_size_on_disk(tmp_path: Path) -> None:
    """A typical note's compressed base is ~1.1 KB. In the WITHOUT ROWID table of schema 2 a row
    kept ~1 KB on its page and spilled the rest to a 4 KB overflow page of its own: the bases
    of a 10,000-note vault took 31 MB for 11 MB, written twice on the first sync."""
    rng = random.Random(7)
    notes = [(f"notes/{i:05d}.md", rng.randbytes(1100)) for i in range(2000)]  # incompressible
    db = tmp_path / "index.sqlite"
    with SyncIndex(db) as idx:
        idx.bases.set_many(notes)
    stored = sum(len(zlib.compress(data, 6)) for _, data in notes)
    con = sqlite3.connect(db)
    pages, size = (
        con.execute("PRAGMA page_count").fetchone()[0],
        con.execute("PRAGMA page_size").fetchone()[0],
    )
    con.close()
    assert pages * size < 1.5 * stored, f"{pages * size / stored:.1f}x the bases' bytes"


def test_transaction_rolls_back_on_error(index: SyncIndex) -> None:
    """The stores share one connection and one transaction: a write to each rolls back
    together."""
    with pytest.raises(RuntimeError), index.transaction():
        index.files.put(entry("a.md"))
        index.bases.set("a.md", b"base")
        index.meta.set("k", "v")
        index.inbox.add([("a.md", {"rev": 1})])
        index.held.add([HeldRow("b.md", "f1", 1, {}, "why", "agent", 1)])
        raise RuntimeError("boom")
    assert index.files.get("a.md") is None and index.meta.get("k") is None
    assert index.bases.get("a.md") is None and index.inbox.rows() == []
    assert index.held.rows() == []


def test_wal_mode_and_thread_safety(index: SyncIndex) -> None:
    mode = sqlite3.connect(index.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for i in range(200):
                index.files.put(entry(f"t{k}/{i}.md"))
                index.files.get(f"t{k}/{i}.md")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and index.files.count_live() == 800


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


def test_a_quarantine_report_of_an_older_revision_keeps_the_newer(index: SyncIndex) -> None:
    """R9: a refused record older than the one quarantined (a restored relay, a replay) does
    not replace the newer report, as in the plugin; the same revision only fills in the path."""
    newer = QuarantineRow("f" * 64, 3, "", "rev 3 failed", "server", 1)
    assert index.quarantine.add([newer]) == [newer]
    assert index.quarantine.add([QuarantineRow("f" * 64, 2, "n.md", "rev 2", "server", 2)]) == []
    assert index.quarantine.add([QuarantineRow("f" * 64, 3, "n.md", "again", "server", 3)]) == []
    rows = index.quarantine.rows()
    assert [(r.rev, r.path, r.reason) for r in rows] == [(3, "n.md", "rev 3 failed")]
    newest = QuarantineRow("f" * 64, 4, "n.md", "rev 4 failed", "server", 4)
    assert index.quarantine.add([newest]) == [newest]
    assert [r.rev for r in index.quarantine.rows()] == [4]
