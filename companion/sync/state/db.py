"""The one SQLite connection of a sync index, shared by its stores (`sync/state/index.py`).

One connection behind one re-entrant lock, and one `transaction()` that nests (only the
outermost commits): a store's write is its own transaction, and a caller groups writes to
several stores (an entry, its merge base and the inbox row it came from) in one
``with index.transaction():``. `version` is the schema the file holds: a read-only reader
beside an engine not upgraded yet reads an older one (`cols` then names no ctime).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SQL_CHUNK = 500  # host parameters per IN (...) query, well under SQLite's limit

FILE_COLS = (
    "path, file_id, rev, sha256, size, mtime_ns, inode, is_text, deleted, device, "
    "device_kind, updated_ns, ctime_ns"
)
_FILE_COLS_V1 = FILE_COLS.replace("ctime_ns", "0")  # a reader beside an engine not upgraded yet


class Db:
    """The connection, its lock and the transaction nesting, for the stores of one index."""

    def __init__(self, conn: sqlite3.Connection, version: int) -> None:
        self.conn = conn
        self.lock = threading.RLock()
        self.version = version
        self.cols = FILE_COLS if version >= 2 else _FILE_COLS_V1
        self._depth = 0

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes atomically (nestable; only the outermost commits)."""
        with self.lock:
            if self._depth == 0:
                self.conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if self._depth == 0:
                    self.conn.execute("ROLLBACK")
                raise
            self._depth -= 1
            if self._depth == 0:
                self.conn.execute("COMMIT")

    def close(self) -> None:
        with self.lock:
            self.conn.close()
