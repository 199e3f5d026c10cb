"""Versioned schema migrations for the PostgreSQL relay store.

Each migration is a numbered list of statements, applied in order in one transaction, and
recorded in `schema_migrations`. `migrate` holds a transaction-level advisory lock, so two
relays (or two admins) running `companion relay migrate` at once apply each migration exactly
once. `serve` never migrates on its own unless told to (`--migrate`): in a deployment of N
relays, an upgrade is `companion relay migrate`, then the new relays. `check` refuses to serve
a database whose schema is behind (run migrate) or ahead (this relay is too old for it).

Add a migration by appending to MIGRATIONS; never edit one that has shipped.
"""

from __future__ import annotations

import time

import psycopg

MIGRATE_LOCK = 0x636F6D6D  # pg_advisory_xact_lock key

MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE vaults (
            vault_id text PRIMARY KEY,
            created double precision NOT NULL,
            seq bigint NOT NULL DEFAULT 0,
            key_blob bytea,
            key_updated double precision)""",
        """CREATE TABLE key_wraps (
            id bigserial PRIMARY KEY,
            vault_id text NOT NULL,
            key_blob bytea NOT NULL,
            sha256 text NOT NULL,
            set_at double precision NOT NULL,
            device_id text NOT NULL)""",
        "CREATE INDEX key_wraps_vault ON key_wraps (vault_id, id)",
        """CREATE TABLE invites (
            code_hash bytea PRIMARY KEY,
            vault_id text NOT NULL,
            created double precision NOT NULL,
            expires double precision NOT NULL,
            used double precision,
            used_by text,
            kind text NOT NULL DEFAULT 'agent' CHECK (kind IN ('human', 'agent')))""",
        """CREATE TABLE devices (
            device_id text PRIMARY KEY,
            vault_id text NOT NULL,
            name text NOT NULL,
            kind text NOT NULL,
            token_hash bytea NOT NULL,
            created double precision NOT NULL,
            revoked double precision)""",
        "CREATE INDEX devices_vault ON devices (vault_id, created)",
        """CREATE TABLE records (
            vault_id text NOT NULL,
            seq bigint NOT NULL,
            file_id text NOT NULL,
            rev bigint NOT NULL,
            parent_rev bigint NOT NULL,
            sealed bytea NOT NULL,
            blobs text[] NOT NULL,
            device_id text NOT NULL,
            committed_at double precision NOT NULL,
            PRIMARY KEY (vault_id, seq),
            UNIQUE (vault_id, file_id, rev))""",
        "ALTER TABLE records ALTER COLUMN sealed SET STORAGE EXTERNAL",  # ciphertext: no pglz
        """CREATE TABLE blob_content (
            sha256 text PRIMARY KEY,
            size bigint NOT NULL,
            created double precision NOT NULL,
            store text NOT NULL)""",
        """CREATE TABLE blob_chunks (
            sha256 text NOT NULL,
            n integer NOT NULL,
            data bytea NOT NULL,
            PRIMARY KEY (sha256, n))""",
        "ALTER TABLE blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL",
        """CREATE TABLE blobs (
            vault_id text NOT NULL,
            blob_id text NOT NULL,
            size bigint NOT NULL,
            sha256 text NOT NULL,
            created double precision NOT NULL,
            PRIMARY KEY (vault_id, blob_id))""",
        "CREATE INDEX blobs_sha256 ON blobs (sha256)",
        """CREATE TABLE quarantine (
            vault_id text NOT NULL,
            blob_id text NOT NULL,
            sha256 text NOT NULL,
            at double precision NOT NULL)""",
        """CREATE TABLE leases (
            vault_id text NOT NULL,
            name text NOT NULL,
            holder text NOT NULL,
            expires double precision NOT NULL,
            PRIMARY KEY (vault_id, name))""",
        """CREATE TABLE auth_failures (
            key text PRIMARY KEY,
            tokens double precision NOT NULL,
            stamp double precision NOT NULL)""",
    ],
}
LATEST = max(MIGRATIONS)


class SchemaError(RuntimeError):
    """The database's schema is not the one this relay speaks."""


def _ensure_table(conn: psycopg.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
        "applied_at double precision NOT NULL)"
    )


def current_version(conn: psycopg.Connection) -> int:
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute("SELECT COALESCE(max(version), 0) FROM schema_migrations").fetchone()
    return int(row[0]) if row else 0


def migrate(url: str) -> tuple[int, int]:
    """Apply every pending migration; (version before, version after)."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        _ensure_table(conn)
        before = current_version(conn)
        if before > LATEST:
            raise SchemaError(
                f"the database is at schema {before}, newer than this relay knows ({LATEST}): "
                "upgrade the relay"
            )
        for version in range(before + 1, LATEST + 1):
            for stmt in MIGRATIONS[version]:
                conn.execute(stmt)  # type: ignore[arg-type]
            conn.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (%s, %s)",
                (version, time.time()),
            )
    return before, LATEST


def check(conn: psycopg.Connection, where: str) -> None:
    version = current_version(conn)
    if version < LATEST:
        raise SchemaError(
            f"the relay database {where} is at schema {version}, this relay needs {LATEST}: "
            "run `companion relay migrate --database URL` (or serve with --migrate)"
        )
    if version > LATEST:
        raise SchemaError(
            f"the relay database {where} is at schema {version}, newer than this relay "
            f"({LATEST}): upgrade the relay"
        )
