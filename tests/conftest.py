"""Shared fixtures: every test runs with its own COMPANION_HOME so no test touches a real home."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Before pytest-qt creates its QApplication: no display is needed for any test.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def companion_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "companion-home"
    monkeypatch.setenv("COMPANION_HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hermes-home"))
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    return home


def run_companion(
    *args: str,
    env: dict[str, str] | None = None,
    input: str | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m companion ARGS` in a real subprocess (exit codes exactly as a user sees)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "companion", *args],
        capture_output=True,
        text=True,
        env=full_env,
        input=input,
        cwd=cwd,
        timeout=timeout,
    )


@pytest.fixture(autouse=True)
def _settle_qt_after_gui_tests(request: pytest.FixtureRequest):
    """After a GUI test: let pool threads finish and collect Qt wrappers now, on the GUI thread,
    so no queued signal or late deletion from this test reaches a later one."""
    yield
    if not request.module.__name__.split(".")[-1].startswith("test_gui_"):
        return
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent, QThreadPool

    QThreadPool.globalInstance().waitForDone(5000)
    app = QCoreApplication.instance()
    if app is not None:
        for _ in range(3):
            app.processEvents()
            app.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)  # deleteLater
    gc.collect()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest):
    """Run the test once on the SQLite store and once on PostgreSQL (a real server)."""
    from tests.relaybackends import Backend

    b = Backend(request.param)
    yield b
    if b.urls:
        from tests.pgcluster import release

        for url in b.urls:
            release(url)
