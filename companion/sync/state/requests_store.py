"""Work another process asked of the engine that owns this copy (`requests`): the rows
`sync/service/requests.py` adds, claims and answers."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from companion.sync.state.db import Db


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


class RequestStore:
    """The `requests` table."""

    def __init__(self, db: Db) -> None:
        self._db = db

    def add(self, kind: str, args: dict[str, Any]) -> int:
        with self._db.transaction():
            cur = self._db.conn.execute(
                "INSERT INTO requests (kind, args, created_ns) VALUES (?, ?, ?)",
                (kind, json.dumps(args, sort_keys=True), time.time_ns()),
            )
            return int(cur.lastrowid or 0)

    def rows(self, state: str | None = None) -> list[RequestRow]:
        sql = _REQUEST_COLUMNS
        args: tuple[str, ...] = ()
        if state is not None:
            sql += " WHERE state=?"
            args = (state,)
        with self._db.lock:
            rows = self._db.conn.execute(sql + " ORDER BY id", args).fetchall()
        return [_request_row(r) for r in rows]

    def get(self, request_id: int) -> RequestRow | None:
        """One request, by its id: a waiting command asks every few milliseconds, so this
        reads its row alone (the table keeps a day of finished requests)."""
        with self._db.lock:
            row = self._db.conn.execute(_REQUEST_COLUMNS + " WHERE id=?", (request_id,)).fetchone()
        return None if row is None else _request_row(row)

    def set(
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
        with self._db.transaction():
            return self._db.conn.execute(sql, args).rowcount > 0

    def prune(self, before_ns: int) -> None:
        with self._db.transaction():
            self._db.conn.execute(
                "DELETE FROM requests WHERE created_ns < ? AND state != 'pending'", (before_ns,)
            )
