"""The dream notification on a real X screen with a tray (Xvfb + trayer), clicked (#39, 6).

With no notification service on the session bus the app falls back to the tray balloon, says
so in one log line (no traceback), and a mouse click on the balloon opens the review. With a
freedesktop notification daemon (dunst) the notification is the desktop's own, and the
daemon's click opens the review. Each round runs the app in its own process
(`tests.notify_probe`), since this process's Qt is offscreen; the screenshot of the review
window is kept next to the test's files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.notify_probe import start_private_bus

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bus(tmp_path: Path) -> Iterator[str]:
    proc, address = start_private_bus(tmp_path / "bus")
    try:
        yield address
    finally:
        proc.terminate()
        proc.wait(10)


def probe(env: dict[str, str], home: Path, shot: Path, *extra: str) -> dict[str, str]:
    full = dict(os.environ)
    full.update(env)
    full.update(COMPANION_HOME=str(home), PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "tests.notify_probe", str(shot), *extra],
        env=full,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    result: dict[str, str] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["stderr"] = proc.stderr
    return result


def log_lines(result: dict[str, str]) -> list[str]:
    return Path(result["log"]).read_text(encoding="utf-8").splitlines()


def test_without_a_notification_service_the_balloon_opens_the_review(
    x_desktop: dict[str, str], bus: str, tmp_path: Path
) -> None:
    shot = tmp_path / "review-from-balloon.png"
    env = {**x_desktop, "DBUS_SESSION_BUS_ADDRESS": bus}
    result = probe(env, tmp_path / "home", shot)
    assert result["backend"] == "tray"
    assert result["review"].endswith("2025-11-28.json") and result["changes"] == 4
    lines = log_lines(result)
    said = [line for line in lines if "desktop notifications unavailable" in line]
    assert len(said) == 1, lines
    assert "org.freedesktop.Notifications" in said[0]
    assert not any("Traceback" in line or "Notification failed" in line for line in lines)
    assert "Notification failed" not in result["stderr"]
    assert any("review window opened" in line for line in lines)
    assert shot.stat().st_size > 10_000


def test_with_a_notification_daemon_its_click_opens_the_review(
    x_desktop: dict[str, str], bus: str, tmp_path: Path
) -> None:
    from tests.prereqs import require

    require("notification-daemon")
    env = {**x_desktop, "DBUS_SESSION_BUS_ADDRESS": bus}
    daemon = subprocess.Popen(
        ["dunst"],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def answering() -> bool:
            probe_env = {**os.environ, **env}
            done = subprocess.run(["dunstctl", "count"], env=probe_env, capture_output=True)
            return daemon.poll() is not None or done.returncode == 0

        wait_for(answering, 20, "dunst on the session bus")
        assert daemon.poll() is None, "dunst stopped"
        shot = tmp_path / "review-from-desktop.png"
        result = probe(env, tmp_path / "home", shot, "--click-with-dunstctl")
    finally:
        daemon.terminate()
        daemon.wait(10)
    assert result["backend"] == "desktop"
    assert result["review"].endswith("2025-11-28.json") and result["changes"] == 4
    lines = log_lines(result)
    assert not any("unavailable" in line or "Traceback" in line for line in lines), lines
    assert any("review window opened" in line for line in lines)
    assert shot.stat().st_size > 10_000
