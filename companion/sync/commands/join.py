"""`companion init`: join a vault on a relay and unlock (or create) its encryption key.

1. Redeem the one-time invite: the relay returns this device's bearer token and its kind (fixed
   by the invite). The token stays in memory: nothing is stored yet.
2. If the relay holds no wrapped key yet and lists no other device in the vault, this device
   creates the vault key, wraps it with a new passphrase (which must pass
   `crypto.passphrase.check_new_passphrase`) and uploads the wrapped key (compare-and-swap: if
   another device won the race, its key is unwrapped instead). A relay that lists other devices
   but no key is hiding it (or the first device is still joining): after a short wait this device
   refuses to create a second vault key. Otherwise the wrapped key is fetched and unwrapped with
   the passphrase (or a recovery key is checked against the vault's records).
3. Only now are the token and the vault key stored in the secret store, and the device state
   saved, the vault layout's folders (knowledge/, projects/, journal/) created where
   missing (sync carries files, not folders, so an empty area would never arrive), and the
   folder marked as this device's copy of the vault (`folder.py`: no round syncs a folder
   without it, such as an unmounted drive's mount point). If the key
   does not unlock, the device leaves the vault (its token is revoked on the relay), so a
   device that never held the key never keeps a working token; the person asks for a new
   invite and runs `init` again.

The passphrase comes from `COMPANION_PASSPHRASE_FILE` (a file only its owner can read: one
readable by group or others is refused), then from the secret store entry
``vault-passphrase-<vault id>`` or ``vault-passphrase``, then from a prompt when a terminal is
attached. Whether one of them is there is checked before the invite is redeemed.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from companion.credentials.files import read_owner_only
from companion.credentials.store import SecretStore
from companion.crypto import (
    DEFAULT_KDF_PARAMS,
    BadRecoveryKey,
    KdfParams,
    TamperDetected,
    VaultKey,
    WrongPassphrase,
    unwrap_vault_key,
    wrap_vault_key,
)
from companion.crypto.passphrase import check_new_passphrase
from companion.errors import CompanionError, InputError
from companion.logs import get_logger, register_secret
from companion.paths import DevicePaths
from companion.relayclient.client import RelayClient, check_relay_url
from companion.relayclient.errors import ConflictError
from companion.sync.local.folder import check_folder, write_marker
from companion.sync.round.conflicts import KINDS
from companion.sync.state.device import DeviceState, SecretMissing
from companion.testmode import WEAK_KDF_ENV, escape_hatch
from companion.textsafe import display_name_problem, shown
from companion.vault.layout import ensure_area_folders

log = get_logger("sync.join")

PASSPHRASE_ENV = "COMPANION_PASSPHRASE_FILE"
# Cheapest parameters `KdfParams.check` accepts. Only for test suites (dozens of devices).
TEST_KDF_PARAMS = KdfParams(memory_kib=8 * 1024, iterations=1, lanes=1)
MAX_PROMPTS = 3


class PassphraseUnavailable(CompanionError):
    """No passphrase source: no file, no stored passphrase, no terminal to ask on."""


@dataclass
class JoinResult:
    state: DeviceState
    created_vault: bool  # this device generated the vault key
    resumed: bool  # the invite had been redeemed by an earlier, interrupted init


def kdf_params() -> KdfParams:
    """The Argon2id parameters for a new wrap: the defaults, or (test suite only) the cheapest."""
    if escape_hatch(WEAK_KDF_ENV):
        log.warning("%s=1: wrapping the vault key with weak test parameters", WEAK_KDF_ENV)
        return TEST_KDF_PARAMS
    return DEFAULT_KDF_PARAMS


def read_passphrase_file(path: str | os.PathLike[str]) -> str:
    """The passphrase in `path` (trailing newline removed); refused unless owner-only."""
    p = Path(path)
    try:
        raw = read_owner_only(p, "passphrase file", InputError, max_bytes=64 * 1024)
    except OSError as exc:
        raise InputError(
            f"cannot open the passphrase file {p} ({PASSPHRASE_ENV}): {exc.strerror}"
        ) from None
    text = raw.decode("utf-8", errors="strict").rstrip("\r\n")
    if not text:
        raise InputError(f"the passphrase file {p} is empty")
    register_secret(text)
    return text


class PassphraseSource:
    """`(vault_id, creating) -> passphrase`, trying the file, the secret store, then a prompt.

    `check()` raises `PassphraseUnavailable` when none of them can answer, without reading
    anything: `join_vault` calls it before redeeming the invite, so a missing passphrase never
    costs an invite.
    """

    def __init__(self, store: SecretStore | None, *, interactive: bool | None = None) -> None:
        self.store = store
        self.interactive = interactive

    def _tty(self) -> bool:
        return sys.stdin.isatty() if self.interactive is None else self.interactive

    def _stored(self, vault_id: str) -> str | None:
        if self.store is None:
            return None
        for name in (f"vault-passphrase-{vault_id}", "vault-passphrase"):
            try:
                value = self.store.get(name)
            except CompanionError as exc:
                log.debug("no passphrase from the secret store: %s", exc)
                return None
            if value:
                return value
        return None

    def check(self) -> None:
        if os.environ.get(PASSPHRASE_ENV) or self._tty():
            return
        if self.store is not None and self._stored("") is not None:
            return
        try:
            names = self.store.names() if self.store is not None else []
        except CompanionError:
            names = []
        if any(str(n).startswith("vault-passphrase-") for n in names):
            return
        raise PassphraseUnavailable(
            "no passphrase: set COMPANION_PASSPHRASE_FILE to an owner-only file holding it, "
            "store it with `companion secrets set vault-passphrase`, or run in a terminal"
        )

    @property
    def can_retry(self) -> bool:
        """A prompt can be asked again; a file or stored passphrase would answer the same."""
        return not os.environ.get(PASSPHRASE_ENV) and self._tty()

    def __call__(self, vault_id: str, creating: bool) -> str:
        env = os.environ.get(PASSPHRASE_ENV)
        if env:
            return read_passphrase_file(env)
        stored = self._stored(vault_id)
        if stored:
            return stored
        if not self._tty():
            self.check()
            raise PassphraseUnavailable("no passphrase")
        what = "a passphrase for the new vault" if creating else "the vault passphrase"
        value = click.prompt(
            f"Enter {what}", hide_input=True, confirmation_prompt=creating, err=True
        )
        register_secret(value)
        return str(value)


def passphrase_source(
    store: SecretStore | None, *, interactive: bool | None = None
) -> PassphraseSource:
    return PassphraseSource(store, interactive=interactive)


class KeyRefused(CompanionError):
    """This device will not create a vault key: the relay lists other devices but no key."""


def check_vault_root(vault_root: str | os.PathLike[str], paths: DevicePaths) -> Path:
    """The real path of a folder fit to become a vault copy, or `InputError` saying why not:
    the root of the file system, a whole home folder, or a folder holding this device's own
    config, data or state (its secrets would sync to every device) are refused."""
    root = Path(os.path.realpath(os.path.expanduser(vault_root)))
    given = os.fspath(vault_root)
    if root == Path(root.anchor):
        raise InputError(f"{given!r} is the root of the file system; give the vault's own folder")
    home = Path(os.path.realpath(Path.home()))
    if root == home:
        raise InputError(
            f"{given!r} is your whole home folder; give a folder for the vault, e.g. ~/Vault"
        )
    for own in (paths.config_dir, paths.data_dir, paths.state_dir):
        mine = Path(os.path.realpath(own))
        if mine == root or mine.is_relative_to(root):
            raise InputError(
                f"{given!r} holds this device's own folder {own} (its keys and secrets would "
                "sync to every device); give a folder outside it"
            )
    if root.exists() and not root.is_dir():
        raise InputError(f"{given!r} exists and is not a folder")
    return root


def check_join_request(
    paths: DevicePaths,
    vault_root: str | os.PathLike[str],
    *,
    relay_url: str,
    invite: str | None,
    device_name: str,
    kind: str | None,
    insecure_http: bool = False,
    rejoin: bool = False,
) -> Path:
    """Refuse a join whose arguments cannot work (`InputError`, `InvalidRelayUrl`,
    `InsecureRelayUrl`: exit status 2) and return the vault folder. With `rejoin`, the folder
    must be set up already (see `rejoin_vault`) and `relay_url`, when given, its relay.

    It reads no secret and touches no network: `companion init` calls it before it opens the
    secret store, so a typo is what the person hears about, not a missing keyring (or a
    keyring's unlock prompt); `join_vault` calls it first too.
    """
    if kind is not None and kind not in KINDS:
        raise InputError(f"--kind must be human or agent, not {kind!r}")
    problem = display_name_problem(device_name) if device_name or not rejoin else None
    if problem:
        raise InputError(problem)
    root = check_vault_root(vault_root, paths)
    if rejoin:
        if not DeviceState.exists(paths, root):
            raise InputError(
                f"{root} is not set up for sync here: nothing to join again; run "
                "`companion init` without --rejoin"
            )
        state = DeviceState.load(paths, root)
        if not invite:
            raise InputError("an invite code is needed (--invite): ask the relay's admin")
        if relay_url and relay_url.rstrip("/") != state.relay_url:
            raise InputError(
                f"{root} syncs through {state.relay_url}, not {relay_url}; leave --relay out"
            )
        return root
    if DeviceState.exists(paths, root):
        state = DeviceState.load(paths, root)
        if state.key_ready:
            raise InputError(
                f"{root} is already set up for sync (device {shown(state.device_name)!r} in "
                f"vault {state.vault_id} via {state.relay_url}); run `companion sync {root}`"
            )
    else:  # a new join (not a half-finished one resumed)
        if not invite:
            raise InputError("an invite code is needed (--invite): ask the relay's admin")
        if not relay_url:
            raise InputError("the relay URL is needed (--relay URL)")
        check_relay_url(relay_url, insecure_http)
    return root


def join_vault(
    paths: DevicePaths,
    store: SecretStore,
    vault_root: str | os.PathLike[str],
    *,
    relay_url: str,
    invite: str | None,
    device_name: str,
    kind: str | None,
    passphrase: Callable[[str, bool], str],
    ca_cert: str = "",
    kdf: KdfParams | None = None,
    client_factory: Callable[..., RelayClient] = RelayClient,
    recovery: VaultKey | None = None,
    insecure_http: bool = False,
) -> JoinResult:
    """Join (or create) the vault and store the token and key. See the module docstring.

    `kind` is what this device expects to be; the invite decides, and a different expectation
    is refused by the relay. With `recovery`, the vault key comes from a recovery key instead
    of the passphrase (which is then only asked for when the vault has no wrapped key yet).
    """
    root = check_join_request(
        paths, vault_root, relay_url=relay_url, invite=invite, device_name=device_name,
        kind=kind, insecure_http=insecure_http,
    )  # fmt: skip
    check = getattr(passphrase, "check", None)
    resumed = False
    if DeviceState.exists(paths, root):
        # a half-finished join saved by an older version (it stored the token first)
        state = DeviceState.load(paths, root)
        resumed = True
        token = state.load_token(store)
        client = client_factory(
            state.relay_url, token, state.vault_id, verify=state.verify,
            insecure_http=state.insecure_http,
        )  # fmt: skip
    else:
        assert invite and relay_url  # check_join_request
        if recovery is None and callable(check):
            check()
        client = client_factory(relay_url, verify=ca_cert or True, insecure_http=insecure_http)
        joined = client.join(invite.strip(), device_name, kind)
        token = joined.token
        register_secret(token)
        state = DeviceState(
            vault_root=str(root),
            relay_url=relay_url.rstrip("/"),
            vault_id=joined.vault_id,
            device_id=joined.device_id,
            device_name=device_name,
            kind=getattr(joined, "kind", None) or kind or "agent",
            ca_cert=ca_cert,
            insecure_http=insecure_http,
        )
        log.info("joined vault %s as device %s (%s)", state.vault_id, state.device_id, state.kind)
    try:
        try:
            key, created = _unlock(
                client, state, passphrase, kdf or kdf_params(), recovery=recovery
            )
        except BaseException as exc:
            if not resumed:
                _leave(client, state, exc)
            raise
    finally:
        client.close()
    root.mkdir(parents=True, exist_ok=True)
    state.store_token(store, token)
    state.store_key(store, key)
    _make_signing_key(store, state)
    state.save(paths)
    ensure_area_folders(root)  # folders do not sync: every copy gets the vault's layout
    write_marker(root, state.vault_id, state.device_id)  # the folder is this copy's vault
    return JoinResult(state, created, resumed)


def rejoin_vault(
    paths: DevicePaths,
    store: SecretStore,
    vault_root: str | os.PathLike[str],
    *,
    invite: str,
    device_name: str | None,
    kind: str | None,
    passphrase: Callable[[str, bool], str],
    client_factory: Callable[..., RelayClient] = RelayClient,
) -> JoinResult:
    """Join a folder already set up for sync again, as a new device of the same vault, when the
    secret store lost this device's relay token (a new keyring, a wiped secrets file): nothing
    else can bring a token back. The old device stays listed on the relay until its admin
    revokes it.

    Refused while the old token is still stored. The invite must be for the folder's vault (a
    wrong one is given back: the new device leaves at once). The vault key is the one still
    stored, or else the relay's wrapped key opened with the passphrase; either way it must
    have the fingerprint recorded at the first join. The index, and so the sync history of
    the folder, is kept.
    """
    root = Path(os.path.realpath(vault_root))
    old = DeviceState.load(paths, root)
    if store.get(old.token_name):
        raise InputError(
            f"{root} still has its relay token in {store.description}: nothing to join again; "
            f"if its key is missing, {old.unlock_hint()}"
        )
    _check_folder_before_rejoin(paths, root, old)  # before the invite is used up
    client = client_factory(
        old.relay_url, verify=old.verify, insecure_http=old.insecure_http
    )  # fmt: skip
    try:
        joined = client.join(invite.strip(), device_name or old.device_name, kind)
        register_secret(joined.token)
        state = DeviceState(
            vault_root=old.vault_root,
            relay_url=old.relay_url,
            vault_id=joined.vault_id,
            device_id=joined.device_id,
            device_name=device_name or old.device_name,
            kind=getattr(joined, "kind", None) or kind or old.kind,
            ca_cert=old.ca_cert,
            insecure_http=old.insecure_http,
        )
        try:
            if joined.vault_id != old.vault_id:
                raise InputError(
                    f"the invite is for vault {joined.vault_id}, and {root} syncs vault "
                    f"{old.vault_id}: ask for an invite to that vault (this one was given back)"
                )
            try:
                key = old.load_key(store)  # checks the recorded fingerprint
            except SecretMissing:
                try:
                    key = reopen_recorded_key(client, old, passphrase)
                except WrongPassphrase as exc:
                    raise WrongPassphrase(
                        f"{exc}. The new device left the vault again: ask for a new invite and "
                        f"run `companion init {root} --rejoin` with the right passphrase"
                    ) from None
        except BaseException as exc:
            _leave(client, state, exc)
            raise
    finally:
        client.close()
    state.store_token(store, joined.token)
    state.store_key(store, key)
    _make_signing_key(store, state)
    state.save(paths)
    write_marker(root, state.vault_id, state.device_id)  # the folder now names the new device
    log.info(
        "joined vault %s again as device %s (was %s)", state.vault_id, state.device_id,
        old.device_id,
    )  # fmt: skip
    return JoinResult(state, False, True)


def _check_folder_before_rejoin(paths: DevicePaths, root: Path, old: DeviceState) -> None:
    """The folder must still be the vault's (under the old device's marker, or the upgrade
    rule): a rejoin never marks an unmounted drive's mount point as the vault."""
    from companion.sync.state.device import sync_index_path
    from companion.sync.state.index import SyncIndex, SyncIndexError

    try:
        index: SyncIndex | None = SyncIndex(sync_index_path(paths, root), readonly=True)
    except SyncIndexError:
        index = None
    try:
        check_folder(
            root, old.vault_id, old.device_id, None if index is None else index.files, adopt=False
        )
    finally:
        if index is not None:
            index.close()


def _make_signing_key(store: SecretStore, state: DeviceState) -> None:
    """This device's signing key (docs/trust.md §1), made at join; its first sync announces
    it in the vault."""
    from companion.sync.state.trust import ensure_signing_key

    ensure_signing_key(store, state)


def remember_join(config: Any, state: DeviceState) -> None:
    """Make the joined copy this device's vault in the config: `[vault] path`, and the
    relay, device name and kind it joined with (never a secret). The desktop app's join and
    `companion init` both call it, so the tray app finds the vault either way."""
    config.set("vault", "path", state.vault_root)
    config.set("sync", "relay_url", state.relay_url)
    config.set("sync", "device_name", state.device_name)
    config.set("sync", "kind", state.kind)
    config.save()


def _leave(client: RelayClient, state: DeviceState, exc: BaseException) -> None:
    """The key did not unlock: revoke this device's own token, so it never keeps working."""
    try:
        client.leave()
        log.info("left vault %s: %s", state.vault_id, type(exc).__name__)
    except Exception as leave_exc:  # best effort: the admin can still revoke it
        log.warning(
            "could not revoke this device's token after a failed join (%s); ask the relay's "
            "admin to revoke device %s", leave_exc, state.device_id,
        )  # fmt: skip


KEY_WAIT_S = 20.0  # how long a joining device waits for a first device to set the key
KEY_POLL_S = 0.5


def _unlock(
    client: RelayClient,
    state: DeviceState,
    passphrase: Callable[[str, bool], str],
    params: KdfParams,
    *,
    recovery: VaultKey | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[VaultKey, bool]:
    vault_id = state.vault_id
    blob = client.get_key_blob()
    if blob is None:
        blob = _wait_if_others(client, state, clock, sleep)
    if blob is None:
        phrase = passphrase(vault_id, True)
        check_new_passphrase(phrase, context=(vault_id, state.device_name))
        key = recovery or VaultKey.generate()
        wrapped = wrap_vault_key(key, phrase, vault_id=vault_id, params=params)
        try:
            client.put_key_blob(wrapped, expected_absent=True)
            return key, recovery is None
        except ConflictError:  # another device created the key first: use theirs
            blob = client.get_key_blob()
            if blob is None:
                raise CompanionError("the relay lost the vault key it just refused") from None
    if recovery is not None:
        check_recovery_key(client, vault_id, recovery)
        return recovery, False
    try:
        return unwrap_with_passphrase(blob, passphrase, vault_id), False
    except WrongPassphrase as exc:
        raise WrongPassphrase(
            f"{exc}. This device left the vault again (its token is revoked): ask for a new "
            "invite and run `companion init` with the right passphrase"
        ) from None


def unwrap_with_passphrase(
    blob: bytes, passphrase: Callable[[str, bool], str], vault_id: str
) -> VaultKey:
    """The vault key in the relay's wrapped `blob`, opened with the passphrase `passphrase`
    gives (asked again, up to `MAX_PROMPTS` times, when it is a prompt). `WrongPassphrase`
    when it does not open."""
    last: WrongPassphrase | None = None
    retry = bool(getattr(passphrase, "can_retry", False))
    for _ in range(MAX_PROMPTS):
        phrase = passphrase(vault_id, False)
        try:
            return unwrap_vault_key(blob, phrase, vault_id=vault_id)
        except WrongPassphrase as exc:
            last = exc
            if not retry:
                break  # the same source would give the same answer
            click.echo("That passphrase does not unlock this vault.", err=True)
    assert last is not None
    raise last


def reopen_recorded_key(
    client: RelayClient, state: DeviceState, passphrase: Callable[[str, bool], str]
) -> VaultKey:
    """The vault key `state` joined with, opened again from the relay's wrapped key with the
    passphrase (`keys unlock`, `init --rejoin`). Never creates one: a relay with no wrapped key
    is an error, and a key without the fingerprint recorded at the join is refused."""
    blob = client.get_key_blob()
    if blob is None:
        raise CompanionError(
            f"the relay holds no wrapped key for vault {state.vault_id}; bring the key back "
            "with `companion keys import-recovery` and the recovery key"
        )
    key = unwrap_with_passphrase(blob, passphrase, state.vault_id)
    if state.key_fingerprint and key.fingerprint() != state.key_fingerprint:
        raise KeyRefused(
            f"the relay's wrapped key opens to another key (fingerprint {key.fingerprint()}) "
            f"than the one this device joined with ({state.key_fingerprint}); not stored"
        )
    return key


def _wait_if_others(
    client: RelayClient,
    state: DeviceState,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> bytes | None:
    """No key on the relay: fine for the vault's first device; with other devices listed, wait
    briefly for theirs, then refuse to create a second key (a relay hiding the real one would
    otherwise split the vault in two)."""
    others = [d for d in client.devices() if d.device_id != state.device_id and d.revoked is None]
    if not others:
        return None
    deadline = clock() + KEY_WAIT_S
    while clock() < deadline:
        sleep(KEY_POLL_S)
        blob = client.get_key_blob()
        if blob is not None:
            return blob
    names = ", ".join(shown(d.name) for d in others[:3])
    raise KeyRefused(
        f"the relay lists {len(others)} other device(s) in this vault ({names}) but no vault "
        "key: refusing to create a second key. Either the first device has not finished "
        "joining (try again in a minute with a new invite) or the relay is hiding the key; "
        "this device left the vault"
    )


def check_recovery_key(client: RelayClient, vault_id: str, key: VaultKey) -> None:
    """Raise `BadRecoveryKey` unless `key` opens this vault's records (when it has any)."""
    from companion.sync.remote.vault import RemoteVault

    page = client.changes_page(0, 0, limit=20)
    if not page.records:
        return  # nothing to check against: an empty vault loses nothing either way
    remote = RemoteVault(client, key, vault_id)
    for rec in page.records:
        try:
            remote.open(rec)
            return
        except TamperDetected:
            continue
    raise BadRecoveryKey(
        "that recovery key does not open this vault's data: it belongs to another vault"
    )
