"""packaging/screenshots.py: it names (or installs) every Debian package it needs, and stops
its Xvfb and trayer whatever happens, even when the Qt side aborts (#13, item 8)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import XVFB_DISPLAYS, wait_for, worker_share

SCRIPT = Path(__file__).resolve().parents[1] / "packaging" / "screenshots.py"


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


def test_missing_packages_are_named_in_one_line(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    query = fake / "dpkg-query"
    query.write_text(  # a Debian where two of Qt's xcb libraries are missing
        '#!/bin/sh\nshift 3\nfor p in "$@"; do case $p in\n'
        '  libxcb-icccm4|libxcb-keysyms1) echo "$p not-installed";;\n'
        '  *) echo "$p installed";;\nesac; done\n'
    )
    query.chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    res = subprocess.run(
        [sys.executable, str(SCRIPT), "--no-install", "--out", str(tmp_path / "shots")],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode != 0
    assert res.stderr.strip().splitlines() == [
        "error: missing Debian packages: sudo apt-get install libxcb-icccm4 libxcb-keysyms1"
    ]
    assert not (tmp_path / "shots").exists()


def test_xvfb_and_trayer_are_stopped_when_the_qt_side_aborts(tmp_path: Path) -> None:
    mine = worker_share(XVFB_DISPLAYS)  # the other worker's x_desktop may take one of the rest
    free = [n for n in mine if not Path(f"/tmp/.X{n}-lock").exists()]
    if not free:
        pytest.fail(f"no free X display among {mine}")
    display = f":{free[-1]}"
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--no-install", "--display", display,
         "--out", str(tmp_path / "shots")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(
            lambda: (
                proc.poll() is not None or any("--shoot" in cmdline(c) for c in children(proc.pid))
            ),
            60,
            "the Qt child",
        )
        kids = children(proc.pid)
        names = {pid: cmdline(pid) for pid in kids}
        assert any("Xvfb" in n for n in names.values()), names
        assert any("trayer" in n for n in names.values()), names
        shoot = next(pid for pid, n in names.items() if "--shoot" in n)
        os.kill(shoot, signal.SIGABRT)  # what Qt does when it cannot go on
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    wait_for(lambda: not any(alive(pid) for pid in kids), 15, "Xvfb and trayer to stop")
    assert not Path(f"/tmp/.X{display[1:]}-lock").exists()
