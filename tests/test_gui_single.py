"""One tray app per user and COMPANION_HOME: a second start wakes the first and exits 0."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from companion.gui.single import SingleInstance, server_name
from companion.paths import device_paths


def test_names_differ_per_companion_home(tmp_path: Path) -> None:
    a = server_name(device_paths(tmp_path / "a"))
    b = server_name(device_paths(tmp_path / "b"))
    assert a != b and a == server_name(device_paths(tmp_path / "a"))
    assert "/" not in a and len(a) < 60


def test_second_instance_signals_the_first(qtbot, tmp_path: Path) -> None:
    name = server_name(device_paths(tmp_path))
    first = SingleInstance(name, tmp_path / "state" / "gui.lock")
    second = SingleInstance(name, tmp_path / "state" / "gui.lock")
    try:
        assert first.acquire() is True
        assert second.acquire() is False
        with qtbot.waitSignal(first.message, timeout=5000) as got:
            assert second.send("show") is True
        assert got.args == ["show"]
    finally:
        first.release()
    # once the first is gone, a new start takes over
    third = SingleInstance(name, tmp_path / "state" / "gui.lock")
    assert third.acquire() is True
    third.release()


def test_send_without_a_running_instance_fails_fast(tmp_path: Path) -> None:
    lonely = SingleInstance(server_name(device_paths(tmp_path)), tmp_path / "gui.lock")
    started = time.monotonic()
    assert lonely.send("show", timeout_ms=500) is False
    assert time.monotonic() - started < 2


def test_companion_with_no_subcommand_wakes_the_running_app(qtbot, tmp_path: Path) -> None:
    """`companion` started a second time (a real process) says "show" and exits 0."""
    home = Path(os.environ["COMPANION_HOME"])
    paths = device_paths(home)
    first = SingleInstance(server_name(paths), paths.state_dir / "gui.lock")
    assert first.acquire()
    messages: list[str] = []
    first.message.connect(messages.append)
    try:
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        proc = subprocess.Popen(
            [sys.executable, "-m", "companion"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        qtbot.waitUntil(lambda: messages == ["show"], timeout=30_000)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "already running" in out
    finally:
        first.release()
