"""Shared fixtures: every test runs with its own COMPANION_HOME so no test touches a real home."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

# Before pytest-qt creates its QApplication: no display is needed for any test.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


# The slow tier, by module: crash and fuzz runs, PostgreSQL, property soaks, the generated
# worlds, real desktops, Hermes's and the plugin's own code in subprocesses, the benches' smoke
# runs. One home for the list; `pytest -m "not slow"` leaves them out (CONTRIBUTING.md), the
# default run keeps them.
SLOW_MODULES = frozenset(
    {
        "test_sync_crash", "test_sync_props", "test_relay_fuzz", "test_relay_fuzz_pg",
        "test_relay_pg", "test_relay_transfer", "test_dream_quality", "test_dream_worlds",
        "test_gui_e2e", "test_gui_demo", "test_gui_notify_desktop", "test_packaging_screenshots",
        "test_plugin_interop", "test_review_phone", "test_scenarios", "test_interop_hermes_dream",
        "test_interop_hermes_memory", "test_bench_quick",
    }
)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.stem in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """`@pytest.mark.needs("area")`: skip (or fail, strict) without that system prerequisite."""
    from tests.prereqs import require

    for mark in item.iter_markers("needs"):
        for area in mark.args:
            require(area)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The end of every run says which areas were skipped and why, grouped by reason (#39: a
    machine without a keyring skipped whole areas with nothing at the end to say so)."""
    from tests.prereqs import STRICT_ENV, missing_line

    groups: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        # (path, line, reason); a list when it came from a pytest-xdist worker
        why = str(longrepr[2]) if isinstance(longrepr, tuple | list) else str(longrepr)
        why = why.removeprefix("Skipped: ")
        groups[why] = groups.get(why, 0) + 1
    terminalreporter.section("skipped areas", sep="-")
    if not groups:
        terminalreporter.write_line("nothing skipped")
    for why, count in sorted(groups.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{count:5d} skipped: {why}")
    line = missing_line()
    if line:
        terminalreporter.write_line(f"this machine: {line} (strict: {STRICT_ENV}=1 fails them)")


@pytest.fixture(autouse=True)
def _companion_logger_as_it_was() -> Iterator[None]:
    """An in-process command (`setup_logging`) leaves a stderr handler bound to that test's
    captured stream on the 'companion' logger; a later test's records then hit the closed
    stream and print "--- Logging error ---" with a traceback. Each test gets the logger back
    as it found it."""
    import logging

    logger = logging.getLogger("companion")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield
    for h in logger.handlers:
        if h not in handlers:
            h.close()
    logger.handlers[:] = handlers
    logger.setLevel(level)
    logger.propagate = propagate


@pytest.fixture(autouse=True)
def companion_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "companion-home"
    monkeypatch.setenv("COMPANION_HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hermes-home"))
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    # test passphrases are short; honoured only inside the suite (companion/testmode.py), and
    # the tests of the passphrase rule itself turn it off
    monkeypatch.setenv("COMPANION_TEST_WEAK_PASSPHRASE", "1")
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
def _gui_speaks_english(request: pytest.FixtureRequest) -> None:
    """The one Qt set-up of the GUI tests (QT_QPA_PLATFORM is set above, before pytest-qt's
    QApplication): they start in English; a test of the Spanish interface switches itself."""
    if request.module.__name__.split(".")[-1].startswith("test_gui_"):
        from companion.gui import i18n

        i18n.set_language("en")


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


@pytest.fixture(scope="session")
def hermes_agent():
    """Hermes Agent's own code (the pinned PyPI release, in its own venv), driven by subprocess.

    Created on first use when `.ci/run` has not prepared it; never skipped."""
    from tests.interop.hermes import Hermes, hermes_python

    return Hermes(hermes_python())


def wait_for(
    cond: Callable[[], object], timeout: float = 30.0, what: str = "condition", step: float = 0.02
) -> float:
    """Poll `cond` until it is true, at most `timeout` seconds (a deadline, never a fixed
    sleep); returns the seconds it took, raises AssertionError naming `what` otherwise."""
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(step)
    return time.monotonic() - start


@pytest.fixture
def app_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """`caplog` that sees the 'companion' logger even after a CLI run in this process set it
    up (`setup_logging` stops propagation to the root logger, where caplog listens)."""
    import logging

    logger = logging.getLogger("companion")
    attach = not logger.propagate  # else the record reaches caplog through the root already
    if attach:
        logger.addHandler(caplog.handler)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    caplog.handler.setLevel(logging.DEBUG)
    try:
        yield caplog
    finally:
        if attach:
            logger.removeHandler(caplog.handler)
        logger.setLevel(old_level)


XVFB_DISPLAYS = range(51, 60)  # the display numbers this project's tests may use


def worker_share(items: Sequence[T]) -> list[T]:
    """This pytest-xdist worker's share of `items` (every other one of two workers, and so
    on); all of them without xdist. For what the workers of one run must not both pick, such
    as an X display number."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or count < 2:
        return list(items)
    return list(items)[int(worker[2:]) % count :: count]


def start_xvfb(number: int) -> subprocess.Popen[bytes] | None:
    """Xvfb on display `number`, once it accepts clients; None when that display is taken.

    `-displayfd` makes the server write its display number once it listens, and exit without
    writing it when another server holds the display: asking the display whether it answers
    could not tell this Xvfb from another test's (or another run's) on the same number."""
    import selectors

    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        ["Xvfb", f":{number}", "-displayfd", str(write_fd), "-screen", "0", "1280x800x24",
         "-nolisten", "tcp"],
        pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe, selectors.DefaultSelector() as sel:
        sel.register(pipe, selectors.EVENT_READ)
        said = pipe.readline().strip() if sel.select(10) else b""
    if said == str(number).encode():
        return proc
    proc.kill()
    proc.wait()
    return None


@pytest.fixture
def x_desktop() -> Iterator[dict[str, str]]:
    """A real X screen (Xvfb on a free display of :51-:59, this worker's share of them) with a
    tray host (trayer), for the few tests whose bug only shows on a real desktop. Yields the
    environment to run Qt on it; both processes are stopped afterwards, whatever happened."""
    import signal

    from tests.prereqs import require

    require("x-desktop")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for number in worker_share(XVFB_DISPLAYS):
            if Path(f"/tmp/.X{number}-lock").exists():
                continue
            proc = start_xvfb(number)
            if proc is not None:
                procs.append(proc)
                break
        else:
            pytest.fail(f"no free X display among {worker_share(XVFB_DISPLAYS)}")
        env = {"DISPLAY": f":{number}", "QT_QPA_PLATFORM": "xcb"}
        tray = subprocess.Popen(
            ["trayer", "--edge", "top", "--align", "right", "--SetDockType", "true"],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(tray)
        yield env
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


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
