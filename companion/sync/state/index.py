"""The local sync index of one vault copy: what was last synced, per path (SQLite, WAL).

`SyncIndex` owns the file: one connection, the schema and its migrations, and one
`transaction()` (nestable: only the outermost commits) that groups writes across its stores.
Each table has a small store, on that one connection, as an attribute of the index:

- `files` (`state/files.py`): one row per normalised path, the relay file id and revision last
  synced, the content hash and stat identity of the local file *as of that sync*, tombstones;
- `bases` (`state/bases.py`): the last common version of small text files (the merge base),
  compressed, in a table of its own so scanning `files` stays fast;
- `meta` (`state/meta.py`): per-vault facts (vault id, device id, last relay sequence);
- `inbox` (`state/inbox.py`): verified remote changes still to apply, kept sealed;
- `held` and `quarantine` (`state/held.py`, `state/quarantine.py`): what waits for the person;
- `applied` (`state/applied.py`): the version a remote change replaced, for a few seconds
  (the `stale_save` rule);
- `requests` (`state/requests_store.py`): work another process asked the engine owning this
  copy to do (`sync/service/requests.py`).

So ``index.inbox.add(...)``, ``index.files.get(path)``; writes to several stores in one
transaction: ``with index.transaction(): index.files.put(e); index.inbox.done(ids)``.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path

from companion.errors import CompanionError
from companion.sync.local.pathsafe import fold
from companion.sync.state.applied import AppliedStore
from companion.sync.state.bases import BaseStore
from companion.sync.state.db import Db
from companion.sync.state.files import KEPT_COPIES, FileStore
from companion.sync.state.held import HeldStore
from companion.sync.state.inbox import InboxStore
from companion.sync.state.meta import MetaStore
from companion.sync.state.quarantine import QuarantineStore
from companion.sync.state.requests_store import RequestStore

SCHEMA_VERSION = 4

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path        TEXT PRIMARY KEY,
    fold        TEXT NOT NULL,
    file_id     TEXT NOT NULL DEFAULT '',
    rev         INTEGER NOT NULL DEFAULT 0,
    sha256      TEXT NOT NULL DEFAULT '',
    size        INTEGER NOT NULL DEFAULT 0,
    mtime_ns    INTEGER NOT NULL DEFAULT 0,
    inode       INTEGER NOT NULL DEFAULT 0,
    ctime_ns    INTEGER NOT NULL DEFAULT 0,
    is_text     INTEGER NOT NULL DEFAULT 0,
    deleted     INTEGER NOT NULL DEFAULT 0,
    device      TEXT NOT NULL DEFAULT '',
    device_kind TEXT NOT NULL DEFAULT '',
    updated_ns  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS files_fold ON files(fold);
CREATE INDEX IF NOT EXISTS files_file_id ON files(file_id);
CREATE INDEX IF NOT EXISTS files_tombstones ON files(path) WHERE deleted=1;
CREATE INDEX IF NOT EXISTS files_kept_copies ON files(path) WHERE KEPT_COPIES;
CREATE TABLE IF NOT EXISTS bases (
    path TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS inbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    path       TEXT NOT NULL UNIQUE,
    payload    TEXT NOT NULL,
    created_ns INTEGER NOT NULL,
    problem    TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS applied (
    path       TEXT PRIMARY KEY,
    prev_sha   TEXT NOT NULL,
    prev_data  BLOB,
    applied_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL,
    args       TEXT NOT NULL DEFAULT '{}',
    created_ns INTEGER NOT NULL,
    state      TEXT NOT NULL DEFAULT 'pending',
    result     TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS held (
    path     TEXT PRIMARY KEY,
    file_id  TEXT NOT NULL,
    rev      INTEGER NOT NULL,
    payload  TEXT NOT NULL,
    reason   TEXT NOT NULL,
    author   TEXT NOT NULL DEFAULT '',
    since_ns INTEGER NOT NULL,
    decision TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS quarantine (
    file_id  TEXT PRIMARY KEY,
    rev      INTEGER NOT NULL,
    path     TEXT NOT NULL DEFAULT '',
    reason   TEXT NOT NULL,
    author   TEXT NOT NULL DEFAULT '',
    since_ns INTEGER NOT NULL,
    decision TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
""".replace("KEPT_COPIES", KEPT_COPIES)

# Schema 1 -> 2: the inode change time, the inbox under its name (it was `outbox`, holding the
# inbox), the applied and requests tables (created by _SCHEMA).
_MIGRATE_1 = """
ALTER TABLE files ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0;
INSERT OR REPLACE INTO inbox (id, path, payload, created_ns)
    SELECT id, path, payload, created_ns FROM outbox WHERE kind = 'remote' ORDER BY id;
DROP TABLE outbox;
"""


# Schema 2 -> 3: the two tables of file contents become rowid tables. In a WITHOUT ROWID
# table a row keeps only ~1 KB on its page and spills the rest to an overflow page of its own,
# so the typical note's compressed base (~1.1 KB) took a whole 4 KB page: on 10,000 notes the
# bases held 11 MB in 31 MB of pages, written twice (WAL, then the database) on a first sync.
_MIGRATE_2 = """
CREATE TABLE bases_v3 (path TEXT PRIMARY KEY, data BLOB NOT NULL);
INSERT INTO bases_v3 (path, data) SELECT path, data FROM bases;
DROP TABLE bases;
ALTER TABLE bases_v3 RENAME TO bases;
CREATE TABLE applied_v3 (
    path TEXT PRIMARY KEY, prev_sha TEXT NOT NULL, prev_data BLOB, applied_ns INTEGER NOT NULL
);
INSERT INTO applied_v3 (path, prev_sha, prev_data, applied_ns)
    SELECT path, prev_sha, prev_data, applied_ns FROM applied;
DROP TABLE applied;
ALTER TABLE applied_v3 RENAME TO applied;
"""


def _migrate(db: sqlite3.Connection, version: int) -> None:
    """Bring an existing index to SCHEMA_VERSION (in one transaction, already begun)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        steps = [_MIGRATE_1, _MIGRATE_2, ""][version - 1 :] if version >= 1 else []
        for script in steps:  # a new index (version 0) got the current schema above
            for stmt in script.split(";"):
                if stmt.strip():
                    db.execute(stmt)
        if 1 <= version < 4:  # schema 3 -> 4: one fold for both engines (rules_v1.json)
            rows = db.execute("SELECT path FROM files").fetchall()
            refold = [(fold(p), p) for (p,) in rows]
            db.executemany("UPDATE files SET fold=? WHERE path=?", refold)
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


class SyncIndexError(CompanionError):
    """The index database cannot be opened or is from a newer version of the program."""


def vault_key(vault_root: str | os.PathLike[str]) -> str:
    """A stable, readable folder name for one vault copy: ``<name>-<hash of real path>``."""
    real = os.path.realpath(vault_root)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(real.rstrip(os.sep)) or "vault")
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{name[:40]}-{digest}"


def vault_state_dir(data_dir: str | os.PathLike[str], vault_root: str | os.PathLike[str]) -> Path:
    """The engine's per-vault folder under the device data dir (index, partial downloads)."""
    return Path(data_dir) / "sync" / vault_key(vault_root)


def index_path(data_dir: str | os.PathLike[str], vault_root: str | os.PathLike[str]) -> Path:
    return vault_state_dir(data_dir, vault_root) / "index.sqlite"


class SyncIndex:
    """The SQLite index of one vault copy: its stores on one connection. Thread-safe (one
    connection behind a lock)."""

    def __init__(self, db_path: str | os.PathLike[str], *, readonly: bool = False) -> None:
        """Open (or create) the index. `readonly`: a reader beside the engine that owns the
        copy (the MCP server, status views); it never creates, migrates or writes anything."""
        self.path = Path(db_path)
        self.readonly = readonly
        if readonly:
            conn, version = self._open_readonly()
        else:
            conn, version = self._open(), SCHEMA_VERSION
        self.db = Db(conn, version)
        self.bases = BaseStore(self.db)
        self.files = FileStore(self.db, self.bases)
        self.meta = MetaStore(self.db)
        self.inbox = InboxStore(self.db)
        self.applied = AppliedStore(self.db)
        self.requests = RequestStore(self.db)
        self.held = HeldStore(self.db)
        self.quarantine = QuarantineStore(self.db)

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise SyncIndexError(
                    f"{self.path}: the sync index was written by a newer version "
                    f"(schema {version}); upgrade the companion"
                )
            conn.executescript(_SCHEMA)  # idempotent: CREATE ... IF NOT EXISTS
            if version < SCHEMA_VERSION:
                _migrate(conn, version)
        except sqlite3.DatabaseError as exc:
            raise SyncIndexError(f"{self.path}: cannot open the sync index: {exc}") from None
        return conn

    def _open_readonly(self) -> tuple[sqlite3.Connection, int]:
        if not self.path.is_file():
            raise SyncIndexError(f"{self.path}: no sync index (this copy has not synced yet)")
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            db = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False, timeout=5
            )
            version = db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise SyncIndexError(f"{self.path}: cannot read the sync index: {exc}") from None
        if version > SCHEMA_VERSION:
            db.close()
            raise SyncIndexError(
                f"{self.path}: the sync index was written by a newer version "
                f"(schema {version}); upgrade the companion"
            )
        return db, int(version)

    # ------------------------------------------------------------------ lifecycle

    def transaction(self) -> AbstractContextManager[None]:
        """Group writes to any of the stores atomically (nestable; only the outermost
        commits)."""
        return self.db.transaction()

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> SyncIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
