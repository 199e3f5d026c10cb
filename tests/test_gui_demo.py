"""`companion demo` shows the morning in the real GUI when asked (offscreen Qt here)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_companion


def test_demo_morning_opens_the_review_window(companion_home: Path) -> None:
    res = run_companion("demo", "--gui", env={"QT_QPA_PLATFORM": "offscreen"}, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert "[notification] Dream of " in out  # the printed summary stays
    assert "review window shown" in out
    assert "Notification shown by: " in out and "Notification shown by: none" not in out
    assert "No window" not in out
    assert "Traceback" not in res.stderr
    assert not (companion_home / "data" / "demo").exists()


def test_demo_without_a_display_says_why(companion_home: Path) -> None:
    env = {"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":99"}
    res = run_companion("demo", env=env, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "(No window: QT_QPA_PLATFORM is offscreen;" in res.stdout
    assert "review window shown" not in res.stdout


def test_headless_and_gui_contradict(companion_home: Path) -> None:
    res = run_companion("demo", "--headless", "--gui")
    assert res.returncode == 2
    assert "contradict" in res.stderr
