"""End-to-end encryption for the vault: keys, the wrapped key, recovery key, sealed records.

The format is described byte by byte in docs/security.md and pinned by
tests/vectors/crypto_v1.json. The relay only ever receives the outputs of `wrap_vault_key`,
`seal_blob` and `seal_record`, plus file and blob ids.

The errors load with the package; the rest (and `cryptography` with it) on first use of a name,
so a command that never opens a record, such as a quiet one-shot sync, does not pay for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from companion.crypto.errors import (
    BadRecoveryKey,
    CryptoError,
    RolledBack,
    TamperDetected,
    TamperedBlob,
    TamperedRecord,
    TamperedWrappedKey,
    UnsafeKdfParams,
    UnsupportedVersion,
    WeakPassphrase,
    WrongPassphrase,
)

if TYPE_CHECKING:
    from companion.crypto.framing import padded_size
    from companion.crypto.keys import VaultKey
    from companion.crypto.records import (
        ChunkRef,
        FileMeta,
        assemble,
        blob_id,
        check_not_rolled_back,
        file_id,
        open_blob,
        open_blob_with_stream,
        open_record,
        seal_blob,
        seal_blob_with_stream,
        seal_record,
    )
    from companion.crypto.recovery import export_recovery_key, import_recovery_key
    from companion.crypto.wrap import (
        DEFAULT_KDF_PARAMS,
        KdfParams,
        read_kdf_params,
        rewrap,
        unwrap_vault_key,
        wrap_vault_key,
    )

# name -> the module that defines it
_LAZY = {
    "padded_size": "framing",
    "VaultKey": "keys",
    **dict.fromkeys(
        (
            "ChunkRef",
            "FileMeta",
            "assemble",
            "blob_id",
            "check_not_rolled_back",
            "file_id",
            "open_blob",
            "open_blob_with_stream",
            "open_record",
            "seal_blob",
            "seal_blob_with_stream",
            "seal_record",
        ),
        "records",
    ),  # fmt: skip
    "export_recovery_key": "recovery",
    "import_recovery_key": "recovery",
    **dict.fromkeys(
        (
            "DEFAULT_KDF_PARAMS",
            "KdfParams",
            "read_kdf_params",
            "rewrap",
            "unwrap_vault_key",
            "wrap_vault_key",
        ),
        "wrap",
    ),  # fmt: skip
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # looked up once
    return value


__all__ = [
    "DEFAULT_KDF_PARAMS",
    "BadRecoveryKey",
    "ChunkRef",
    "CryptoError",
    "FileMeta",
    "KdfParams",
    "RolledBack",
    "TamperDetected",
    "TamperedBlob",
    "TamperedRecord",
    "TamperedWrappedKey",
    "UnsafeKdfParams",
    "UnsupportedVersion",
    "VaultKey",
    "WeakPassphrase",
    "WrongPassphrase",
    "assemble",
    "blob_id",
    "check_not_rolled_back",
    "export_recovery_key",
    "file_id",
    "import_recovery_key",
    "open_blob",
    "open_blob_with_stream",
    "open_record",
    "padded_size",
    "read_kdf_params",
    "rewrap",
    "seal_blob",
    "seal_blob_with_stream",
    "seal_record",
    "unwrap_vault_key",
    "wrap_vault_key",
]
