"""The vault key from a person's point of view: fingerprint, passphrase, recovery key, rewrap.

One home for what `companion keys ...` and the settings window's Keys and Sync tabs do (the GUI
imports these functions; no Qt here). Every function works on one vault copy set up for sync on
this device (its `DeviceState`): the vault key is read from the secret store, never from the
config; passphrases and the recovery key are registered with the log redactor the moment they
arrive, and no error message ever repeats them. A new passphrase must pass the one strength rule
(`crypto.passphrase`). Replacing the wrapped key on the relay is for human devices only (the
relay refuses agents): an agent that holds the key must not be able to lock the person out.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from companion.credentials.store import SecretStore, open_store
from companion.crypto import (
    KdfParams,
    VaultKey,
    WrongPassphrase,
    import_recovery_key,
    rewrap,
    wrap_vault_key,
)
from companion.crypto import export_recovery_key as _export_recovery_key
from companion.crypto.passphrase import check_new_passphrase
from companion.errors import CompanionError, InputError
from companion.logs import get_logger, register_secret
from companion.paths import DevicePaths
from companion.relayclient.client import RelayClient
from companion.relayclient.errors import ConflictError
from companion.sync.commands.join import (
    JoinResult,
    check_join_request,
    check_recovery_key,
    join_vault,
    kdf_params,
    passphrase_source,
    rejoin_vault,
    remember_join,
    reopen_recorded_key,
)
from companion.sync.state.device import DeviceState, SecretMissing

log = get_logger("sync.keys")

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


def sync_state(paths: DevicePaths, vault: PathLike | None) -> DeviceState | None:
    """How `vault` joined its relay on this device (relay, device name, kind), or None when
    it is not a sync copy here. What the settings window shows instead of the config's
    `[sync]` defaults, which only serve the next join."""
    if not vault:
        return None
    folder = Path(vault).expanduser()
    if not folder.is_dir():
        return None
    root = os.path.realpath(folder)
    if not DeviceState.exists(paths, root):
        return None
    try:
        return DeviceState.load(paths, root)
    except CompanionError as exc:
        log.warning("cannot read the sync state of %s: %s", root, exc)
        return None


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
    register_secret(old)
    if new:
        register_secret(new)
    ctx = _context(paths, config, vault)
    state = ctx.state
    _human_only(state, "change the vault passphrase")
    check_new_passphrase(new, context=(state.vault_id, state.device_name))
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
    """A stored copy of the old passphrase would no longer unlock anything: replace it (any
    stored copy, when `old` is empty: a rewrap from the local key replaced whatever it was)."""
    for name in (f"vault-passphrase-{vault_id}", "vault-passphrase"):
        try:
            stored = store.get(name)
            if stored and (stored == old or not old):
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
    and `sync.kind` are saved to the config (never the passphrase). A person's device that
    creates the vault writes the default agent scopes (`companion.sync.round.scopes`).

    An empty `passphrase` falls back to the passphrase file or the secret store, as
    `companion init` does without a terminal.
    """
    store = open_store(config)
    result = join_vault(
        paths,
        store,
        vault,
        relay_url=relay_url.strip(),
        invite=invite.strip() if invite else None,
        device_name=device_name.strip(),
        kind=kind,
        passphrase=_typed_or_stored(passphrase, store),
        kdf=kdf,
    )
    remember_join(config, result.state)
    if result.created_vault and result.state.kind == "human":
        from companion.sync.round.scopes import new_vault_scopes  # the default agent scopes

        new_vault_scopes(Path(result.state.vault_root))
    return result


def token_lost(paths: DevicePaths, config: Any, vault: PathLike | None) -> bool:
    """Whether `vault` is a sync copy here whose relay token the secret store lost (a new
    keyring, a wiped secrets file): it cannot sync until it joins again (`rejoin`). False when
    the store cannot be asked; that error shows where the engine starts."""
    state = sync_state(paths, vault)
    if state is None:
        return False
    try:
        return open_store(config).get(state.token_name) is None
    except CompanionError as exc:
        log.warning("cannot ask the secret store for the relay token of %s: %s", vault, exc)
        return False


def rejoin(
    paths: DevicePaths, config: Any, vault: PathLike, invite: str, passphrase: str | None
) -> JoinResult:
    """Join a sync copy whose store lost its relay token again, as a new device of its vault
    (`companion init --rejoin`): its index and history are kept, its key comes from the store
    or from the relay's wrapped key with `passphrase` (empty: the passphrase file or the
    store), and must have the fingerprint recorded at the first join."""
    root = check_join_request(
        paths, vault, relay_url="", invite=invite.strip(), device_name="", kind=None, rejoin=True
    )
    store = open_store(config)
    return rejoin_vault(
        paths, store, root, invite=invite.strip(), device_name=None, kind=None,
        passphrase=_typed_or_stored(passphrase, store),
    )  # fmt: skip


def typed_passphrase(passphrase: str) -> Callable[[str, bool], str]:
    """The passphrase a person typed in a window, as the join and unlock functions ask for it;
    registered with the log redactor first."""
    register_secret(passphrase)

    def given(_vault_id: str, _creating: bool) -> str:
        return passphrase

    return given


def _typed_or_stored(passphrase: str | None, store: SecretStore) -> Callable[[str, bool], str]:
    """The typed passphrase or, when none was typed, the passphrase file or the secret store's,
    as `companion init` reads it without a terminal."""
    if passphrase:
        return typed_passphrase(passphrase)
    return passphrase_source(store, interactive=False)


def _human_only(state: DeviceState, what: str) -> None:
    if state.kind != "human":
        raise InputError(
            f"only a human device can {what}: this device is of kind {state.kind} (the relay "
            "refuses agents, so an agent holding the key cannot lock the person out)"
        )


def _client(ctx: KeyContext) -> RelayClient:
    state = ctx.state
    return RelayClient(
        state.relay_url, state.load_token(ctx.store), state.vault_id, verify=state.verify,
        insecure_http=state.insecure_http,
    )  # fmt: skip


def _replace_wrap(client: RelayClient, new_blob: bytes) -> None:
    """Put `new_blob` on the relay: over the current wrap (compare-and-swap), or as the first."""
    current = client.get_key_blob()
    try:
        if current is None:
            client.put_key_blob(new_blob, expected_absent=True)
        else:
            client.put_key_blob(new_blob, expected_absent=False, replaces=current)
    except ConflictError:
        raise CompanionError(
            "another device changed the wrapped vault key at the same time; try again"
        ) from None


def rewrap_from_local_key(
    paths: DevicePaths, config: Any, vault: PathLike, new: str, *, kdf: KdfParams | None = None
) -> str:
    """Wrap this device's own vault key under `new` and replace the relay's wrapped key.

    The repair for a wrapped key that was damaged or overwritten on the relay: no old
    passphrase is needed, because the key itself is here. Returns the fingerprint.
    """
    register_secret(new)
    ctx = _context(paths, config, vault)
    state = ctx.state
    _human_only(state, "re-wrap the vault key")
    check_new_passphrase(new, context=(state.vault_id, state.device_name))
    key = state.load_key(ctx.store)
    blob = wrap_vault_key(key, new, vault_id=state.vault_id, params=kdf or kdf_params())
    with _client(ctx) as client:
        _replace_wrap(client, blob)
    _follow_stored_passphrase(ctx.store, state.vault_id, "", new)
    log.info("vault %s: key re-wrapped from this device's copy", state.vault_id)
    return key.fingerprint()


@dataclass(frozen=True)
class Unlocked:
    fingerprint: str
    stored: bool  # False: the secret store already held this key


def unlock_again(
    paths: DevicePaths,
    config: Any,
    vault: PathLike,
    passphrase: Callable[[str, bool], str] | None = None,
) -> Unlocked:
    """Store this copy's vault key again, opened with the passphrase from the relay's wrapped
    key, when the secret store lost it or holds a damaged or wrong one (a new keyring, a wiped
    secrets file). Nothing is asked when the store already holds the right key.

    The key must have the fingerprint this device recorded when it joined: a wrapped key that
    opens to another key is refused, never stored. A wrong passphrase leaves everything as it
    was (unlike a join, the device keeps its token). `passphrase` defaults to the file, the
    secret store or a prompt, as `companion init` reads it.
    """
    ctx = _context(paths, config, vault)
    state, store = ctx.state, ctx.store
    if not state.key_ready:
        raise InputError(
            f"{state.vault_root} has not finished joining: run `companion init "
            f"{state.vault_root}` to unlock the key with the passphrase"
        )
    try:
        key = state.load_key(store)
        return Unlocked(key.fingerprint(), stored=False)
    except SecretMissing:
        pass  # lost, damaged or another key: open the relay's wrapped key
    with _client(ctx) as client:
        key = reopen_recorded_key(client, state, passphrase or passphrase_source(store))
    state.store_key(store, key)
    state.save(paths)
    log.info("vault %s: key stored again after unlocking it with the passphrase", state.vault_id)
    return Unlocked(key.fingerprint(), stored=True)


@dataclass(frozen=True)
class RecoveryImport:
    fingerprint: str
    joined: JoinResult | None  # set when the import also joined this folder to the vault
    rewrapped: bool  # the relay's wrapped key now opens with the new passphrase


def import_recovery(
    paths: DevicePaths,
    config: Any,
    vault: PathLike,
    recovery_text: str,
    new_passphrase: str,
    *,
    relay_url: str = "",
    invite: str = "",
    device_name: str = "",
    kind: str | None = None,
    kdf: KdfParams | None = None,
) -> RecoveryImport:
    """Bring the vault key back from a recovery key, then set a new passphrase.

    On a folder already set up for sync, the key is checked against the vault's records on the
    relay, stored, and (on a human device) re-wrapped under `new_passphrase`. On a new folder,
    `relay_url` and `invite` join it to the vault with the recovered key first.
    """
    key = import_recovery_key(recovery_text)
    register_secret(new_passphrase)
    root = os.path.realpath(Path(vault).expanduser())
    store = open_store(config)
    joined: JoinResult | None = None
    if not DeviceState.exists(paths, root):
        if not invite or not relay_url:
            raise InputError(
                f"{root} is not set up for sync here: give --relay and --invite to join it with "
                "the recovery key"
            )

        def phrase(_vault_id: str, _creating: bool) -> str:
            return new_passphrase

        joined = join_vault(
            paths, store, root, relay_url=relay_url, invite=invite,
            device_name=device_name or "device", kind=kind, passphrase=phrase, kdf=kdf,
            recovery=key,
        )  # fmt: skip
    state = DeviceState.load(paths, root)
    ctx = KeyContext(state, store)
    rewrapped = False
    with _client(ctx) as client:
        if joined is None:
            check_recovery_key(client, state.vault_id, key)
        if state.kind == "human":
            check_new_passphrase(new_passphrase, context=(state.vault_id, state.device_name))
            blob = wrap_vault_key(
                key, new_passphrase, vault_id=state.vault_id, params=kdf or kdf_params()
            )
            _replace_wrap(client, blob)
            rewrapped = True
    state.store_key(store, key)
    state.save(paths)
    log.info("vault %s: key imported from a recovery key", state.vault_id)
    return RecoveryImport(key.fingerprint(), joined, rewrapped)
