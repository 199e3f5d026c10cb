"""One sync engine per vault copy: an OS file lock, with who holds it written next to it.

The lock is the operating system's own (`flock` on POSIX, `msvcrt.locking` on Windows), which
the kernel releases when the process dies, even by ``kill -9``, so a crash never leaves the vault
locked. It is taken without waiting: a copy is either free or owned by another engine. The
holder's pid, command line and start time go into ``engine.lock.holder`` so a second
`companion sync` can say which process to wait for or stop.

The two system calls are made here rather than through `filelock` (which the dream and memory
stores use for their waiting locks): importing filelock cost every one-shot `companion sync`
25-45 ms of start-up (`bench/bench_cli_start.py`), more than the call it wraps (#17).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from companion.errors import CompanionError
from companion.fileio import write_text_atomic

LOCK_NAME = "engine.lock"


def _try_lock(fd: int) -> bool:
    """Lock the open file `fd` exclusively without waiting; False if another holder has it."""
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fd: int) -> None:
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_UN)


class LockHeld(CompanionError):
    """Another engine (a `companion watch`, the desktop app, another `sync`) owns this copy."""

    exit_code = 4


def _describe(info: dict[str, Any]) -> str:
    who = f"pid {info.get('pid', '?')}"
    cmd = info.get("command")
    if cmd:
        who += f", `{cmd}`"
    started = info.get("started")
    if isinstance(started, int | float):
        who += f", since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(started))}"
    return who


class VaultLock:
    """Exclusive lock on one vault copy's engine folder. Use as a context manager."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        command: str | None = None,
        serves_requests: bool = False,
    ) -> None:
        """`serves_requests`: the holder carries out what other commands ask of it while it
        runs (`sync/service/requests.py`: `companion watch`, the desktop app); they wait for it."""
        self.folder = Path(folder)
        self.serves_requests = serves_requests
        self.path = self.folder / LOCK_NAME
        self.holder_path = self.folder / (LOCK_NAME + ".holder")
        self.command = command or " ".join(os.path.basename(a) if i == 0 else a
                                           for i, a in enumerate(sys.argv))  # fmt: skip
        self._fd: int | None = None  # the locked lock file, while held

    def holder(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.holder_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def acquire(self) -> VaultLock:
        """Take the lock now, or raise `LockHeld` naming the process that has it."""
        if self._fd is not None:
            raise RuntimeError("this VaultLock is already held")
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            locked = _try_lock(fd)
        except BaseException:
            os.close(fd)
            raise
        if not locked:
            os.close(fd)
            raise self.held_elsewhere()
        self._fd = fd
        info = {
            "pid": os.getpid(),
            "command": self.command,
            "host": platform.node(),  # the host name; `socket` would cost ~3 ms to import
            "started": time.time(),
            "serves_requests": self.serves_requests,
        }
        write_text_atomic(self.holder_path, json.dumps(info), durable=False)
        return self

    def held_elsewhere(self) -> LockHeld:
        """The error for a copy another process holds (naming it, from its holder file)."""
        info = self.holder() or {}
        return LockHeld(
            f"another companion is already syncing this vault copy ({_describe(info)}); "
            "stop it or wait for it to finish"
        )

    def owner_serves_requests(self) -> bool:
        """The process holding the lock takes requests (its holder file says so)."""
        return bool((self.holder() or {}).get("serves_requests"))

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            self.holder_path.unlink(missing_ok=True)
        finally:
            try:
                _unlock(fd)
            finally:
                os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> VaultLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
