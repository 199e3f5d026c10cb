"""The relay's two stores, for tests that must pass on both: `Backend.storage(path)` opens
SQLite in `path`, or a fresh PostgreSQL database on the session's real cluster (`pgcluster`).
The `backend` fixture (conftest.py) runs a test once per store.

The few things tests do that depend on where bytes live have one helper each here: damaging
a stored blob (`damage`) and finding upload leftovers (`leftovers`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from companion.relay.storage import RelayStorage

NAMES = ("sqlite", "postgres")


@dataclass
class Backend:
    name: str
    urls: list[str] = field(default_factory=list)

    def storage(self, path: str | Path) -> RelayStorage:
        if self.name == "sqlite":
            from companion.relay.sqlite_storage import SqliteStorage

            return SqliteStorage(path)
        from companion.relay.pg_storage import PgStorage

        return PgStorage(self.database())

    def database(self) -> str:
        """A fresh, migrated PostgreSQL database (postgres only)."""
        from tests.pgcluster import fresh_database

        url = fresh_database()
        self.urls.append(url)
        return url

    def store_args(self, path: str | Path) -> list[str]:
        """`companion relay ...` options naming a fresh store of this backend."""
        return ["--data", str(path)] if self.name == "sqlite" else ["--database", self.database()]


def open_store(store_args: list[str]) -> RelayStorage:
    """The store named by `Backend.store_args` (to look at what a relay process wrote)."""
    from companion.relay.backends import StoreChoice, open_storage

    if store_args[0] == "--data":
        return open_storage(StoreChoice(data=Path(store_args[1])))
    return open_storage(StoreChoice(database=store_args[1]))


def damage(storage: RelayStorage, vault_id: str, blob_id: str, data: bytes) -> None:
    """Replace a stored blob's bytes behind the relay's back (disk damage, an operator)."""
    from companion.relay.sqlite_storage import SqliteStorage

    if isinstance(storage, SqliteStorage):
        with storage._write() as c:  # a small blob is a row of blob_data, a large one a file
            cur = c.execute(
                "UPDATE blob_data SET data=? WHERE vault_id=? AND blob_id=?",
                (data, vault_id, blob_id),
            )
        if cur.rowcount == 0:
            storage.blob_path(vault_id, blob_id).write_bytes(data)
        return
    info = storage.blob_info(vault_id, blob_id)
    assert info is not None
    with storage.pool.connection() as c:  # type: ignore[attr-defined]
        c.execute("DELETE FROM blob_chunks WHERE sha256=%s", (info.sha256,))
        c.execute(
            "INSERT INTO blob_chunks (sha256, n, data) VALUES (%s, 0, %s)", (info.sha256, data)
        )


def leftovers(storage: RelayStorage) -> list[str]:
    """Bytes of uploads that did not complete: files in tmp/ (SQLite), content no blob names
    (PostgreSQL). Both must be empty after a refused upload."""
    from companion.relay.sqlite_storage import SqliteStorage

    if isinstance(storage, SqliteStorage):
        return [p.name for p in storage.tmp_dir.iterdir()]
    with storage.pool.connection() as c:  # type: ignore[attr-defined]
        rows = c.execute(
            "SELECT sha256 FROM blob_content x WHERE NOT EXISTS "
            "(SELECT 1 FROM blobs b WHERE b.sha256 = x.sha256)"
        ).fetchall()
    return [r[0] for r in rows]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
