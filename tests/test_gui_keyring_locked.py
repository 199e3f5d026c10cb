"""A locked keyring is not a lost key. On a real Secret Service (gnome-keyring on a private
D-Bus) whose collection is locked, with no prompt that can unlock it (no display), the settings
window says the keyring is locked and asks the person to unlock it. It offers neither "Store
the key again" (for a store that lost the key: typing the passphrase would not help) nor "Join
again" (for a lost relay token). Unlocked, the same window shows the key's fingerprint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion.credentials.store import FileStore
from companion.sync.state.device import DeviceState
from tests.keyring_service import KeyringService, start_keyring_service
from tests.syncharness import cluster

REPO = Path(__file__).parents[1]

# Runs in its own process: the keyring library picks its backend once per process.
MOVE_TO_KEYRING = """
import json, sys
from companion.credentials.store import KeyringStore
store = KeyringStore()
for name, value in json.load(sys.stdin).items():
    store.set(name, value)
"""

WINDOW = """
import json
from PySide6.QtCore import QDeadlineTimer
from PySide6.QtWidgets import QApplication
from companion.config import load_config
from companion.gui import i18n
from companion.gui.app import settings_hooks
from companion.gui.settings import SettingsWindow
import secretstorage

app = QApplication([])
i18n.set_language("en")
config = load_config()


def shown():
    w = SettingsWindow(config, settings_hooks(config))
    w.show_tab("keys")  # where the keyring notification opens it
    deadline = QDeadlineTimer(30000)
    while w.key_store_pending() and not deadline.hasExpired():
        app.processEvents()  # the store's answer arrives as a queued signal
    return {
        "pending": w.key_store_pending(),
        "fingerprint": w.fingerprint.text(),
        "unlock_offered": w.unlock_box.isVisibleTo(w),
        "join_again": w.join_button.text() == "Join again",
    }


seen = {"unlocked": shown()}
connection = secretstorage.dbus_init()
secretstorage.get_default_collection(connection).lock()
seen["locked"] = shown()
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def keyring_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeyringService]:
    yield from start_keyring_service(tmp_path_factory)


def run(code: str, env: dict[str, str], stdin: str = "") -> str:
    r = subprocess.run(
        [sys.executable, "-c", code],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=REPO,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_a_locked_keyring_is_named_and_not_taken_for_a_lost_key(
    keyring_service: KeyringService, tmp_path: Path
) -> None:
    with cluster(tmp_path / "c") as c:
        laptop = c.add_device("laptop")
        state = DeviceState.load(laptop.paths, laptop.vault.resolve())
        files = FileStore(laptop.paths.secrets_file)
        secrets = {name: files.get(name) for name in (state.key_name, state.token_name)}
        fingerprint = state.load_key(files).fingerprint()
        env = dict(
            keyring_service.env,
            COMPANION_HOME=str(laptop.home),
            QT_QPA_PLATFORM="offscreen",
            PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        )
        env.pop("COMPANION_PASSPHRASE_FILE", None)
        run(MOVE_TO_KEYRING, env, stdin=json.dumps(secrets))
        for name in secrets:
            assert files.delete(name)  # only the keyring holds them now
        config = laptop.config
        config.set("secrets", "backend", "keyring")
        config.set("vault", "path", str(laptop.vault))
        config.save()

        seen = json.loads(run(WINDOW, env))

    unlocked, locked = seen["unlocked"], seen["locked"]
    assert unlocked == {
        "pending": False,
        "fingerprint": fingerprint,
        "unlock_offered": False,
        "join_again": False,
    }
    assert not locked["pending"]
    assert "keyring is locked" in locked["fingerprint"]
    assert "unlock" in locked["fingerprint"]
    assert not locked["unlock_offered"]  # the passphrase cannot open a locked keyring
    assert not locked["join_again"]  # nor is the token lost
    for value in secrets.values():
        assert value is not None and value not in json.dumps(seen)
