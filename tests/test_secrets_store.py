"""Secret stores: the owner-only file (headless) and the OS keyring (a real Secret Service)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion.credentials.store import FileStore, validate_name
from companion.errors import CompanionError, InputError
from tests.conftest import run_companion
from tests.keyring_service import KeyringService, start_keyring_service


@pytest.fixture(scope="module")
def keyring_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeyringService]:
    """A private Secret Service (gnome-keyring on its own D-Bus); skips if not installed."""
    yield from start_keyring_service(tmp_path_factory)


VALUE = "s3cr3t-Zk8q2Lw9-canary"


def test_names_are_validated() -> None:
    assert validate_name("github-bot.v2_1") == "github-bot.v2_1"
    assert validate_name("keyring:openai") == "openai"
    for bad in ("", "a b", "x" * 65, "../etc", "name:with:colons", "ñ"):
        with pytest.raises(InputError):
            validate_name(bad)


def test_file_store_roundtrip_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "secrets.toml"
    store = FileStore(path)
    assert store.get("x") is None and store.names() == []
    store.set("github", VALUE)
    store.set("multi.line", "-----BEGIN KEY-----\nabc\n-----END KEY-----\n")
    assert store.get("github") == VALUE
    assert store.get("multi.line").endswith("KEY-----\n")
    assert store.names() == ["github", "multi.line"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert store.delete("github") is True and store.delete("github") is False
    assert store.names() == ["multi.line"]
    assert [p.name for p in path.parent.iterdir() if "tmp" in p.name] == []  # no temp left


def test_file_store_refuses_a_readable_file(tmp_path: Path) -> None:
    path = tmp_path / "secrets.toml"
    FileStore(path).set("a", VALUE)
    os.chmod(path, 0o644)
    with pytest.raises(CompanionError, match="chmod 600"):
        FileStore(path).get("a")
    os.chmod(path, 0o600)
    assert FileStore(path).get("a") == VALUE


def test_file_store_refuses_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    FileStore(real).set("a", VALUE)
    link = tmp_path / "secrets.toml"
    link.symlink_to(real)
    with pytest.raises(CompanionError):
        FileStore(link).get("a")


def test_file_store_errors_do_not_echo_the_content(tmp_path: Path) -> None:
    path = tmp_path / "secrets.toml"
    path.write_text(f'[secrets]\nbroken = "{VALUE}\n')
    os.chmod(path, 0o600)
    with pytest.raises(CompanionError) as exc:
        FileStore(path).get("broken")
    assert VALUE not in str(exc.value) and "not valid TOML" in str(exc.value)
    path.write_text("[secrets]\nnumber = 5\n")
    with pytest.raises(CompanionError, match="name = "):
        FileStore(path).names()


def test_file_store_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "secrets.toml"
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for i in range(15):
                FileStore(path).set(f"w{k}-{i}", f"value-{k}-{i}-xxxxxxxx")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(FileStore(path).names()) == 60


def test_empty_secret_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        FileStore(tmp_path / "s.toml").set("a", "")


@pytest.mark.parametrize(
    "backend", ["keyring.backends.null.Keyring", "keyring.backends.fail.Keyring"]
)
def test_insecure_keyrings_are_refused(backend: str) -> None:
    env = {"PYTHON_KEYRING_BACKEND": backend}
    r = run_companion("secrets", "list", env=env)
    assert r.returncode == 1
    assert "no secure keyring is available" in r.stderr
    assert 'backend = "file"' in r.stderr
    assert "Traceback" not in r.stderr


def test_file_backend_through_the_cli(companion_home: Path) -> None:
    (companion_home / "config").mkdir(parents=True)
    (companion_home / "config" / "config.toml").write_text('[secrets]\nbackend = "file"\n')
    r = run_companion("secrets", "set", "relay-token", input=VALUE + "\n")
    assert r.returncode == 0, r.stderr
    assert VALUE not in r.stdout + r.stderr
    assert run_companion("secrets", "get", "relay-token").stdout == VALUE + "\n"
    assert run_companion("secrets", "get", "keyring:relay-token", "-n").stdout == VALUE
    r = run_companion("secrets", "set", "relay-token", input="other-value-123\n")
    assert r.returncode == 1 and "--replace" in r.stderr
    assert run_companion("secrets", "list").stdout == "relay-token\n"
    assert run_companion("secrets", "delete", "relay-token").returncode == 0
    r = run_companion("secrets", "get", "relay-token")
    assert r.returncode == 1 and "no secret named" in r.stderr
    assert run_companion("secrets", "get", "bad name").returncode == 2


# ---------------------------------------------------------------------------------------------
# A real Secret Service (gnome-keyring on a private D-Bus); the product runs in subprocesses.
# ---------------------------------------------------------------------------------------------


def _py(code: str, ks: KeyringService, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(ks.env, COMPANION_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=Path(__file__).parents[1],
    )


def test_keyring_store_with_a_real_secret_service(
    keyring_service: KeyringService, tmp_path: Path
) -> None:
    code = f"""
from companion.credentials.store import KeyringStore
s = KeyringStore()
print(s.description)
s.set("api.token", {VALUE!r})
s.set("other", "second-value-123")
assert s.get("api.token") == {VALUE!r}
assert s.get("missing") is None
print(",".join(s.names()))
assert s.delete("other") is True and s.delete("other") is False
print(",".join(s.names()))
"""
    r = _py(code, keyring_service, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["keyring (SecretService)", "api.token,other", "api.token"]
    # independently of our code: the secret is in the Secret Service, under our service name
    from tests.prereqs import require

    require("secret-tool")
    look = subprocess.run(
        ["secret-tool", "lookup", "service", "vault-companion", "username", "api.token"],
        capture_output=True,
        text=True,
        env=keyring_service.env,
        timeout=30,
    )
    assert look.returncode == 0, look.stderr
    assert look.stdout == VALUE


def test_keyring_backend_through_the_cli(keyring_service: KeyringService, tmp_path: Path) -> None:
    env = dict(keyring_service.env, COMPANION_HOME=str(tmp_path / "home"))
    r = run_companion("secrets", "set", "cli-token", env=env, input=VALUE)
    assert r.returncode == 0, r.stderr
    assert "keyring (SecretService)" in r.stderr
    r = run_companion("secrets", "get", "cli-token", env=env)
    assert r.returncode == 0 and r.stdout == VALUE + "\n"
    assert "cli-token" in run_companion("secrets", "list", env=env).stdout.split()
    assert not (tmp_path / "home" / "config" / "secrets.toml").exists()
