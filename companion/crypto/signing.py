"""Device signing keys, the person's roster entries and signed records (docs/trust.md).

Every device has an Ed25519 key of its own. The person's human devices vouch for each device's
key and kind in roster entries; every record a device seals carries its signature. Who wrote a
record is then decided by the person's signatures, never by the relay's word alone.

This module holds the bytes only: keys, fingerprints, the entry and record messages, signing,
verifying and the roster's evaluation. Reading the roster from a vault and deciding a record's
author kind live in `companion.sync.trust`. Pinned by tests/vectors/roster_v1.json, which the
Obsidian plugin replays.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `cryptography` loads when a key signs or verifies, not with the module
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from companion.crypto.records import FileMeta

ENTRY_TAG = b"VCROSTER1"
RECORD_TAG = b"VCREC1"
FINGERPRINT_TAG = b"vault-companion device key v1\x00"
SEED_SIZE = 32
PUBLIC_SIZE = 32
SIG_SIZE = 64
HUMAN = "human"
AGENT = "agent"
REVOKED = "revoked"
KINDS = (HUMAN, AGENT, REVOKED)
ROSTER_VERSION = 1

_B64URL = re.compile(r"[A-Za-z0-9_-]*")
_LEN = struct.Struct(">I")


class SignatureError(ValueError):
    """A key, a signature or an entry is malformed (not: a signature that does not verify)."""


# ---------------------------------------------------------------------------------- encoding


def b64url(data: bytes) -> str:
    """Unpadded base64url."""
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def unb64url(text: str, size: int, what: str) -> bytes:
    """Strict unpadded base64url of exactly `size` bytes; the one canonical spelling only."""
    if not isinstance(text, str) or not _B64URL.fullmatch(text):
        raise SignatureError(f"{what} is not unpadded base64url")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise SignatureError(f"{what} is not unpadded base64url") from None
    if len(raw) != size or b64url(raw) != text:
        raise SignatureError(f"{what} is not {size} bytes in canonical base64url")
    return raw


def _field(value: str) -> bytes:
    raw = value.encode("utf-8")
    return _LEN.pack(len(raw)) + raw


def _message(tag: bytes, fields: Iterable[str]) -> bytes:
    return tag + b"".join(_field(f) for f in fields)


# -------------------------------------------------------------------------------------- keys


def fingerprint(public: bytes) -> str:
    """`ABCD-EFGH-…`: 28 base32 characters of SHA-256 over the tagged key, in groups of 4."""
    if len(public) != PUBLIC_SIZE:
        raise SignatureError("a public key is 32 bytes")
    digest = hashlib.sha256(FINGERPRINT_TAG + public).digest()
    text = base64.b32encode(digest).decode("ascii")[:28]
    return "-".join(text[i : i + 4] for i in range(0, 28, 4))


def normalise_fingerprint(text: str) -> str | None:
    """The canonical spelling of a typed fingerprint (case, spaces and dashes free), or None."""
    if not isinstance(text, str):
        return None
    plain = re.sub(r"[\s-]", "", text).upper()
    if not re.fullmatch(r"[A-Z2-7]{28}", plain):
        return None
    return "-".join(plain[i : i + 4] for i in range(0, 28, 4))


class DeviceKey:
    """A device's private signing key. Its seed never goes to the vault, a log or an error."""

    __slots__ = ("_key", "public")

    def __init__(self, seed: bytes) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        if len(seed) != SEED_SIZE:
            raise SignatureError("a signing key seed is 32 bytes")
        self._key: Ed25519PrivateKey = Ed25519PrivateKey.from_private_bytes(seed)
        self.public = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    @classmethod
    def generate(cls) -> DeviceKey:
        import os

        return cls(os.urandom(SEED_SIZE))

    @classmethod
    def from_text(cls, text: str) -> DeviceKey:
        return cls(unb64url(text.strip(), SEED_SIZE, "the stored signing key"))

    def seed_text(self) -> str:
        """The seed as stored in the secret store (unpadded base64url)."""
        from cryptography.hazmat.primitives.serialization import (
            Encoding,
            NoEncryption,
            PrivateFormat,
        )

        raw = self._key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        return b64url(raw)

    @property
    def public_text(self) -> str:
        return b64url(self.public)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public)

    def sign(self, message: bytes) -> str:
        return b64url(self._key.sign(message))

    def __repr__(self) -> str:
        return f"DeviceKey({self.fingerprint})"


def verify(public: bytes, message: bytes, sig: str) -> bool:
    """Whether `sig` (unpadded base64url) is `public`'s Ed25519 signature over `message`."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        raw = unb64url(sig, SIG_SIZE, "signature")
        Ed25519PublicKey.from_public_bytes(public).verify(raw, message)
    except (SignatureError, InvalidSignature, ValueError):
        return False
    return True


# ------------------------------------------------------------------------------------ roster


@dataclass(frozen=True)
class RosterEntry:
    """One vouching: `by` (a human device) says `device_id` has `key` and `kind`, at `at`."""

    vault_id: str
    device_id: str
    key: str
    kind: str
    name: str
    by: str
    at: int
    sig: str = ""
    v: int = ROSTER_VERSION

    def message(self) -> bytes:
        return entry_message(
            self.vault_id, self.device_id, self.key, self.kind, self.name, self.by, self.at
        )

    def signed(self, signer: DeviceKey) -> RosterEntry:
        from dataclasses import replace

        return replace(self, sig=signer.sign(self.message()))

    def to_json(self) -> bytes:
        """Canonical JSON (sorted keys, no spaces, UTF-8), the roster file's bytes."""
        obj = {
            "v": self.v,
            "vault_id": self.vault_id,
            "device_id": self.device_id,
            "key": self.key,
            "kind": self.kind,
            "name": self.name,
            "by": self.by,
            "at": self.at,
            "sig": self.sig,
        }
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def from_obj(cls, obj: object) -> RosterEntry:
        """An entry from parsed JSON; `SignatureError` for anything mistyped. Unknown keys are
        ignored."""
        if not isinstance(obj, Mapping):
            raise SignatureError("a roster entry is a JSON object")
        if obj.get("v") != ROSTER_VERSION or isinstance(obj.get("v"), bool):
            raise SignatureError(f"roster entry version {obj.get('v')!r} is not 1")
        values: dict[str, object] = {}
        for name in ("vault_id", "device_id", "key", "kind", "name", "by", "sig"):
            value = obj.get(name)
            if not isinstance(value, str):
                raise SignatureError(f"roster entry field {name!r} is not a string")
            values[name] = value
        at = obj.get("at")
        if not isinstance(at, int) or isinstance(at, bool) or at < 0:
            raise SignatureError("roster entry field 'at' is not a non-negative integer")
        if values["kind"] not in KINDS:
            raise SignatureError(f"roster entry kind {values['kind']!r} is unknown")
        unb64url(str(values["key"]), PUBLIC_SIZE, "roster entry key")
        return cls(at=at, **values)  # type: ignore[arg-type]

    @classmethod
    def from_json(cls, data: bytes) -> RosterEntry:
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise SignatureError("a roster entry is not UTF-8 JSON") from None
        return cls.from_obj(obj)


def entry_message(
    vault_id: str, device_id: str, key: str, kind: str, name: str, by: str, at: int
) -> bytes:
    """The bytes a roster entry's `sig` signs (docs/trust.md §2)."""
    return _message(ENTRY_TAG, (vault_id, device_id, key, kind, name, by, str(int(at))))


@dataclass(frozen=True)
class Trusted:
    """A device in the trusted set: its public key and its kind (`human` or `agent`)."""

    key: bytes
    kind: str


def evaluate(
    entries: Iterable[RosterEntry], vault_id: str, anchor_id: str, anchor_key: bytes
) -> dict[str, Trusted]:
    """The trusted set `T` of docs/trust.md §2, from an anchor and the roster's entries.

    The entries are replayed in order of (`at`, `device_id`, `sig`): each applies when its
    vault is this one, its signer is in `T` as a human device at that point, and its signature
    verifies under the signer's key in `T`; it then sets (or, `revoked`, removes) its device.
    The anchor's own key and kind never change. An entry signed by a device that is trusted
    only later in the replay does not apply: a vouching counts from when the voucher was.
    """
    trusted = {anchor_id: Trusted(anchor_key, HUMAN)}
    ordered = sorted(
        (e for e in entries if e.vault_id == vault_id and e.device_id != anchor_id),
        key=lambda e: (e.at, e.device_id, e.sig),
    )
    for e in ordered:
        signer = trusted.get(e.by)
        if signer is None or signer.kind != HUMAN or not verify(signer.key, e.message(), e.sig):
            continue
        if e.kind == REVOKED:
            trusted.pop(e.device_id, None)
            continue
        try:
            key = unb64url(e.key, PUBLIC_SIZE, "roster entry key")
        except SignatureError:
            continue
        trusted[e.device_id] = Trusted(key, e.kind)
    return trusted


def why_not(
    entry: RosterEntry, vault_id: str, trusted: Mapping[str, Trusted], anchor_id: str
) -> str | None:
    """Why `entry` does not stand in `trusted` (for `trust show`), or None when it does."""
    if entry.vault_id != vault_id:
        return "written for another vault"
    if entry.device_id == anchor_id:
        return None
    signer = trusted.get(entry.by)
    if signer is None:
        return "signed by a device that is not vouched for"
    if signer.kind != HUMAN:
        return "signed by a device vouched for as an agent"
    if not verify(signer.key, entry.message(), entry.sig):
        return "its signature does not verify"
    now = trusted.get(entry.device_id)
    if entry.kind == REVOKED:
        return None if now is None else "replaced by a newer entry"
    if now is None or b64url(now.key) != entry.key or now.kind != entry.kind:
        return "replaced by a newer entry"
    return None


# ------------------------------------------------------------------------------------ records


def record_message(
    vault_id: str,
    file_id: str,
    rev: int,
    *,
    path: str,
    size: int,
    sha256: str,
    deleted: bool,
    executable: bool,
    device_id: str,
    device_kind: str,
    rename_from: str | None,
    recorded_ns: int | None,
) -> bytes:
    """The bytes a record's `sig` signs (docs/trust.md §4)."""
    return _message(
        RECORD_TAG,
        (
            vault_id,
            file_id,
            str(int(rev)),
            unicodedata.normalize("NFC", path),
            str(int(size)),
            sha256,
            "1" if deleted else "0",
            "1" if executable else "0",
            device_id,
            device_kind,
            "" if rename_from is None else rename_from,
            "" if recorded_ns is None else str(int(recorded_ns)),
        ),
    )


def meta_message(vault_id: str, file_id: str, rev: int, meta: FileMeta) -> bytes:
    """`record_message` for a record's metadata (its `sig` aside)."""
    return record_message(
        vault_id,
        file_id,
        rev,
        path=meta.path,
        size=meta.size,
        sha256=meta.sha256,
        deleted=meta.deleted,
        executable=meta.executable,
        device_id=meta.device_id,
        device_kind=meta.device_kind,
        rename_from=meta.rename_from,
        recorded_ns=meta.recorded_ns,
    )


def sign_meta(key: DeviceKey, vault_id: str, file_id: str, rev: int, meta: FileMeta) -> FileMeta:
    """`meta` with its `sig` by `key` for revision `rev` of `file_id`."""
    from dataclasses import replace

    return replace(meta, sig=key.sign(meta_message(vault_id, file_id, rev, meta)))


# ------------------------------------------------------------------------------ announcements


@dataclass(frozen=True)
class Announcement:
    """A device's claim of its public key (`.companion/keys/<device_id>.json`): not trust."""

    device_id: str
    key: str
    name: str

    @property
    def public(self) -> bytes:
        return unb64url(self.key, PUBLIC_SIZE, "announced key")

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public)

    def to_json(self) -> bytes:
        obj = {"device_id": self.device_id, "key": self.key, "name": self.name, "v": 1}
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Announcement:
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise SignatureError("a key announcement is not UTF-8 JSON") from None
        if not isinstance(obj, dict) or obj.get("v") != 1 or isinstance(obj.get("v"), bool):
            raise SignatureError("a key announcement is not version 1")
        values = [obj.get(n) for n in ("device_id", "key", "name")]
        if not all(isinstance(v, str) for v in values):
            raise SignatureError("a key announcement's fields are not strings")
        device_id, key, name = (str(v) for v in values)
        unb64url(key, PUBLIC_SIZE, "announced key")
        return cls(device_id, key, name)


# ---------------------------------------------------------------------------- who wrote it

TAMPERED = "tampered"


def author_kind(
    trusted: Mapping[str, Trusted] | None,
    vault_id: str,
    file_id: str,
    rev: int,
    meta: FileMeta,
    relay_kind: str | None,
) -> str:
    """`human`, `agent` or `tampered` for one opened record (docs/trust.md §5).

    `trusted` is None on a device without an anchor: version 1's rule (the relay's label and
    the sealed claim must both say human). With an anchor, only the person's roster and the
    writing device's signature count; the relay's label and the sealed `device_kind` do not.
    """
    if trusted is None:
        return HUMAN if relay_kind == HUMAN and meta.device_kind == HUMAN else AGENT
    who = trusted.get(meta.device_id) if meta.device_id else None
    if who is None or meta.sig is None:
        return AGENT
    if not verify(who.key, meta_message(vault_id, file_id, rev, meta), meta.sig):
        return TAMPERED
    return who.kind
