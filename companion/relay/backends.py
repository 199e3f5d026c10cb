"""Choosing the relay's store: SQLite + blob files in a folder (`--data DIR`, the embedded
default), or PostgreSQL (`--database postgresql://...`), with blobs in PostgreSQL or in an
S3-compatible object store (`--blobs s3://bucket/prefix [--s3-endpoint URL]`).

The database URL may also come from COMPANION_RELAY_DATABASE, which keeps a password out of
the process list; libpq's own sources (PGPASSWORD, ~/.pgpass, PGSERVICE) work too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from companion.errors import InputError
from companion.relay.auth import FailureLimiter, SharedFailureLimiter
from companion.relay.storage import RelayStorage

DATABASE_ENV = "COMPANION_RELAY_DATABASE"


@dataclass(frozen=True)
class StoreChoice:
    data: Path | None = None
    database: str | None = None
    blobs: str | None = None  # s3://bucket/prefix (PostgreSQL only)
    s3_endpoint: str | None = None

    def resolved(self) -> StoreChoice:
        database = self.database or (os.environ.get(DATABASE_ENV) if self.data is None else None)
        if (self.data is None) == (database is None):
            raise InputError(
                "give the relay's store: --data DIR (SQLite) or --database postgresql://... "
                f"(or {DATABASE_ENV}), not both"
            )
        if database is not None and not database.startswith(("postgresql://", "postgres://")):
            raise InputError(f"--database must be a postgresql:// URL, not {database[:20]!r}...")
        if self.blobs and database is None:
            raise InputError("--blobs (an object store) needs --database (PostgreSQL)")
        if self.blobs and not self.blobs.startswith("s3://"):
            raise InputError(f"--blobs must be s3://bucket/prefix, not {self.blobs!r}")
        return StoreChoice(self.data, database, self.blobs, self.s3_endpoint)

    @property
    def label(self) -> str:
        if self.data is not None:
            return str(self.data)
        from companion.relay.pg_storage import redact_url

        return redact_url(self.database or "")


def open_storage(choice: StoreChoice, *, must_exist: bool = False, hint: str = "") -> RelayStorage:
    """The store `choice` names (resolved first). InputError for anything a person must fix."""
    choice = choice.resolved()
    if choice.data is not None:
        from companion.relay.sqlite_storage import SqliteStorage

        if must_exist and not (choice.data / "relay.db").is_file():
            raise InputError(
                f"no relay data in {choice.data} (start one with: companion relay serve --data"
                f"{hint})"
            )
        try:
            return SqliteStorage(choice.data)
        except OSError as exc:
            raise InputError(
                f"cannot open relay data in {choice.data}: {exc.strerror or exc}"
            ) from None
    from companion.relay.pg_schema import SchemaError
    from companion.relay.pg_storage import PgStorage, S3Blobs

    assert choice.database is not None
    blobs = S3Blobs(choice.blobs, endpoint_url=choice.s3_endpoint) if choice.blobs else None
    try:
        return PgStorage(choice.database, blobs=blobs)
    except (ConnectionError, SchemaError) as exc:
        raise InputError(str(exc)) from None


def limiter_for(storage: RelayStorage) -> FailureLimiter:
    """Failed-authentication buckets: shared through the database when several relay
    processes can share it, in memory otherwise."""
    if hasattr(storage, "limiter_take") and hasattr(storage, "limiter_level"):
        return SharedFailureLimiter(storage)  # type: ignore[arg-type]
    return FailureLimiter()


def migrate(choice: StoreChoice) -> tuple[int, int]:
    """Bring the store's schema up to date; (version before, version after)."""
    choice = choice.resolved()
    if choice.data is not None:
        from companion.relay.sqlite_storage import SCHEMA_VERSION, SqliteStorage, schema_version

        before = schema_version(choice.data)
        SqliteStorage(choice.data).close()  # opening migrates
        return before, SCHEMA_VERSION
    from companion.relay.pg_schema import SchemaError
    from companion.relay.pg_schema import migrate as pg_migrate

    assert choice.database is not None
    try:
        return pg_migrate(choice.database)
    except SchemaError as exc:
        raise InputError(str(exc)) from None
    except Exception as exc:  # psycopg.OperationalError: cannot connect
        from companion.relay.pg_storage import redact_url

        raise InputError(f"cannot migrate {redact_url(choice.database)}: {exc}") from None
