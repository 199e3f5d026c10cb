"""The local sync index of one vault copy: what was last synced, per path (SQLite, WAL).

One row per normalised path: the relay file id and revision last synced, the content hash and
stat identity of the local file *as of that sync* (so a quiet rescan compares stat tuples and
hashes nothing), whether it is text, a tombstone flag, and which device wrote it last. The last
common version of small text files (the merge base) lives in a separate table, compressed, so
scanning the main table stays fast. A key/value table holds per-vault facts (vault id, device
id, last relay sequence). Other tables: the **inbox** (verified remote changes still to apply,
kept sealed, surviving restarts), **held** and **quarantine** (what waits for the person),
**applied** (the version a remote change replaced, for a few seconds: `stale_save` rule) and
**requests** (work another process asked the engine owning this copy to do,
`sync/service/requests.py`).

The stat identity is ``(mtime_ns, size, inode, ctime_ns)``: the inode change time moves on
every write and cannot be set back by a program (as git relies on), so an edit that keeps the
size and resets the mtime is still seen. A ctime of 0 means "unknown" (an index written before
it was recorded): such a file is hashed once and its stat refreshed.

Memory: nothing is cached in Python. The only bulk read is `live_stats` (path -> stat tuple),
which a full rescan needs anyway; everything else is per row or streamed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from companion.errors import CompanionError
from companion.sync.local.pathsafe import fold

SCHEMA_VERSION = 4
BASE_TEXT_LIMIT = 1 << 20  # merge bases are kept for text files up to 1 MiB

# Conflict copies and files kept under another name (`sync/round/conflicts.py`: `is_kept_copy`) are
# live paths matching one of these LIKE patterns, a superset that `views.copy_paths` then checks
# exactly. Every round asks for them (status shows them), so a partial index holds just those
# rows: a query that repeats this condition word for word lets SQLite use it instead of reading
# every path. Tombstones have one too: the live count is the table's count (read from a
# b-tree's cell counts) less theirs. Neither can serve a query on live rows, so neither can
# make SQLite choose a worse plan for one. Both are created on open, without a schema version:
# an older companion keeps them up to date like any index.
KEPT_COPY_PATTERNS = ("% (conflict %", "% (case conflict%", "% (unicode conflict%")
_KEPT_COPIES = "deleted=0 AND (" + " OR ".join(f"path LIKE '{p}'" for p in KEPT_COPY_PATTERNS) + ")"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path        TEXT PRIMARY KEY,
    fold        TEXT NOT NULL,
    file_id     TEXT NOT NULL DEFAULT '',
    rev         INTEGER NOT NULL DEFAULT 0,
    sha256      TEXT NOT NULL DEFAULT '',
    size        INTEGER NOT NULL DEFAULT 0,
    mtime_ns    INTEGER NOT NULL DEFAULT 0,
    inode       INTEGER NOT NULL DEFAULT 0,
    ctime_ns    INTEGER NOT NULL DEFAULT 0,
    is_text     INTEGER NOT NULL DEFAULT 0,
    deleted     INTEGER NOT NULL DEFAULT 0,
    device      TEXT NOT NULL DEFAULT '',
    device_kind TEXT NOT NULL DEFAULT '',
    updated_ns  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS files_fold ON files(fold);
CREATE INDEX IF NOT EXISTS files_file_id ON files(file_id);
CREATE INDEX IF NOT EXISTS files_tombstones ON files(path) WHERE deleted=1;
CREATE INDEX IF NOT EXISTS files_kept_copies ON files(path) WHERE KEPT_COPIES;
CREATE TABLE IF NOT EXISTS bases (
    path TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS inbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    path       TEXT NOT NULL UNIQUE,
    payload    TEXT NOT NULL,
    created_ns INTEGER NOT NULL,
    problem    TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS applied (
    path       TEXT PRIMARY KEY,
    prev_sha   TEXT NOT NULL,
    prev_data  BLOB,
    applied_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL,
    args       TEXT NOT NULL DEFAULT '{}',
    created_ns INTEGER NOT NULL,
    state      TEXT NOT NULL DEFAULT 'pending',
    result     TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS held (
    path     TEXT PRIMARY KEY,
    file_id  TEXT NOT NULL,
    rev      INTEGER NOT NULL,
    payload  TEXT NOT NULL,
    reason   TEXT NOT NULL,
    author   TEXT NOT NULL DEFAULT '',
    since_ns INTEGER NOT NULL,
    decision TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS quarantine (
    file_id  TEXT PRIMARY KEY,
    rev      INTEGER NOT NULL,
    path     TEXT NOT NULL DEFAULT '',
    reason   TEXT NOT NULL,
    author   TEXT NOT NULL DEFAULT '',
    since_ns INTEGER NOT NULL,
    decision TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
""".replace("KEPT_COPIES", _KEPT_COPIES)

_COLS = (
    "path, file_id, rev, sha256, size, mtime_ns, inode, is_text, deleted, device, "
    "device_kind, updated_ns, ctime_ns"
)
_COLS_V1 = _COLS.replace("ctime_ns", "0")  # a reader beside an engine not upgraded yet

# Schema 1 -> 2: the inode change time, the inbox under its name (it was `outbox`, holding the
# inbox), the applied and requests tables (created by _SCHEMA).
_MIGRATE_1 = """
ALTER TABLE files ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0;
INSERT OR REPLACE INTO inbox (id, path, payload, created_ns)
    SELECT id, path, payload, created_ns FROM outbox WHERE kind = 'remote' ORDER BY id;
DROP TABLE outbox;
"""


# Schema 2 -> 3: the two tables of file contents become rowid tables. In a WITHOUT ROWID
# table a row keeps only ~1 KB on its page and spills the rest to an overflow page of its own,
# so the typical note's compressed base (~1.1 KB) took a whole 4 KB page: on 10,000 notes the
# bases held 11 MB in 31 MB of pages, written twice (WAL, then the database) on a first sync.
_MIGRATE_2 = """
CREATE TABLE bases_v3 (path TEXT PRIMARY KEY, data BLOB NOT NULL);
INSERT INTO bases_v3 (path, data) SELECT path, data FROM bases;
DROP TABLE bases;
ALTER TABLE bases_v3 RENAME TO bases;
CREATE TABLE applied_v3 (
    path TEXT PRIMARY KEY, prev_sha TEXT NOT NULL, prev_data BLOB, applied_ns INTEGER NOT NULL
);
INSERT INTO applied_v3 (path, prev_sha, prev_data, applied_ns)
    SELECT path, prev_sha, prev_data, applied_ns FROM applied;
DROP TABLE applied;
ALTER TABLE applied_v3 RENAME TO applied;
"""


_SQL_CHUNK = 500  # host parameters per IN (...) query, well under SQLite's limit


def _compress_base(data: bytes) -> bytes:
    return zlib.compress(data, 6)


def _compress_all(datas: list[bytes]) -> list[bytes]:
    return [_compress_base(d) for d in datas]


def pack_bases(
    items: Iterable[tuple[str, bytes | None]], streams: Mapping[str, bytes] | None = None
) -> dict[str, bytes]:
    """The merge bases `SyncIndex.set_bases` will store for these items, compressed now: run
    it on another thread while the files are written (`set_bases(..., packed=)`).

    `streams` maps a path to a zlib stream of its data made already (the one sealed into its
    blob's frame): a base is any zlib stream of the data, so that one is kept as it is."""
    known = streams or {}
    return {
        path: known.get(path) or _compress_base(data)
        for path, data in items
        if data is not None and len(data) <= BASE_TEXT_LIMIT
    }


def base_streams(
    files: Iterable[tuple[str, Sequence[Any]]], streams: Mapping[str, bytes]
) -> dict[str, bytes]:
    """path -> the zlib stream of its content, for the one-chunk files (path, chunk refs) whose
    blob's frame held one (`streams`, by blob id): `pack_bases` keeps it as their base."""
    out = {}
    for path, chunks in files:
        if len(chunks) == 1 and chunks[0].blob_id in streams:
            out[path] = streams[chunks[0].blob_id]
    return out


class SyncIndexError(CompanionError):
    """The index database cannot be opened or is from a newer version of the program."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One path's last synced state. `sha256`/`size`/`mtime_ns`/`inode`/`ctime_ns` describe the
    local file as it was when it matched revision `rev` (written by us, or scanned and pushed);
    a zero stat means "the local file is not known to hold this revision" (the next scan hashes
    it and reports a change when it differs)."""

    path: str
    sha256: str
    size: int
    mtime_ns: int
    inode: int
    rev: int = 0
    file_id: str = ""
    is_text: bool = False
    deleted: bool = False
    device: str = ""
    device_kind: str = ""
    updated_ns: int = 0
    ctime_ns: int = 0

    def stat_key(self) -> StatKey:
        return (self.mtime_ns, self.size, self.inode, self.ctime_ns)


@dataclass(frozen=True, slots=True)
class HeldRow:
    """A remote change kept out of the vault until the person decides (`sync/round/holds.py`)."""

    path: str
    file_id: str
    rev: int
    payload: dict[str, Any]
    reason: str
    author: str
    since_ns: int
    decision: str = ""  # "", "accept" or "refuse": recorded by the CLI, carried out by a round


@dataclass(frozen=True, slots=True)
class QuarantineRow:
    """A file whose newest record on the relay could not be opened or verified."""

    file_id: str
    rev: int
    path: str  # "" when this device does not know the file
    reason: str
    author: str
    since_ns: int
    decision: str = ""  # "", "supersede" or "dismiss"


@dataclass(frozen=True, slots=True)
class InboxRow:
    """A verified remote change still to apply here (sealed: re-verified when opened).
    `problem` says why it could not be applied (e.g. a symbolic link on its way); such a row
    is retried each round and reported until it applies."""

    id: int
    path: str
    payload: dict[str, Any]
    created_ns: int
    problem: str = ""


@dataclass(frozen=True, slots=True)
class AppliedRow:
    """The local version a remote change replaced at `applied_ns` (`prev_data`: its content
    when it is text of at most BASE_TEXT_LIMIT bytes)."""

    path: str
    prev_sha: str
    prev_data: bytes | None
    applied_ns: int


@dataclass(frozen=True, slots=True)
class RequestRow:
    """Work another process asked of the engine that owns this copy (`sync/service/requests.py`)."""

    id: int
    kind: str
    args: dict[str, Any]
    created_ns: int
    state: str
    result: dict[str, Any]


_REQUEST_COLUMNS = "SELECT id, kind, args, created_ns, state, result FROM requests"


def _request_row(r: tuple[Any, ...]) -> RequestRow:
    return RequestRow(r[0], r[1], json.loads(r[2]), r[3], r[4], json.loads(r[5] or "{}"))


def _entry(row: tuple[Any, ...]) -> Entry:
    return Entry(
        path=row[0],
        file_id=row[1],
        rev=row[2],
        sha256=row[3],
        size=row[4],
        mtime_ns=row[5],
        inode=row[6],
        is_text=bool(row[7]),
        deleted=bool(row[8]),
        device=row[9],
        device_kind=row[10],
        updated_ns=row[11],
        ctime_ns=row[12],
    )


def vault_key(vault_root: str | os.PathLike[str]) -> str:
    """A stable, readable folder name for one vault copy: ``<name>-<hash of real path>``."""
    real = os.path.realpath(vault_root)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(real.rstrip(os.sep)) or "vault")
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{name[:40]}-{digest}"


def vault_state_dir(data_dir: str | os.PathLike[str], vault_root: str | os.PathLike[str]) -> Path:
    """The engine's per-vault folder under the device data dir (index, partial downloads)."""
    return Path(data_dir) / "sync" / vault_key(vault_root)


def index_path(data_dir: str | os.PathLike[str], vault_root: str | os.PathLike[str]) -> Path:
    return vault_state_dir(data_dir, vault_root) / "index.sqlite"


def _prefix_end(prefix: str) -> str:
    """The smallest string greater than every string starting with `prefix` ('/' -> '0')."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


StatKey = tuple[int, int, int, int]  # (mtime_ns, size, inode, ctime_ns)


class SyncIndex:
    """The SQLite index of one vault copy. Thread-safe (one connection behind a lock)."""

    def __init__(self, db_path: str | os.PathLike[str], *, readonly: bool = False) -> None:
        """Open (or create) the index. `readonly`: a reader beside the engine that owns the
        copy (the MCP server, status views); it never creates, migrates or writes anything."""
        self.path = Path(db_path)
        self.readonly = readonly
        self._version: int = SCHEMA_VERSION
        if readonly:
            self._db = self._open_readonly()
            self._lock = threading.RLock()
            self._depth = 0
            self._cols = _COLS if self._version >= 2 else _COLS_V1
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            self._db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise SyncIndexError(
                    f"{self.path}: the sync index was written by a newer version "
                    f"(schema {version}); upgrade the companion"
                )
            self._db.executescript(_SCHEMA)  # idempotent: CREATE ... IF NOT EXISTS
            if version < SCHEMA_VERSION:
                self._migrate(version)
        except sqlite3.DatabaseError as exc:
            raise SyncIndexError(f"{self.path}: cannot open the sync index: {exc}") from None
        self._lock = threading.RLock()
        self._depth = 0
        self._version = SCHEMA_VERSION
        self._cols = _COLS

    def _migrate(self, version: int) -> None:
        """Bring an existing index to SCHEMA_VERSION (in one transaction, already begun)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            steps = [_MIGRATE_1, _MIGRATE_2, ""][version - 1 :] if version >= 1 else []
            for script in steps:  # a new index (version 0) got the current schema above
                for stmt in script.split(";"):
                    if stmt.strip():
                        db.execute(stmt)
            if 1 <= version < 4:  # schema 3 -> 4: one fold for both engines (rules_v1.json)
                rows = db.execute("SELECT path FROM files").fetchall()
                refold = [(fold(p), p) for (p,) in rows]
                db.executemany("UPDATE files SET fold=? WHERE path=?", refold)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _open_readonly(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise SyncIndexError(f"{self.path}: no sync index (this copy has not synced yet)")
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            db = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False, timeout=5
            )
            version = db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise SyncIndexError(f"{self.path}: cannot read the sync index: {exc}") from None
        if version > SCHEMA_VERSION:
            db.close()
            raise SyncIndexError(
                f"{self.path}: the sync index was written by a newer version "
                f"(schema {version}); upgrade the companion"
            )
        self._version = int(version)
        return db

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SyncIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes atomically (nestable; only the outermost commits)."""
        with self._lock:
            if self._depth == 0:
                self._db.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if self._depth == 0:
                    self._db.execute("ROLLBACK")
                raise
            self._depth -= 1
            if self._depth == 0:
                self._db.execute("COMMIT")

    # ------------------------------------------------------------------ files

    def get(self, path: str) -> Entry | None:
        """The entry for `path` (a tombstone included), or None."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {self._cols} FROM files WHERE path=?", (path,)
            ).fetchone()
        return _entry(row) if row else None

    def get_many(self, paths: Iterable[str]) -> dict[str, Entry]:
        """`get` for many paths in a few queries: {path: entry} for those the index has."""
        wanted = list(dict.fromkeys(paths))
        out: dict[str, Entry] = {}
        with self._lock:
            for i in range(0, len(wanted), _SQL_CHUNK):
                chunk = wanted[i : i + _SQL_CHUNK]
                sql = f"SELECT {self._cols} FROM files WHERE path IN ({','.join('?' * len(chunk))})"
                for row in self._db.execute(sql, chunk):
                    out[row[0]] = _entry(row)
        return out

    def entries_since(self, updated_ns: int, limit: int = 10_000) -> list[Entry]:
        """Entries (tombstones included) this copy recorded at or after `updated_ns`, newest
        first: what sync brought in or sent out lately, and which device wrote it."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {self._cols} FROM files WHERE updated_ns >= ? "
                "ORDER BY updated_ns DESC LIMIT ?",
                (int(updated_ns), int(limit)),
            ).fetchall()
        return [_entry(r) for r in rows]

    def put(self, entry: Entry) -> None:
        self.put_many((entry,))

    def put_many(self, entries: Iterable[Entry]) -> None:
        """Insert or replace entries in one transaction."""
        rows = [
            (
                e.path,
                fold(e.path),
                e.file_id,
                e.rev,
                e.sha256,
                e.size,
                e.mtime_ns,
                e.inode,
                int(e.is_text),
                int(e.deleted),
                e.device,
                e.device_kind,
                e.updated_ns or time.time_ns(),
                e.ctime_ns,
            )
            for e in entries
        ]
        with self.transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO files (path, fold, file_id, rev, sha256, size, mtime_ns, "
                "inode, is_text, deleted, device, device_kind, updated_ns, ctime_ns) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )

    def update_stats(self, items: Iterable[tuple[str, StatKey]]) -> None:
        """Refresh the stat identity of unchanged content (a touched file) without a new rev."""
        rows = [(m, s, i, c, p) for p, (m, s, i, c) in items]
        with self.transaction():
            self._db.executemany(
                "UPDATE files SET mtime_ns=?, size=?, inode=?, ctime_ns=? WHERE path=?",
                rows,
            )

    def forget_stats(self, paths: Iterable[str]) -> None:
        """Make the next scan hash these files (their content is not what the index says)."""
        with self.transaction():
            self._db.executemany(
                "UPDATE files SET mtime_ns=0, inode=0, ctime_ns=0 WHERE path=? AND deleted=0",
                [(p,) for p in paths],
            )

    def mark_deleted(self, path: str, *, rev: int, device: str = "", device_kind: str = "") -> None:
        """Turn `path` into a tombstone at `rev` (its revision history continues on the relay)."""
        with self.transaction():
            self._db.execute(
                "UPDATE files SET deleted=1, rev=?, device=?, device_kind=?, updated_ns=?, "
                "mtime_ns=0, size=0, inode=0, ctime_ns=0 WHERE path=?",
                (rev, device, device_kind, time.time_ns(), path),
            )
            self._db.execute("DELETE FROM bases WHERE path=?", (path,))

    def forget(self, path: str) -> None:
        """Remove every trace of `path` (row and merge base)."""
        with self.transaction():
            self._db.execute("DELETE FROM files WHERE path=?", (path,))
            self._db.execute("DELETE FROM bases WHERE path=?", (path,))

    def live_stats(
        self, prefix: str | None = None, *, fold_key: str | None = None
    ) -> dict[str, StatKey]:
        """``path -> (mtime_ns, size, inode, ctime_ns)`` of every live (not deleted) entry, in
        one query.

        With `prefix` (e.g. ``"notes/"``) only paths under it; with `fold_key` only the paths
        with that case-folded form (see `pathsafe.fold`).
        """
        ctime = "ctime_ns" if self._version >= 2 else "0"
        sql = f"SELECT path, mtime_ns, size, inode, {ctime} FROM files WHERE deleted=0"
        args: tuple[str, ...] = ()
        if prefix:
            sql += " AND path >= ? AND path < ?"
            args = (prefix, _prefix_end(prefix))
        if fold_key is not None:
            sql += " AND fold = ?"
            args = (*args, fold_key)
        with self._lock:
            cur = self._db.execute(sql, args)
            return {r[0]: r[1:] for r in cur}

    def iter_entries(self, *, include_deleted: bool = False, batch: int = 1000) -> Iterator[Entry]:
        """Every entry, in path order, fetched in batches (constant memory)."""
        last = ""
        where = "" if include_deleted else " AND deleted=0"
        while True:
            with self._lock:
                rows = self._db.execute(
                    f"SELECT {self._cols} FROM files WHERE path > ?{where} ORDER BY path LIMIT ?",
                    (last, batch),
                ).fetchall()
            if not rows:
                return
            for row in rows:
                yield _entry(row)
            last = rows[-1][0]

    def paths_with_fold(self, key: str) -> list[str]:
        """Live paths whose case-folded form is `key` (case-collision detection)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT path FROM files WHERE fold=? AND deleted=0 ORDER BY path", (key,)
            ).fetchall()
        return [r[0] for r in rows]

    def count_live(self) -> int:
        """Live files: every row less the tombstones (both counts read an index, not rows)."""
        with self._lock:
            row = self._db.execute(
                "SELECT (SELECT count(*) FROM files) - (SELECT count(*) FROM files WHERE deleted=1)"
            ).fetchone()
        return int(row[0])

    def kept_copy_candidates(self) -> list[str]:
        """Live paths that may be conflict copies or kept names (`KEPT_COPY_PATTERNS`), in path
        order; `views.copy_paths` keeps the real ones."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT path FROM files WHERE {_KEPT_COPIES} ORDER BY path"
            ).fetchall()
        return [r[0] for r in rows]

    def rotation(self, after: str, limit: int, *, max_bytes: int | None = None) -> list[Entry]:
        """Up to `limit` live entries after `after` in path order, wrapping round to the start:
        the slice of the vault a full round re-hashes (`scanner`'s `verify`).

        With `max_bytes`, the slice also stops before the file that would take its sizes past
        it, but holds at least one file: a file larger than the budget is a slice of its own,
        so the rotation always moves on."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {self._cols} FROM files WHERE deleted=0 AND path > ? ORDER BY path "
                "LIMIT ?",
                (after, limit),
            ).fetchall()
            if len(rows) < limit:
                rows += self._db.execute(
                    f"SELECT {self._cols} FROM files WHERE deleted=0 AND path <= ? ORDER BY path "
                    "LIMIT ?",
                    (after, limit - len(rows)),
                ).fetchall()
        entries = [_entry(r) for r in rows]
        if max_bytes is None:
            return entries
        total = 0
        for n, e in enumerate(entries):
            total += e.size
            if total > max_bytes:
                return entries[: max(n, 1)]
        return entries

    # ------------------------------------------------------------------ merge bases

    def set_base(self, path: str, data: bytes | None) -> bool:
        """Store the last common version of a text file; None (or too large) removes it.

        Returns True when a base is now stored.
        """
        with self.transaction():
            if data is None or len(data) > BASE_TEXT_LIMIT:
                self._db.execute("DELETE FROM bases WHERE path=?", (path,))
                return False
            self._db.execute(
                "INSERT OR REPLACE INTO bases (path, data) VALUES (?, ?)",
                (path, _compress_base(data)),
            )
            return True

    def set_bases(
        self,
        items: Iterable[tuple[str, bytes | None]],
        mapper: Callable[..., Iterable[bytes]] = map,
        packed: Mapping[str, bytes] | None = None,
    ) -> None:
        """`set_base` for many files (each path once) in one transaction. `mapper` runs the
        compression over chunks of bases (pass a thread pool's `map`: zlib lets go of the GIL,
        so they compress in parallel); `packed` holds bases `pack_bases` already compressed,
        off the caller's thread, from the same items."""
        packed = packed or {}
        keep: list[tuple[str, bytes]] = []
        drop: list[tuple[str]] = []
        for path, data in items:
            if data is None or len(data) > BASE_TEXT_LIMIT:
                drop.append((path,))
            else:
                keep.append((path, data))
        todo = [d for p, d in keep if p not in packed]
        chunks = [todo[i : i + 64] for i in range(0, len(todo), 64)]
        fresh = iter([z for done in mapper(_compress_all, chunks) for z in done])
        rows = [(p, packed[p] if p in packed else next(fresh)) for p, _ in keep]
        with self.transaction():
            self._db.executemany("DELETE FROM bases WHERE path=?", drop)
            self._db.executemany("INSERT OR REPLACE INTO bases (path, data) VALUES (?, ?)", rows)

    def get_base(self, path: str) -> bytes | None:
        with self._lock:
            row = self._db.execute("SELECT data FROM bases WHERE path=?", (path,)).fetchone()
        return zlib.decompress(row[0]) if row else None

    def move_base(self, old: str, new: str) -> None:
        """Carry a merge base along a rename."""
        with self.transaction():
            self._db.execute("DELETE FROM bases WHERE path=?", (new,))
            self._db.execute("UPDATE bases SET path=? WHERE path=?", (new, old))

    # ------------------------------------------------------------------ key/value

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    # ------------------------------------------------------------------ inbox

    def queue_remote(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Queue remote changes to apply (one per path: a newer one replaces the queued one)."""
        now = time.time_ns()
        rows = [(path, json.dumps(payload, sort_keys=True), now) for path, payload in items]
        with self.transaction():
            self._db.executemany(
                "INSERT INTO inbox (path, payload, created_ns) VALUES (?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET payload=excluded.payload, "
                "created_ns=excluded.created_ns, problem=''",
                rows,
            )

    def inbox(self) -> list[InboxRow]:
        """Queued remote changes, oldest first."""
        if self._version < 2:
            sql = "SELECT id, path, payload, created_ns, '' FROM outbox WHERE kind='remote'"
        else:
            sql = "SELECT id, path, payload, created_ns, problem FROM inbox"
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id").fetchall()
        return [InboxRow(r[0], r[1], json.loads(r[2]), r[3], r[4]) for r in rows]

    def inbox_count(self) -> int:
        table = "inbox" if self._version >= 2 else "outbox"
        with self._lock:
            return int(self._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def inbox_done(self, row_ids: Iterable[int]) -> None:
        with self.transaction():
            self._db.executemany("DELETE FROM inbox WHERE id=?", [(i,) for i in row_ids])

    def inbox_problem(self, row_id: int, problem: str) -> None:
        """Keep the change queued, with the reason it cannot be applied now."""
        with self.transaction():
            self._db.execute("UPDATE inbox SET problem=? WHERE id=?", (problem[:500], row_id))

    # ------------------------------------------------------------------ applied (stale saves)

    def record_applied(self, rows: Iterable[AppliedRow]) -> None:
        items = [
            (r.path, r.prev_sha, None if r.prev_data is None else _compress_base(r.prev_data),
             r.applied_ns)
            for r in rows
            if r.prev_data is None or len(r.prev_data) <= BASE_TEXT_LIMIT
        ]  # fmt: skip
        with self.transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO applied (path, prev_sha, prev_data, applied_ns) "
                "VALUES (?, ?, ?, ?)",
                items,
            )

    def applied(self, paths: Iterable[str]) -> dict[str, AppliedRow]:
        """The recorded applies of these paths (those the table has)."""
        wanted = list(dict.fromkeys(paths))
        out: dict[str, AppliedRow] = {}
        with self._lock:
            for i in range(0, len(wanted), _SQL_CHUNK):
                chunk = wanted[i : i + _SQL_CHUNK]
                marks = ",".join("?" * len(chunk))
                for path, sha, data, ns in self._db.execute(
                    f"SELECT path, prev_sha, prev_data, applied_ns FROM applied "
                    f"WHERE path IN ({marks})",
                    chunk,
                ):
                    out[path] = AppliedRow(
                        path, sha, None if data is None else zlib.decompress(data), ns
                    )
        return out

    def drop_applied(self, paths: Iterable[str]) -> None:
        with self.transaction():
            self._db.executemany("DELETE FROM applied WHERE path=?", [(p,) for p in paths])

    def prune_applied(self, before_ns: int) -> None:
        with self.transaction():
            self._db.execute("DELETE FROM applied WHERE applied_ns < ?", (before_ns,))

    # ------------------------------------------------------------------ requests

    def add_request(self, kind: str, args: dict[str, Any]) -> int:
        with self.transaction():
            cur = self._db.execute(
                "INSERT INTO requests (kind, args, created_ns) VALUES (?, ?, ?)",
                (kind, json.dumps(args, sort_keys=True), time.time_ns()),
            )
            return int(cur.lastrowid or 0)

    def requests(self, state: str | None = None) -> list[RequestRow]:
        sql = _REQUEST_COLUMNS
        args: tuple[str, ...] = ()
        if state is not None:
            sql += " WHERE state=?"
            args = (state,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", args).fetchall()
        return [_request_row(r) for r in rows]

    def request(self, request_id: int) -> RequestRow | None:
        """One request, by its id: a waiting command asks every few milliseconds, so this
        reads its row alone (the table keeps a day of finished requests)."""
        with self._lock:
            row = self._db.execute(_REQUEST_COLUMNS + " WHERE id=?", (request_id,)).fetchone()
        return None if row is None else _request_row(row)

    def set_request(
        self,
        request_id: int,
        state: str,
        result: dict[str, Any] | None = None,
        *,
        only_if: str | None = None,
    ) -> bool:
        """Move a request to `state` (with its result); with `only_if`, only from that state."""
        sql = "UPDATE requests SET state=?, result=? WHERE id=?"
        args: tuple[Any, ...] = (state, json.dumps(result or {}, sort_keys=True), request_id)
        if only_if is not None:
            sql += " AND state=?"
            args = (*args, only_if)
        with self.transaction():
            return self._db.execute(sql, args).rowcount > 0

    def prune_requests(self, before_ns: int) -> None:
        with self.transaction():
            self._db.execute(
                "DELETE FROM requests WHERE created_ns < ? AND state != 'pending'", (before_ns,)
            )

    # ------------------------------------------------------------------ held and quarantined

    def hold(self, rows: Iterable[HeldRow]) -> None:
        """Keep these remote changes out of the vault (a newer hold of a path replaces it)."""
        with self.transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO held (path, file_id, rev, payload, reason, author, "
                "since_ns, decision) VALUES (?, ?, ?, ?, ?, ?, ?, '')",
                [
                    (r.path, r.file_id, r.rev, json.dumps(r.payload, sort_keys=True), r.reason,
                     r.author, r.since_ns)
                    for r in rows
                ],
            )  # fmt: skip

    def held(self) -> list[HeldRow]:
        with self._lock:
            rows = self._db.execute(
                "SELECT path, file_id, rev, payload, reason, author, since_ns, decision "
                "FROM held ORDER BY path"
            ).fetchall()
        return [HeldRow(r[0], r[1], r[2], json.loads(r[3]), *r[4:]) for r in rows]

    def decide_held(self, path: str, decision: str) -> bool:
        """Record the person's decision on a held change; False when nothing is held there."""
        with self.transaction():
            cur = self._db.execute("UPDATE held SET decision=? WHERE path=?", (decision, path))
            return cur.rowcount > 0

    def release_held(self, paths: Iterable[str]) -> None:
        with self.transaction():
            self._db.executemany("DELETE FROM held WHERE path=?", [(p,) for p in paths])

    def quarantine(self, rows: Iterable[QuarantineRow]) -> list[QuarantineRow]:
        """Record unreadable files; returns those not already recorded at that revision (the
        ones to report: each is reported once)."""
        new = []
        with self.transaction():
            for r in rows:
                old = self._db.execute(
                    "SELECT rev, path FROM quarantine WHERE file_id=?", (r.file_id,)
                ).fetchone()
                if old is not None and old[0] == r.rev:
                    if r.path and not old[1]:
                        self._db.execute(
                            "UPDATE quarantine SET path=? WHERE file_id=?", (r.path, r.file_id)
                        )
                    continue
                self._db.execute(
                    "INSERT OR REPLACE INTO quarantine (file_id, rev, path, reason, author, "
                    "since_ns, decision) VALUES (?, ?, ?, ?, ?, ?, '')",
                    (r.file_id, r.rev, r.path, r.reason, r.author, r.since_ns),
                )
                new.append(r)
        return new

    def quarantined(self) -> list[QuarantineRow]:
        with self._lock:
            rows = self._db.execute(
                "SELECT file_id, rev, path, reason, author, since_ns, decision FROM quarantine "
                "ORDER BY path, file_id"
            ).fetchall()
        return [QuarantineRow(*r) for r in rows]

    def decide_quarantine(self, file_id: str, decision: str, path: str = "") -> bool:
        with self.transaction():
            cur = self._db.execute(
                "UPDATE quarantine SET decision=?, path=CASE WHEN ?='' THEN path ELSE ? END "
                "WHERE file_id=?",
                (decision, path, path, file_id),
            )
            return cur.rowcount > 0

    def release_quarantine(self, file_ids: Iterable[str]) -> None:
        with self.transaction():
            self._db.executemany("DELETE FROM quarantine WHERE file_id=?", [(f,) for f in file_ids])

    def _files_by_id(self, columns: str, file_ids: Iterable[str]) -> list[tuple[Any, ...]]:
        """`SELECT columns FROM files` for these file ids, in chunks SQLite accepts."""
        ids = list(dict.fromkeys(file_ids))
        rows: list[tuple[Any, ...]] = []
        with self._lock:
            for i in range(0, len(ids), _SQL_CHUNK):
                part = ids[i : i + _SQL_CHUNK]
                marks = ",".join("?" * len(part))
                sql = f"SELECT {columns} FROM files WHERE file_id IN ({marks})"
                rows.extend(self._db.execute(sql, part))
        return rows

    def revs_for_file_ids(self, file_ids: Iterable[str]) -> dict[str, int]:
        """file id -> the revision this index holds (tombstones included)."""
        out: dict[str, int] = {}
        for fid, rev in self._files_by_id("file_id, rev", file_ids):
            out[fid] = max(rev, out.get(fid, 0))
        return out

    def hidden_folder_paths(self) -> list[str]:
        """Live files inside top-level hidden folders (`.obsidian/...`, `.x/...`): what the
        hold rules read to tell which folders have Obsidian's config shape (a range of the
        primary key: paths from "." up to, not including, "/")."""
        with self._lock:
            rows = self._db.execute(
                "SELECT path FROM files WHERE path >= '.' AND path < '/' AND deleted=0 "
                "AND instr(path, '/') > 0"
            ).fetchall()
        return [r[0] for r in rows]

    def paths_for_file_ids(self, file_ids: Iterable[str]) -> dict[str, str]:
        """file id -> path, for the files this index knows."""
        return {fid: path for path, fid in self._files_by_id("path, file_id", file_ids)}
