"""`companion init`: join a vault on a relay and unlock (or create) its encryption key.

1. Redeem the one-time invite: the relay returns this device's bearer token, which goes into
   the secret store at once, and the device state is saved (``key_ready = False``).
2. If the relay holds no wrapped key yet, this device creates the vault key, wraps it with the
   passphrase (Argon2id) and uploads the wrapped key (compare-and-swap: if another device won
   the race, its key is unwrapped instead). Otherwise the wrapped key is fetched and unwrapped.
3. The vault key goes into the secret store; the state is saved with ``key_ready = True``.

A wrong passphrase stops at step 2 with the token kept, so running `init` again for the same
folder asks for the passphrase again without needing a new invite.

The passphrase comes from `COMPANION_PASSPHRASE_FILE` (a file only its owner can read: one
readable by group or others is refused), then from the secret store entry
``vault-passphrase-<vault id>`` or ``vault-passphrase``, then from a prompt when a terminal is
attached.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

from companion.crypto import (
    DEFAULT_KDF_PARAMS,
    KdfParams,
    VaultKey,
    WrongPassphrase,
    unwrap_vault_key,
    wrap_vault_key,
)
from companion.errors import CompanionError, InputError
from companion.logs import get_logger, register_secret
from companion.paths import DevicePaths
from companion.relay.client import RelayClient
from companion.relay.errors import ConflictError
from companion.secrets.fsutil import read_owner_only
from companion.secrets.store import SecretStore
from companion.sync.conflicts import KINDS
from companion.sync.device import DeviceState

log = get_logger("sync.join")

PASSPHRASE_ENV = "COMPANION_PASSPHRASE_FILE"
WEAK_KDF_ENV = "COMPANION_TEST_WEAK_KDF"
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
    if os.environ.get(WEAK_KDF_ENV) == "1":
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


def passphrase_source(
    store: SecretStore | None, *, interactive: bool | None = None
) -> Callable[[str, bool], str]:
    """A function `(vault_id, creating) -> passphrase` trying file, secret store, then prompt."""

    def get(vault_id: str, creating: bool) -> str:
        env = os.environ.get(PASSPHRASE_ENV)
        if env:
            return read_passphrase_file(env)
        if store is not None:
            for name in (f"vault-passphrase-{vault_id}", "vault-passphrase"):
                try:
                    value = store.get(name)
                except CompanionError as exc:
                    log.debug("no passphrase from the secret store: %s", exc)
                    break
                if value:
                    return value
        tty = sys.stdin.isatty() if interactive is None else interactive
        if not tty:
            raise PassphraseUnavailable(
                "no passphrase: set COMPANION_PASSPHRASE_FILE to an owner-only file holding it, "
                "store it with `companion secrets set vault-passphrase`, or run in a terminal"
            )
        what = "a passphrase for the new vault" if creating else "the vault passphrase"
        value = click.prompt(
            f"Enter {what}", hide_input=True, confirmation_prompt=creating, err=True
        )
        register_secret(value)
        return str(value)

    return get


def join_vault(
    paths: DevicePaths,
    store: SecretStore,
    vault_root: str | os.PathLike[str],
    *,
    relay_url: str,
    invite: str | None,
    device_name: str,
    kind: str,
    passphrase: Callable[[str, bool], str],
    ca_cert: str = "",
    kdf: KdfParams | None = None,
    client_factory: Callable[..., RelayClient] = RelayClient,
    insecure_http: bool = False,
) -> JoinResult:
    """Join (or create) the vault and store the token and key. See the module docstring."""
    if kind not in KINDS:
        raise InputError(f"--kind must be human or agent, not {kind!r}")
    root = Path(os.path.realpath(vault_root))
    if root.exists() and not root.is_dir():
        raise InputError(f"{os.fspath(vault_root)!r} exists and is not a folder")
    root.mkdir(parents=True, exist_ok=True)
    resumed = False
    if DeviceState.exists(paths, root):
        state = DeviceState.load(paths, root)
        if state.key_ready:
            raise InputError(
                f"{root} is already set up for sync (device {state.device_name!r} in vault "
                f"{state.vault_id} via {state.relay_url}); run `companion sync {root}`"
            )
        resumed = True
        client = client_factory(
            state.relay_url,
            state.load_token(store),
            state.vault_id,
            verify=state.verify,
            insecure_http=state.insecure_http,
        )
    else:
        if not invite:
            raise InputError("an invite code is needed (--invite): ask the relay's admin")
        if not relay_url:
            raise InputError("the relay URL is needed (--relay URL)")
        client = client_factory(relay_url, verify=ca_cert or True, insecure_http=insecure_http)
        joined = client.join(invite.strip(), device_name, kind)
        state = DeviceState(
            vault_root=str(root),
            relay_url=relay_url.rstrip("/"),
            vault_id=joined.vault_id,
            device_id=joined.device_id,
            device_name=device_name,
            kind=kind,
            ca_cert=ca_cert,
            insecure_http=insecure_http,
        )
        state.store_token(store, joined.token)
        state.save(paths)
        log.info("joined vault %s as device %s (%s)", state.vault_id, state.device_id, kind)
    try:
        key, created = _unlock(client, state.vault_id, passphrase, kdf or kdf_params())
    finally:
        client.close()
    state.store_key(store, key)
    state.save(paths)
    return JoinResult(state, created, resumed)


def _unlock(
    client: RelayClient,
    vault_id: str,
    passphrase: Callable[[str, bool], str],
    params: KdfParams,
) -> tuple[VaultKey, bool]:
    blob = client.get_key_blob()
    if blob is None:
        phrase = passphrase(vault_id, True)
        key = VaultKey.generate()
        wrapped = wrap_vault_key(key, phrase, vault_id=vault_id, params=params)
        try:
            client.put_key_blob(wrapped, expected_absent=True)
            return key, True
        except ConflictError:  # another device created the key first: use theirs
            blob = client.get_key_blob()
            if blob is None:
                raise CompanionError("the relay lost the vault key it just refused") from None
    last: WrongPassphrase | None = None
    for _ in range(MAX_PROMPTS):
        phrase = passphrase(vault_id, False)
        try:
            return unwrap_vault_key(blob, phrase, vault_id=vault_id), False
        except WrongPassphrase as exc:
            last = exc
            if os.environ.get(PASSPHRASE_ENV) or not sys.stdin.isatty():
                break  # the same source would give the same answer
            click.echo("That passphrase does not unlock this vault.", err=True)
    assert last is not None
    raise WrongPassphrase(
        f"{last}. This device has joined; run the same `companion init` again (no new invite "
        "is needed) with the right passphrase"
    )
