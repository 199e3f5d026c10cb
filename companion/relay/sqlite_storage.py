"""The embedded relay store: SQLite in WAL mode for state, one file per blob.

Layout under the data directory::

    relay.db                         vaults, invites, devices, records, blobs, leases
    blobs/<vault>/<ab>/<blob>        ciphertext, written temp + fsync + rename (one level of 256
                                     folders: few new folders to flush, small enough folders)
    tmp/                             uploads in progress (same filesystem, so rename is atomic)

Durability: every commit batch is one `BEGIN IMMEDIATE` transaction with `synchronous=FULL`,
so a crash part-way through leaves the store exactly as before the batch. A blob is flushed
to disk and renamed into place before its row is inserted, so a row always names complete
bytes; a batch of blobs is flushed together (one `syncfs` where Linux has it, else an fsync
of each file), not one fsync per blob.

Concurrency: one connection per thread; writers queue on an in-process lock (cheaper than
SQLite's busy-wait) and on SQLite's own lock against other processes (the `invite`, `revoke`
and `prune` commands may run while the server does).

The queries and the rules are `SqlStore`'s (`sqlstore.py`, run by the PostgreSQL store too,
with `SqliteDialect` here); this module keeps the connections, the schema and its migrations,
and where blob bytes live.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from companion.fileio import flush_filesystem
from companion.logs import get_logger
from companion.relay import fsmodes
from companion.relay.sqlstore import CheckedSink, SqliteDialect, SqlStore
from companion.relay.storage import (
    BlobInfo,
    BlobSink,
    NotFound,
    PruneStats,
    RetentionPolicy,
)

log = get_logger("relay.storage")

SCHEMA_VERSION = 3  # 2: invites carry the device kind; every wrapped key is kept; 3: blob_data
INLINE_MAX = 64 * 1024  # blobs up to this size are rows of blob_data, larger ones files

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vaults (
    vault_id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    seq INTEGER NOT NULL DEFAULT 0,
    key_blob BLOB,
    key_updated REAL
);
CREATE TABLE IF NOT EXISTS invites (
    code_hash BLOB PRIMARY KEY,
    vault_id TEXT NOT NULL,
    created REAL NOT NULL,
    expires REAL NOT NULL,
    used REAL,
    used_by TEXT,
    kind TEXT NOT NULL DEFAULT 'agent'
);
CREATE TABLE IF NOT EXISTS key_wraps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    vault_id TEXT NOT NULL,
    key_blob BLOB NOT NULL,
    sha256 TEXT NOT NULL,
    set_at REAL NOT NULL,
    device_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS key_wraps_vault ON key_wraps (vault_id, id);
CREATE TABLE IF NOT EXISTS devices (
    device_id TEXT PRIMARY KEY,
    vault_id TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    token_hash BLOB NOT NULL,
    created REAL NOT NULL,
    revoked REAL
);
CREATE INDEX IF NOT EXISTS devices_vault ON devices (vault_id);
CREATE TABLE IF NOT EXISTS records (
    vault_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    file_id TEXT NOT NULL,
    rev INTEGER NOT NULL,
    parent_rev INTEGER NOT NULL,
    sealed BLOB NOT NULL,
    blobs TEXT NOT NULL,
    device_id TEXT NOT NULL,
    committed_at REAL NOT NULL,
    PRIMARY KEY (vault_id, seq),
    UNIQUE (vault_id, file_id, rev)
);
CREATE TABLE IF NOT EXISTS blobs (
    vault_id TEXT NOT NULL,
    blob_id TEXT NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (vault_id, blob_id)
) WITHOUT ROWID;
-- The bytes of small blobs (most notes): a row is far cheaper to write than a file (creating
-- 10,000 files cost the relay seconds). A blob without a row here is a file under blobs/.
CREATE TABLE IF NOT EXISTS blob_data (
    vault_id TEXT NOT NULL,
    blob_id TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (vault_id, blob_id)
);
CREATE TABLE IF NOT EXISTS leases (
    vault_id TEXT NOT NULL,
    name TEXT NOT NULL,
    holder TEXT NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (vault_id, name)
) WITHOUT ROWID;
"""


def schema_version(data_dir: str | os.PathLike[str]) -> int:
    """The schema version of the relay data in `data_dir` (0: none yet), without migrating."""
    db = Path(data_dir) / "relay.db"
    if not db.is_file():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.Error:
        return 0
    finally:
        conn.close()
    return int(row[0]) if row else 0


def _migrate(c: sqlite3.Connection, version: int) -> None:
    """Bring a database written by schema `version` up to SCHEMA_VERSION (in one transaction;
    the tables new in later versions were created by `_SCHEMA` already)."""
    if version < 2:
        cols = {row[1] for row in c.execute("PRAGMA table_info(invites)")}
        if "kind" not in cols:  # unredeemed invites from before: agent, the safe kind
            c.execute("ALTER TABLE invites ADD COLUMN kind TEXT NOT NULL DEFAULT 'agent'")
        rows = c.execute(
            "SELECT vault_id, key_blob, COALESCE(key_updated, created) FROM vaults "
            "WHERE key_blob IS NOT NULL"
        ).fetchall()
        for vault_id, blob, set_at in rows:
            c.execute(
                "INSERT INTO key_wraps (vault_id, key_blob, sha256, set_at, device_id) "
                "VALUES (?, ?, ?, ?, '')",
                (vault_id, blob, hashlib.sha256(blob).hexdigest(), set_at),
            )


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_durable(folder: Path, files: Sequence[Path]) -> None:
    """Flush the written `files` (all under `folder`'s file system) to disk: one syncfs for
    the batch where possible, else an fsync each."""
    if len(files) > 1 and flush_filesystem(folder):
        return
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class SqliteStorage(SqlStore):
    """SQLite (WAL) + blob files under `data_dir`; see the module docstring. The SQL and the
    rules are `SqlStore`'s; this class keeps the connections, the schema and the blob bytes."""

    d = SqliteDialect()

    def __init__(self, data_dir: str | os.PathLike[str], *, synchronous: str = "FULL") -> None:
        self.data_dir = Path(data_dir)
        self.blob_dir = self.data_dir / "blobs"
        self.tmp_dir = self.data_dir / "tmp"
        self.db_path = self.data_dir / "relay.db"
        self._private_folders()
        if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError(f"synchronous must be FULL, NORMAL or EXTRA, not {synchronous!r}")
        self._synchronous = synchronous.upper()
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        self._conn().executescript(_SCHEMA)
        migrated_from = None
        with self._write() as c:
            row = c.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                c.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise RuntimeError(f"{self.db_path} was written by a newer relay (schema {row[0]})")
            elif int(row[0]) < SCHEMA_VERSION:
                _migrate(c, int(row[0]))
                c.execute(
                    "UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),)
                )
                migrated_from = int(row[0])
                log.info("relay database migrated from schema %s to %d", row[0], SCHEMA_VERSION)
        if migrated_from is not None and migrated_from < 2:
            # relays before schema 2 wrote blob files with the umask's mode: tighten them once
            n = fsmodes.tighten_tree(self.blob_dir)
            if n:
                log.info("made %d blob files and folders owner-only", n)
        self._sweep_tmp(older_than=3600)

    def _private_folders(self) -> None:
        """The data folder, its folders and the database files, owner-only whatever the umask
        or however they were created. The database file exists (0600) before SQLite opens it,
        so the -wal and -shm files it creates get the same mode; a -wal or -shm left with a
        looser mode is tightened. Blob files are created 0600 (`_SqliteBlobSink`)."""
        if fsmodes.tighten(self.data_dir):
            log.warning("%s was readable by other users; made it owner-only", self.data_dir)
        for d in (self.data_dir, self.blob_dir, self.tmp_dir):
            fsmodes.private_dir(d)
        for vault in self.blob_dir.iterdir():  # a vault's folder and its 256 <ab> folders
            if vault.is_dir() and not vault.is_symlink():
                fsmodes.tighten(vault)
                for sub in vault.iterdir():
                    if sub.is_dir():
                        fsmodes.tighten(sub)
        quarantine = self.data_dir / "quarantine"
        if quarantine.is_dir():
            fsmodes.tighten_tree(quarantine)
        fsmodes.touch_private(self.db_path)
        for suffix in ("-wal", "-shm", "-journal"):
            fsmodes.tighten(self.db_path.with_name(self.db_path.name + suffix))

    # connections ---------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise RuntimeError("storage is closed")
            conn = sqlite3.connect(
                self.db_path, isolation_level=None, check_same_thread=False, timeout=30
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all or nothing, serialised in and across processes."""
        conn = self._conn()
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot across several SELECTs."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    # SqlStore's hooks: the write transaction also serves single writes (an in-process lock
    # is cheaper than SQLite's busy-wait); reads use the thread's connection as it is.
    _tx = _write
    _snapshot = _read
    _single = _write

    def _reading(self) -> contextlib.nullcontext[sqlite3.Connection]:
        return contextlib.nullcontext(self._conn())

    def _one(self, query: str, params: Sequence[Any] = ()) -> Any:
        return self._conn().execute(query, params).fetchone()

    def _all(self, query: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._conn().execute(query, params).fetchall()

    def close(self) -> None:
        self._closed = True
        with self._conns_lock:
            for conn in self._conns:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._conns.clear()
        self._local = threading.local()

    # blobs: small ones are rows of blob_data, larger ones files -------------------------------
    def blob_path(self, vault_id: str, blob_id: str) -> Path:
        return self.blob_dir / vault_id / blob_id[:2] / blob_id

    def blob_sink(self, vault_id: str, blob_id: str, sha256: str, now: float) -> BlobSink:
        return _SqliteBlobSink(self, vault_id, blob_id, sha256, now)

    # publish_blobs (SqlStore's): a group's large files are flushed together before its
    # transaction, renamed in it, and their folders flushed before it commits
    def _publish_begin(self, sinks: Sequence[BlobSink]) -> set[Path]:
        files = [s.tmp for s in sinks if isinstance(s, _SqliteBlobSink) and s.sealed and s.tmp]
        if files:
            _make_durable(self.tmp_dir, files)  # the bytes before any rename
        return set()  # the folders the renames change

    def _publish_bytes(
        self, c: sqlite3.Connection, vault_id: str, sink: CheckedSink, dirs: set[Path]
    ) -> None:
        assert isinstance(sink, _SqliteBlobSink)
        if sink.tmp is None:  # small: its bytes are a row, durable with the commit
            c.execute(
                "INSERT OR REPLACE INTO blob_data (vault_id, blob_id, data) VALUES (?, ?, ?)",
                (vault_id, sink.blob_id, sink.inline),
            )
            return
        final = self.blob_path(vault_id, sink.blob_id)
        if not final.parent.is_dir():
            fsmodes.private_dir(final.parent)
            dirs.update(final.parents[1:3])  # the new <ab> and <vault> entries
        os.replace(sink.tmp, final)
        dirs.add(final.parent)

    def _publish_end(self, c: sqlite3.Connection, dirs: set[Path]) -> None:
        # the renames are durable before the rows that announce them: one more flush of the
        # file system for a batch, else each folder
        if dirs and (len(dirs) < 2 or not flush_filesystem(self.blob_dir)):
            for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
                _fsync_dir(d)

    def _blob_bytes(self, vault_id: str, blob_id: str) -> tuple[BlobInfo, bytes | None, bool]:
        row = (
            self._conn()
            .execute(
                "SELECT b.size, b.sha256, d.data FROM blobs b LEFT JOIN blob_data d "
                "ON d.vault_id = b.vault_id AND d.blob_id = b.blob_id "
                "WHERE b.vault_id=? AND b.blob_id=?",
                (vault_id, blob_id),
            )
            .fetchone()
        )
        if row is None:
            raise NotFound(blob_id)
        info = BlobInfo(blob_id, row[0], row[1])
        if row[2] is not None:
            return info, bytes(row[2]), True
        try:
            return info, self.blob_path(vault_id, blob_id).read_bytes(), False
        except FileNotFoundError:
            return info, b"", False

    def _quarantine(self, vault_id: str, info: BlobInfo, inline: bytes | None) -> None:
        """Move damaged bytes aside and forget the blob, so a client can upload it again."""
        blob_id = info.blob_id
        log.error("blob %s/%s failed its checksum; moved to quarantine", vault_id, blob_id)
        qdir = fsmodes.private_dir(self.data_dir / "quarantine")
        aside = qdir / f"{vault_id}-{blob_id}-{int(time.time())}"
        with self._write() as c:
            c.execute("DELETE FROM blobs WHERE vault_id=? AND blob_id=?", (vault_id, blob_id))
            c.execute("DELETE FROM blob_data WHERE vault_id=? AND blob_id=?", (vault_id, blob_id))
            if inline is not None:
                with os.fdopen(fsmodes.create_private(aside), "wb") as out:
                    out.write(inline)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.replace(self.blob_path(vault_id, blob_id), aside)

    # housekeeping ----------------------------------------------------------------------------
    def prune(self, policy: RetentionPolicy, now: float) -> PruneStats:
        keep_last = max(1, int(policy.keep_last))  # the head is never pruned
        cutoff = now - policy.keep_days * 86400
        blob_cutoff = now - policy.blob_grace_s
        doomed: list[tuple[str, str, int]] = []
        with self._write() as c:
            n_records = self._prune_records(c, cutoff, keep_last)
            referenced: set[tuple[str, str]] = set()
            for vault_id, blobs in c.execute("SELECT vault_id, blobs FROM records WHERE blobs!=''"):
                referenced.update((vault_id, b) for b in blobs.split())
            for vault_id, blob_id, size in c.execute(
                "SELECT vault_id, blob_id, size FROM blobs WHERE created < ?", (blob_cutoff,)
            ).fetchall():
                if (vault_id, blob_id) not in referenced:
                    doomed.append((vault_id, blob_id, size))
            c.executemany(
                "DELETE FROM blobs WHERE vault_id=? AND blob_id=?", [d[:2] for d in doomed]
            )
            c.executemany(
                "DELETE FROM blob_data WHERE vault_id=? AND blob_id=?", [d[:2] for d in doomed]
            )
            n_invites, n_leases = self._prune_invites_and_leases(c, now)
        # Unlink under a second write transaction: an upload of the same id (which publishes
        # under the write lock) cannot slip in between "row absent" and "file removed".
        with self._write() as c:
            for vault_id, blob_id, _ in doomed:
                gone = c.execute(
                    "SELECT 1 FROM blobs WHERE vault_id=? AND blob_id=?", (vault_id, blob_id)
                ).fetchone()
                if gone is None:
                    self.blob_path(vault_id, blob_id).unlink(missing_ok=True)
        self._sweep_tmp(older_than=3600)
        return PruneStats(
            records=n_records,
            blobs=len(doomed),
            blob_bytes=sum(d[2] for d in doomed),
            invites=n_invites,
            leases=n_leases,
        )

    def _sweep_tmp(self, older_than: float) -> None:
        """Remove uploads abandoned by a crash (old enough that nobody is writing them)."""
        limit = time.time() - older_than
        for p in self.tmp_dir.iterdir():
            with contextlib.suppress(OSError):
                if p.stat().st_mtime < limit:
                    p.unlink()


class _SqliteBlobSink(CheckedSink):
    """Hashes as the bytes arrive and keeps them in memory while they fit in a row
    (`INLINE_MAX`); past that, streams them into tmp/. `seal` checks the digest; publishing
    inserts the row, or flushes the batch's files and renames them."""

    def __init__(
        self, store: SqliteStorage, vault_id: str, blob_id: str, sha256: str, now: float
    ) -> None:
        super().__init__(blob_id, sha256, now)
        self.inline: bytes | None = None  # the bytes of a sealed small blob
        self.tmp: Path | None = None  # the file of a large one
        self._store = store
        self._buffer = bytearray()
        self._file: BinaryIO | None = None

    def _take(self, data: bytes | memoryview) -> None:
        if self._file is None and self._size <= INLINE_MAX:
            self._buffer += data
            return
        if self._file is None:  # too large for a row: spill to a file, closed in seal/abort
            self.tmp = self._store.tmp_dir / f"{self.blob_id[:32]}.{secrets.token_hex(8)}.part"
            self._file = os.fdopen(fsmodes.create_private(self.tmp), "wb")
            self._file.write(self._buffer)
            self._buffer = bytearray()
        self._file.write(data)

    def _keep(self, digest: str) -> None:
        if self._file is not None:
            self._file.close()  # flushed to disk with the rest of its batch when published
        else:
            self.inline = bytes(self._buffer)

    def abort(self) -> None:
        self._buffer = bytearray()
        self.inline = None
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)
