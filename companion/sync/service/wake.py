"""The nudge that a new job row exists for the engine that owns a vault copy.

Every request from another process is a row in the copy's job queue (`sync/service/requests.py`:
`companion sync`, `restore`, `held` and `quarantine` decisions, the dream's Verify); the row
carries the work and, once done, its outcome. This file carries nothing: `requests.ask` writes
a new stamp into it after recording a row, so the owner (`companion watch`, the desktop app),
which watches the file and looks at it every few seconds anyway, goes to read the queue now
instead of at its next look. A lost or extra nudge costs only latency: the owner reads the
queue when it starts and whenever it is nudged, and a request nobody takes is cancelled by its
waiter. No socket, no signal: it works the same under systemd, in the tray app and on every
platform.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from companion.fileio import write_atomic

WAKE_NAME = "wake"


def nudge(engine_folder: str | os.PathLike[str]) -> None:
    """Write a new stamp into the wake file, whole: a reader never sees it empty (truncated
    and not written yet), which it would take for one more nudge."""
    path = Path(engine_folder) / WAKE_NAME
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, str(time.time_ns()).encode(), durable=False)


class WakeFile:
    """Tells whether `nudge` was called since the last look."""

    def __init__(self, engine_folder: str | os.PathLike[str]) -> None:
        self.path = Path(engine_folder) / WAKE_NAME
        self._seen = self._read()

    def _read(self) -> str:
        try:
            return self.path.read_text(encoding="ascii")
        except (OSError, ValueError):
            return ""

    def nudged(self) -> bool:
        now = self._read()
        if now == self._seen:
            return False
        self._seen = now
        return True
