"""The local sync index of one vault copy: what was last synced, per path (SQLite, WAL).

One row per normalised path: the relay file id and revision last synced, the content hash and
stat identity of the local file *as of that sync* (so a quiet rescan compares stat tuples and
hashes nothing), whether it is text, a tombstone flag, and which device wrote it last. The last
common version of small text files (the merge base) lives in a separate table, compressed, so
scanning the main table stays fast. A key/value table holds per-vault facts (vault id, device
id, last relay sequence) and an outbox table keeps queued operations across restarts.

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
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from companion.errors import CompanionError
from companion.sync.pathsafe import fold

SCHEMA_VERSION = 1
BASE_TEXT_LIMIT = 1 << 20  # merge bases are kept for text files up to 1 MiB

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
    is_text     INTEGER NOT NULL DEFAULT 0,
    deleted     INTEGER NOT NULL DEFAULT 0,
    device      TEXT NOT NULL DEFAULT '',
    device_kind TEXT NOT NULL DEFAULT '',
    updated_ns  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS files_fold ON files(fold);
CREATE TABLE IF NOT EXISTS bases (
    path TEXT PRIMARY KEY,
    data BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL,
    path       TEXT NOT NULL,
    payload    TEXT NOT NULL DEFAULT '{}',
    created_ns INTEGER NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS outbox_path ON outbox(path);
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
"""

_COLS = (
    "path, file_id, rev, sha256, size, mtime_ns, inode, is_text, deleted, device, "
    "device_kind, updated_ns"
)


_SQL_CHUNK = 500  # host parameters per IN (...) query, well under SQLite's limit


def _compress_base(data: bytes) -> bytes:
    return zlib.compress(data, 6)


def _compress_all(datas: list[bytes]) -> list[bytes]:
    return [_compress_base(d) for d in datas]


class SyncIndexError(CompanionError):
    """The index database cannot be opened or is from a newer version of the program."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One path's last synced state. `sha256`/`size`/`mtime_ns`/`inode` describe the local file
    as it was when it matched revision `rev` (written by us, or scanned and pushed)."""

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

    def stat_key(self) -> tuple[int, int, int]:
        return (self.mtime_ns, self.size, self.inode)


@dataclass(frozen=True, slots=True)
class HeldRow:
    """A remote change kept out of the vault until the person decides (see `sync/holds.py`)."""

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
class PendingOp:
    """A queued operation (e.g. an offline edit to push) that survives restarts."""

    id: int
    kind: str
    path: str
    payload: dict[str, Any]
    created_ns: int
    attempts: int
    last_error: str


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


class SyncIndex:
    """The SQLite index of one vault copy. Thread-safe (one connection behind a lock)."""

    def __init__(self, db_path: str | os.PathLike[str], *, readonly: bool = False) -> None:
        """Open (or create) the index. `readonly`: a reader beside the engine that owns the
        copy (the MCP server, status views); it never creates, migrates or writes anything."""
        self.path = Path(db_path)
        self.readonly = readonly
        if readonly:
            self._db = self._open_readonly()
            self._lock = threading.RLock()
            self._depth = 0
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
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise SyncIndexError(f"{self.path}: cannot open the sync index: {exc}") from None
        self._lock = threading.RLock()
        self._depth = 0

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
            row = self._db.execute(f"SELECT {_COLS} FROM files WHERE path=?", (path,)).fetchone()
        return _entry(row) if row else None

    def get_many(self, paths: Iterable[str]) -> dict[str, Entry]:
        """`get` for many paths in a few queries: {path: entry} for those the index has."""
        wanted = list(dict.fromkeys(paths))
        out: dict[str, Entry] = {}
        with self._lock:
            for i in range(0, len(wanted), _SQL_CHUNK):
                chunk = wanted[i : i + _SQL_CHUNK]
                sql = f"SELECT {_COLS} FROM files WHERE path IN ({','.join('?' * len(chunk))})"
                for row in self._db.execute(sql, chunk):
                    out[row[0]] = _entry(row)
        return out

    def entries_since(self, updated_ns: int, limit: int = 10_000) -> list[Entry]:
        """Entries (tombstones included) this copy recorded at or after `updated_ns`, newest
        first: what sync brought in or sent out lately, and which device wrote it."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLS} FROM files WHERE updated_ns >= ? ORDER BY updated_ns DESC LIMIT ?",
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
            )
            for e in entries
        ]
        with self.transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO files (path, fold, file_id, rev, sha256, size, mtime_ns, "
                "inode, is_text, deleted, device, device_kind, updated_ns) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )

    def update_stats(self, items: Iterable[tuple[str, tuple[int, int, int]]]) -> None:
        """Refresh the stat identity of unchanged content (a touched file) without a new rev."""
        rows = [(m, s, i, p) for p, (m, s, i) in items]
        with self.transaction():
            self._db.executemany(
                "UPDATE files SET mtime_ns=?, size=?, inode=? WHERE path=?",
                rows,
            )

    def mark_deleted(self, path: str, *, rev: int, device: str = "", device_kind: str = "") -> None:
        """Turn `path` into a tombstone at `rev` (its revision history continues on the relay)."""
        with self.transaction():
            self._db.execute(
                "UPDATE files SET deleted=1, rev=?, device=?, device_kind=?, updated_ns=?, "
                "mtime_ns=0, size=0, inode=0 WHERE path=?",
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
    ) -> dict[str, tuple[int, int, int]]:
        """``path -> (mtime_ns, size, inode)`` of every live (not deleted) entry, in one query.

        With `prefix` (e.g. ``"notes/"``) only paths under it; with `fold_key` only the paths
        with that case-folded form (see `pathsafe.fold`).
        """
        sql = "SELECT path, mtime_ns, size, inode FROM files WHERE deleted=0"
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
                    f"SELECT {_COLS} FROM files WHERE path > ?{where} ORDER BY path LIMIT ?",
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
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM files WHERE deleted=0").fetchone()[0])

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
    ) -> None:
        """`set_base` for many files (each path once) in one transaction. `mapper` runs the
        compression over chunks of bases (pass a thread pool's `map`: zlib lets go of the GIL,
        so they compress in parallel)."""
        keep: list[tuple[str, bytes]] = []
        drop: list[tuple[str]] = []
        for path, data in items:
            if data is None or len(data) > BASE_TEXT_LIMIT:
                drop.append((path,))
            else:
                keep.append((path, data))
        datas = [d for _, d in keep]
        chunks = [datas[i : i + 64] for i in range(0, len(datas), 64)]
        packed = [z for done in mapper(_compress_all, chunks) for z in done]
        with self.transaction():
            self._db.executemany("DELETE FROM bases WHERE path=?", drop)
            self._db.executemany(
                "INSERT OR REPLACE INTO bases (path, data) VALUES (?, ?)",
                [(p, z) for (p, _), z in zip(keep, packed, strict=True)],
            )

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

    # ------------------------------------------------------------------ outbox

    def enqueue(
        self, kind: str, path: str, payload: dict[str, Any] | None = None, *, replace: bool = False
    ) -> int:
        """Queue an operation; with `replace`, earlier pending ops for `path` are dropped first."""
        with self.transaction():
            if replace:
                self._db.execute("DELETE FROM outbox WHERE path=?", (path,))
            cur = self._db.execute(
                "INSERT INTO outbox (kind, path, payload, created_ns) VALUES (?, ?, ?, ?)",
                (kind, path, json.dumps(payload or {}, sort_keys=True), time.time_ns()),
            )
            return int(cur.lastrowid or 0)

    def enqueue_many(
        self,
        kind: str,
        items: Iterable[tuple[str, dict[str, Any]]],
        *,
        replace: bool = False,
    ) -> None:
        """`enqueue` for many (path, payload) pairs (each path once) in one transaction."""
        now = time.time_ns()
        rows = [(kind, path, json.dumps(payload, sort_keys=True), now) for path, payload in items]
        with self.transaction():
            if replace:
                self._db.executemany("DELETE FROM outbox WHERE path=?", [(r[1],) for r in rows])
            self._db.executemany(
                "INSERT INTO outbox (kind, path, payload, created_ns) VALUES (?, ?, ?, ?)", rows
            )

    def pending(self, limit: int | None = None) -> list[PendingOp]:
        """Queued operations, oldest first."""
        sql = (
            "SELECT id, kind, path, payload, created_ns, attempts, last_error FROM outbox "
            "ORDER BY id"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            rows = self._db.execute(sql).fetchall()
        return [PendingOp(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5], r[6]) for r in rows]

    def complete(self, op_id: int) -> None:
        with self.transaction():
            self._db.execute("DELETE FROM outbox WHERE id=?", (op_id,))

    def complete_many(self, op_ids: Iterable[int]) -> None:
        with self.transaction():
            self._db.executemany("DELETE FROM outbox WHERE id=?", [(i,) for i in op_ids])

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

    def paths_for_file_ids(self, file_ids: Iterable[str]) -> dict[str, str]:
        """file id -> path, for the files this index knows."""
        ids = list(dict.fromkeys(file_ids))
        out: dict[str, str] = {}
        with self._lock:
            for i in range(0, len(ids), _SQL_CHUNK):
                part = ids[i : i + _SQL_CHUNK]
                marks = ",".join("?" * len(part))
                for path, fid in self._db.execute(
                    f"SELECT path, file_id FROM files WHERE file_id IN ({marks})", part
                ):
                    out[fid] = path
        return out

    def record_failure(self, op_id: int, error: str) -> None:
        with self.transaction():
            self._db.execute(
                "UPDATE outbox SET attempts=attempts+1, last_error=? WHERE id=?",
                (error[:500], op_id),
            )
