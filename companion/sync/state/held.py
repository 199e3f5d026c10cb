"""Remote changes kept out of the vault until the person decides (`held`;
`sync/round/holds.py` says which)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from companion.sync.state.db import Db


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


class HeldStore:
    """The `held` table, one row per path."""

    def __init__(self, db: Db) -> None:
        self._db = db

    def add(self, rows: Iterable[HeldRow]) -> None:
        """Keep these remote changes out of the vault (a newer hold of a path replaces it)."""
        with self._db.transaction():
            self._db.conn.executemany(
                "INSERT OR REPLACE INTO held (path, file_id, rev, payload, reason, author, "
                "since_ns, decision) VALUES (?, ?, ?, ?, ?, ?, ?, '')",
                [
                    (r.path, r.file_id, r.rev, json.dumps(r.payload, sort_keys=True), r.reason,
                     r.author, r.since_ns)
                    for r in rows
                ],
            )  # fmt: skip

    def rows(self) -> list[HeldRow]:
        with self._db.lock:
            rows = self._db.conn.execute(
                "SELECT path, file_id, rev, payload, reason, author, since_ns, decision "
                "FROM held ORDER BY path"
            ).fetchall()
        return [HeldRow(r[0], r[1], r[2], json.loads(r[3]), *r[4:]) for r in rows]

    def decide(self, path: str, decision: str) -> bool:
        """Record the person's decision on a held change; False when nothing is held there."""
        with self._db.transaction():
            cur = self._db.conn.execute("UPDATE held SET decision=? WHERE path=?", (decision, path))
            return cur.rowcount > 0

    def release(self, paths: Iterable[str]) -> None:
        with self._db.transaction():
            self._db.conn.executemany("DELETE FROM held WHERE path=?", [(p,) for p in paths])
