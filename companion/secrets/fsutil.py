"""Atomic file writes: temp file in the same folder, fsync, rename, fsync the folder.

A reader (Obsidian, the sync engine, another process) sees the old bytes or the new ones, never
a half-written file; a crash leaves at most a stray temp file, never a truncated note.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (not supported on Windows, where it is a no-op)."""
    if os.name == "nt":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically; `mode` (e.g. 0o600) is set before any byte lands."""
    folder = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".companion-tmp", dir=folder)
    try:
        if mode is not None and os.name != "nt":
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)
