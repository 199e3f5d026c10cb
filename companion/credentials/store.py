"""Where secrets live: the OS keyring (desktop) or an owner-only TOML file (headless server).

Both backends share one small interface (`get`, `set`, `delete`, `names`), so the secret guard,
device tokens and the vault key use the same code on a laptop and on a server. The choice is the
config key `[secrets] backend` ("keyring" by default, "file" on a headless server).

The keyring backend refuses keyrings that are not secure (keyring's fail/null backends, plaintext
or "encrypted file" backends from keyrings.alt): only Secret Service (GNOME Keyring, KeePassXC),
KWallet, the macOS Keychain and the Windows Credential Locker are accepted. The file backend
refuses a file that group or others can read, and writes it atomically with mode 0600.

Every value that passes through a store is registered with the log redactor, so it cannot reach
a log line even by accident.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from companion.credentials.files import read_owner_only
from companion.errors import CompanionError, InputError
from companion.fileio import write_atomic
from companion.logs import get_logger, register_secret

if TYPE_CHECKING:
    from companion.config import Config

SERVICE = "vault-companion"
NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
REFERENCE_PREFIX = "keyring:"
# Our own bookkeeping entry in the keyring: the list of names (keyrings cannot list entries).
# The colon makes it impossible to clash with a valid secret name.
_INDEX_ENTRY = "companion:index"
_SECURE_BACKENDS = {
    "keyring.backends.SecretService.Keyring",
    "keyring.backends.libsecret.Keyring",
    "keyring.backends.kwallet.DBusKeyring",
    "keyring.backends.macOS.Keyring",
    "keyring.backends.Windows.WinVaultKeyring",
}
NO_KEYRING_HINT = (
    'on a headless server set `backend = "file"` in the [secrets] section of the config '
    "(an owner-only file), or start a Secret Service such as gnome-keyring"
)

log = get_logger("credentials.store")


def validate_name(name: str) -> str:
    """A secret name: 1-64 characters from letters, digits, `_`, `.` and `-`."""
    if name.startswith(REFERENCE_PREFIX):
        name = name[len(REFERENCE_PREFIX) :]
    if not NAME_RE.match(name):
        raise InputError(f"invalid secret name {name!r}: use 1-64 letters, digits, '_', '.' or '-'")
    return name


class SecretStore(Protocol):
    """What every backend offers."""

    description: str

    def get(self, name: str) -> str | None: ...
    def set(self, name: str, value: str) -> None: ...
    def delete(self, name: str) -> bool: ...
    def names(self) -> list[str]: ...


# ----------------------------------------------------------------------------------------------
# OS keyring
# ----------------------------------------------------------------------------------------------


def _backend_id(backend: Any) -> str:
    cls = type(backend)
    return f"{cls.__module__}.{cls.__qualname__}"


def _is_secure(backend: Any) -> bool:
    return any(
        f"{c.__module__}.{c.__qualname__}" in _SECURE_BACKENDS for c in type(backend).__mro__
    )


def secure_backend() -> Any:
    """The OS keyring backend, or a clear error when only an insecure one is available."""
    try:
        import keyring
        from keyring.backends import chainer
    except ImportError as exc:  # pragma: no cover - keyring is a dependency
        raise CompanionError(
            f"the keyring package is not installed ({exc}); {NO_KEYRING_HINT}"
        ) from None
    current = keyring.get_keyring()
    candidates = (
        list(current.backends) if isinstance(current, chainer.ChainerBackend) else [current]
    )
    for backend in candidates:
        if _is_secure(backend):
            return backend
    found = ", ".join(_backend_id(b) for b in candidates) or "none"
    raise CompanionError(f"no secure keyring is available (found: {found}); {NO_KEYRING_HINT}")


class KeyringStore:
    """Secrets in the OS keyring under the service name "vault-companion"."""

    def __init__(self, service: str = SERVICE, backend: Any = None) -> None:
        self.service = service
        self._backend = backend if backend is not None else secure_backend()
        self.description = f"keyring ({type(self._backend).__module__.split('.')[-1]})"

    @contextlib.contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        from keyring.errors import KeyringError, KeyringLocked

        try:
            yield
        except KeyringLocked:  # its unlock prompt was refused or could not be shown
            raise CompanionError(
                f"the keyring is locked and could not {action}: unlock it (log in to the "
                "desktop again, or open its keyring manager such as Seahorse) and try again"
            ) from None
        except KeyringError as exc:
            raise CompanionError(
                f"the keyring could not {action}: {exc}; {NO_KEYRING_HINT}"
            ) from None
        except Exception as exc:  # D-Bus errors from secretstorage/jeepney, locked collections
            raise CompanionError(
                f"the keyring could not {action} ({type(exc).__name__}: {exc}); {NO_KEYRING_HINT}"
            ) from None

    def get(self, name: str) -> str | None:
        name = validate_name(name)
        with self._errors(f"read {name!r}"):
            value = self._backend.get_password(self.service, name)
        register_secret(value)
        return value

    def set(self, name: str, value: str) -> None:
        name = validate_name(name)
        if not value:
            raise InputError("refusing to store an empty secret")
        register_secret(value)
        with self._errors(f"store {name!r}"):
            self._backend.set_password(self.service, name, value)
        self._update_index(add=name)
        log.info("stored secret %r in the keyring", name)

    def delete(self, name: str) -> bool:
        name = validate_name(name)
        from keyring.errors import PasswordDeleteError

        with self._errors(f"delete {name!r}"):
            try:
                self._backend.delete_password(self.service, name)
                existed = True
            except PasswordDeleteError:  # no such entry
                existed = False
        self._update_index(remove=name)
        if existed:
            log.info("deleted secret %r from the keyring", name)
        return existed

    def names(self) -> list[str]:
        with self._errors("list its entries"):
            raw = self._backend.get_password(self.service, _INDEX_ENTRY)
        try:
            names = json.loads(raw) if raw else []
        except ValueError:
            names = []
        return sorted(n for n in names if isinstance(n, str) and NAME_RE.match(n))

    def _update_index(self, add: str | None = None, remove: str | None = None) -> None:
        names = set(self.names())
        if add:
            names.add(add)
        if remove:
            names.discard(remove)
        with self._errors("update its index of names"):
            self._backend.set_password(self.service, _INDEX_ENTRY, json.dumps(sorted(names)))


# ----------------------------------------------------------------------------------------------
# Owner-only file (headless servers)
# ----------------------------------------------------------------------------------------------

_HEADER = (
    "# Vault Companion secrets: owner-only (mode 0600). Managed by `companion secrets`;\n"
    "# never sync, commit or share this file.\n"
)


class FileStore:
    """Secrets in a TOML file (`[secrets] name = "value"`), mode 0600, written atomically."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.description = f"file {self.path}"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise read-modify-write between processes (POSIX advisory lock)."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            import fcntl
        except ImportError:  # Windows: single-writer assumption
            yield
            return
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _load(self) -> dict[str, str]:
        try:
            data = read_owner_only(self.path, "secrets file")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise CompanionError(
                f"cannot open the secrets file {self.path}: {exc.strerror}"
            ) from None
        try:
            doc = tomllib.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            # the decoder's message has a position, never the file's content
            raise CompanionError(f"the secrets file {self.path} is not valid TOML: {exc}") from None
        table = doc.get("secrets", {})
        if not isinstance(table, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in table.items()
        ):
            raise CompanionError(
                f'the secrets file {self.path} must hold a [secrets] table of name = "value"'
            )
        for v in table.values():
            register_secret(v)
        return dict(table)

    def _save(self, table: dict[str, str]) -> None:
        import tomlkit  # writing: `init` and `secrets set`, not every command

        body = tomlkit.dumps({"secrets": dict(sorted(table.items()))})
        write_atomic(self.path, (_HEADER + body).encode("utf-8"), mode=0o600)

    def get(self, name: str) -> str | None:
        return self._load().get(validate_name(name))

    def set(self, name: str, value: str) -> None:
        name = validate_name(name)
        if not value:
            raise InputError("refusing to store an empty secret")
        register_secret(value)
        with self._locked():
            table = self._load()
            table[name] = value
            self._save(table)
        log.info("stored secret %r in %s", name, self.path)

    def delete(self, name: str) -> bool:
        name = validate_name(name)
        with self._locked():
            table = self._load()
            if name not in table:
                return False
            del table[name]
            self._save(table)
        log.info("deleted secret %r from %s", name, self.path)
        return True

    def names(self) -> list[str]:
        return sorted(self._load())


def open_store(config: Config) -> SecretStore:
    """The store the configuration asks for (`[secrets] backend`)."""
    backend = config.settings.secrets.backend
    if backend == "file":
        return FileStore(config.paths.secrets_file)
    return KeyringStore()


def resolve_reference(text: str, store: SecretStore) -> str | None:
    """`keyring:NAME` (or a bare NAME) -> the secret, None when the store has no such name."""
    return store.get(validate_name(text.strip()))
