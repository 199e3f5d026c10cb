"""The settings window: inline validation gates Save; saved values reload from the file."""

from __future__ import annotations

import stat
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from companion.config import load_config
from companion.errors import CompanionError
from companion.gui.autostart import XdgAutostart
from companion.gui.settings import JoinRequest, SettingsHooks, SettingsWindow, write_private
from companion.paths import device_paths


@pytest.fixture
def xdg(tmp_path: Path) -> XdgAutostart:
    return XdgAutostart({"XDG_CONFIG_HOME": str(tmp_path / "xdg")})


@pytest.fixture
def window(qtbot, xdg: XdgAutostart):
    config = load_config(device_paths())
    w = SettingsWindow(config, autostart=xdg)
    qtbot.addWidget(w)
    return w


def visible_error(w: SettingsWindow, key: str) -> str:
    field = next(f for f in w.fields if f"{f.section}.{f.name}" == key)
    return field.error.text() if not field.error.isHidden() else ""


def test_defaults_are_valid(window) -> None:
    assert window.errors() == {}
    assert window.save_button.isEnabled()
    assert window.dream_time.text() == "02:00"
    assert window.timezone.currentText() == "Europe/Madrid"
    assert window.window_hours.value() == 48


@pytest.mark.parametrize(
    ("widget", "value", "key", "message"),
    [
        ("relay_url", "relay.example.org", "sync.relay_url", "https://"),
        ("relay_url", "ftp://relay.example.org", "sync.relay_url", "https://"),
        ("relay_url", "https://", "sync.relay_url", "https://"),
        ("dream_time", "25:00", "dream.time", "HH:MM"),
        ("dream_time", "2:5", "dream.time", "HH:MM"),
        ("morning_time", "08:60", "notify.morning_time", "HH:MM"),
        ("vault_path", "/definitely/not/here", "vault.path", "does not exist"),
        ("llm_url", "not a url", "llm.base_url", "https://"),
    ],
)
def test_bad_text_disables_save(window, widget: str, value: str, key: str, message: str) -> None:
    getattr(window, widget).setText(value)
    assert key in window.errors()
    assert message in visible_error(window, key)
    assert not window.save_button.isEnabled()
    assert window.save() is False
    getattr(window, widget).setText("")
    if key not in ("dream.time", "notify.morning_time"):
        assert window.save_button.isEnabled()


@pytest.mark.parametrize("hours", [23, 49, 1, 168])
def test_window_out_of_range_disables_save(window, hours: int) -> None:
    window.window_hours.setValue(hours)
    assert "Between 24 and 48 hours" in visible_error(window, "dream.window_hours")
    assert not window.save_button.isEnabled()
    window.window_hours.setValue(36)
    assert visible_error(window, "dream.window_hours") == ""
    assert window.save_button.isEnabled()


def test_unknown_timezone_disables_save(window) -> None:
    window.timezone.setCurrentText("Mars/Olympus")
    assert "time zone" in visible_error(window, "dream.timezone")
    assert not window.save_button.isEnabled()


def test_llm_distiller_needs_endpoint_and_model(window) -> None:
    window.distiller.setCurrentIndex(window.distiller.findData("llm"))
    assert {"llm.base_url", "llm.model"} <= set(window.errors())
    window.llm_url.setText("http://127.0.0.1:11434/v1")
    window.llm_model.setText("llama3.1:8b")
    assert window.errors() == {}


def test_good_values_are_saved_and_reload(window, tmp_path: Path, xdg: XdgAutostart) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    hermes = tmp_path / "hermes"
    hermes.mkdir()
    w = window
    w.relay_url.setText("https://relay.example.org")
    w.vault_path.setText(str(vault))
    w.device_name.setText("Laptop")
    w.paused.setChecked(True)
    w.dream_time.setText("03:30")
    w.timezone.setCurrentText("America/Mexico_City")
    w.window_hours.setValue(30)
    w.local_fallback.setChecked(False)
    w.grace.setValue(45)
    w.morning_time.setText("07:15")
    w.hermes_home.setText(str(hermes))
    w.memory_limit.setValue(3000)
    w.user_limit.setValue(1000)
    w.distiller.setCurrentIndex(w.distiller.findData("llm"))
    w.llm_url.setText("http://127.0.0.1:11434/v1")
    w.llm_model.setText("qwen2.5:7b")
    w.language.setCurrentIndex(w.language.findData("es"))
    w.start_at_login.setChecked(True)
    w.ignore_rules.setPlainText("drafts/\n*.tmp")
    assert w.errors() == {}
    assert w.save() is True
    assert w.status.text() == "Saved."

    again = load_config(device_paths())
    got = {
        (s, k): again.get(s, k)
        for s, k in [
            ("sync", "relay_url"),
            ("vault", "path"),
            ("sync", "device_name"),
            ("sync", "paused"),
            ("dream", "time"),
            ("dream", "timezone"),
            ("dream", "window_hours"),
            ("dream", "local_fallback"),
            ("dream", "grace_minutes"),
            ("notify", "morning_time"),
            ("memory", "hermes_home"),
            ("memory", "memory_char_limit"),
            ("memory", "user_char_limit"),
            ("dream", "distiller"),
            ("llm", "base_url"),
            ("llm", "model"),
            ("gui", "language"),
            ("gui", "start_at_login"),
        ]
    }
    assert got == {
        ("sync", "relay_url"): "https://relay.example.org",
        ("vault", "path"): str(vault),
        ("sync", "device_name"): "Laptop",
        ("sync", "paused"): True,
        ("dream", "time"): "03:30",
        ("dream", "timezone"): "America/Mexico_City",
        ("dream", "window_hours"): 30,
        ("dream", "local_fallback"): False,
        ("dream", "grace_minutes"): 45,
        ("notify", "morning_time"): "07:15",
        ("memory", "hermes_home"): str(hermes),
        ("memory", "memory_char_limit"): 3000,
        ("memory", "user_char_limit"): 1000,
        ("dream", "distiller"): "llm",
        ("llm", "base_url"): "http://127.0.0.1:11434/v1",
        ("llm", "model"): "qwen2.5:7b",
        ("gui", "language"): "es",
        ("gui", "start_at_login"): True,
    }
    assert (vault / ".companionignore").read_text(encoding="utf-8") == "drafts/\n*.tmp\n"
    assert xdg.is_enabled()
    # a fresh window shows what was saved
    w2 = SettingsWindow(again, autostart=xdg)
    assert w2.window_hours.value() == 30 and w2.dream_time.text() == "03:30"
    assert w2.ignore_rules.toPlainText() == "drafts/\n*.tmp\n"
    w2.start_at_login.setChecked(False)
    assert w2.save()
    assert not xdg.is_enabled()
    w2.deleteLater()


def test_secrets_never_reach_the_config(window, qtbot, tmp_path: Path) -> None:
    calls = []
    config = load_config(device_paths())
    hooks = SettingsHooks(set_passphrase=lambda cur, new: calls.append((cur, new)))
    w = SettingsWindow(config, hooks)
    qtbot.addWidget(w)
    w.new_pass.setText("correct horse battery")
    w.confirm_pass.setText("correct horse battery!")
    assert "differ" in w.pass_error.text() and not w.pass_button.isEnabled()
    w.confirm_pass.setText("correct horse battery")
    assert w.pass_button.isEnabled()
    with qtbot.waitSignal(w.runner.call_done, timeout=5000):
        w.pass_button.click()
    assert calls == [(None, "correct horse battery")]
    assert w.new_pass.text() == ""
    assert w.save()
    assert "horse" not in config.file.read_text(encoding="utf-8")


def test_engine_buttons_wait_for_the_engine(window) -> None:
    assert not window.join_button.isEnabled()
    assert not window.export_button.isEnabled()
    assert not window.pass_button.isEnabled()
    assert "sync engine" in window.join_button.toolTip()


def test_join_calls_the_hook_off_the_gui_thread(qtbot, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    got: list[JoinRequest] = []
    config = load_config(device_paths())
    w = SettingsWindow(config, SettingsHooks(join=got.append))
    qtbot.addWidget(w)
    assert not w.join_button.isEnabled()
    w.relay_url.setText("https://relay.example.org")
    w.vault_path.setText(str(vault))
    w.device_name.setText("Laptop")
    w.invite_code.setText("ABCD-1234")
    assert w.join_button.isEnabled()
    with qtbot.waitSignal(w.runner.call_done, timeout=5000):
        w.join_button.click()
    assert got == [JoinRequest(vault, "https://relay.example.org", "ABCD-1234", "Laptop", "human")]
    assert w.status.text() == "Joined. This vault now syncs."


def test_bad_ignore_rule_disables_save(window, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    window.vault_path.setText(str(vault))
    window.ignore_rules.setPlainText("ok/\n!\n")
    assert "Line 2" in window.ignore_error.text()
    assert not window.save_button.isEnabled()


def test_show_tab(window) -> None:
    window.show_tab("schedule")
    assert window.tabs.currentIndex() == 2
    assert [window.tabs.tabText(i) for i in range(5)] == [
        "Sync",
        "Keys",
        "Schedule",
        "Memory",
        "Advanced",
    ]


def test_recovery_key_file_is_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "key.txt"
    write_private(path, "WORD WORD\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_secret_store_is_asked_off_the_gui_thread(qtbot, tmp_path: Path) -> None:
    """A locked keyring answers only once the person types its password into the keyring's own
    prompt; until then the settings window must open and stay usable. The prompt is the one
    boundary no test can answer, so the store here is hooks that wait for an event (named
    stand-in). The window asks once the folder is known, drops an answer for a folder no longer
    typed, and shows the answer for the one that is."""
    joined_folder, other_folder = tmp_path / "joined", tmp_path / "other"
    joined = SimpleNamespace(
        relay_url="https://relay.example.org", device_name="laptop", kind="human", vault_id="v1"
    )
    answered = threading.Event()
    asked: list[tuple[str, str]] = []

    def token_lost(folder: str) -> bool:
        asked.append(("token", threading.current_thread().name))
        assert answered.wait(5), "the store was asked on the GUI thread"
        return folder == str(joined_folder)

    def fingerprint() -> str:
        asked.append(("key", threading.current_thread().name))
        assert answered.wait(5), "the store was asked on the GUI thread"
        return "ab12 cd34"

    config = load_config(device_paths())
    config.values["vault"]["path"] = str(joined_folder)
    hooks = SettingsHooks(
        sync_state=lambda folder: joined if folder == str(joined_folder) else None,
        token_lost=token_lost,
        fingerprint=fingerprint,
        unlock_key=lambda passphrase: "ab12 cd34",
    )
    w = SettingsWindow(config, hooks)  # opens while the store has not answered
    qtbot.addWidget(w)
    assert not answered.is_set() and w.key_store_pending()
    assert w.fingerprint.text() == "Asking the keyring…"
    w.vault_path.setText(str(other_folder))  # typing goes on meanwhile
    w.vault_path.setText(str(joined_folder))
    w.vault_path.setText(str(other_folder))
    answered.set()
    qtbot.waitUntil(lambda: not w.key_store_pending(), timeout=10000)
    assert all(thread != threading.main_thread().name for _, thread in asked)
    assert w.join_button.text() == "Join"  # the last folder typed is not a lost sync copy
    assert w.fingerprint.text() == "ab12 cd34"
    w.vault_path.setText(str(joined_folder))
    qtbot.waitUntil(lambda: not w.key_store_pending(), timeout=10000)
    assert w.join_button.text() == "Join again"  # this one lost its token
    assert w.fingerprint.text().startswith("ab12 cd34")


def test_a_refused_store_is_asked_again_when_the_window_comes_back(qtbot) -> None:
    """A locked keyring, then the person unlocks it elsewhere and comes back to the window:
    the Keys tab asks again instead of keeping the stale "locked". An answered store is not
    asked again on every activation (a locked one may show its prompt each time)."""
    answers: list[str | Exception] = [CompanionError("the keyring is locked"), "ab12 cd34"]

    def fingerprint() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    config = load_config(device_paths())
    w = SettingsWindow(config, SettingsHooks(fingerprint=fingerprint, unlock_key=lambda _p: ""))
    qtbot.addWidget(w)
    w.show_tab("keys")
    qtbot.waitUntil(lambda: not w.key_store_pending(), timeout=10000)
    assert w.fingerprint.text() == "the keyring is locked"
    assert not w.unlock_box.isVisibleTo(w)  # a locked keyring is not a lost key
    QApplication.sendEvent(w, QEvent(QEvent.Type.WindowActivate))
    qtbot.waitUntil(lambda: not w.key_store_pending(), timeout=10000)
    assert w.fingerprint.text() == "ab12 cd34" and answers == []
    QApplication.sendEvent(w, QEvent(QEvent.Type.WindowActivate))
    assert not w.key_store_pending()  # answered: not asked again
