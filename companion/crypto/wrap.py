"""Wrapping the vault key with a passphrase (Argon2id + AES-256-GCM).

The wrapped key is what the relay stores so a new device can join with the passphrase alone.
Layout, version 1 (89 bytes)::

    0   1   version (0x01)
    1   4   Argon2id memory in KiB (u32, big endian)
    5   4   Argon2id iterations (u32)
    9   4   Argon2id lanes (u32)
    13  16  salt
    29  12  AES-GCM nonce
    41  48  AES-256-GCM(kek, nonce, vault key, ad) = 32 ciphertext + 16 tag

kek = Argon2id(passphrase NFC-normalised as UTF-8, salt, params), 32 bytes.
ad  = bytes 0..29 (version, params, salt) + u16 length + vault id (UTF-8), so neither the
parameters nor the salt can be changed, and a wrapped key cannot be moved to another vault.

The relay chooses what it returns, so `unwrap_vault_key` checks the parameters before running
the KDF: a malicious relay must not be able to make a device allocate 100 GiB or loop for hours.
"""

from __future__ import annotations

import os
import struct
import unicodedata
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

from companion.crypto.errors import (
    TamperedWrappedKey,
    UnsafeKdfParams,
    UnsupportedVersion,
    WeakPassphrase,
    WrongPassphrase,
)
from companion.crypto.framing import encode_vault_id
from companion.crypto.keys import KEY_SIZE, VaultKey
from companion.logs import register_secret

WRAP_VERSION = 1
SALT_SIZE = 16
NONCE_SIZE = 12
TAG_SIZE = 16

MIN_MEMORY_KIB = 8 * 1024  # 8 MiB
MAX_MEMORY_KIB = 4 * 1024 * 1024  # 4 GiB
MAX_ITERATIONS = 32
MAX_LANES = 16

_HEADER = struct.Struct(">BIII")
_AD_END = _HEADER.size + SALT_SIZE  # 29
WRAPPED_SIZE = _AD_END + NONCE_SIZE + KEY_SIZE + TAG_SIZE  # 89


@dataclass(frozen=True)
class KdfParams:
    """Argon2id cost parameters. The default is RFC 9106's second recommended setting."""

    memory_kib: int = 64 * 1024
    iterations: int = 3
    lanes: int = 4

    def check(self) -> None:
        """Raise `UnsafeKdfParams` unless every parameter is inside the accepted range."""
        if not MIN_MEMORY_KIB <= self.memory_kib <= MAX_MEMORY_KIB:
            raise UnsafeKdfParams(
                f"refusing Argon2id memory of {self.memory_kib} KiB: it must be between "
                f"{MIN_MEMORY_KIB // 1024} MiB and {MAX_MEMORY_KIB // (1024 * 1024)} GiB"
            )
        if not 1 <= self.iterations <= MAX_ITERATIONS:
            raise UnsafeKdfParams(
                f"refusing {self.iterations} Argon2id iterations: it must be 1 to {MAX_ITERATIONS}"
            )
        if not 1 <= self.lanes <= MAX_LANES:
            raise UnsafeKdfParams(
                f"refusing {self.lanes} Argon2id lanes: it must be 1 to {MAX_LANES}"
            )


DEFAULT_KDF_PARAMS = KdfParams()


def _passphrase_bytes(passphrase: str) -> bytes:
    if not isinstance(passphrase, str) or not passphrase:
        raise WeakPassphrase("the passphrase is empty; choose a long passphrase")
    register_secret(passphrase)
    return unicodedata.normalize("NFC", passphrase).encode("utf-8")


def _kek(passphrase: str, salt: bytes, params: KdfParams) -> AESGCM:
    kdf = Argon2id(
        salt=salt,
        length=KEY_SIZE,
        iterations=params.iterations,
        lanes=params.lanes,
        memory_cost=params.memory_kib,
    )
    return AESGCM(kdf.derive(_passphrase_bytes(passphrase)))


def wrap_vault_key(
    key: VaultKey,
    passphrase: str,
    *,
    vault_id: str,
    params: KdfParams = DEFAULT_KDF_PARAMS,
    _salt: bytes | None = None,
    _nonce: bytes | None = None,
) -> bytes:
    """Seal `key` under `passphrase` for the vault `vault_id`; the result is safe to upload.

    `_salt` and `_nonce` exist only for the committed test vectors; never pass them otherwise.
    """
    params.check()
    salt = os.urandom(SALT_SIZE) if _salt is None else _salt
    nonce = os.urandom(NONCE_SIZE) if _nonce is None else _nonce
    if len(salt) != SALT_SIZE or len(nonce) != NONCE_SIZE:
        raise ValueError("bad salt or nonce length")
    header = _HEADER.pack(WRAP_VERSION, params.memory_kib, params.iterations, params.lanes) + salt
    ad = header + encode_vault_id(vault_id)
    sealed = _kek(passphrase, salt, params).encrypt(nonce, key.to_bytes(), ad)
    return header + nonce + sealed


def read_kdf_params(blob: bytes) -> KdfParams:
    """The KDF parameters a wrapped key declares (checked), e.g. to offer a stronger rewrap."""
    if not isinstance(blob, bytes | bytearray) or len(blob) < 1:
        raise TamperedWrappedKey("the wrapped vault key from the relay is empty")
    if blob[0] != WRAP_VERSION:
        raise UnsupportedVersion(
            f"wrapped-key format version {blob[0]} is not supported by this companion "
            "(update it, or the relay altered the data)"
        )
    if len(blob) != WRAPPED_SIZE:
        raise TamperedWrappedKey(
            f"the wrapped vault key from the relay is {len(blob)} bytes, expected "
            f"{WRAPPED_SIZE}: it was truncated or altered"
        )
    _, memory_kib, iterations, lanes = _HEADER.unpack_from(blob, 0)
    params = KdfParams(memory_kib=memory_kib, iterations=iterations, lanes=lanes)
    params.check()
    return params


def unwrap_vault_key(blob: bytes, passphrase: str, *, vault_id: str) -> VaultKey:
    """Recover the vault key, or raise `WrongPassphrase` (also when the blob was altered)."""
    params = read_kdf_params(blob)
    salt = bytes(blob[_HEADER.size : _AD_END])
    nonce = bytes(blob[_AD_END : _AD_END + NONCE_SIZE])
    ad = bytes(blob[:_AD_END]) + encode_vault_id(vault_id)
    try:
        raw = _kek(passphrase, salt, params).decrypt(nonce, bytes(blob[_AD_END + NONCE_SIZE :]), ad)
    except InvalidTag:
        raise WrongPassphrase(
            "wrong passphrase: it does not unlock this vault's key "
            "(or the wrapped key on the relay was altered or belongs to another vault)"
        ) from None
    return VaultKey(raw)


def rewrap(
    blob: bytes,
    old_passphrase: str,
    new_passphrase: str,
    *,
    vault_id: str,
    params: KdfParams | None = None,
) -> bytes:
    """Passphrase change: the same vault key under a new passphrase, fresh salt and nonce.

    Nothing else changes (no file is re-encrypted). `params` defaults to the current defaults,
    so a passphrase change also upgrades weak parameters.
    """
    key = unwrap_vault_key(blob, old_passphrase, vault_id=vault_id)
    _passphrase_bytes(new_passphrase)
    return wrap_vault_key(
        key, new_passphrase, vault_id=vault_id, params=params or DEFAULT_KDF_PARAMS
    )
