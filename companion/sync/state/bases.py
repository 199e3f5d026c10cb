"""The merge bases: the last common version of each small text file, compressed (`bases`).

Kept apart from the `files` table so scanning that one stays fast. A base is any zlib stream of
the data, so the stream sealed into a one-chunk blob's frame is kept as it is (`base_streams`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from companion.sync.state.db import Db

BASE_TEXT_LIMIT = 1 << 20  # merge bases are kept for text files up to 1 MiB


def compress_base(data: bytes) -> bytes:
    return zlib.compress(data, 6)


def _compress_all(datas: list[bytes]) -> list[bytes]:
    return [compress_base(d) for d in datas]


def pack_bases(
    items: Iterable[tuple[str, bytes | None]], streams: Mapping[str, bytes] | None = None
) -> dict[str, bytes]:
    """The merge bases `BaseStore.set_many` will store for these items, compressed now: run
    it on another thread while the files are written (`set_many(..., packed=)`).

    `streams` maps a path to a zlib stream of its data made already (the one sealed into its
    blob's frame): a base is any zlib stream of the data, so that one is kept as it is."""
    known = streams or {}
    return {
        path: known.get(path) or compress_base(data)
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


class BaseStore:
    """The `bases` table: path -> compressed last common version."""

    def __init__(self, db: Db) -> None:
        self._db = db

    def set(self, path: str, data: bytes | None) -> bool:
        """Store the last common version of a text file; None (or too large) removes it.

        Returns True when a base is now stored.
        """
        db = self._db
        with db.transaction():
            if data is None or len(data) > BASE_TEXT_LIMIT:
                db.conn.execute("DELETE FROM bases WHERE path=?", (path,))
                return False
            db.conn.execute(
                "INSERT OR REPLACE INTO bases (path, data) VALUES (?, ?)",
                (path, compress_base(data)),
            )
            return True

    def set_many(
        self,
        items: Iterable[tuple[str, bytes | None]],
        mapper: Callable[..., Iterable[bytes]] = map,
        packed: Mapping[str, bytes] | None = None,
    ) -> None:
        """`set` for many files (each path once) in one transaction. `mapper` runs the
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
        db = self._db
        with db.transaction():
            db.conn.executemany("DELETE FROM bases WHERE path=?", drop)
            db.conn.executemany("INSERT OR REPLACE INTO bases (path, data) VALUES (?, ?)", rows)

    def get(self, path: str) -> bytes | None:
        with self._db.lock:
            row = self._db.conn.execute("SELECT data FROM bases WHERE path=?", (path,)).fetchone()
        return zlib.decompress(row[0]) if row else None

    def move(self, old: str, new: str) -> None:
        """Carry a merge base along a rename."""
        db = self._db
        with db.transaction():
            db.conn.execute("DELETE FROM bases WHERE path=?", (new,))
            db.conn.execute("UPDATE bases SET path=? WHERE path=?", (new, old))

    def drop(self, path: str) -> None:
        """Remove the base of `path` (in the caller's transaction, when there is one)."""
        with self._db.transaction():
            self._db.conn.execute("DELETE FROM bases WHERE path=?", (path,))
