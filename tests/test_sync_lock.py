"""The vault copy's engine lock is the operating system's: held across processes, released by
the kernel when its holder dies (even by SIGKILL), and owner-only on disk."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from companion.sync.service.lock import LockHeld, VaultLock

REPO = Path(__file__).resolve().parents[1]

HOLDER = textwrap.dedent(
    """
    import sys
    from companion.sync.service.lock import VaultLock
    lock = VaultLock(sys.argv[1], command="companion watch (test)").acquire()
    print("held", flush=True)
    sys.stdin.read()  # hold until the test kills this process or closes stdin
    """
)


def _holder(folder: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"  # the child has the lock: no sleep needed
    return proc


def test_another_process_holding_the_lock_is_named(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        with pytest.raises(LockHeld) as err:
            VaultLock(tmp_path).acquire()
        assert f"pid {proc.pid}" in str(err.value)
        assert "companion watch (test)" in str(err.value)
        assert err.value.exit_code == 4
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_holder_leaves_the_copy_free(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with VaultLock(tmp_path) as lock:  # the kernel released it with the process
        assert lock.held
        assert lock.holder() is not None and lock.holder()["pid"] == os.getpid()  # type: ignore[index]
    assert not lock.held
    assert not lock.holder_path.exists()


def test_two_locks_in_one_process_exclude_each_other(tmp_path: Path) -> None:
    """A second engine in the same process (the desktop app and a dream hook) is refused too,
    and a lock cannot be taken twice by one object."""
    with VaultLock(tmp_path) as first:
        with pytest.raises(LockHeld):
            VaultLock(tmp_path).acquire()
        with pytest.raises(RuntimeError):
            first.acquire()
    VaultLock(tmp_path).acquire().release()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_the_lock_file_is_owner_only(tmp_path: Path) -> None:
    with VaultLock(tmp_path / "engine") as lock:
        assert stat.S_IMODE(lock.path.stat().st_mode) == 0o600
        assert stat.S_IMODE(lock.folder.stat().st_mode) == 0o700
