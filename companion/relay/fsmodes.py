"""Owner-only files and folders for everything the relay keeps on disk.

The relay's data folder holds the wrapped vault keys (in the database and its write-ahead
log), device token hashes and every vault's ciphertext. None of it is for other local users,
whatever the umask or however the admin created the folder: files are created 0600 and
folders 0700, and looser modes found on open are tightened. `companion doctor` uses
`loose_entries` to check a data folder by the same rule.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def is_loose(mode: int) -> bool:
    """Group or other users have any access."""
    return bool(stat.S_IMODE(mode) & 0o077)


def tighten(path: Path) -> bool:
    """Remove group and other access from `path` (not following symlinks); True if changed."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode) or not is_loose(st.st_mode):
        return False
    os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
    return True


def private_dir(path: Path) -> Path:
    """`path` as an owner-only folder, creating it and any missing parents with 0700 (plain
    `mkdir(parents=True)` gives the parents the umask's mode) and tightening it if loose."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
        tighten(d)  # mkdir's mode is masked by the umask, which only removes bits: still 0700
    tighten(path)
    return path


def create_private(path: Path) -> int:
    """Open `path` for writing, created 0600 if new (truncated); returns the descriptor."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)


def touch_private(path: Path) -> None:
    """Make sure `path` exists with an owner-only mode, without changing its contents (e.g. a
    database, before SQLite creates its -wal and -shm files with the same mode)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    os.close(fd)
    tighten(path)


def walk(root: Path) -> Iterator[Path]:
    """Every entry under `root` (root included), without following symlinks."""
    yield root
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in (*dirnames, *filenames):
            yield Path(dirpath, name)


def loose_entries(root: Path, limit: int = 20) -> tuple[list[Path], int]:
    """Up to `limit` entries under `root` that group or others can access, and how many
    there are in all."""
    found: list[Path] = []
    total = 0
    for p in walk(root):
        try:
            mode = p.lstat().st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISLNK(mode) and is_loose(mode):
            total += 1
            if len(found) < limit:
                found.append(p)
    return found, total


def tighten_tree(root: Path) -> int:
    """Tighten every entry under `root`; how many were changed."""
    return sum(tighten(p) for p in walk(root))
