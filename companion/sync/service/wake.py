"""Ask the engine that owns a vault copy to run a round soon, from another process.

Decisions recorded by `companion held` / `companion quarantine` are carried out by a round. When
a `companion watch` or the desktop app owns the copy (the engine lock), the command touches this
file in the copy's engine folder; the daemon checks it whenever it waits (at least every few
seconds) and runs a full round when it changed. No socket, no signal: it works the same under
systemd, in the tray app and on every platform.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from companion.fileio import write_atomic

WAKE_NAME = "wake"


def request_round(engine_folder: str | os.PathLike[str]) -> None:
    """Write a new stamp into the wake file, whole: a reader never sees it empty (truncated
    and not written yet), which it would take for one more request."""
    path = Path(engine_folder) / WAKE_NAME
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, str(time.time_ns()).encode(), durable=False)


class WakeFile:
    """Tells whether `request_round` was called since the last look."""

    def __init__(self, engine_folder: str | os.PathLike[str]) -> None:
        self.path = Path(engine_folder) / WAKE_NAME
        self._seen = self._read()

    def _read(self) -> str:
        try:
            return self.path.read_text(encoding="ascii")
        except (OSError, ValueError):
            return ""

    def requested(self) -> bool:
        now = self._read()
        if now == self._seen:
            return False
        self._seen = now
        return True
