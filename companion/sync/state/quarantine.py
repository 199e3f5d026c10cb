"""Files whose newest record on the relay could not be opened or verified (`quarantine`),
one row per file id, each reported once, until the person decides or a newer record opens."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from companion.sync.state.db import Db


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


class QuarantineStore:
    """The `quarantine` table."""

    def __init__(self, db: Db) -> None:
        self._db = db

    def add(self, rows: Iterable[QuarantineRow]) -> list[QuarantineRow]:
        """Record unreadable files; returns those not already recorded at that revision or a
        newer one (the ones to report: each is reported once; an older one changes nothing)."""
        new = []
        conn = self._db.conn
        with self._db.transaction():
            for r in rows:
                old = conn.execute(
                    "SELECT rev, path FROM quarantine WHERE file_id=?", (r.file_id,)
                ).fetchone()
                if old is not None and old[0] >= r.rev:  # an older report never replaces
                    if old[0] == r.rev and r.path and not old[1]:
                        conn.execute(
                            "UPDATE quarantine SET path=? WHERE file_id=?", (r.path, r.file_id)
                        )
                    continue
                conn.execute(
                    "INSERT OR REPLACE INTO quarantine (file_id, rev, path, reason, author, "
                    "since_ns, decision) VALUES (?, ?, ?, ?, ?, ?, '')",
                    (r.file_id, r.rev, r.path, r.reason, r.author, r.since_ns),
                )
                new.append(r)
        return new

    def rows(self) -> list[QuarantineRow]:
        with self._db.lock:
            rows = self._db.conn.execute(
                "SELECT file_id, rev, path, reason, author, since_ns, decision FROM quarantine "
                "ORDER BY path, file_id"
            ).fetchall()
        return [QuarantineRow(*r) for r in rows]

    def decide(self, file_id: str, decision: str, path: str = "") -> bool:
        with self._db.transaction():
            cur = self._db.conn.execute(
                "UPDATE quarantine SET decision=?, path=CASE WHEN ?='' THEN path ELSE ? END "
                "WHERE file_id=?",
                (decision, path, path, file_id),
            )
            return cur.rowcount > 0

    def release(self, file_ids: Iterable[str]) -> None:
        with self._db.transaction():
            self._db.conn.executemany(
                "DELETE FROM quarantine WHERE file_id=?", [(f,) for f in file_ids]
            )
