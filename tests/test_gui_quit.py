"""Quit ends the desktop app, at once, whatever windows are open (#13, item 4).

On a real desktop with a tray (Xvfb + trayer here), with the main, settings and review
windows open, a real `companion` process is told to quit (the tray menu's Quit command,
sent through the single-instance socket) and must be gone within 2 s: measured with a
deadline on the process, never a sleep.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import wait_for
from tests.desktop_world import DesktopWorld

QUIT_WITHIN_S = 2.0


def test_quit_with_review_and_settings_open_exits_within_2_s(
    tmp_path: Path, x_desktop: dict[str, str]
) -> None:
    from PySide6.QtCore import QCoreApplication

    from companion.gui.single import SingleInstance, server_name

    with DesktopWorld(tmp_path / "world") as world:
        world.dream()
        world.laptop_cli("sync", str(world.laptop_vault))
        paths = world.laptop_paths()
        log = paths.log_file
        start = log.stat().st_size if log.exists() else 0

        def logged(text: str) -> bool:
            return log.exists() and text in log.read_text(encoding="utf-8")[start:]

        proc = subprocess.Popen(
            [sys.executable, "-m", "companion"],
            env=world.env(world.laptop_home, **x_desktop),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _ = QCoreApplication.instance() or QCoreApplication([])
            probe = SingleInstance(server_name(paths), paths.state_dir / "probe.lock")
            wait_for(lambda: proc.poll() is not None or logged("tray app started"), 60, "start")
            assert proc.poll() is None, proc.communicate()
            assert logged("tray available: True")
            for message in ("show", "review", "settings"):
                assert probe.send(message)
            wait_for(
                lambda: logged("review window opened") and logged("settings window opened"),
                30,
                "the windows",
            )
            asked = time.monotonic()
            assert probe.send("quit")
            proc.wait(timeout=QUIT_WITHIN_S)
            took = time.monotonic() - asked
        finally:
            if proc.poll() is None:
                proc.kill()
            _out, err = proc.communicate()
        assert proc.returncode == 0, err
        assert took < QUIT_WITHIN_S
        assert "Traceback" not in err
        assert not os.path.exists(paths.state_dir / "gui.lock") or logged("quitting")
