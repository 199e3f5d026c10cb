"""One throw-away PostgreSQL cluster per test session (started on first use, stopped at exit),
and a fresh, migrated database per test: `fresh_database()`.

A real server (Debian's `postgresql` package, run as an unprivileged user when the tests run
as root), not a mock; fsync is off, as nothing here survives the session anyway.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading

from companion.relay.pgtesting import TempCluster

TEMPLATE = "relay_template"
_lock = threading.Lock()
_cluster: TempCluster | None = None
_names = itertools.count(1)


def cluster() -> TempCluster:
    global _cluster
    from tests.prereqs import require

    require("postgresql")
    with _lock:
        if _cluster is None:
            from companion.relay.pg_schema import migrate

            c = TempCluster().start()
            atexit.register(c.stop)
            c.create_database(TEMPLATE)
            migrate(c.url(TEMPLATE))
            _cluster = c
        return _cluster


_free: list[str] = []
TABLES = ("vaults, key_wraps, invites, devices, records, blob_content, blob_chunks, blobs, "
          "quarantine, leases, auth_failures")  # fmt: skip


def fresh_database() -> str:
    """The URL of an empty database with the relay's schema, for one test: one a finished
    test gave back (`release`), emptied, or a new copy of the migrated template."""
    import psycopg

    c = cluster()
    with _lock:
        url = _free.pop() if _free else None
    if url is not None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"TRUNCATE {TABLES} RESTART IDENTITY")  # type: ignore[arg-type]
        return url
    return c.create_database(f"t{os.getpid()}_{next(_names)}", template=TEMPLATE)


def release(url: str) -> None:
    """A test is done with this database (its stores are closed): it may be reused."""
    with _lock:
        _free.append(url)


def empty_database() -> str:
    """The URL of a new database without any schema (to test migrations)."""
    c = cluster()
    return c.create_database(f"e{os.getpid()}_{next(_names)}")
