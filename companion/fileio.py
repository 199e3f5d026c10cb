"""The one atomic file write, and the one way to create a private file.

Contract of `write_atomic`: the bytes go to a uniquely named temporary file beside the target
(same folder, so the rename is atomic; the name starts with `.companion-tmp-` so the watcher and
the ignore rules skip it), created with its final mode before the first byte is written, flushed
and fsynced, renamed over the target, and the folder fsynced (unless the caller flushes it once
for many files), so after a crash the target holds either the old bytes or the new ones, never a
mix or nothing. The mode is owner-only by default; `mode=KEEP` keeps an existing file's mode (a
note the person made readable to others stays so) and gives a new one the umask's default. A
target that is a symbolic link is refused unless `follow_symlinks` (then the link's target is
replaced and the link kept, as Hermes Agent writes its memory files).

The sync engine's writes into the vault (`companion/sync/local/atomic.py`) add what only the engine
needs (a changed-since-scan check, the remote file's mtime and exec bit) on the same pattern.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import sys
from collections.abc import Callable
from pathlib import Path

TEMP_PREFIX = ".companion-tmp-"


class _TempNames:
    """Names for temporary files, unique without a system call each: a random part drawn once
    per process (again in a forked child) and a counter. Creating them with `O_EXCL` is what
    makes them safe; the random part only keeps two processes from colliding."""

    def __init__(self) -> None:
        self._reset()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._run = os.urandom(6).hex()  # as secrets.token_hex, without its hmac import
        self._count = itertools.count()

    def next(self) -> str:
        return f"{TEMP_PREFIX}{self._run}-{next(self._count):x}"


temp_name = _TempNames().next


KEEP = -1  # `mode=KEEP`: the existing file's mode, else 0o666 minus the umask


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def _mode_for(target: Path, mode: int) -> int:
    if mode != KEEP:
        return mode
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        return 0o666 & ~_umask()


class SymlinkRefused(OSError):
    """The target is a symbolic link and the caller did not allow following it."""


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (a rename or a new file in it) to disk; no-op where unsupported."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


@functools.cache
def _syncfs_function() -> Callable[[int], int] | None:
    """libc's syncfs, looked up on first use (the symbols of the running process: no
    `find_library`, which runs ldconfig)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn  # type: ignore[no-any-return]


def flush_filesystem(path: str | os.PathLike[str]) -> bool:
    """Flush every dirty page of the file system holding `path` (one `syncfs`, the way a batch
    of many new files is made durable at once); False where that is not possible, and the
    caller then fsyncs file by file."""
    syncfs = _syncfs_function()
    if syncfs is None:
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return bool(syncfs(fd) == 0)
    finally:
        os.close(fd)


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    mode: int = 0o600,
    follow_symlinks: bool = False,
    sync_dir: bool = True,
    make_parents: bool = False,
    durable: bool = True,
) -> Path:
    """Replace `path` with `data` atomically (see the module docstring). Returns the path
    written (the link's target when following a symbolic link). `durable=False` skips both
    fsyncs, for state that is rewritten often and rebuilt when lost (a status display, a lock
    holder's note): still never a torn file, only possibly the previous version after a crash."""
    target = Path(path)
    if target.is_symlink():
        if not follow_symlinks:
            raise SymlinkRefused(f"{target} is a symbolic link; refusing to replace it")
        target = Path(os.path.realpath(target))
    folder = target.parent
    if make_parents:
        folder.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(target, mode)
    tmp = folder / temp_name()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        try:
            os.fchmod(fd, mode)  # the umask may have narrowed it; set it before any byte
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync_dir and durable:
        fsync_dir(folder)
    return target


def write_text_atomic(path: str | os.PathLike[str], text: str, **kw: object) -> Path:
    """`write_atomic` of UTF-8 text (same keywords)."""
    return write_atomic(path, text.encode("utf-8"), **kw)  # type: ignore[arg-type]


def write_new_private(path: str | os.PathLike[str], data: bytes) -> Path:
    """Create `path` (it must not exist) readable by its owner only, with `data`, durably."""
    target = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags, 0o600)
    except FileExistsError:
        from companion.errors import InputError

        raise InputError(f"{target} already exists; choose a new file name") from None
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(target.parent)
    return target
