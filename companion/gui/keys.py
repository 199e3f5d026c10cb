"""The settings window's key functions live in the engine
(`companion.sync.commands.vaultkeys`), shared with
`companion keys`; this name is kept for the GUI's imports."""

from companion.sync.commands.vaultkeys import (
    KeyContext,
    RecoveryImport,
    WrongCurrentPassphrase,
    change_passphrase,
    export_recovery_key,
    fingerprint,
    import_recovery,
    is_sync_copy,
    join,
    rejoin,
    rewrap_from_local_key,
    sync_state,
    token_lost,
    typed_passphrase,
    unlock_again,
)

__all__ = [
    "KeyContext",
    "RecoveryImport",
    "WrongCurrentPassphrase",
    "change_passphrase",
    "export_recovery_key",
    "fingerprint",
    "import_recovery",
    "is_sync_copy",
    "join",
    "rejoin",
    "rewrap_from_local_key",
    "sync_state",
    "token_lost",
    "typed_passphrase",
    "unlock_again",
]
