"""Atomic file writes: temp file in the same folder, fsync, rename, fsync the folder.

A reader (Obsidian, the sync engine, another process) sees the old bytes or the new ones, never
a half-written file; a crash leaves at most a stray temp file, never a truncated note.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from companion.errors import CompanionError


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


def read_owner_only(
    path: Path, what: str, error: type[CompanionError] = CompanionError, max_bytes: int = -1
) -> bytes:
    """The bytes of `path`, refused unless this user owns it and nobody else can read or write it.

    Symlinks are not followed. `what` names the file for a person ("secrets file"); an
    `OSError` from opening it (missing file, no permission) is left to the caller.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if os.name != "nt":
            if st.st_mode & 0o077:
                raise error(
                    f"the {what} {path} can be read by other users "
                    f"(mode {stat.filemode(st.st_mode)}); refusing it. "
                    f"Fix it with: chmod 600 {path}"
                )
            if st.st_uid != os.getuid():
                raise error(f"the {what} {path} belongs to another user; refusing it")
        return f.read(max_bytes)
