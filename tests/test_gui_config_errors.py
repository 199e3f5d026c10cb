"""A broken config file in the desktop app: one clear message in the window and the log, the
bad field marked in Settings, and the local fallback dream refusing out loud (issue #13, 5)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from companion.config import load_config
from companion.gui.app import CompanionApp, create_engine
from companion.gui.sample import write_sample_vault
from companion.gui.status import TrayState, tray_state
from companion.paths import device_paths
from tests.conftest import wait_for


def broken_config(home: Path, vault: Path) -> Path:
    f = home / "config" / "config.toml"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(
        f'[vault]\npath = "{vault}"\n[dream]\ntime = "25:00"\n[notify]\nmorning_time = "00:00"\n',
        encoding="utf-8",
    )
    return f


def test_the_app_shows_a_broken_config_once_and_refuses_the_local_dream(
    qtbot, companion_home: Path, tmp_path: Path, app_log: pytest.LogCaptureFixture
) -> None:
    caplog = app_log
    vault = tmp_path / "vault"
    write_sample_vault(vault)
    broken_config(companion_home, vault)
    cfg = load_config(device_paths(), lenient=True)
    app = CompanionApp(
        cfg,
        create_engine(cfg),
        tray_available=True,
        use_desktop_notifications=False,
        now=lambda: datetime.now(UTC),
    )
    app.start()
    try:
        # in the window: the file, the key and the problem, in one message
        qtbot.waitUntil(lambda: app.main is not None and app.main.isVisible(), timeout=5000)
        main = app.main
        assert main is not None and app.tray is not None
        qtbot.waitUntil(lambda: "[dream] time" in main.notice.text(), timeout=5000)
        assert str(cfg.file) in main.notice.text()
        qtbot.waitUntil(lambda: app.worker.last_view is not None, timeout=5000)
        view = app.worker.last_view
        assert view is not None and tray_state(view.snapshot) is TrayState.ERROR
        assert "[dream] time" in app.tray.icon.toolTip()
        # several polls later: logged once, never a traceback
        for _ in range(3):
            with qtbot.waitSignal(app.worker.view_ready, timeout=5000):
                app.worker.refresh()
        problem_lines = [
            r for r in caplog.records if "[dream] time" in r.getMessage() and r.levelno >= 40
        ]
        assert len(problem_lines) == 1, [r.getMessage() for r in problem_lines]
        assert not any(r.exc_info for r in caplog.records)
        # the local fallback dream refuses, and says so (log + window), instead of going quiet
        decision = app.dreamclock.check("test")
        assert not decision.run and "configuration" in decision.reason
        assert any(
            "local dream" in r.getMessage() and "configuration" in r.getMessage()
            for r in caplog.records
            if r.levelno >= 40
        )
        # Settings shows the value as written, marked, and names the tab it is on
        settings = app.open_settings("sync")
        assert settings.dream_time.text() == "25:00"
        assert "dream.time" in settings.errors()
        assert "Schedule" in settings.status.text()
        settings.dream_time.setText("03:00")
        assert settings.save()
        assert cfg.problems == []
        qtbot.waitUntil(
            lambda: (
                app.worker.last_view is not None
                and tray_state(app.worker.last_view.snapshot) is not TrayState.ERROR
            ),
            timeout=5000,
        )
    finally:
        app.dreamclock.stop()
        app.quit()


def test_companion_with_a_broken_config_starts_and_logs_one_line(
    companion_home: Path, tmp_path: Path
) -> None:
    """The real entry point: no exit 2 before the window, no traceback, one log line."""
    vault = tmp_path / "vault"
    write_sample_vault(vault)
    f = broken_config(companion_home, vault)
    log_file = device_paths().log_file
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion"],
        env=dict(os.environ, QT_QPA_PLATFORM="offscreen"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(
            lambda: (
                proc.poll() is not None
                or (
                    log_file.exists() and "tray app started" in log_file.read_text(encoding="utf-8")
                )
            ),
            30,
            "the app to start",
        )
        assert proc.poll() is None, proc.communicate()
        text = log_file.read_text(encoding="utf-8")
        assert text.count(f"{f}: [dream] time") == 1, text
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert "Traceback" not in err and "Traceback" not in log_file.read_text(encoding="utf-8")
