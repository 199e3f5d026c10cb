"""What a remote change replaced (`applied`), kept a few seconds: an editor saving its stale
buffer over an applied change is told apart from an edit (the `stale_save` rule)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from companion.sync.state.bases import BASE_TEXT_LIMIT, compress_base
from companion.sync.state.db import SQL_CHUNK, Db


@dataclass(frozen=True, slots=True)
class AppliedRow:
    """The local version a remote change replaced at `applied_ns` (`prev_data`: its content
    when it is text of at most BASE_TEXT_LIMIT bytes)."""

    path: str
    prev_sha: str
    prev_data: bytes | None
    applied_ns: int


class AppliedStore:
    """The `applied` table: path -> the version a remote change replaced."""

    def __init__(self, db: Db) -> None:
        self._db = db

    def record(self, rows: Iterable[AppliedRow]) -> None:
        items = [
            (r.path, r.prev_sha, None if r.prev_data is None else compress_base(r.prev_data),
             r.applied_ns)
            for r in rows
            if r.prev_data is None or len(r.prev_data) <= BASE_TEXT_LIMIT
        ]  # fmt: skip
        with self._db.transaction():
            self._db.conn.executemany(
                "INSERT OR REPLACE INTO applied (path, prev_sha, prev_data, applied_ns) "
                "VALUES (?, ?, ?, ?)",
                items,
            )

    def get_many(self, paths: Iterable[str]) -> dict[str, AppliedRow]:
        """The recorded applies of these paths (those the table has)."""
        wanted = list(dict.fromkeys(paths))
        out: dict[str, AppliedRow] = {}
        with self._db.lock:
            for i in range(0, len(wanted), SQL_CHUNK):
                chunk = wanted[i : i + SQL_CHUNK]
                marks = ",".join("?" * len(chunk))
                for path, sha, data, ns in self._db.conn.execute(
                    f"SELECT path, prev_sha, prev_data, applied_ns FROM applied "
                    f"WHERE path IN ({marks})",
                    chunk,
                ):
                    out[path] = AppliedRow(
                        path, sha, None if data is None else zlib.decompress(data), ns
                    )
        return out

    def drop(self, paths: Iterable[str]) -> None:
        with self._db.transaction():
            self._db.conn.executemany("DELETE FROM applied WHERE path=?", [(p,) for p in paths])

    def prune(self, before_ns: int) -> None:
        with self._db.transaction():
            self._db.conn.execute("DELETE FROM applied WHERE applied_ns < ?", (before_ns,))
