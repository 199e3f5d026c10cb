"""The Keys and Sync tab hooks (`companion.gui.keys`) against a real relay on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from companion.config import load_config
from companion.credentials.store import FileStore
from companion.crypto import WrongPassphrase, import_recovery_key
from companion.errors import CompanionError, InputError
from companion.gui import i18n, keys
from companion.gui.app import CompanionApp, create_engine
from companion.paths import device_paths
from companion.sync.commands.join import TEST_KDF_PARAMS, join_vault
from companion.sync.state.device import DeviceState
from tests.conftest import wait_for
from tests.syncharness import PASSPHRASE, SyncCluster, cluster

NEW_PASSPHRASE = "a brand new passphrase, long enough"


@pytest.fixture(autouse=True)
def weak_kdf(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPANION_TEST_WEAK_KDF", "1")
    monkeypatch.delenv("COMPANION_PASSPHRASE_FILE", raising=False)


def stored_key(dev):
    state = DeviceState.load(dev.paths, dev.vault.resolve())
    return state.load_key(FileStore(dev.paths.secrets_file))


def join_new(c: SyncCluster, name: str, passphrase: str) -> None:
    home = c.new_home(name)
    paths = device_paths(home)
    join_vault(
        paths,
        FileStore(paths.secrets_file),
        c.base / "vaults" / name,
        relay_url=c.relay.url,
        invite=c.invite("human"),
        device_name=name,
        kind="human",
        passphrase=lambda _vid, _creating: passphrase,
        kdf=TEST_KDF_PARAMS,
    )


def app_for(device) -> CompanionApp:
    """The desktop app on `device`'s configuration, with its folder as the vault."""
    config = device.config
    config.set("vault", "path", str(device.vault))
    config.save()
    return CompanionApp(
        config,
        create_engine(config),
        tray_available=False,
        use_desktop_notifications=False,
        dream_clock=False,
    )


def reaches_another_device(c: SyncCluster, app: CompanionApp, device, rel: str, text: str):
    """A note written on `device` now reaches a new device: the app's new engine syncs."""
    device.write(rel, text)
    facade = app.worker.engine
    assert type(facade).__name__ == "SyncFacade"
    assert facade.ready(30)
    other = c.add_device("desk")
    wait_for(
        lambda: other.sync() is not None and other.read(rel) == text.encode(),
        what=f"{rel} on the other device",
        step=0.2,
    )
    return other


def store_answered(qtbot, window) -> None:
    """Wait for the settings window's answer from the secret store (asked off the GUI thread)."""
    qtbot.waitUntil(lambda: not window.key_store_pending(), timeout=30000)


def test_fingerprint_and_recovery_key_round_trip(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop = c.add_device("laptop")
        key = stored_key(laptop)
        fp = keys.fingerprint(laptop.paths, laptop.config, laptop.vault)
        assert fp == key.fingerprint()
        assert keys.is_sync_copy(laptop.paths, laptop.vault)
        assert not keys.is_sync_copy(laptop.paths, tmp_path)
        text = keys.export_recovery_key(laptop.paths, laptop.config, laptop.vault)
        assert len(text.split("-")) == 16
        assert import_recovery_key(text) == key


def test_change_passphrase_then_join_with_the_new_one(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop = c.add_device("laptop")
        before = stored_key(laptop)
        with pytest.raises(keys.WrongCurrentPassphrase) as err:
            keys.change_passphrase(
                laptop.paths, laptop.config, laptop.vault, "not the passphrase", NEW_PASSPHRASE
            )
        assert "current passphrase is wrong" in str(err.value)
        assert NEW_PASSPHRASE not in str(err.value)
        with pytest.raises(InputError):
            keys.change_passphrase(laptop.paths, laptop.config, laptop.vault, None, NEW_PASSPHRASE)
        keys.change_passphrase(
            laptop.paths, laptop.config, laptop.vault, PASSPHRASE, NEW_PASSPHRASE
        )
        with pytest.raises(WrongPassphrase):
            join_new(c, "old-pass", PASSPHRASE)
        join_new(c, "new-pass", NEW_PASSPHRASE)
        home = c.base / "devices" / "new-pass"
        paths = device_paths(home)
        state = DeviceState.load(paths, (c.base / "vaults" / "new-pass").resolve())
        assert state.load_key(FileStore(paths.secrets_file)) == before
        # the key did not change: the laptop still syncs with the new device
        laptop.write("a.md", "hello\n")
        laptop.sync()


def test_join_creates_device_state_and_saves_the_config(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        c.add_device("server", "agent")
        home = c.new_home("desk")
        paths = device_paths(home)
        config = load_config(paths)
        vault = tmp_path / "desk-vault"
        with pytest.raises(CompanionError):
            keys.join(
                paths, config, vault, c.relay.url, c.invite("human"), "desk", "human", "wrong one!"
            )
        assert not keys.is_sync_copy(paths, vault)  # nothing kept: a new invite is needed
        invite = c.invite("human")
        result = keys.join(paths, config, vault, c.relay.url, invite, "desk", "human", PASSPHRASE)
        assert not result.resumed and not result.created_vault
        assert keys.is_sync_copy(paths, vault)
        saved = load_config(paths)
        assert saved.get("vault", "path") == str(vault.resolve())
        assert saved.get("sync", "relay_url") == c.relay.url
        assert saved.get("sync", "device_name") == "desk"
        assert saved.get("sync", "kind") == "human"
        text = saved.file.read_text(encoding="utf-8")
        assert PASSPHRASE not in text and "wrong one!" not in text
        assert keys.fingerprint(paths, config, vault) == stored_key(c.devices[0]).fingerprint()


def test_join_creates_a_new_vault(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        home = c.new_home("first")
        paths = device_paths(home)
        config = load_config(paths)
        invite = c.relay.invite(new_vault=True, kind="human")
        result = keys.join(
            paths, config, tmp_path / "v", c.relay.url, invite, "first", "human", PASSPHRASE
        )
        assert result.created_vault
        assert DeviceState.exists(paths, (tmp_path / "v").resolve())


def test_the_settings_window_joins_then_offers_the_key_buttons(qtbot, tmp_path: Path) -> None:
    i18n.set_language("en")
    with cluster(tmp_path / "c") as c:
        server = c.add_device("server", "agent")
        paths = device_paths(c.new_home("desk"))
        config = load_config(paths)
        vault = tmp_path / "desk-vault"
        vault.mkdir()
        app = CompanionApp(
            config,
            create_engine(config),
            tray_available=False,
            use_desktop_notifications=False,
            dream_clock=False,
        )
        try:
            w = app.open_settings("sync")
            assert not w.export_button.isEnabled() and not w.pass_button.isEnabled()
            w.relay_url.setText(c.relay.url)
            w.vault_path.setText(str(vault))
            w.device_name.setText("desk")
            w.invite_code.setText(c.invite("human"))
            w.join_pass.setText("short")
            assert w.join_pass.echoMode() == w.join_pass.EchoMode.Password
            assert "At least 12" in w.join_pass_error.text() and not w.join_button.isEnabled()
            w.join_pass.setText(PASSPHRASE)
            assert w.join_pass_error.isHidden() and w.join_button.isEnabled()
            w.join_button.click()
            qtbot.waitUntil(
                lambda: app.settings is not None and app.settings is not w, timeout=30000
            )
            keys_tab = app.settings
            assert keys_tab.status.text() == "Joined. This vault now syncs."
            store_answered(qtbot, keys_tab)
            assert keys_tab.export_button.isEnabled()
            assert keys_tab.fingerprint.text() == stored_key(server).fingerprint()
            assert PASSPHRASE not in config.file.read_text(encoding="utf-8")
            assert type(app.worker.engine).__name__ == "SyncFacade"
            keys_tab.current_pass.setText("wrong passphrase!!")
            keys_tab.new_pass.setText(NEW_PASSPHRASE)
            keys_tab.confirm_pass.setText(NEW_PASSPHRASE)
            with qtbot.waitSignal(keys_tab.runner.call_failed, timeout=30000):
                keys_tab.pass_button.click()
            assert "current passphrase is wrong" in keys_tab.status.text()
        finally:
            app.shutdown()


def test_the_settings_window_stores_a_lost_key_again_with_the_passphrase(
    qtbot, tmp_path: Path
) -> None:
    """A keyring that lost the vault key: the notification opens the Keys tab, which offers to
    open the relay's wrapped key with the passphrase (as `companion keys unlock` does); a wrong
    passphrase changes nothing; the right one stores the key and the app syncs again at once."""
    i18n.set_language("en")
    with cluster(tmp_path / "c") as c:
        laptop = c.add_device("laptop")
        key = stored_key(laptop)
        state = DeviceState.load(laptop.paths, laptop.vault.resolve())
        assert FileStore(laptop.paths.secrets_file).delete(state.key_name)
        app = app_for(laptop)
        config = app.config
        try:
            w = app.open_settings("keys")
            store_answered(qtbot, w)
            assert w.unlock_box.isVisibleTo(w)
            assert "keys unlock" in w.fingerprint.text()  # why: the store lost the key
            assert not w.unlock_button.isEnabled()  # nothing typed yet
            assert w.unlock_pass.echoMode() == w.unlock_pass.EchoMode.Password
            w.unlock_pass.setText("not the passphrase at all")
            assert w.unlock_button.isEnabled()
            with qtbot.waitSignal(w.runner.call_failed, timeout=30000):
                w.unlock_button.click()
            assert "passphrase" in w.status.text().lower()
            assert "not the passphrase at all" not in w.status.text()
            assert w.unlock_pass.text() == "" and w.unlock_box.isVisibleTo(w)
            assert FileStore(laptop.paths.secrets_file).get(state.key_name) is None
            w.unlock_pass.setText(PASSPHRASE)
            with qtbot.waitSignal(w.runner.call_done, timeout=30000):
                w.unlock_button.click()
            assert w.status.text() == "The vault key is stored again. Syncing resumes."
            store_answered(qtbot, w)
            assert w.fingerprint.text() == key.fingerprint()
            assert not w.unlock_box.isVisibleTo(w)
            assert stored_key(laptop) == key
            assert PASSPHRASE not in config.file.read_text(encoding="utf-8")
            # the app does not wait for its next start attempt: the new engine syncs now
            reaches_another_device(c, app, laptop, "knowledge/after-unlock.md", "# Back\n")
        finally:
            app.shutdown()


def test_the_settings_window_joins_a_folder_again_when_the_store_lost_everything(
    qtbot, tmp_path: Path
) -> None:
    """A wiped keyring loses the relay token and the vault key: the Sync tab says so and offers
    the invite and passphrase fields again ("Join again", as `companion init --rejoin`). A wrong
    passphrase changes nothing; the right one makes the folder a new device of the same vault,
    with the same key and its index kept, and the app syncs again at once."""
    i18n.set_language("en")
    with cluster(tmp_path / "c") as c:
        laptop = c.add_device("laptop")
        laptop.write("knowledge/before.md", "# Before\n")
        laptop.sync()
        key = stored_key(laptop)
        old = DeviceState.load(laptop.paths, laptop.vault.resolve())
        store = FileStore(laptop.paths.secrets_file)
        assert store.delete(old.key_name) and store.delete(old.token_name)
        app = app_for(laptop)
        config = app.config
        try:
            w = app.open_settings("sync")
            store_answered(qtbot, w)
            assert w.joined.isVisibleTo(w) and "lost" in w.joined.text()
            assert w.invite_code.isVisibleTo(w) and w.join_pass.isVisibleTo(w)
            assert w.join_button.text() == "Join again"
            w.show_tab("keys")
            assert not w.unlock_box.isVisibleTo(w)  # the key cannot be fetched without a token
            assert "Join again" in w.fingerprint.text()  # the Keys tab points to the way back
            w.show_tab("sync")
            assert w.relay_url.isReadOnly() and w.relay_url.text() == c.relay.url
            w.invite_code.setText(c.invite("human"))
            w.join_pass.setText("not the passphrase at all")
            assert w.join_button.isEnabled()
            with qtbot.waitSignal(w.runner.call_failed, timeout=30000):
                w.join_button.click()
            assert "passphrase" in w.status.text().lower()
            assert DeviceState.load(laptop.paths, laptop.vault.resolve()) == old
            assert store.get(old.token_name) is None and store.get(old.key_name) is None
            w.invite_code.setText(c.invite("human"))
            w.join_pass.setText(PASSPHRASE)
            with qtbot.waitSignal(w.runner.call_done, timeout=30000):
                w.join_button.click()
            assert w.status.text() == "Joined again. This vault syncs again."
            store_answered(qtbot, w)
            new = DeviceState.load(laptop.paths, laptop.vault.resolve())
            assert new.vault_id == old.vault_id and new.device_id != old.device_id
            assert stored_key(laptop) == key
            assert "lost" not in w.joined.text() and not w.invite_code.isVisibleTo(w)
            assert PASSPHRASE not in config.file.read_text(encoding="utf-8")
            other = reaches_another_device(c, app, laptop, "knowledge/after-rejoin.md", "# Again\n")
            assert other.read("knowledge/before.md") == b"# Before\n"
        finally:
            app.shutdown()
