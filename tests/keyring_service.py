"""A real, throwaway Secret Service for tests: a private D-Bus session bus + gnome-keyring.

Usage (any test module):

    from tests.keyring_service import KeyringService, start_keyring_service

    @pytest.fixture(scope="module")
    def keyring_service(tmp_path_factory):
        yield from start_keyring_service(tmp_path_factory)

    def test_x(keyring_service: KeyringService):
        subprocess.run([...], env=keyring_service.env)   # the keyring library in that process
                                                          # finds the Secret Service backend

The keyring library picks its backend once per process, so code under test runs in
subprocesses with `keyring_service.env`. The fixture skips (with the reason) only when the
binaries are missing: Debian packages `dbus` (dbus-daemon) and `gnome-keyring`; CI installs them.
Both daemons are killed at the end, and their state lives in a temporary folder.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

UNLOCK_PASSWORD = b"companion-test-keyring"  # an empty password does not create the collection


@dataclass
class KeyringService:
    env: dict[str, str]
    home: Path


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            raise RuntimeError("dbus-daemon did not print its address")
        return proc.stdout.readline().decode().strip()
    finally:
        sel.close()


def _wait_for_secret_service(address: str, timeout: float = 10.0) -> None:
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    bus = DBusAddress(
        "/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus"
    )
    deadline = time.monotonic() + timeout
    with open_dbus_connection(address) as conn:
        while time.monotonic() < deadline:
            reply = conn.send_and_get_reply(
                new_method_call(bus, "NameHasOwner", "s", ("org.freedesktop.secrets",))
            )
            if reply.body[0]:
                return
            time.sleep(0.05)
    raise RuntimeError("gnome-keyring-daemon did not register org.freedesktop.secrets")


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


@contextmanager
def running_keyring(tmp: Path) -> Iterator[KeyringService]:
    """Start dbus-daemon and gnome-keyring-daemon (foreground, so we own their pids)."""
    home = tmp / "home"
    runtime = tmp / "run"
    home.mkdir(parents=True, exist_ok=True)
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        XDG_RUNTIME_DIR=str(runtime),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
    )
    for var in ("DBUS_SESSION_BUS_ADDRESS", "PYTHON_KEYRING_BACKEND", "GNOME_KEYRING_CONTROL"):
        env.pop(var, None)
    dbus = keyring = None
    try:
        dbus = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        address = _read_line(dbus, timeout=10)
        env["DBUS_SESSION_BUS_ADDRESS"] = address
        keyring = subprocess.Popen(
            ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert keyring.stdin is not None
        keyring.stdin.write(UNLOCK_PASSWORD)
        keyring.stdin.close()
        _wait_for_secret_service(address)
        yield KeyringService(env=env, home=home)
    finally:
        _stop(keyring)
        _stop(dbus)


def start_keyring_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeyringService]:
    """Body of a `keyring_service` fixture: skips if the binaries are missing, cleans up."""
    from tests.prereqs import require

    require("secret-service")
    with running_keyring(tmp_path_factory.mktemp("keyring")) as service:
        yield service
