"""The vault key and the subkeys derived from it.

One random 256-bit vault key per vault. Nothing is ever encrypted or hashed with it directly:
HKDF-SHA256 derives an independent subkey for each job, so a weakness in one use (for example
the deterministic file-id hash) says nothing about another (content encryption).
"""

from __future__ import annotations

import hmac
import secrets

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from companion.crypto.sizes import KEY_SIZE as KEY_SIZE  # its home; re-exported
from companion.logs import register_secret

# HKDF `info` labels. Changing any of them changes every derived byte: that is a new format
# version, and the committed test vectors would fail.
LABEL_CONTENT = b"vault-companion/v1/content"
LABEL_METADATA = b"vault-companion/v1/metadata"
LABEL_FILE_ID = b"vault-companion/v1/file-id"
LABEL_BLOB_ID = b"vault-companion/v1/blob-id"
LABEL_FINGERPRINT = b"vault-companion/v1/fingerprint"

FINGERPRINT_BYTES = 10


def hkdf_sha256(ikm: bytes, info: bytes, length: int = KEY_SIZE) -> bytes:
    """HKDF-SHA256 with no salt (the input is already a uniformly random key)."""
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(ikm)


class VaultKey:
    """A vault's 256-bit key and its derived subkeys.

    The raw bytes leave this object only through `to_bytes()` (for the keyring) and the
    recovery-key export; `repr` shows the fingerprint, never the key.
    """

    __slots__ = (
        "_raw",
        "content_key",
        "metadata_key",
        "file_id_key",
        "blob_id_key",
        "content_aead",
        "metadata_aead",
    )

    def __init__(self, raw: bytes) -> None:
        if not isinstance(raw, bytes | bytearray) or len(raw) != KEY_SIZE:
            raise ValueError(f"a vault key is exactly {KEY_SIZE} bytes")
        self._raw = bytes(raw)
        self.content_key = hkdf_sha256(self._raw, LABEL_CONTENT)
        self.metadata_key = hkdf_sha256(self._raw, LABEL_METADATA)
        self.file_id_key = hkdf_sha256(self._raw, LABEL_FILE_ID)
        self.blob_id_key = hkdf_sha256(self._raw, LABEL_BLOB_ID)
        self.content_aead = AESGCM(self.content_key)
        self.metadata_aead = AESGCM(self.metadata_key)
        register_secret(self._raw.hex())

    @classmethod
    def generate(cls) -> VaultKey:
        """A fresh random key from the operating system's CSPRNG."""
        return cls(secrets.token_bytes(KEY_SIZE))

    @classmethod
    def from_bytes(cls, raw: bytes) -> VaultKey:
        return cls(raw)

    def to_bytes(self) -> bytes:
        """The raw 32 bytes, for the OS keyring. Never log or send them."""
        return self._raw

    def fingerprint(self) -> str:
        """A short display string identifying the key, e.g. ``3f2a-91c0-77de-0b12-ee45``.

        Derived by HKDF under its own label, so it reveals nothing about the key or any subkey;
        two devices show the same fingerprint exactly when they hold the same vault key.
        """
        digest = hkdf_sha256(self._raw, LABEL_FINGERPRINT, FINGERPRINT_BYTES).hex()
        return "-".join(digest[i : i + 4] for i in range(0, len(digest), 4))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VaultKey):
            return NotImplemented
        return hmac.compare_digest(self._raw, other._raw)

    def __hash__(self) -> int:
        return hash(self.fingerprint())

    def __repr__(self) -> str:
        return f"VaultKey(fingerprint={self.fingerprint()!r})"
