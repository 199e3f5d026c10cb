"""What the relay stores: sealed content blobs and sealed file records.

Both are ``version (1 byte) + nonce (12) + AES-256-GCM(ciphertext + 16-byte tag)`` over a
compressed, padded frame (`companion.crypto.framing`). The associated data binds each object to
its place, so the relay cannot move one elsewhere without the client noticing:

- blob:   ad = version + vault id + blob id            (content subkey)
- record: ad = version + vault id + file id + revision (metadata subkey)

Ids are keyed hashes the relay can compare but not invert: ``file_id`` of the NFC path,
``blob_id`` of the plaintext chunk (so equal chunks in one vault dedup on the relay).

Replaying an older *genuine* record under its own revision passes authentication; the client
catches it by remembering the highest revision it has seen per file (`check_not_rolled_back`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import struct
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from companion.crypto.errors import (
    RolledBack,
    TamperDetected,
    TamperedBlob,
    TamperedRecord,
    UnsupportedVersion,
)
from companion.crypto.framing import (
    FrameError,
    encode_vault_id,
    frame,
    frame_with_stream,
    unframe_with_stream,
)
from companion.crypto.keys import VaultKey
from companion.textsafe import is_unicode

BLOB_VERSION = 1
RECORD_VERSION = 1
NONCE_SIZE = 12
TAG_SIZE = 16
MIN_SEALED = 1 + NONCE_SIZE + TAG_SIZE
MAX_REV = (1 << 63) - 1

_HEX_ID = re.compile(r"[0-9a-f]{64}")
_REV = struct.Struct(">Q")


# ---------------------------------------------------------------------------------------- ids


def file_id(key: VaultKey, path: str) -> str:
    """HMAC-SHA256(file-id subkey, NFC(path) as UTF-8), 64 hex digits.

    Case is kept as given: ``Notes/A.md`` and ``notes/a.md`` get different ids (case-collision
    handling is the sync engine's job). NFC and NFD spellings of one name get the same id.
    """
    if not isinstance(path, str) or not path:
        raise ValueError("path must be a non-empty string")
    data = unicodedata.normalize("NFC", path).encode("utf-8")
    return hmac.new(key.file_id_key, data, hashlib.sha256).hexdigest()


def blob_id(key: VaultKey, chunk: bytes) -> str:
    """HMAC-SHA256(blob-id subkey, plaintext chunk), 64 hex digits."""
    return hmac.new(key.blob_id_key, chunk, hashlib.sha256).hexdigest()


def _id_bytes(value: object, what: str, error: type[TamperDetected]) -> bytes:
    if not isinstance(value, str) or not _HEX_ID.fullmatch(value):
        raise error(f"{what} {str(value)[:16]!r} is not a valid id (64 lowercase hex digits)")
    return bytes.fromhex(value)


# ------------------------------------------------------------------------------- sealing core


def _seal(aead: AESGCM, version: int, payload: bytes, ad: bytes, nonce: bytes | None) -> bytes:
    return _seal_framed(aead, version, frame(payload), ad, nonce)


def _seal_framed(
    aead: AESGCM, version: int, framed: bytes, ad: bytes, nonce: bytes | None
) -> bytes:
    nonce = os.urandom(NONCE_SIZE) if nonce is None else nonce
    if len(nonce) != NONCE_SIZE:
        raise ValueError("bad nonce length")
    return bytes([version]) + nonce + aead.encrypt(nonce, framed, ad)


def _open_with_stream(
    aead: AESGCM,
    version: int,
    sealed: bytes,
    ad: bytes,
    error: type[TamperDetected],
    where: str,
) -> tuple[bytes, bytes | None]:
    if not isinstance(sealed, bytes | bytearray) or len(sealed) < 1:
        raise error(f"{where} is empty")
    if sealed[0] != version:
        raise UnsupportedVersion(
            f"{where} has format version {sealed[0]}, which this companion does not support "
            "(update it, or the relay altered the data)"
        )
    if len(sealed) < MIN_SEALED:
        raise error(f"{where} is truncated ({len(sealed)} bytes)")
    nonce = bytes(sealed[1 : 1 + NONCE_SIZE])
    try:
        plain = aead.decrypt(nonce, bytes(sealed[1 + NONCE_SIZE :]), ad)
    except InvalidTag:
        raise error(
            f"{where} failed authentication: the relay returned altered, truncated, swapped "
            "or misplaced data, or data of another vault"
        ) from None
    try:
        return unframe_with_stream(plain)
    except FrameError as exc:
        raise error(f"{where} is malformed after decryption ({exc})") from None


# -------------------------------------------------------------------------------------- blobs


def _blob_ad(vault_id: str, bid: bytes) -> bytes:
    return bytes([BLOB_VERSION]) + encode_vault_id(vault_id) + bid


def seal_blob(
    key: VaultKey, vault_id: str, chunk: bytes, *, _nonce: bytes | None = None
) -> tuple[str, bytes]:
    """Seal one content chunk; returns ``(blob_id, sealed)`` for upload."""
    bid, sealed, _ = seal_blob_with_stream(key, vault_id, chunk, _nonce=_nonce)
    return bid, sealed


def seal_blob_with_stream(
    key: VaultKey, vault_id: str, chunk: bytes, *, _nonce: bytes | None = None
) -> tuple[str, bytes, bytes | None]:
    """`seal_blob`, and the zlib stream of `chunk` sealed inside (`frame_with_stream`)."""
    bid = blob_id(key, chunk)
    framed, stream = frame_with_stream(chunk)
    ad = _blob_ad(vault_id, bytes.fromhex(bid))
    return bid, _seal_framed(key.content_aead, BLOB_VERSION, framed, ad, _nonce), stream


def _seal_blob_as(
    key: VaultKey, vault_id: str, bid: str, chunk: bytes, *, _nonce: bytes | None = None
) -> bytes:
    """Seal `chunk` under an arbitrary id. Only for tests of the id check (a lying device)."""
    return _seal(
        key.content_aead, BLOB_VERSION, chunk, _blob_ad(vault_id, bytes.fromhex(bid)), _nonce
    )


def open_blob(key: VaultKey, vault_id: str, bid: str, sealed: bytes) -> bytes:
    """Decrypt the blob the relay returned for id `bid`; `TamperedBlob` if it is not that blob."""
    return open_blob_with_stream(key, vault_id, bid, sealed)[0]


def open_blob_with_stream(
    key: VaultKey, vault_id: str, bid: str, sealed: bytes
) -> tuple[bytes, bytes | None]:
    """`open_blob`, and the zlib stream of the chunk its frame held (`unframe_with_stream`),
    returned only once the chunk is verified."""
    raw_id = _id_bytes(bid, "blob id", TamperedBlob)
    where = f"blob {bid[:12]}"
    chunk, stream = _open_with_stream(
        key.content_aead, BLOB_VERSION, sealed, _blob_ad(vault_id, raw_id), TamperedBlob, where
    )
    if not hmac.compare_digest(blob_id(key, chunk), bid):
        raise TamperedBlob(f"{where} decrypts to content with a different id")
    return chunk, stream


# ------------------------------------------------------------------------------------ records


@dataclass(frozen=True)
class ChunkRef:
    """One chunk of a file's content: the blob that holds it and its plaintext length."""

    blob_id: str
    length: int

    def __post_init__(self) -> None:
        if not isinstance(self.blob_id, str) or not _HEX_ID.fullmatch(self.blob_id):
            raise ValueError("ChunkRef.blob_id must be 64 lowercase hex digits")
        if not _is_int(self.length) or self.length < 1:
            raise ValueError("ChunkRef.length must be a positive int")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class FileMeta:
    """A file's state at one revision: everything the relay must not see about it.

    For a live file the chunks, in order, concatenate to `size` bytes whose SHA-256 is
    `sha256` (hex). A deletion has ``deleted=True`` and no chunks; its `sha256` may name the
    deleted version or be empty. `rename_from` is the old path when this record ends a rename.
    """

    path: str
    size: int
    sha256: str
    chunks: tuple[ChunkRef, ...] = ()
    mtime_ns: int | None = None
    deleted: bool = False
    executable: bool = False
    device_id: str = ""
    device_name: str = ""
    device_kind: str = ""
    rename_from: str | None = None
    recorded_ns: int | None = field(default=None)
    sig: str | None = None  # the writing device's signature (docs/trust.md §4)

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunks", tuple(self.chunks))
        if not isinstance(self.path, str) or not self.path:
            raise ValueError("FileMeta.path must be a non-empty string")
        if not _is_int(self.size) or self.size < 0:
            raise ValueError("FileMeta.size must be a non-negative int")
        if not all(isinstance(c, ChunkRef) for c in self.chunks):
            raise ValueError("FileMeta.chunks must be ChunkRef items")
        for name in ("mtime_ns", "recorded_ns"):
            value = getattr(self, name)
            if value is not None and not _is_int(value):
                raise ValueError(f"FileMeta.{name} must be an int or None")
        for name in ("deleted", "executable"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"FileMeta.{name} must be a bool")
        for name in ("device_id", "device_name", "device_kind"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"FileMeta.{name} must be a string")
        if self.rename_from is not None and not isinstance(self.rename_from, str):
            raise ValueError("FileMeta.rename_from must be a string or None")
        if not isinstance(self.sha256, str):
            raise ValueError("FileMeta.sha256 must be a string")
        if self.sig is not None and not (isinstance(self.sig, str) and self.sig.isascii()):
            raise ValueError("FileMeta.sig must be an ASCII string or None")
        for name in ("path", "rename_from", "device_id", "device_name", "device_kind"):
            value = getattr(self, name)
            if value is not None and not is_unicode(value):
                raise ValueError(f"FileMeta.{name} is not valid Unicode (a lone surrogate)")
        if self.deleted:
            if self.chunks:
                raise ValueError("a deleted FileMeta has no chunks")
            if self.sha256 and not _HEX_ID.fullmatch(self.sha256):
                raise ValueError("FileMeta.sha256 must be 64 lowercase hex digits or empty")
        else:
            if not _HEX_ID.fullmatch(self.sha256):
                raise ValueError("FileMeta.sha256 must be 64 lowercase hex digits")
            if sum(c.length for c in self.chunks) != self.size:
                raise ValueError("FileMeta chunk lengths do not add up to its size")

    def to_json(self) -> bytes:
        """Canonical JSON (sorted keys, no spaces, UTF-8): the record's plaintext payload."""
        obj = {
            "path": self.path,
            "size": self.size,
            "sha256": self.sha256,
            "chunks": [[c.blob_id, c.length] for c in self.chunks],
            "mtime_ns": self.mtime_ns,
            "deleted": self.deleted,
            "executable": self.executable,
            "device_id": self.device_id,
            "device_name": self.device_name,
            "device_kind": self.device_kind,
            "rename_from": self.rename_from,
            "recorded_ns": self.recorded_ns,
        }
        if self.sig is not None:  # an unsigned record keeps version 1's bytes exactly
            obj["sig"] = self.sig
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def from_json(cls, data: bytes) -> FileMeta:
        """Parse `to_json` output; `ValueError` when anything is missing or mistyped.

        Unknown keys are ignored, so a later release may add fields within format version 1.
        """
        obj = json.loads(data.decode("utf-8"))
        if not isinstance(obj, dict):
            raise ValueError("record is not a JSON object")
        chunks = obj.get("chunks")
        if not isinstance(chunks, list) or not all(
            isinstance(c, list) and len(c) == 2 for c in chunks
        ):
            raise ValueError("record chunks are malformed")
        names = (
            "mtime_ns",
            "deleted",
            "executable",
            "device_id",
            "device_name",
            "device_kind",
            "rename_from",
            "recorded_ns",
            "sig",
        )
        extra = {name: obj[name] for name in names if name in obj}
        try:
            return cls(
                path=obj["path"],
                size=obj["size"],
                sha256=obj["sha256"],
                chunks=tuple(ChunkRef(c[0], c[1]) for c in chunks),
                **extra,
            )
        except KeyError as exc:
            raise ValueError(f"record lacks field {exc}") from None


def _record_ad(vault_id: str, fid: bytes, rev: int) -> bytes:
    return bytes([RECORD_VERSION]) + encode_vault_id(vault_id) + fid + _REV.pack(rev)


def _check_rev(rev: int) -> None:
    if not _is_int(rev) or not 1 <= rev <= MAX_REV:
        raise ValueError(f"revision must be an int from 1 to {MAX_REV}")


def seal_record(
    key: VaultKey, vault_id: str, rev: int, meta: FileMeta, *, _nonce: bytes | None = None
) -> tuple[str, bytes]:
    """Seal `meta` as revision `rev` (parent revision + 1); returns ``(file_id, sealed)``."""
    _check_rev(rev)
    fid = file_id(key, meta.path)
    ad = _record_ad(vault_id, bytes.fromhex(fid), rev)
    return fid, _seal(key.metadata_aead, RECORD_VERSION, meta.to_json(), ad, _nonce)


def open_record(key: VaultKey, vault_id: str, fid: str, rev: int, sealed: bytes) -> FileMeta:
    """Decrypt the record the relay returned as revision `rev` of `fid`.

    Raises `TamperedRecord` unless the record was sealed for exactly this vault, file id and
    revision and names a path whose file id is `fid`.
    """
    raw_id = _id_bytes(fid, "file id", TamperedRecord)
    where = f"record rev {rev} of file {fid[:12]}"
    try:
        _check_rev(rev)
    except ValueError:
        raise TamperedRecord(f"{where}: the relay gave an invalid revision number") from None
    payload, _ = _open_with_stream(
        key.metadata_aead,
        RECORD_VERSION,
        sealed,
        _record_ad(vault_id, raw_id, rev),
        TamperedRecord,
        where,
    )
    try:
        meta = FileMeta.from_json(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise TamperedRecord(f"{where} holds malformed metadata ({exc})") from None
    if not hmac.compare_digest(file_id(key, meta.path), fid):
        raise TamperedRecord(f"{where} describes a different file than its id")
    return meta


def assemble(meta: FileMeta, chunks: Sequence[bytes]) -> bytes:
    """Join opened chunks into the file content, checking count, lengths and SHA-256."""
    name = "file content"
    if meta.deleted:
        raise ValueError("a deleted file has no content to assemble")
    if len(chunks) != len(meta.chunks):
        raise TamperedBlob(f"{name}: expected {len(meta.chunks)} chunks, got {len(chunks)}")
    for i, (ref, chunk) in enumerate(zip(meta.chunks, chunks, strict=True)):
        if len(chunk) != ref.length:
            raise TamperedBlob(f"{name}: chunk {i} has the wrong length")
    content = b"".join(chunks)
    if not hmac.compare_digest(hashlib.sha256(content).hexdigest(), meta.sha256):
        raise TamperedBlob(f"{name}: the assembled chunks do not match the record's hash")
    return content


def check_not_rolled_back(seen_rev: int | None, offered_rev: int, *, file_id: str = "") -> None:
    """Refuse a revision older than the newest this device has already accepted for the file.

    Equal is fine (the same record served again). The caller persists `seen_rev` per file id.
    """
    if seen_rev is not None and offered_rev < seen_rev:
        label = f"file {file_id[:12]}" if file_id else "a file"
        raise RolledBack(
            f"the relay offered revision {offered_rev} of {label}, but this device has already "
            f"seen revision {seen_rev}: refusing a rollback to older data"
        )
