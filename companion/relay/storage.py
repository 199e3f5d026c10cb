"""What the relay stores, as an interface the HTTP handlers program against.

The handlers in `app.py` never touch SQL or files: they call a `RelayStorage`. The embedded
default is `SqliteStorage` (SQLite in WAL mode plus blob files); a PostgreSQL + object-store
backend implements the same abstract class without touching a handler.

Everything the relay holds is opaque: ids are lowercase hex strings chosen by clients, records
and blobs are ciphertext. Secrets (invite codes, device tokens) reach the storage only as
SHA-256 hashes (see `auth.py`).

Methods are synchronous and thread-safe; the app calls them from a worker thread so the event
loop keeps serving long-polls while SQLite or the disk works.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

RecordStatus = Literal["committed", "duplicate", "conflict", "aborted"]


class StorageError(Exception):
    """Base of the storage's own refusals (each maps to one clear 4xx in the app)."""


class UnknownVault(StorageError):
    pass


class NotFound(StorageError):
    pass


class ChecksumMismatch(StorageError):
    """Uploaded bytes do not hash to the checksum the client announced."""


class BlobIdTaken(StorageError):
    """A blob with this id exists with different content; blobs are never overwritten."""


class BlobCorrupt(StorageError):
    """A stored blob no longer matches its checksum (disk damage or tampering on the server)."""


class KeyBlobConflict(StorageError):
    """The wrapped vault key is not in the state the writer expected (compare-and-swap)."""


DeviceKind = Literal["human", "agent"]
KINDS: tuple[DeviceKind, ...] = ("human", "agent")


class InviteRefused(StorageError):
    """An invite that is unknown, already used or expired, or redeemed as the wrong kind of
    device (`invite_kind` then says which kind the invite admits)."""

    def __init__(
        self,
        reason: Literal["unknown", "used", "expired", "kind_mismatch"],
        invite_kind: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.invite_kind = invite_kind


@dataclass(frozen=True)
class Vault:
    vault_id: str
    created: float
    seq: int
    has_key: bool


@dataclass(frozen=True)
class Device:
    """A device of a vault. `kind` is the invite's (fixed at join, never changes); a device
    built for `redeem_invite` may leave it empty to take the invite's kind."""

    device_id: str
    vault_id: str
    name: str
    kind: str
    token_hash: bytes
    created: float
    revoked: float | None = None


@dataclass(frozen=True)
class NewRecord:
    """A record as a client submits it; `rev == parent_rev + 1` is checked by the caller."""

    file_id: str
    rev: int
    parent_rev: int
    sealed: bytes
    blobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoredRecord:
    file_id: str
    rev: int
    parent_rev: int
    sealed: bytes
    blobs: tuple[str, ...]
    seq: int
    device_id: str
    committed_at: float
    device_kind: str = "agent"  # the committing device's kind and name, as the relay knows them
    device_name: str = ""


@dataclass(frozen=True)
class KeyWrap:
    """One wrapped vault key as it was set (the current one, or an earlier one)."""

    key: bytes
    sha256: str  # hex
    set_at: float
    device_id: str  # who set it ("" when it predates the relay keeping track)


@dataclass(frozen=True)
class VaultRow:
    """A vault as stored (export and import)."""

    vault_id: str
    created: float
    seq: int
    key_blob: bytes | None
    key_updated: float | None


@dataclass(frozen=True)
class InviteRow:
    """An invite as stored (export and import): only the hash of its secret."""

    code_hash: bytes
    vault_id: str
    created: float
    expires: float
    used: float | None
    used_by: str | None
    kind: str


@dataclass(frozen=True)
class StoredBlob:
    info: BlobInfo
    created: float


@dataclass(frozen=True)
class RecordResult:
    file_id: str
    rev: int
    status: RecordStatus
    seq: int | None = None  # the record's seq when committed or duplicate
    head: StoredRecord | None = None  # the current head, on conflict


@dataclass(frozen=True)
class CommitOutcome:
    """All-or-nothing: `committed` is True only when every record was written or a duplicate."""

    committed: bool
    seq: int  # the vault's sequence number after the commit (unchanged when refused)
    results: list[RecordResult]
    missing_blobs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SeqMark:
    """The record at one sequence number of a vault's feed: its file, its revision and the
    SHA-256 of its sealed bytes (two commits never seal alike: a fresh nonce each)."""

    file_id: str
    rev: int
    sha256: str  # hex


@dataclass(frozen=True)
class ChangesPage:
    records: list[StoredRecord]
    seq: int  # resume point: the last record's seq, or the vault's seq when caught up
    vault_seq: int
    more: bool
    # the record at `seq == since` (None: since is 0, or no record there): a device that saw
    # another one there is talking to a relay restored from a backup (docs/relay.md)
    at_since: SeqMark | None = None


@dataclass(frozen=True)
class BlobInfo:
    blob_id: str
    size: int
    sha256: str  # hex


@dataclass(frozen=True)
class Lease:
    name: str
    holder: str  # device id
    expires: float


@dataclass(frozen=True)
class RetentionPolicy:
    """Keep every revision for `keep_days`, and at least the last `keep_last` of each file.

    Blobs that no retained record references are deleted once older than `blob_grace_s`
    (a fresh upload waits for the commit that will reference it).
    """

    keep_days: float = 30
    keep_last: int = 10
    blob_grace_s: float = 24 * 3600


@dataclass(frozen=True)
class PruneStats:
    records: int = 0
    blobs: int = 0
    blob_bytes: int = 0
    invites: int = 0
    leases: int = 0


class BlobSink(ABC):
    """A blob upload in progress: bytes arrive in pieces, `seal` verifies them,
    `RelayStorage.publish_blobs` makes sealed blobs durable and visible (several in one group, so
    a batch pays for one metadata flush instead of one per blob).

    Nothing is visible to readers before publishing; `abort` (or an exception) leaves no trace.
    """

    blob_id: str

    @abstractmethod
    def write(self, data: bytes | memoryview) -> None: ...

    @abstractmethod
    def seal(self) -> BlobInfo:
        """Check size and checksum (ChecksumMismatch). The bytes are durable once published
        (`publish_blobs` flushes the whole group before any of it becomes visible)."""

    @abstractmethod
    def abort(self) -> None: ...


@dataclass(frozen=True)
class Published:
    info: BlobInfo
    created: bool  # False: the relay already had this blob (deduplicated)


class RelayStorage(ABC):
    """The relay's persistent state. Implementations must be safe to call from many threads."""

    # vaults --------------------------------------------------------------------------------
    @abstractmethod
    def create_vault(self, vault_id: str, now: float) -> Vault: ...

    @abstractmethod
    def get_vault(self, vault_id: str) -> Vault | None: ...

    @abstractmethod
    def list_vaults(self) -> list[Vault]: ...

    @abstractmethod
    def get_key_blob(self, vault_id: str) -> bytes | None: ...

    @abstractmethod
    def put_key_blob(
        self, vault_id: str, data: bytes, if_match: str | None, now: float, device_id: str = ""
    ) -> None:
        """Set the wrapped vault key. `if_match` None: only when absent; else the SHA-256 hex
        of the current blob (a rewrap). Raises KeyBlobConflict otherwise. Every wrap set is
        kept (`key_history`). Who may replace a key is the caller's rule, not the store's."""

    @abstractmethod
    def key_history(self, vault_id: str) -> list[KeyWrap]:
        """Every wrapped key the vault has had, newest (the current one) first."""

    # invites and devices ---------------------------------------------------------------------
    @abstractmethod
    def add_invite(
        self, vault_id: str, code_hash: bytes, now: float, expires: float, kind: str = "agent"
    ) -> None:
        """Store an invite that admits one device of `kind` (human or agent)."""

    @abstractmethod
    def redeem_invite(
        self, vault_id: str, code_hash: bytes, device: Device, now: float
    ) -> tuple[Vault, Device]:
        """Atomically mark the invite used and add `device` with the invite's kind; returns the
        vault and the stored device. Raises InviteRefused (unknown, used, expired; or
        kind_mismatch when `device.kind` is set and differs, leaving the invite unused)."""

    @abstractmethod
    def get_device(self, device_id: str) -> Device | None: ...

    @abstractmethod
    def list_devices(self, vault_id: str | None = None) -> list[Device]: ...

    @abstractmethod
    def revoke_device(self, device_id: str, now: float) -> Device:
        """Mark a device revoked (idempotent); raises NotFound."""

    # records -----------------------------------------------------------------------------------
    @abstractmethod
    def commit(
        self, vault_id: str, device_id: str, records: Sequence[NewRecord], now: float
    ) -> CommitOutcome:
        """Compare-and-swap every record on its parent revision, in one transaction.

        A record whose (file_id, rev) already holds identical bytes is a `duplicate` (a replay
        is idempotent). Any conflict or missing blob refuses the whole batch and writes
        nothing; a crash part-way leaves the store as it was.
        """

    @abstractmethod
    def changes(self, vault_id: str, since: int, limit: int, max_bytes: int) -> ChangesPage: ...

    @abstractmethod
    def head(self, vault_id: str, file_id: str) -> StoredRecord | None: ...

    @abstractmethod
    def history(self, vault_id: str, file_id: str, limit: int) -> list[StoredRecord]:
        """Retained revisions, newest first."""

    @abstractmethod
    def get_record(self, vault_id: str, file_id: str, rev: int) -> StoredRecord | None: ...

    # blobs -------------------------------------------------------------------------------------
    @abstractmethod
    def missing_blobs(self, vault_id: str, blob_ids: Sequence[str]) -> list[str]: ...

    @abstractmethod
    def blob_info(self, vault_id: str, blob_id: str) -> BlobInfo | None: ...

    @abstractmethod
    def blob_sink(self, vault_id: str, blob_id: str, sha256: str, now: float) -> BlobSink: ...

    @abstractmethod
    def publish_blobs(self, vault_id: str, sinks: Sequence[BlobSink]) -> list[Published]:
        """Make sealed blobs visible, in order. An id already stored with the same checksum is
        deduplicated; with another checksum it is refused with BlobIdTaken after the others
        are published (blobs are never overwritten)."""

    def put_blob(self, vault_id: str, blob_id: str, data: bytes, now: float) -> Published:
        """Store one blob from memory (its checksum is computed here)."""
        import hashlib

        sink = self.blob_sink(vault_id, blob_id, hashlib.sha256(data).hexdigest(), now)
        try:
            sink.write(data)
            sink.seal()
        except BaseException:
            sink.abort()
            raise
        return self.publish_blobs(vault_id, [sink])[0]

    @abstractmethod
    def read_blob(self, vault_id: str, blob_id: str) -> tuple[BlobInfo, bytes]:
        """The verified bytes (blobs are bounded by the relay's limit, so whole reads are fine).

        Raises NotFound, or BlobCorrupt when the bytes fail their checksum: the damaged copy
        is then set aside and forgotten, so a client that still has the data can upload it.
        """

    def read_blobs(
        self, vault_id: str, blob_ids: Sequence[str], max_bytes: int
    ) -> list[tuple[BlobInfo, bytes] | NotFound | BlobCorrupt]:
        """`read_blob` for the first of `blob_ids`, in order, until `max_bytes` are read (at
        least one): one call per group of small blobs instead of one per blob. A blob that is
        missing or damaged ends the list with its error."""
        out: list[tuple[BlobInfo, bytes] | NotFound | BlobCorrupt] = []
        total = 0
        for blob_id in blob_ids:
            try:
                info, data = self.read_blob(vault_id, blob_id)
            except (NotFound, BlobCorrupt) as exc:
                out.append(exc)
                break
            out.append((info, data))
            total += len(data)
            if total >= max_bytes:
                break
        return out

    # leases ------------------------------------------------------------------------------------
    @abstractmethod
    def acquire_lease(
        self, vault_id: str, name: str, device_id: str, ttl: float, now: float
    ) -> Lease:
        """Take or renew the lease when free, expired or already ours; return the holder."""

    @abstractmethod
    def release_lease(self, vault_id: str, name: str, device_id: str) -> bool: ...

    # housekeeping ------------------------------------------------------------------------------
    @abstractmethod
    def prune(self, policy: RetentionPolicy, now: float) -> PruneStats: ...

    @abstractmethod
    def close(self) -> None: ...

    # commits made by other processes -----------------------------------------------------------
    def subscribe(self, callback: Callable[[str | None], None]) -> None:
        """Call `callback(vault_id)` whenever a commit to that vault lands, from any process
        sharing this store (`None`: a notification may have been missed, wake every waiter).
        The default does nothing: one process, whose commits the app announces itself."""
        return None

    # export and import (between backends, without any key) -----------------------------------
    @abstractmethod
    def dump_vaults(self) -> list[VaultRow]: ...

    @abstractmethod
    def dump_invites(self) -> list[InviteRow]: ...

    @abstractmethod
    def list_blobs(self, vault_id: str, after: str, limit: int) -> list[StoredBlob]:
        """The vault's blobs with ids greater than `after`, in id order."""

    @abstractmethod
    def is_empty(self) -> bool:
        """No vault, invite or device: safe to import into."""

    @abstractmethod
    def load_vault(self, row: VaultRow, wraps: Sequence[KeyWrap]) -> None:
        """Recreate a vault exactly (its seq and key history included)."""

    @abstractmethod
    def load_invite(self, row: InviteRow) -> None: ...

    @abstractmethod
    def load_device(self, device: Device) -> None: ...

    @abstractmethod
    def load_records(self, vault_id: str, records: Sequence[StoredRecord]) -> None:
        """Insert records as they were (seq, device, time), without compare-and-swap."""

    def load_blob(self, vault_id: str, blob: StoredBlob, data: bytes) -> None:
        """Store a blob as it was (its creation time kept, so retention is unchanged)."""
        import hashlib

        if hashlib.sha256(data).hexdigest() != blob.info.sha256 or len(data) != blob.info.size:
            raise ChecksumMismatch(blob.info.blob_id)
        self.put_blob(vault_id, blob.info.blob_id, data, blob.created)
