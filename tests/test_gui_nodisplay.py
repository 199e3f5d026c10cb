"""`companion` (the tray app) where there is no display: one clear line and exit 2, never Qt's
abort (SIGABRT, exit 134). `companion demo` says why it shows no window the same way (#13, 6)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from companion.gui.display import display_problem


def run_app(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    base.pop("QT_QPA_PLATFORM", None)
    base.update(env)
    return subprocess.run(
        [sys.executable, "-m", "companion"], env=base, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "env",
    [
        {},  # a server or an ssh session: no display at all
        {"DISPLAY": ":59"},  # a display nobody serves (a stale variable after ssh -X)
        {"QT_QPA_PLATFORM": "xcb"},
        {"WAYLAND_DISPLAY": "wayland-companion-test-none"},
    ],
)
def test_no_display_is_one_line_and_exit_2(companion_home: Path, env: dict[str, str]) -> None:
    res = run_app(env)
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert "display" in lines[0] and "companion watch" in lines[0]


def test_display_problem_rules(tmp_path: Path) -> None:
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}) is None
    assert "neither DISPLAY nor WAYLAND_DISPLAY" in (display_problem({}) or "")
    assert "no X server answers on :59" in (display_problem({"DISPLAY": ":59"}) or "")
    sock = tmp_path / "wayland-0"
    sock.touch()
    wayland = {"WAYLAND_DISPLAY": "wayland-0", "XDG_RUNTIME_DIR": str(tmp_path)}
    assert display_problem(wayland) is None
    assert display_problem({"DISPLAY": "remote.example:10"}) is None  # not checked: Qt decides
