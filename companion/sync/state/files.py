"""What was last synced, per path (`files`): the relay file id and revision, and the content
hash and stat identity of the local file *as of that sync* (so a quiet rescan compares stat
tuples and hashes nothing), whether it is text, a tombstone flag, and which device wrote it last.

The stat identity is ``(mtime_ns, size, inode, ctime_ns)``: the inode change time moves on
every write and cannot be set back by a program (as git relies on), so an edit that keeps the
size and resets the mtime is still seen. A ctime of 0 means "unknown" (an index written before
it was recorded): such a file is hashed once and its stat refreshed.

Memory: nothing is cached in Python. The only bulk read is `live_stats` (path -> stat tuple),
which a full rescan needs anyway; everything else is per row or streamed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from companion.sync.local.pathsafe import fold
from companion.sync.state.bases import BaseStore
from companion.sync.state.db import SQL_CHUNK, Db

# Conflict copies and files kept under another name (`sync/round/conflicts.py`: `is_kept_copy`) are
# live paths matching one of these LIKE patterns, a superset that `views.copy_paths` then checks
# exactly. Every round asks for them (status shows them), so a partial index holds just those
# rows: a query that repeats this condition word for word lets SQLite use it instead of reading
# every path. Tombstones have one too: the live count is the table's count (read from a
# b-tree's cell counts) less theirs. Neither can serve a query on live rows, so neither can
# make SQLite choose a worse plan for one. Both are created on open, without a schema version:
# an older companion keeps them up to date like any index.
KEPT_COPY_PATTERNS = ("% (conflict %", "% (case conflict%", "% (unicode conflict%")
KEPT_COPIES = "deleted=0 AND (" + " OR ".join(f"path LIKE '{p}'" for p in KEPT_COPY_PATTERNS) + ")"

StatKey = tuple[int, int, int, int]  # (mtime_ns, size, inode, ctime_ns)


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


def _prefix_end(prefix: str) -> str:
    """The smallest string greater than every string starting with `prefix` ('/' -> '0')."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


class FileStore:
    """The `files` table: one row per normalised path, tombstones included. Satisfies the
    planner's `IndexView` (`get`, `paths_with_fold`)."""

    def __init__(self, db: Db, bases: BaseStore) -> None:
        self._db = db
        self._bases = bases  # a tombstone or a forgotten path loses its merge base too

    def get(self, path: str) -> Entry | None:
        """The entry for `path` (a tombstone included), or None."""
        db = self._db
        with db.lock:
            row = db.conn.execute(f"SELECT {db.cols} FROM files WHERE path=?", (path,)).fetchone()
        return _entry(row) if row else None

    def get_many(self, paths: Iterable[str]) -> dict[str, Entry]:
        """`get` for many paths in a few queries: {path: entry} for those the index has."""
        db = self._db
        wanted = list(dict.fromkeys(paths))
        out: dict[str, Entry] = {}
        with db.lock:
            for i in range(0, len(wanted), SQL_CHUNK):
                chunk = wanted[i : i + SQL_CHUNK]
                sql = f"SELECT {db.cols} FROM files WHERE path IN ({','.join('?' * len(chunk))})"
                for row in db.conn.execute(sql, chunk):
                    out[row[0]] = _entry(row)
        return out

    def entries_since(self, updated_ns: int, limit: int = 10_000) -> list[Entry]:
        """Entries (tombstones included) this copy recorded at or after `updated_ns`, newest
        first: what sync brought in or sent out lately, and which device wrote it."""
        db = self._db
        with db.lock:
            rows = db.conn.execute(
                f"SELECT {db.cols} FROM files WHERE updated_ns >= ? "
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
        with self._db.transaction():
            self._db.conn.executemany(
                "INSERT OR REPLACE INTO files (path, fold, file_id, rev, sha256, size, mtime_ns, "
                "inode, is_text, deleted, device, device_kind, updated_ns, ctime_ns) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )

    def update_stats(self, items: Iterable[tuple[str, StatKey]]) -> None:
        """Refresh the stat identity of unchanged content (a touched file) without a new rev."""
        rows = [(m, s, i, c, p) for p, (m, s, i, c) in items]
        with self._db.transaction():
            self._db.conn.executemany(
                "UPDATE files SET mtime_ns=?, size=?, inode=?, ctime_ns=? WHERE path=?",
                rows,
            )

    def forget_stats(self, paths: Iterable[str]) -> None:
        """Make the next scan hash these files (their content is not what the index says)."""
        with self._db.transaction():
            self._db.conn.executemany(
                "UPDATE files SET mtime_ns=0, inode=0, ctime_ns=0 WHERE path=? AND deleted=0",
                [(p,) for p in paths],
            )

    def mark_deleted(self, path: str, *, rev: int, device: str = "", device_kind: str = "") -> None:
        """Turn `path` into a tombstone at `rev` (its revision history continues on the relay)."""
        with self._db.transaction():
            self._db.conn.execute(
                "UPDATE files SET deleted=1, rev=?, device=?, device_kind=?, updated_ns=?, "
                "mtime_ns=0, size=0, inode=0, ctime_ns=0 WHERE path=?",
                (rev, device, device_kind, time.time_ns(), path),
            )
            self._bases.drop(path)

    def forget(self, path: str) -> None:
        """Remove every trace of `path` (row and merge base)."""
        with self._db.transaction():
            self._db.conn.execute("DELETE FROM files WHERE path=?", (path,))
            self._bases.drop(path)

    def live_stats(
        self, prefix: str | None = None, *, fold_key: str | None = None
    ) -> dict[str, StatKey]:
        """``path -> (mtime_ns, size, inode, ctime_ns)`` of every live (not deleted) entry, in
        one query.

        With `prefix` (e.g. ``"notes/"``) only paths under it; with `fold_key` only the paths
        with that case-folded form (see `pathsafe.fold`).
        """
        ctime = "ctime_ns" if self._db.version >= 2 else "0"
        sql = f"SELECT path, mtime_ns, size, inode, {ctime} FROM files WHERE deleted=0"
        args: tuple[str, ...] = ()
        if prefix:
            sql += " AND path >= ? AND path < ?"
            args = (prefix, _prefix_end(prefix))
        if fold_key is not None:
            sql += " AND fold = ?"
            args = (*args, fold_key)
        with self._db.lock:
            cur = self._db.conn.execute(sql, args)
            return {r[0]: r[1:] for r in cur}

    def iter_entries(self, *, include_deleted: bool = False, batch: int = 1000) -> Iterator[Entry]:
        """Every entry, in path order, fetched in batches (constant memory)."""
        db = self._db
        last = ""
        where = "" if include_deleted else " AND deleted=0"
        while True:
            with db.lock:
                rows = db.conn.execute(
                    f"SELECT {db.cols} FROM files WHERE path > ?{where} ORDER BY path LIMIT ?",
                    (last, batch),
                ).fetchall()
            if not rows:
                return
            for row in rows:
                yield _entry(row)
            last = rows[-1][0]

    def paths_with_fold(self, key: str) -> list[str]:
        """Live paths whose case-folded form is `key` (case-collision detection)."""
        with self._db.lock:
            rows = self._db.conn.execute(
                "SELECT path FROM files WHERE fold=? AND deleted=0 ORDER BY path", (key,)
            ).fetchall()
        return [r[0] for r in rows]

    def count_live(self) -> int:
        """Live files: every row less the tombstones (both counts read an index, not rows)."""
        with self._db.lock:
            row = self._db.conn.execute(
                "SELECT (SELECT count(*) FROM files) - (SELECT count(*) FROM files WHERE deleted=1)"
            ).fetchone()
        return int(row[0])

    def kept_copy_candidates(self) -> list[str]:
        """Live paths that may be conflict copies or kept names (`KEPT_COPY_PATTERNS`), in path
        order; `views.copy_paths` keeps the real ones."""
        with self._db.lock:
            rows = self._db.conn.execute(
                f"SELECT path FROM files WHERE {KEPT_COPIES} ORDER BY path"
            ).fetchall()
        return [r[0] for r in rows]

    def rotation(self, after: str, limit: int, *, max_bytes: int | None = None) -> list[Entry]:
        """Up to `limit` live entries after `after` in path order, wrapping round to the start:
        the slice of the vault a full round re-hashes (`scanner`'s `verify`).

        With `max_bytes`, the slice also stops before the file that would take its sizes past
        it, but holds at least one file: a file larger than the budget is a slice of its own,
        so the rotation always moves on."""
        db = self._db
        with db.lock:
            rows = db.conn.execute(
                f"SELECT {db.cols} FROM files WHERE deleted=0 AND path > ? ORDER BY path LIMIT ?",
                (after, limit),
            ).fetchall()
            if len(rows) < limit:
                rows += db.conn.execute(
                    f"SELECT {db.cols} FROM files WHERE deleted=0 AND path <= ? ORDER BY path "
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

    def _by_file_id(self, columns: str, file_ids: Iterable[str]) -> list[tuple[Any, ...]]:
        """`SELECT columns FROM files` for these file ids, in chunks SQLite accepts."""
        ids = list(dict.fromkeys(file_ids))
        rows: list[tuple[Any, ...]] = []
        with self._db.lock:
            for i in range(0, len(ids), SQL_CHUNK):
                part = ids[i : i + SQL_CHUNK]
                marks = ",".join("?" * len(part))
                sql = f"SELECT {columns} FROM files WHERE file_id IN ({marks})"
                rows.extend(self._db.conn.execute(sql, part))
        return rows

    def revs_for_file_ids(self, file_ids: Iterable[str]) -> dict[str, int]:
        """file id -> the revision this index holds (tombstones included)."""
        out: dict[str, int] = {}
        for fid, rev in self._by_file_id("file_id, rev", file_ids):
            out[fid] = max(rev, out.get(fid, 0))
        return out

    def paths_for_file_ids(self, file_ids: Iterable[str]) -> dict[str, str]:
        """file id -> path, for the files this index knows."""
        return {fid: path for path, fid in self._by_file_id("path, file_id", file_ids)}

    def hidden_folder_paths(self) -> list[str]:
        """Live files inside top-level hidden folders (`.obsidian/...`, `.x/...`): what the
        hold rules read to tell which folders have Obsidian's config shape (a range of the
        primary key: paths from "." up to, not including, "/")."""
        with self._db.lock:
            rows = self._db.conn.execute(
                "SELECT path FROM files WHERE path >= '.' AND path < '/' AND deleted=0 "
                "AND instr(path, '/') > 0"
            ).fetchall()
        return [r[0] for r in rows]
