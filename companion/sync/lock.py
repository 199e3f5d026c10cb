"""One sync engine per vault copy: an OS file lock, with who holds it written next to it.

`filelock` takes an OS-level lock (flock/fcntl on POSIX, LockFileEx on Windows) that the kernel
releases when the process dies, even by ``kill -9``, so a crash never leaves the vault locked.
The holder's pid, command line and start time go into ``engine.lock.holder`` so a second
`companion sync` can say which process to wait for or stop.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from companion.errors import CompanionError
from companion.fileio import write_text_atomic

LOCK_NAME = "engine.lock"


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
        runs (`sync/requests.py`: `companion watch`, the desktop app); they wait for it."""
        self.folder = Path(folder)
        self.serves_requests = serves_requests
        self.path = self.folder / LOCK_NAME
        self.holder_path = self.folder / (LOCK_NAME + ".holder")
        self.command = command or " ".join(os.path.basename(a) if i == 0 else a
                                           for i, a in enumerate(sys.argv))  # fmt: skip
        self._lock: FileLock | None = None

    def holder(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.holder_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def acquire(self, timeout: float = 0) -> VaultLock:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = FileLock(self.path, timeout=timeout, mode=0o600, thread_local=False)
        try:
            lock.acquire()
        except Timeout:
            raise self.held_elsewhere() from None
        self._lock = lock
        info = {
            "pid": os.getpid(),
            "command": self.command,
            "host": socket.gethostname(),
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
        if self._lock is None:
            return
        try:
            self.holder_path.unlink(missing_ok=True)
        finally:
            self._lock.release()
            self._lock = None

    @property
    def held(self) -> bool:
        return self._lock is not None and self._lock.is_locked

    def __enter__(self) -> VaultLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
