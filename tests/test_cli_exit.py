"""The `companion` program ends without the interpreter's teardown, and loses nothing by it.

`cli.run` skips the teardown (unloading every module) once a command is done; these tests hold
it to what a normal exit guarantees: the exit status, everything written to stdout, stderr and
the log, at-exit handlers (temporary folders removed), and a normal exit whenever a thread
still runs or the status is not a number.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from companion.cli import exit_now
from tests.conftest import run_companion

# A child that runs `cli.run()` with an object whose finalizer reports the interpreter's
# teardown: a module global is only finalized when the modules are unloaded.
CHILD = textwrap.dedent(
    """
    import sys, threading, tempfile, os
    class Teardown:
        def __del__(self):
            os.write(2, b"TEARDOWN\\n")
    keep = Teardown()
    mode, argv = sys.argv[1], sys.argv[2:]
    if mode == "tempdir":
        tmp = tempfile.TemporaryDirectory(prefix="companion-exit-")
        print("TMP", tmp.name, flush=True)
    sys.argv = ["companion", *argv]
    from companion.cli import run
    run()
    """
)


def _child(
    mode: str, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", CHILD, mode, *argv],
        capture_output=True, text=True, env=full, timeout=120,
    )  # fmt: skip


def test_a_finished_command_skips_the_teardown_and_keeps_its_output_and_status() -> None:
    res = _child("plain", "--version")
    assert res.returncode == 0
    assert res.stdout.startswith("companion, version ")
    assert "TEARDOWN" not in res.stderr  # the modules were never unloaded

    res = _child("plain", "frobnicate")  # a usage error: exit 2 and its message, as before
    assert res.returncode == 2
    assert "No such command" in res.stderr
    assert "TEARDOWN" not in res.stderr


def test_long_output_to_a_pipe_arrives_whole(tmp_path: Path) -> None:
    """`config show --defaults` prints every documented key; a pipe buffers it until the flush."""
    normal = subprocess.run(
        [sys.executable, "-c", "import sys; sys.argv=['companion', *sys.argv[1:]];"
         "from companion.cli import main; main()", "config", "show", "--defaults"],
        capture_output=True, text=True, env={**os.environ, "COMPANION_HOME": str(tmp_path)},
        timeout=120,
    )  # fmt: skip
    fast = run_companion("config", "show", "--defaults", env={"COMPANION_HOME": str(tmp_path)})
    assert normal.returncode == fast.returncode == 0
    assert len(fast.stdout) > 2000
    assert fast.stdout == normal.stdout


def test_the_log_file_gets_the_last_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from companion.paths import device_paths

    monkeypatch.setenv("COMPANION_HOME", str(tmp_path))
    res = _child("plain", "-v", "vault", "check", str(tmp_path / "nowhere"))
    assert res.returncode == 2
    assert "TEARDOWN" not in res.stderr
    log = device_paths().log_file.read_text()
    assert log.rstrip().endswith("does not exist") or "command failed" in log.splitlines()[-1]


def test_at_exit_handlers_still_run_so_temporary_folders_go() -> None:
    res = _child("tempdir", "--version")
    assert res.returncode == 0
    tmp = next(line.split(" ", 1)[1] for line in res.stdout.splitlines() if line.startswith("TMP"))
    assert not os.path.exists(tmp)  # TemporaryDirectory's finalizer ran at exit
    assert "TEARDOWN" not in res.stderr


def test_a_status_that_is_not_a_number_or_a_live_thread_keeps_the_normal_exit() -> None:
    import threading

    exit_now("a message")  # returns: `sys.exit("...")` prints it and exits 1 the normal way
    exit_now(True)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, args=(30,))
    t.start()
    try:
        exit_now(0)  # returns: the thread's work would be cut off
    finally:
        stop.set()
        t.join()


@pytest.mark.parametrize("code", [0, 3, 5])
def test_exit_status_is_kept(code: int) -> None:
    res = subprocess.run(
        [sys.executable, "-c",
         f"from companion.cli import exit_now; print('out'); exit_now({code})"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == code
    assert res.stdout == "out\n"
