"""What the settings window's Keys and Sync tabs ask of the sync engine, without Qt.

Every function works on one vault copy set up for sync on this device (its `DeviceState`):
the vault key is read from the secret store, never from the config; passphrases and the
recovery key are registered with the log redactor the moment they arrive, and no error
message ever repeats them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from companion.crypto import (
    KdfParams,
    VaultKey,
    WrongPassphrase,
    rewrap,
)
from companion.crypto import export_recovery_key as _export_recovery_key
from companion.errors import CompanionError, InputError
from companion.logs import get_logger, register_secret
from companion.paths import DevicePaths
from companion.relay.client import RelayClient
from companion.relay.errors import ConflictError
from companion.secrets.store import SecretStore, open_store
from companion.sync.device import DeviceState
from companion.sync.join import JoinResult, join_vault, kdf_params, passphrase_source

log = get_logger("gui.keys")

PathLike = str | os.PathLike[str]


class WrongCurrentPassphrase(CompanionError):
    """The "current passphrase" typed in the Keys tab does not unlock the vault key."""


@dataclass(frozen=True)
class KeyContext:
    """One vault copy's device state and the secret store holding its key."""

    state: DeviceState
    store: SecretStore


def is_sync_copy(paths: DevicePaths, vault: PathLike | None) -> bool:
    """True when `vault` is a folder set up for sync on this device with its key stored."""
    if not vault:
        return False
    folder = Path(vault).expanduser()
    if not folder.is_dir():
        return False
    root = os.path.realpath(folder)
    if not DeviceState.exists(paths, root):
        return False
    try:
        return DeviceState.load(paths, root).key_ready
    except CompanionError:
        return False


def _context(paths: DevicePaths, config: Any, vault: PathLike) -> KeyContext:
    root = os.path.realpath(Path(vault).expanduser())
    return KeyContext(DeviceState.load(paths, root), open_store(config))


def _vault_key(paths: DevicePaths, config: Any, vault: PathLike) -> VaultKey:
    ctx = _context(paths, config, vault)
    return ctx.state.load_key(ctx.store)


def fingerprint(paths: DevicePaths, config: Any, vault: PathLike) -> str:
    """The vault key's fingerprint (the same on every device holding the same key)."""
    return _vault_key(paths, config, vault).fingerprint()


def export_recovery_key(paths: DevicePaths, config: Any, vault: PathLike) -> str:
    """The recovery key for the vault key this device holds (registered as a secret)."""
    return _export_recovery_key(_vault_key(paths, config, vault))


def change_passphrase(
    paths: DevicePaths,
    config: Any,
    vault: PathLike,
    old: str | None,
    new: str,
    *,
    kdf: KdfParams | None = None,
) -> None:
    """Re-wrap the vault key under `new` on the relay (compare-and-swap on the old blob).

    The vault key itself does not change, so no file is re-encrypted and other devices keep
    syncing; only joining a new device needs the new passphrase. A passphrase the secret store
    kept for this vault (`vault-passphrase-<id>` / `vault-passphrase`) follows the change.
    """
    if not old:
        raise InputError("enter the current passphrase to change it")
    if not new:
        raise InputError("the new passphrase is empty; choose a long passphrase")
    register_secret(old)
    register_secret(new)
    ctx = _context(paths, config, vault)
    state = ctx.state
    token = state.load_token(ctx.store)
    with RelayClient(
        state.relay_url, token, state.vault_id, verify=state.verify,
        insecure_http=state.insecure_http,
    ) as client:  # fmt: skip
        blob = client.get_key_blob()
        if blob is None:
            raise CompanionError("the relay holds no vault key for this vault; nothing to change")
        try:
            new_blob = rewrap(blob, old, new, vault_id=state.vault_id, params=kdf or kdf_params())
        except WrongPassphrase:
            raise WrongCurrentPassphrase(
                "the current passphrase is wrong: it does not unlock this vault's key"
            ) from None
        try:
            client.put_key_blob(new_blob, expected_absent=False, replaces=blob)
        except ConflictError:
            raise CompanionError(
                "another device changed the vault passphrase at the same time; try again"
            ) from None
    _follow_stored_passphrase(ctx.store, state.vault_id, old, new)
    log.info("vault %s: passphrase changed (key re-wrapped on the relay)", state.vault_id)


def _follow_stored_passphrase(store: SecretStore, vault_id: str, old: str, new: str) -> None:
    """A stored copy of the old passphrase would no longer unlock anything: replace it."""
    for name in (f"vault-passphrase-{vault_id}", "vault-passphrase"):
        try:
            if store.get(name) == old:
                store.set(name, new)
        except CompanionError as exc:
            log.warning("could not update the stored passphrase %s: %s", name, exc)


def join(
    paths: DevicePaths,
    config: Any,
    vault: PathLike,
    relay_url: str,
    invite: str,
    device_name: str,
    kind: str,
    passphrase: str | None,
    *,
    kdf: KdfParams | None = None,
) -> JoinResult:
    """Join the vault on `relay_url` with `invite` (creating its key when the relay has none),
    then make this folder the app's vault: `vault.path`, `sync.relay_url`, `sync.device_name`
    and `sync.kind` are saved to the config (never the passphrase).

    An empty `passphrase` falls back to the passphrase file or the secret store, as
    `companion init` does without a terminal.
    """
    store = open_store(config)
    if passphrase:
        register_secret(passphrase)
        phrase = passphrase

        def source(_vault_id: str, _creating: bool) -> str:
            return phrase

    else:
        source = passphrase_source(store, interactive=False)
    result = join_vault(
        paths,
        store,
        vault,
        relay_url=relay_url.strip(),
        invite=invite.strip() if invite else None,
        device_name=device_name.strip(),
        kind=kind,
        passphrase=source,
        kdf=kdf,
    )
    state = result.state
    config.set("vault", "path", state.vault_root)
    config.set("sync", "relay_url", state.relay_url)
    config.set("sync", "device_name", state.device_name)
    config.set("sync", "kind", state.kind)
    config.save()
    return result
