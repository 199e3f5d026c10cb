"""Moving a flagged secret from the desktop app: policy button, name dialog, atomic move."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from companion.config import NotifySettings, load_config
from companion.credentials.store import FileStore, validate_name
from companion.gui.app import CompanionApp
from companion.gui.bridge import IdleEngine
from companion.gui.events import SecretFound
from companion.gui.notify_policy import MOVE_SECRET, OPEN_NOTE, Action, notifications_for
from companion.gui.secretmove import SecretMover, suggest_name
from companion.paths import device_paths

SECRET = "ghp_" + "R7tQ2wX9mK4pL8vN3bZ6cY1dF5gH0jS2aE7u"
NOTE = "ops/deploy.md"
BEFORE = "# Deploy\n\nSteps:\r\n- push\n"
AFTER = "\n\nü trailing — bytes  \n"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "ops").mkdir(parents=True)
    (root / NOTE).write_bytes((BEFORE + f"token: {SECRET}" + AFTER).encode("utf-8"))
    return root


@pytest.fixture
def config(vault: Path):
    cfg = load_config(device_paths())
    cfg.set("vault", "path", str(vault))
    cfg.set("secrets", "backend", "file")
    cfg.set("dream", "local_fallback", False)
    cfg.save()
    return cfg


def secret_line(vault: Path) -> int:
    lines = (vault / NOTE).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if SECRET in text)


def test_policy_offers_the_move_for_a_secret_with_a_line() -> None:
    now = datetime(2025, 11, 28, 9, 0)
    [n] = notifications_for([SecretFound(NOTE, "GitHub Token", 5)], NotifySettings(), now)
    assert n.action == Action(OPEN_NOTE, NOTE)  # clicking still opens the note
    [(label, action)] = n.buttons
    assert label == "Move to keyring…"
    assert action == Action(MOVE_SECRET, NOTE, 5, "GitHub Token")
    [n] = notifications_for([SecretFound(NOTE, "GitHub Token")], NotifySettings(), now)
    assert n.buttons == ()  # without a line there is nothing precise to move


def test_suggested_name_is_valid() -> None:
    assert suggest_name("GitHub Token", "ops/deploy.md") == "github-token-deploy"
    long = suggest_name("x" * 80, "ops/Ünïcode note!.md")
    assert validate_name(long) == long and len(long) <= 64


def test_move_puts_the_secret_in_the_store_and_keeps_every_other_byte(
    qtbot, config, vault: Path
) -> None:
    asked: list[tuple[str, str]] = []

    def ask(_parent, where: str, suggestion: str) -> str:
        asked.append((where, suggestion))
        return "deploy-token"

    mover = SecretMover(config, lambda: vault, ask_name=ask)
    notices: list[tuple[str, str]] = []
    mover.notice.connect(lambda title, text: notices.append((title, text)))
    line = secret_line(vault)
    with qtbot.waitSignal(mover.moved, timeout=5000):
        assert mover.request(NOTE, line, "GitHub Token")
    assert asked == [(f"{NOTE}:{line}", "github-token-deploy")]
    data = (vault / NOTE).read_bytes()
    assert data == (BEFORE + "token: keyring:deploy-token" + AFTER).encode("utf-8")
    assert FileStore(config.paths.secrets_file).get("deploy-token") == SECRET
    assert notices == [
        (
            "Secret moved",
            "Moved to the keyring as deploy-token; the note now says keyring:deploy-token",
        )
    ]


def test_a_note_changed_since_the_scan_is_refused_and_left_alone(
    qtbot, config, vault: Path
) -> None:
    line = secret_line(vault)
    changed = (BEFORE + "token: (rotated, see the vault)" + AFTER).encode("utf-8")
    (vault / NOTE).write_bytes(changed)
    mover = SecretMover(config, lambda: vault, ask_name=lambda *_: "deploy-token")
    with qtbot.waitSignal(mover.notice, timeout=5000) as sig:
        assert mover.request(NOTE, line, "GitHub Token")
    title, text = sig.args
    assert title == "The secret was not moved"
    assert f"no secret found at {NOTE}:{line}" in text
    assert (vault / NOTE).read_bytes() == changed
    assert FileStore(config.paths.secrets_file).get("deploy-token") is None


def test_an_existing_name_with_another_value_is_refused(qtbot, config, vault: Path) -> None:
    store = FileStore(config.paths.secrets_file)
    store.set("deploy-token", "something-else")
    before = (vault / NOTE).read_bytes()
    mover = SecretMover(config, lambda: vault, ask_name=lambda *_: "deploy-token")
    with qtbot.waitSignal(mover.notice, timeout=5000) as sig:
        assert mover.request(NOTE, secret_line(vault), "GitHub Token")
    assert "already exists" in sig.args[1]
    assert (vault / NOTE).read_bytes() == before
    assert store.get("deploy-token") == "something-else"


def test_cancelling_the_name_dialog_moves_nothing(qtbot, config, vault: Path) -> None:
    before = (vault / NOTE).read_bytes()
    mover = SecretMover(config, lambda: vault, ask_name=lambda *_: None)
    assert not mover.request(NOTE, secret_line(vault), "GitHub Token")
    assert (vault / NOTE).read_bytes() == before


def test_the_app_runs_the_move_from_the_notification_and_the_tray_menu(
    qtbot, config, vault: Path
) -> None:
    app = CompanionApp(
        config,
        IdleEngine(vault),
        tray_available=True,
        use_desktop_notifications=False,
        dream_clock=False,
        ask_secret_name=lambda *_: "deploy-token",
    )
    try:
        assert app.tray is not None
        assert "Move secret to the keyring…" not in app.tray.action_texts()
        line = secret_line(vault)
        app.on_events([SecretFound(NOTE, "GitHub Token", line)])
        app.tray.rebuild_menu()
        assert "Move secret to the keyring…" in app.tray.action_texts()
        with qtbot.waitSignal(app.secrets.moved, timeout=5000):
            app.run_action(Action(MOVE_SECRET, NOTE, line, "GitHub Token"))
        assert b"keyring:deploy-token" in (vault / NOTE).read_bytes()
        assert app.actions.last_secret is None  # moved: the menu entry goes away
        app.tray.rebuild_menu()
        assert "Move secret to the keyring…" not in app.tray.action_texts()
    finally:
        app.timer.stop()
        app.secrets.runner.shutdown()
        app.worker.shutdown()
        app.notifications.timer.stop()
        app.tray.hide()
