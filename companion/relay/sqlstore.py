"""One SQL body for both relay stores: `SqlStore` holds every query and every domain rule
(compare-and-swap on records and on the wrapped key, one-time invites, the device kind,
paging of changes, leases, export and import) once; a `Dialect` says how the two databases
spell what differs, and each store keeps only what is truly its own:

    SqlStore (this module)          the SQL and the rules, written with `?` placeholders
    ├── SqliteStorage               one connection per thread, BEGIN IMMEDIATE behind a lock,
    │   + SqliteDialect             blob bytes as rows (small) or files (large)
    └── PgStorage                   a connection pool, LISTEN/NOTIFY, an advisory prune lock,
        + PostgresDialect           blob content addressed by SHA-256 in PostgreSQL or S3

A store supplies its connections through four hooks (`_tx`, `_snapshot`, `_reading`,
`_single`), and the bytes of blobs (`blob_sink`, `_publish_bytes`, `_blob_bytes`,
`_quarantine`, the blob half of `prune`): the two keep those in different places on purpose
(see their modules). The rules about blobs are here: a sink refuses bytes that are not the
announced checksum (`CheckedSink`), a blob id is never overwritten (`publish_blobs`), and
every read is checked before a byte is sent (`read_blob`, `intact`).

Where the two databases need different SQL (row locks, batched lookups, bulk inserts, the
record's blob list column, notifications), the difference is a `Dialect` method or attribute
that says why; everything else is one string run on both.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from companion.relay.storage import (
    KINDS,
    BlobCorrupt,
    BlobIdTaken,
    BlobInfo,
    BlobSink,
    ChangesPage,
    ChecksumMismatch,
    CommitOutcome,
    Device,
    InviteRefused,
    InviteRow,
    KeyBlobConflict,
    KeyWrap,
    Lease,
    NewRecord,
    NotFound,
    Published,
    RecordResult,
    RelayStorage,
    SeqMark,
    StoredBlob,
    StoredRecord,
    UnknownVault,
    Vault,
    VaultRow,
)

CHANNEL = "companion_relay"  # PostgreSQL: the NOTIFY channel of commits

# Records are read with their committer's kind and name (a primary-key lookup per row; a
# device's kind and name never change). A record whose device row is gone reads as an agent's.
RECORD_COLS = (
    "r.file_id, r.rev, r.parent_rev, r.sealed, r.blobs, r.seq, r.device_id, r.committed_at, "
    "COALESCE(d.kind, 'agent'), COALESCE(d.name, '')"
)
RECORDS = "records r LEFT JOIN devices d ON d.device_id = r.device_id"
DEVICE_COLS = "device_id, vault_id, name, kind, token_hash, created, revoked"
INSERT_RECORD_COLS = (
    "vault_id, seq, file_id, rev, parent_rev, sealed, blobs, device_id, committed_at"
)
_VAULT_COLS = "vault_id, created, seq, key_blob IS NOT NULL"
# the reads every request makes, built once (a string built per call is hashed per call too)
_GET_VAULT = f"SELECT {_VAULT_COLS} FROM vaults WHERE vault_id=?"
_GET_DEVICE = f"SELECT {DEVICE_COLS} FROM devices WHERE device_id=?"
_HEAD = (
    f"SELECT {RECORD_COLS} FROM {RECORDS} WHERE r.vault_id=? AND r.file_id=? "
    "ORDER BY r.rev DESC LIMIT 1"
)
_CHANGES = (
    f"SELECT {RECORD_COLS} FROM {RECORDS} WHERE r.vault_id=? AND r.seq>? ORDER BY r.seq LIMIT ?"
)
_AT_SEQ = "SELECT file_id, rev, sealed FROM records WHERE vault_id=? AND seq=?"
_HISTORY = (
    f"SELECT {RECORD_COLS} FROM {RECORDS} WHERE r.vault_id=? AND r.file_id=? "
    "ORDER BY r.rev DESC LIMIT ?"
)
_GET_RECORD = f"SELECT {RECORD_COLS} FROM {RECORDS} WHERE r.vault_id=? AND r.file_id=? AND r.rev=?"


def _device(row: Sequence[Any]) -> Device:
    device_id, vault_id, name, kind, token_hash, created, revoked = row
    return Device(device_id, vault_id, name, kind, bytes(token_hash), created, revoked)


def _vault(row: Sequence[Any]) -> Vault:
    return Vault(row[0], row[1], row[2], bool(row[3]))


def intact(info: BlobInfo, data: bytes) -> bool:
    """The bytes are the blob's: its size and SHA-256 (checked on every read)."""
    return len(data) == info.size and hashlib.sha256(data).hexdigest() == info.sha256


class CheckedSink(BlobSink):
    """A blob upload hashed as it arrives; `seal` refuses bytes that are not the checksum
    announced (ChecksumMismatch, leaving nothing behind). Where the bytes go meanwhile and
    once sealed is the store's (`_take`, `_keep`)."""

    def __init__(self, blob_id: str, sha256: str, now: float) -> None:
        self.blob_id = blob_id
        self.now = now
        self.sealed: BlobInfo | None = None
        self._expected = sha256.lower()
        self._hash = hashlib.sha256()
        self._size = 0

    def write(self, data: bytes | memoryview) -> None:
        self._hash.update(data)
        self._size += len(data)
        self._take(data)

    def seal(self) -> BlobInfo:
        try:
            digest = self._hash.hexdigest()
            if digest != self._expected:
                raise ChecksumMismatch(self.blob_id)
            self._keep(digest)
        except BaseException:
            self.abort()
            raise
        self.sealed = BlobInfo(self.blob_id, self._size, digest)
        return self.sealed

    @abstractmethod
    def _take(self, data: bytes | memoryview) -> None:
        """Hold the next piece of the upload (`_size` already counts it)."""

    @abstractmethod
    def _keep(self, digest: str) -> None:
        """The bytes checked out: keep them for publishing."""


# -- dialects ----------------------------------------------------------------------------------


class Dialect(ABC):
    """How one database spells what the shared SQL cannot say the same way in both."""

    name = ""
    # A SELECT of a row the transaction goes on to change. SQLite needs nothing (a write
    # transaction holds the whole database); PostgreSQL locks the row against other processes.
    for_update = ""

    def sql(self, query: str) -> str:
        """`query` with its `?` placeholders in the driver's style."""
        return query

    @abstractmethod
    def encode_blobs(self, blobs: Sequence[str]) -> Any:
        """A record's blob ids as its `blobs` column holds them."""

    @abstractmethod
    def decode_blobs(self, value: Any) -> tuple[str, ...]: ...

    @abstractmethod
    def executemany(self, c: Any, query: str, rows: Sequence[Sequence[Any]]) -> None: ...

    @abstractmethod
    def heads(self, c: Any, vault_id: str, file_ids: Sequence[str]) -> dict[str, int | None]:
        """The head revision of each file (None: no record yet)."""

    @abstractmethod
    def revisions(
        self, c: Any, vault_id: str, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], tuple[int, bytes, Any, int]]:
        """(parent_rev, sealed, blobs column, seq) of each stored (file_id, rev) of `keys`."""

    @abstractmethod
    def present_blobs(self, c: Any, vault_id: str, ids: Sequence[str]) -> set[str]: ...

    def insert_records(self, c: Any, rows: Sequence[Sequence[Any]]) -> None:
        """Insert full record rows (INSERT_RECORD_COLS, the blobs column encoded)."""
        qs = ", ".join("?" * 9)
        self.executemany(c, f"INSERT INTO records ({INSERT_RECORD_COLS}) VALUES ({qs})", rows)

    def set_seq(self, c: Any, vault_id: str, seq: int) -> None:
        """Record the vault's new sequence number at the end of a commit."""
        c.execute(self.sql("UPDATE vaults SET seq=? WHERE vault_id=?"), (seq, vault_id))

    # Records past the retention window and not among the last `keep_last` of their file.
    prune_records = (
        "DELETE FROM records WHERE committed_at < ? AND rev <= ("
        " SELECT MAX(r2.rev) FROM records r2"
        " WHERE r2.vault_id = records.vault_id AND r2.file_id = records.file_id) - ?"
    )


class SqliteDialect(Dialect):
    """SQLite, in process: a query costs no round trip, so batched lookups are plain loops of
    point queries on the primary or unique key (SQLite has no arrays to pass a batch in)."""

    name = "sqlite"
    _CHUNK = 500  # ids per IN (...) query, well under SQLite's variable limit

    def encode_blobs(self, blobs: Sequence[str]) -> str:
        return " ".join(blobs)  # no array type: space-separated ids (hex, never a space)

    def decode_blobs(self, value: Any) -> tuple[str, ...]:
        return tuple(value.split()) if value else ()

    def executemany(self, c: Any, query: str, rows: Sequence[Sequence[Any]]) -> None:
        c.executemany(query, rows)

    def heads(self, c: Any, vault_id: str, file_ids: Sequence[str]) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for f in file_ids:
            if f not in out:
                out[f] = c.execute(
                    "SELECT MAX(rev) FROM records WHERE vault_id=? AND file_id=?", (vault_id, f)
                ).fetchone()[0]
        return out

    def revisions(
        self, c: Any, vault_id: str, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], tuple[int, bytes, Any, int]]:
        out: dict[tuple[str, int], tuple[int, bytes, Any, int]] = {}
        for f, rev in keys:
            row = c.execute(
                "SELECT parent_rev, sealed, blobs, seq FROM records "
                "WHERE vault_id=? AND file_id=? AND rev=?",
                (vault_id, f, rev),
            ).fetchone()
            if row is not None:
                out[(f, rev)] = (row[0], bytes(row[1]), row[2], row[3])
        return out

    def present_blobs(self, c: Any, vault_id: str, ids: Sequence[str]) -> set[str]:
        present: set[str] = set()
        uniq = list(dict.fromkeys(ids))
        for i in range(0, len(uniq), self._CHUNK):
            part = uniq[i : i + self._CHUNK]
            marks = ",".join("?" * len(part))
            present.update(
                r[0]
                for r in c.execute(
                    f"SELECT blob_id FROM blobs WHERE vault_id=? AND blob_id IN ({marks})",
                    (vault_id, *part),
                )
            )
        return present


class PostgresDialect(Dialect):
    """PostgreSQL over the network: a batch is one round trip (arrays with `unnest` and
    `= ANY`, `COPY` for bulk inserts), rows a transaction changes are locked against the
    other relay processes, and a commit notifies them."""

    name = "postgres"
    for_update = " FOR UPDATE"
    # binary COPY: ciphertext is not hex-encoded on the way
    RECORD_TYPES = ["text", "int8", "text", "int8", "int8", "bytea", "text[]", "text", "float8"]
    # DELETE ... USING one pass over the heads: a correlated subquery per row is slow here
    prune_records = (
        "DELETE FROM records r USING (SELECT vault_id, file_id, max(rev) AS head "
        "FROM records GROUP BY vault_id, file_id) h WHERE r.vault_id=h.vault_id "
        "AND r.file_id=h.file_id AND r.committed_at < ? AND r.rev <= h.head - ?"
    )

    def __init__(self) -> None:
        self._sql: dict[str, str] = {}

    def sql(self, query: str) -> str:
        try:
            return self._sql[query]
        except KeyError:
            out = self._sql[query] = query.replace("?", "%s")
            return out

    def encode_blobs(self, blobs: Sequence[str]) -> list[str]:
        return list(blobs)  # text[]

    def decode_blobs(self, value: Any) -> tuple[str, ...]:
        return tuple(value)

    def executemany(self, c: Any, query: str, rows: Sequence[Sequence[Any]]) -> None:
        with c.cursor() as cur:
            cur.executemany(self.sql(query), rows)

    def heads(self, c: Any, vault_id: str, file_ids: Sequence[str]) -> dict[str, int | None]:
        return dict(
            c.execute(
                "SELECT f, (SELECT max(rev) FROM records WHERE vault_id=%s AND file_id=f) "
                "FROM unnest(%s::text[]) AS f",
                (vault_id, list(file_ids)),
            ).fetchall()
        )

    def revisions(
        self, c: Any, vault_id: str, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], tuple[int, bytes, Any, int]]:
        out: dict[tuple[str, int], tuple[int, bytes, Any, int]] = {}
        for f, rev, parent, sealed, blobs, s in c.execute(
            "SELECT file_id, rev, parent_rev, sealed, blobs, seq FROM records "
            "WHERE vault_id=%s AND (file_id, rev) IN "
            "(SELECT * FROM unnest(%s::text[], %s::bigint[]))",
            (vault_id, [k[0] for k in keys], [k[1] for k in keys]),
        ):
            out[(f, rev)] = (parent, bytes(sealed), blobs, s)
        return out

    def present_blobs(self, c: Any, vault_id: str, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        rows = c.execute(
            "SELECT blob_id FROM blobs WHERE vault_id=%s AND blob_id = ANY(%s)",
            (vault_id, list(dict.fromkeys(ids))),
        ).fetchall()
        return {r[0] for r in rows}

    def insert_records(self, c: Any, rows: Sequence[Sequence[Any]]) -> None:
        with c.cursor().copy(
            f"COPY records ({INSERT_RECORD_COLS}) FROM STDIN (FORMAT BINARY)"
        ) as cp:
            cp.set_types(self.RECORD_TYPES)
            for row in rows:
                cp.write_row(row)

    def set_seq(self, c: Any, vault_id: str, seq: int) -> None:
        # the NOTIFY is delivered to every relay process when (and only if) this commits
        c.execute(
            "UPDATE vaults SET seq=%s WHERE vault_id=%s RETURNING pg_notify(%s, %s)",
            (seq, vault_id, CHANNEL, vault_id),
        )


# -- the store ---------------------------------------------------------------------------------


class SqlStore(RelayStorage):
    """Every query and rule the two relay stores share; see the module docstring.

    A subclass sets `d` (its dialect) and supplies its connections:

    - `_tx()`: a write transaction, all or nothing, serialised with other writers of the rows
      it locks (SQLite: of the whole database);
    - `_snapshot()`: a read-only transaction, one consistent view across several SELECTs;
    - `_reading()`: a connection for reads that need no transaction;
    - `_single()`: a connection for one write statement (its own transaction).
    """

    d: Dialect

    @abstractmethod
    def _tx(self) -> contextlib.AbstractContextManager[Any]: ...

    @abstractmethod
    def _snapshot(self) -> contextlib.AbstractContextManager[Any]: ...

    @abstractmethod
    def _reading(self) -> contextlib.AbstractContextManager[Any]: ...

    @abstractmethod
    def _single(self) -> contextlib.AbstractContextManager[Any]: ...

    def _one(self, query: str, params: Sequence[Any] = ()) -> Any:
        with self._reading() as c:
            return c.execute(self.d.sql(query), params).fetchone()

    def _all(self, query: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._reading() as c:
            return c.execute(self.d.sql(query), params).fetchall()

    def _record(self, row: Sequence[Any]) -> StoredRecord:
        file_id, rev, parent_rev, sealed, blobs, seq, device_id, committed_at, kind, name = row
        return StoredRecord(
            file_id=file_id,
            rev=rev,
            parent_rev=parent_rev,
            sealed=bytes(sealed),
            blobs=self.d.decode_blobs(blobs),
            seq=seq,
            device_id=device_id,
            committed_at=committed_at,
            device_kind=kind,
            device_name=name,
        )

    # vaults ----------------------------------------------------------------------------------
    def create_vault(self, vault_id: str, now: float) -> Vault:
        with self._tx() as c:
            c.execute(
                self.d.sql("INSERT INTO vaults (vault_id, created) VALUES (?, ?)"), (vault_id, now)
            )
        return Vault(vault_id, now, 0, False)

    def get_vault(self, vault_id: str) -> Vault | None:
        row = self._one(_GET_VAULT, (vault_id,))
        return _vault(row) if row else None

    def list_vaults(self) -> list[Vault]:
        return [_vault(r) for r in self._all(f"SELECT {_VAULT_COLS} FROM vaults ORDER BY created")]

    def get_key_blob(self, vault_id: str) -> bytes | None:
        row = self._one("SELECT key_blob FROM vaults WHERE vault_id=?", (vault_id,))
        if row is None:
            raise UnknownVault(vault_id)
        return bytes(row[0]) if row[0] is not None else None

    def put_key_blob(
        self, vault_id: str, data: bytes, if_match: str | None, now: float, device_id: str = ""
    ) -> None:
        q = self.d.sql
        with self._tx() as c:
            row = c.execute(
                q(f"SELECT key_blob FROM vaults WHERE vault_id=?{self.d.for_update}"), (vault_id,)
            ).fetchone()
            if row is None:
                raise UnknownVault(vault_id)
            current = row[0]
            if if_match is None:
                if current is not None:
                    raise KeyBlobConflict("the vault key is already set")
            elif current is None:
                raise KeyBlobConflict("the vault key is not set yet")
            elif hashlib.sha256(bytes(current)).hexdigest() != if_match:
                raise KeyBlobConflict("the vault key changed since it was read")
            c.execute(
                q("UPDATE vaults SET key_blob=?, key_updated=? WHERE vault_id=?"),
                (data, now, vault_id),
            )
            c.execute(
                q(
                    "INSERT INTO key_wraps (vault_id, key_blob, sha256, set_at, device_id) "
                    "VALUES (?, ?, ?, ?, ?)"
                ),
                (vault_id, data, hashlib.sha256(data).hexdigest(), now, device_id),
            )

    def key_history(self, vault_id: str) -> list[KeyWrap]:
        rows = self._all(
            "SELECT key_blob, sha256, set_at, device_id FROM key_wraps WHERE vault_id=? "
            "ORDER BY id DESC",
            (vault_id,),
        )
        return [KeyWrap(bytes(r[0]), r[1], r[2], r[3]) for r in rows]

    # invites and devices ---------------------------------------------------------------------
    def add_invite(
        self, vault_id: str, code_hash: bytes, now: float, expires: float, kind: str = "agent"
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be human or agent, not {kind!r}")
        q = self.d.sql
        with self._tx() as c:
            found = c.execute(q("SELECT 1 FROM vaults WHERE vault_id=?"), (vault_id,))
            if found.fetchone() is None:
                raise UnknownVault(vault_id)
            c.execute(
                q(
                    "INSERT INTO invites (code_hash, vault_id, created, expires, kind) "
                    "VALUES (?, ?, ?, ?, ?)"
                ),
                (code_hash, vault_id, now, expires, kind),
            )

    def redeem_invite(
        self, vault_id: str, code_hash: bytes, device: Device, now: float
    ) -> tuple[Vault, Device]:
        q = self.d.sql
        with self._tx() as c:
            # the lock (PostgreSQL) makes the invite one-time across every relay process
            row = c.execute(
                q(
                    "SELECT vault_id, expires, used, kind FROM invites WHERE code_hash=?"
                    + self.d.for_update
                ),
                (code_hash,),
            ).fetchone()
            if row is None or row[0] != vault_id:
                raise InviteRefused("unknown")
            if row[2] is not None:
                raise InviteRefused("used")
            if row[1] <= now:
                raise InviteRefused("expired")
            kind = row[3]
            if device.kind and device.kind != kind:
                raise InviteRefused("kind_mismatch", invite_kind=kind)
            device = dataclasses.replace(device, vault_id=vault_id, kind=kind, revoked=None)
            v = c.execute(q(_GET_VAULT), (vault_id,))
            v = v.fetchone()
            if v is None:  # an invite outliving its vault: refuse rather than orphan a device
                raise InviteRefused("unknown")
            c.execute(
                q("UPDATE invites SET used=?, used_by=? WHERE code_hash=?"),
                (now, device.device_id, code_hash),
            )
            c.execute(
                q(f"INSERT INTO devices ({DEVICE_COLS}) VALUES (?, ?, ?, ?, ?, ?, NULL)"),
                (device.device_id, vault_id, device.name, kind, device.token_hash, device.created),
            )
        return _vault(v), device

    def get_device(self, device_id: str) -> Device | None:
        row = self._one(_GET_DEVICE, (device_id,))
        return _device(row) if row else None

    def list_devices(self, vault_id: str | None = None) -> list[Device]:
        if vault_id is None:
            rows = self._all(f"SELECT {DEVICE_COLS} FROM devices ORDER BY created, device_id")
        else:
            rows = self._all(
                f"SELECT {DEVICE_COLS} FROM devices WHERE vault_id=? ORDER BY created, device_id",
                (vault_id,),
            )
        return [_device(r) for r in rows]

    def revoke_device(self, device_id: str, now: float) -> Device:
        q = self.d.sql
        with self._tx() as c:
            c.execute(
                q("UPDATE devices SET revoked=? WHERE device_id=? AND revoked IS NULL"),
                (now, device_id),
            )
            row = c.execute(q(_GET_DEVICE), (device_id,)).fetchone()
            if row is None:
                raise NotFound(device_id)
        return _device(row)

    # records ---------------------------------------------------------------------------------
    def _head(self, c: Any, vault_id: str, file_id: str) -> StoredRecord | None:
        row = c.execute(self.d.sql(_HEAD), (vault_id, file_id)).fetchone()
        return self._record(row) if row else None

    def commit(
        self, vault_id: str, device_id: str, records: Sequence[NewRecord], now: float
    ) -> CommitOutcome:
        d = self.d
        with self._tx() as c:
            # the vault's row first: commits to one vault queue here, so each file's head
            # below is exact and sequence numbers go out in commit order
            row = c.execute(
                d.sql(f"SELECT seq FROM vaults WHERE vault_id=?{d.for_update}"), (vault_id,)
            ).fetchone()
            if row is None:
                raise UnknownVault(vault_id)
            seq = row[0]
            heads = d.heads(c, vault_id, [r.file_id for r in records])
            results: list[RecordResult | None] = [None] * len(records)
            fresh: list[tuple[int, NewRecord]] = []
            stale: list[tuple[int, NewRecord]] = []
            for i, r in enumerate(records):
                (fresh if (heads.get(r.file_id) or 0) == r.parent_rev else stale).append((i, r))
            # a stale record is a replay (a duplicate) when its revision holds the same bytes
            maybe_dup = [
                (r.file_id, r.rev) for _, r in stale if (heads.get(r.file_id) or 0) >= r.rev
            ]
            same = d.revisions(c, vault_id, maybe_dup) if maybe_dup else {}
            refused = False
            for i, r in stale:
                hit = same.get((r.file_id, r.rev))
                if (
                    hit is not None
                    and hit[0] == r.parent_rev
                    and hit[1] == r.sealed
                    and hit[2] == d.encode_blobs(r.blobs)
                ):
                    results[i] = RecordResult(r.file_id, r.rev, "duplicate", seq=hit[3])
                    continue
                refused = True
                results[i] = RecordResult(
                    r.file_id, r.rev, "conflict", head=self._head(c, vault_id, r.file_id)
                )
            wanted = [b for _, r in fresh for b in r.blobs]
            present = d.present_blobs(c, vault_id, wanted) if wanted else set()
            missing = list(dict.fromkeys(b for b in wanted if b not in present))
            if refused or missing:
                for i, r in fresh:
                    results[i] = RecordResult(r.file_id, r.rev, "aborted")
                return CommitOutcome(False, seq, list(results), missing)  # type: ignore[arg-type]
            rows = []
            for i, r in fresh:
                seq += 1
                rows.append((vault_id, seq, r.file_id, r.rev, r.parent_rev, r.sealed,
                             d.encode_blobs(r.blobs), device_id, now))  # fmt: skip
                results[i] = RecordResult(r.file_id, r.rev, "committed", seq=seq)
            if rows:
                d.insert_records(c, rows)
                d.set_seq(c, vault_id, seq)
        return CommitOutcome(True, seq, list(results))  # type: ignore[arg-type]

    def changes(self, vault_id: str, since: int, limit: int, max_bytes: int) -> ChangesPage:
        q = self.d.sql
        out: list[StoredRecord] = []
        size = 0
        more = False
        with self._snapshot() as c:
            row = c.execute(q("SELECT seq FROM vaults WHERE vault_id=?"), (vault_id,)).fetchone()
            if row is None:
                raise UnknownVault(vault_id)
            vault_seq = row[0]
            at_since = None
            if 0 < since <= vault_seq:  # one primary-key lookup: what sits at the cursor
                at = c.execute(q(_AT_SEQ), (vault_id, since)).fetchone()
                if at is not None:
                    at_since = SeqMark(at[0], at[1], hashlib.sha256(bytes(at[2])).hexdigest())
            cur = c.execute(q(_CHANGES), (vault_id, since, limit + 1))
            for r in cur:
                rec = self._record(r)
                if len(out) >= limit or (out and size + len(rec.sealed) > max_bytes):
                    more = True
                    break
                out.append(rec)
                size += len(rec.sealed)
        seq = out[-1].seq if out else max(since, 0)
        return ChangesPage(out, seq, vault_seq, more, at_since)

    def head(self, vault_id: str, file_id: str) -> StoredRecord | None:
        with self._reading() as c:
            return self._head(c, vault_id, file_id)

    def history(self, vault_id: str, file_id: str, limit: int) -> list[StoredRecord]:
        rows = self._all(_HISTORY, (vault_id, file_id, limit))
        return [self._record(r) for r in rows]

    def get_record(self, vault_id: str, file_id: str, rev: int) -> StoredRecord | None:
        row = self._one(_GET_RECORD, (vault_id, file_id, rev))
        return self._record(row) if row else None

    # blobs (their metadata: where the bytes live is the store's) -----------------------------
    def missing_blobs(self, vault_id: str, blob_ids: Sequence[str]) -> list[str]:
        with self._reading() as c:
            present = self.d.present_blobs(c, vault_id, blob_ids)
        return [b for b in dict.fromkeys(blob_ids) if b not in present]

    def blob_info(self, vault_id: str, blob_id: str) -> BlobInfo | None:
        row = self._one(
            "SELECT size, sha256 FROM blobs WHERE vault_id=? AND blob_id=?", (vault_id, blob_id)
        )
        return BlobInfo(blob_id, row[0], row[1]) if row else None

    def publish_blobs(self, vault_id: str, sinks: Sequence[BlobSink]) -> list[Published]:
        """One write transaction for the group: one database commit (and, for files, one
        flush) pays for every blob in it. A blob id is never overwritten: the same content
        again is deduplicated, other content refused (BlobIdTaken, after the others)."""
        q = self.d.sql
        stored = q("SELECT size, sha256 FROM blobs WHERE vault_id=? AND blob_id=?")
        insert = q(
            "INSERT INTO blobs (vault_id, blob_id, size, sha256, created) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
        )
        out: list[Published] = []
        taken: list[str] = []
        batch = self._publish_begin(sinks)
        with self._tx() as c:
            for sink in sinks:
                assert isinstance(sink, CheckedSink) and sink.sealed is not None
                info = sink.sealed
                row = c.execute(stored, (vault_id, info.blob_id)).fetchone()
                if row is not None:
                    sink.abort()  # the stored blob stands
                    if row[1] != info.sha256:
                        taken.append(info.blob_id)
                    out.append(Published(BlobInfo(info.blob_id, row[0], row[1]), False))
                    continue
                self._publish_bytes(c, vault_id, sink, batch)  # the bytes before the row
                inserted = c.execute(
                    insert, (vault_id, info.blob_id, info.size, info.sha256, sink.now)
                ).rowcount
                out.append(Published(info, inserted > 0))
            self._publish_end(c, batch)
        if taken:
            raise BlobIdTaken(taken[0])
        return out

    def _publish_begin(self, sinks: Sequence[BlobSink]) -> Any:
        """Before the transaction: make the group's bytes durable; returns the group's state."""
        return None

    @abstractmethod
    def _publish_bytes(self, c: Any, vault_id: str, sink: CheckedSink, batch: Any) -> None:
        """Make a sealed blob's bytes readable under its id (inside the transaction)."""

    def _publish_end(self, c: Any, batch: Any) -> None:
        """Before the commit: make what `_publish_bytes` did durable."""

    def read_blob(self, vault_id: str, blob_id: str) -> tuple[BlobInfo, bytes]:
        info, data, as_row = self._blob_bytes(vault_id, blob_id)
        if data is None or not intact(info, data):
            self._quarantine(vault_id, info, data if as_row else None)
            raise BlobCorrupt(blob_id)
        return info, data

    @abstractmethod
    def _blob_bytes(self, vault_id: str, blob_id: str) -> tuple[BlobInfo, bytes | None, bool]:
        """The blob's stored info and bytes (None: gone), and whether the bytes are a
        database row; NotFound when the vault has no such blob."""

    @abstractmethod
    def _quarantine(self, vault_id: str, info: BlobInfo, row_bytes: bytes | None) -> None:
        """Set damaged bytes aside and forget the blob, so a client can upload it again
        (`row_bytes`: the damaged bytes when they were a database row)."""

    # leases ----------------------------------------------------------------------------------
    def acquire_lease(
        self, vault_id: str, name: str, device_id: str, ttl: float, now: float
    ) -> Lease:
        q = self.d.sql
        with self._single() as c:
            # taken when free, expired or already ours, in one statement (no RETURNING: SQLite
            # has it only since 3.35; the row count says whether the lease is now ours)
            took = c.execute(
                q(
                    "INSERT INTO leases (vault_id, name, holder, expires) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (vault_id, name) DO UPDATE SET holder=EXCLUDED.holder, "
                    "expires=EXCLUDED.expires "
                    "WHERE leases.holder=EXCLUDED.holder OR leases.expires<=?"
                ),
                (vault_id, name, device_id, now + ttl, now),
            ).rowcount
            if took > 0:
                return Lease(name, device_id, now + ttl)
            row = c.execute(
                q("SELECT holder, expires FROM leases WHERE vault_id=? AND name=?"),
                (vault_id, name),
            ).fetchone()
        return Lease(name, row[0], row[1])

    def release_lease(self, vault_id: str, name: str, device_id: str) -> bool:
        with self._single() as c:
            cur = c.execute(
                self.d.sql("DELETE FROM leases WHERE vault_id=? AND name=? AND holder=?"),
                (vault_id, name, device_id),
            )
            return bool(cur.rowcount > 0)

    # housekeeping (the parts of `prune` both stores share) -----------------------------------
    def _prune_records(self, c: Any, cutoff: float, keep_last: int) -> int:
        return int(c.execute(self.d.sql(self.d.prune_records), (cutoff, keep_last)).rowcount)

    def _prune_invites_and_leases(self, c: Any, now: float) -> tuple[int, int]:
        q = self.d.sql
        n_invites = c.execute(
            q("DELETE FROM invites WHERE used IS NULL AND expires < ?"), (now - 86400,)
        ).rowcount
        n_leases = c.execute(q("DELETE FROM leases WHERE expires < ?"), (now,)).rowcount
        return n_invites, n_leases

    # export and import -----------------------------------------------------------------------
    def dump_vaults(self) -> list[VaultRow]:
        rows = self._all(
            "SELECT vault_id, created, seq, key_blob, key_updated FROM vaults ORDER BY created"
        )
        return [VaultRow(r[0], r[1], r[2], bytes(r[3]) if r[3] is not None else None, r[4])
                for r in rows]  # fmt: skip

    def dump_invites(self) -> list[InviteRow]:
        rows = self._all(
            "SELECT code_hash, vault_id, created, expires, used, used_by, kind FROM invites "
            "ORDER BY created"
        )
        return [InviteRow(bytes(r[0]), *r[1:]) for r in rows]

    def list_blobs(self, vault_id: str, after: str, limit: int) -> list[StoredBlob]:
        rows = self._all(
            "SELECT blob_id, size, sha256, created FROM blobs WHERE vault_id=? AND blob_id>? "
            "ORDER BY blob_id LIMIT ?",
            (vault_id, after, limit),
        )
        return [StoredBlob(BlobInfo(r[0], r[1], r[2]), r[3]) for r in rows]

    def is_empty(self) -> bool:
        row = self._one(
            "SELECT EXISTS (SELECT 1 FROM vaults) OR EXISTS (SELECT 1 FROM invites) "
            "OR EXISTS (SELECT 1 FROM devices)"
        )
        return not row[0]

    def load_vault(self, row: VaultRow, wraps: Sequence[KeyWrap]) -> None:
        with self._tx() as c:
            c.execute(
                self.d.sql(
                    "INSERT INTO vaults (vault_id, created, seq, key_blob, key_updated) "
                    "VALUES (?, ?, ?, ?, ?)"
                ),
                (row.vault_id, row.created, row.seq, row.key_blob, row.key_updated),
            )
            self.d.executemany(
                c,
                "INSERT INTO key_wraps (vault_id, key_blob, sha256, set_at, device_id) "
                "VALUES (?, ?, ?, ?, ?)",
                [(row.vault_id, w.key, w.sha256, w.set_at, w.device_id) for w in reversed(wraps)],
            )

    def load_invite(self, row: InviteRow) -> None:
        with self._tx() as c:
            c.execute(
                self.d.sql(
                    "INSERT INTO invites (code_hash, vault_id, created, expires, used, used_by, "
                    "kind) VALUES (?, ?, ?, ?, ?, ?, ?)"
                ),
                (row.code_hash, row.vault_id, row.created, row.expires, row.used, row.used_by,
                 row.kind),
            )  # fmt: skip

    def load_device(self, device: Device) -> None:
        with self._tx() as c:
            c.execute(
                self.d.sql(f"INSERT INTO devices ({DEVICE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)"),
                (device.device_id, device.vault_id, device.name, device.kind, device.token_hash,
                 device.created, device.revoked),
            )  # fmt: skip

    def load_records(self, vault_id: str, records: Sequence[StoredRecord]) -> None:
        encode = self.d.encode_blobs
        with self._tx() as c:
            self.d.insert_records(
                c,
                [(vault_id, r.seq, r.file_id, r.rev, r.parent_rev, r.sealed, encode(r.blobs),
                  r.device_id, r.committed_at) for r in records],
            )  # fmt: skip
