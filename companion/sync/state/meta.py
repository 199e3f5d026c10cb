"""Per-vault facts of one index (`meta`): vault and device id, the relay cursor, the ignore
rules' digest, the verify rotation's place."""

from __future__ import annotations

from companion.sync.state.db import Db


class MetaStore:
    """The `meta` key/value table."""

    def __init__(self, db: Db) -> None:
        self._db = db

    def get(self, key: str, default: str | None = None) -> str | None:
        with self._db.lock:
            row = self._db.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set(self, key: str, value: str) -> None:
        with self._db.transaction():
            self._db.conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value)
            )
