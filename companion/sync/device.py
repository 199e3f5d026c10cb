"""Per-vault-copy device state: which vault, which device, which relay (and where its secrets are).

`companion init` writes one `device.json` per vault copy under the device data dir, next to the
sync index (``<data>/sync/<vault key>/``). It holds nothing secret: the relay token and the vault
key live in the secret store (OS keyring, or the owner-only secrets file on a headless server)
under the names `token_name` and `key_name`, and are registered with the log redactor as soon
as they are read, so they can never reach a log line.

The file is written atomically with mode 0600 inside a 0700 folder anyway: it names the relay
and the device, which is nobody else's business.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from companion.credentials.store import SecretStore
from companion.crypto.sizes import KEY_SIZE
from companion.errors import CompanionError, InputError
from companion.fileio import write_text_atomic
from companion.logs import register_secret
from companion.paths import DevicePaths
from companion.sync.index import index_path, vault_state_dir

if TYPE_CHECKING:  # the key's code (cryptography) loads when a key is, not with the state
    from companion.crypto import VaultKey

DEVICE_FILE = "device.json"
STATE_VERSION = 1


class NotInitialised(InputError):
    """The folder has not been set up for sync on this device (run `companion init`)."""


class SecretMissing(CompanionError):
    """The device state names a secret the store does not have (another keyring, wiped?)."""


class TokenMissing(SecretMissing):
    """The store lost this device's relay token: the folder must join the vault again."""


def vault_dir(paths: DevicePaths, vault_root: str | os.PathLike[str]) -> Path:
    """The engine's folder for one vault copy (index, device state, lock, partial downloads)."""
    return vault_state_dir(paths.data_dir, vault_root)


def status_file(paths: DevicePaths, vault_root: str | os.PathLike[str]) -> Path:
    """Where the last round's status is kept for `companion status` and the desktop app."""
    return paths.state_dir / "sync" / vault_dir(paths, vault_root).name / "status.json"


def sync_index_path(paths: DevicePaths, vault_root: str | os.PathLike[str]) -> Path:
    return index_path(paths.data_dir, vault_root)


@dataclass
class DeviceState:
    """What `init` learned: enough to reconnect without the invite or the passphrase."""

    vault_root: str
    relay_url: str
    vault_id: str
    device_id: str
    device_name: str
    kind: str
    key_ready: bool = False  # False between a successful join and the key being stored
    key_fingerprint: str = ""
    ca_cert: str = ""  # a CA bundle / self-signed certificate to trust for an https relay
    insecure_http: bool = False  # plain http:// to another host was allowed (--insecure-http)
    signing_key: str = ""  # this device's public signing key, base64url (docs/trust.md)
    created: float = field(default_factory=time.time)
    host: str = field(default_factory=platform.node)  # gethostname(), without `socket`
    version: int = STATE_VERSION

    # ------------------------------------------------------------ secret names

    @property
    def token_name(self) -> str:
        return f"relay-token-{self.device_id}"

    @property
    def key_name(self) -> str:
        return f"vault-key-{self.vault_id}"

    # ------------------------------------------------------------ persistence

    @staticmethod
    def file(paths: DevicePaths, vault_root: str | os.PathLike[str]) -> Path:
        return vault_dir(paths, vault_root) / DEVICE_FILE

    @classmethod
    def exists(cls, paths: DevicePaths, vault_root: str | os.PathLike[str]) -> bool:
        return cls.file(paths, vault_root).is_file()

    @classmethod
    def load(cls, paths: DevicePaths, vault_root: str | os.PathLike[str]) -> DeviceState:
        """The state of the vault copy at `vault_root`, or `NotInitialised`."""
        f = cls.file(paths, vault_root)
        try:
            raw: dict[str, Any] = json.loads(f.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise NotInitialised(
                f"{os.fspath(vault_root)!r} is not set up for sync on this device; run "
                "`companion init VAULT --relay URL --invite CODE --device-name NAME --kind human`"
            ) from None
        except (OSError, ValueError) as exc:
            raise CompanionError(f"cannot read the sync device state {f}: {exc}") from None
        known = {k: raw[k] for k in cls.__dataclass_fields__ if k in raw}
        try:
            state = cls(**known)
        except TypeError as exc:
            raise CompanionError(f"the sync device state {f} is incomplete: {exc}") from None
        if state.version > STATE_VERSION:
            raise CompanionError(f"{f} was written by a newer version of the companion; upgrade it")
        return state

    def save(self, paths: DevicePaths) -> Path:
        f = self.file(paths, self.vault_root)
        f.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_text_atomic(f, json.dumps(asdict(self), indent=2, sort_keys=True))
        return f

    # ------------------------------------------------------------ secrets

    def load_token(self, store: SecretStore) -> str:
        token = store.get(self.token_name)
        if not token:
            raise TokenMissing(
                f"this device's relay token ({self.token_name!r}) is not in {store.description}; "
                f"join again with a new invite: `companion init {self.vault_root} --rejoin "
                "--invite CODE`"
            )
        register_secret(token)
        return token

    def load_key(self, store: SecretStore) -> VaultKey:
        return self.key_loader(store)()

    def key_loader(self, store: SecretStore) -> Callable[[], VaultKey]:
        """Read and check the vault key now (a missing or malformed key is an error at once);
        build it when the returned function is first called, which loads `cryptography`: a
        round with nothing to seal or open never needs it."""
        if not self.key_ready:
            raise SecretMissing(
                "the vault key was never stored on this device (init stopped half-way); run "
                "`companion init` again for this folder to unlock it with the passphrase"
            )
        text = store.get(self.key_name)
        if not text:
            raise SecretMissing(
                f"the vault key ({self.key_name!r}) is not in {store.description}; "
                + self.unlock_hint()
            )
        register_secret(text)
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raw = b""
        if len(raw) != KEY_SIZE:
            raise SecretMissing(
                f"the stored vault key {self.key_name!r} is damaged; " + self.unlock_hint()
            )

        def build() -> VaultKey:
            from companion.crypto import VaultKey

            key = VaultKey.from_bytes(raw)
            if self.key_fingerprint and key.fingerprint() != self.key_fingerprint:
                raise SecretMissing(
                    f"the stored vault key {self.key_name!r} is not the one this device joined "
                    f"with (fingerprint {key.fingerprint()}, not {self.key_fingerprint}); "
                    + self.unlock_hint()
                )
            return key

        return build

    def unlock_hint(self) -> str:
        """What to run when the secret store lost this copy's key or holds a wrong one."""
        return (
            f"run `companion keys unlock {self.vault_root}` to store it again with the "
            "passphrase (or `companion keys import-recovery` with the recovery key)"
        )

    def store_key(self, store: SecretStore, key: VaultKey) -> None:
        text = key.to_bytes().hex()
        register_secret(text)
        store.set(self.key_name, text)
        self.key_fingerprint = key.fingerprint()
        self.key_ready = True

    def store_token(self, store: SecretStore, token: str) -> None:
        register_secret(token)
        store.set(self.token_name, token)

    @property
    def verify(self) -> bool | str:
        """What `RelayClient(verify=...)` needs: a CA file when one was given, else system CAs."""
        return self.ca_cert or True
