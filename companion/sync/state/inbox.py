"""The inbox (`inbox`): verified remote changes still to apply here, kept sealed (re-verified
when opened), surviving restarts."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from companion.sync.state.db import Db


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


class InboxStore:
    """The `inbox` table (`outbox` in schema 1, read by a read-only reader only)."""

    def __init__(self, db: Db) -> None:
        self._db = db

    def add(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Queue remote changes to apply (one per path: a newer one replaces the queued one)."""
        now = time.time_ns()
        rows = [(path, json.dumps(payload, sort_keys=True), now) for path, payload in items]
        with self._db.transaction():
            self._db.conn.executemany(
                "INSERT INTO inbox (path, payload, created_ns) VALUES (?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET payload=excluded.payload, "
                "created_ns=excluded.created_ns, problem=''",
                rows,
            )

    def rows(self) -> list[InboxRow]:
        """Queued remote changes, oldest first."""
        if self._db.version < 2:
            sql = "SELECT id, path, payload, created_ns, '' FROM outbox WHERE kind='remote'"
        else:
            sql = "SELECT id, path, payload, created_ns, problem FROM inbox"
        with self._db.lock:
            rows = self._db.conn.execute(sql + " ORDER BY id").fetchall()
        return [InboxRow(r[0], r[1], json.loads(r[2]), r[3], r[4]) for r in rows]

    def count(self) -> int:
        table = "inbox" if self._db.version >= 2 else "outbox"
        with self._db.lock:
            return int(self._db.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def done(self, row_ids: Iterable[int]) -> None:
        with self._db.transaction():
            self._db.conn.executemany("DELETE FROM inbox WHERE id=?", [(i,) for i in row_ids])

    def problem(self, row_id: int, problem: str) -> None:
        """Keep the change queued, with the reason it cannot be applied now."""
        with self._db.transaction():
            self._db.conn.execute("UPDATE inbox SET problem=? WHERE id=?", (problem[:500], row_id))
