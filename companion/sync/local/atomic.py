"""Local writes that never lose an edit: temp file, fsync, check, rename, fsync the folder.

Every operation takes the state the caller last saw for the target (`expected`: the scanned
`FileState`, or None for "should not exist"). Right before the file is replaced, deleted or
renamed it is checked again; if someone changed it in the meantime `ChangedSinceScan` is raised
and nothing is touched, so the caller turns it into a conflict instead of overwriting the edit.

All paths go through `pathsafe.resolve_inside`: nothing is ever written outside the vault or
through a symbolic link. Temp files are named ``.companion-tmp-*`` in the target's folder (same
file system, so the final rename is atomic); the scanner and watcher ignore them.
"""

from __future__ import annotations

import hashlib
import os
import stat as stat_mod
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from companion.errors import CompanionError
from companion.fileio import fsync_dir, temp_name
from companion.logs import get_logger
from companion.sync.local.filestate import (
    FileState,
    FileUnstable,
    NotRegularFile,
    current_state,
    hash_file,
    state_after_rename,
)
from companion.sync.local.pathsafe import (
    TEMP_PREFIX,
    fold,
    make_parents,
    name_errors,
    resolve_inside,
)

log = get_logger("sync.atomic")

HASH_CHECK_LIMIT = 8 << 20  # re-hash the target before replacing it when it is at most 8 MiB
COPY_SIZE = 1 << 20
_O_BINARY = getattr(os, "O_BINARY", 0)


class ChangedSinceScan(CompanionError):
    """The target is no longer in the state the caller scanned; nothing was changed."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path!r} {why} since it was scanned; kept as is")
        self.path = path


def _check(target: str | Path, rel: str, expected: FileState | None, verify_hash: bool) -> None:
    try:
        now = current_state(target)
    except NotRegularFile:
        raise ChangedSinceScan(rel, "is no longer a regular file") from None
    if expected is None:
        if now is not None:
            raise ChangedSinceScan(rel, "was created")
        return
    if now is None:
        raise ChangedSinceScan(rel, "was deleted")
    if not now.same_stat(expected):
        raise ChangedSinceScan(rel, "was modified")
    if verify_hash and expected.sha256 and expected.size <= HASH_CHECK_LIMIT:
        try:
            digest = hash_file(target).state.sha256
        except (FileNotFoundError, FileUnstable, NotRegularFile):
            raise ChangedSinceScan(rel, "was modified") from None
        if digest != expected.sha256:
            raise ChangedSinceScan(rel, "was modified")


def set_mtime(target: int | str | os.PathLike[str], mtime_ns: int) -> None:
    """Give a written file (a path, or an open descriptor where the platform allows) the
    modification time its record carries. The time is only shown to the person, so one this
    platform cannot hold (a record from a far future or past) leaves the file the time of its
    writing instead of failing the write."""
    try:
        os.utime(target, ns=(mtime_ns, mtime_ns))
    except (OverflowError, ValueError, OSError) as exc:
        log.debug("kept the time of writing: cannot set mtime %d (%s)", mtime_ns, exc)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _new_mode(old_mode: int | None, executable: bool | None) -> int | None:
    """The permission bits for the replacement; None keeps the temp file's (umask) default."""
    if old_mode is None and executable is None:
        return None
    mode = stat_mod.S_IMODE(old_mode) if old_mode is not None else 0o644
    if executable is True:
        mode |= (mode & 0o444) >> 2  # x where r
    elif executable is False:
        mode &= ~0o111
    return mode


def atomic_write(
    root: str | os.PathLike[str],
    rel: str,
    data: bytes | BinaryIO,
    expected: FileState | None,
    *,
    mtime_ns: int | None = None,
    executable: bool | None = None,
    verify_hash: bool = True,
    sync_dir: bool = True,
) -> FileState:
    """Replace (or create) `rel` in the vault with `data` (bytes or a binary stream).

    `expected` is the state scanned before deciding to write (None: the file must not exist).
    With ``sync_dir=False`` the folder is not fsynced: a caller writing many files fsyncs each
    folder once afterwards (`fsync_dir`) before it relies on the renames being durable.
    Returns the new file's state (stat of the written file, SHA-256 of `data`) for the index and
    the watcher's echo suppression. Raises `ChangedSinceScan` (temp file removed, target
    untouched) if the target moved on, and `UnsafePath` for a path outside the vault.
    """
    target = make_parents(root, rel)
    folder = target.parent
    tmp = folder / temp_name()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o666)
    try:
        h = hashlib.sha256()
        try:
            if isinstance(data, (bytes, bytearray, memoryview)):
                buf = bytes(data)
                h.update(buf)
                _write_all(fd, buf)
            else:
                while chunk := data.read(COPY_SIZE):
                    h.update(chunk)
                    _write_all(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
        old = None
        try:
            old = os.lstat(target)
        except FileNotFoundError:
            pass
        mode = _new_mode(old.st_mode if old is not None else None, executable)
        if mode is not None and os.name != "nt":
            os.chmod(tmp, mode)
        if mtime_ns is not None:
            set_mtime(tmp, mtime_ns)
        st = os.lstat(tmp)  # rename keeps inode and mtime (not the ctime: read again after)
        _check(target, rel, expected, verify_hash)
        with name_errors(rel):
            os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    state = state_after_rename(target, st, h.hexdigest())
    if sync_dir:
        fsync_dir(folder)
    return state


def atomic_delete(
    root: str | os.PathLike[str],
    rel: str,
    expected: FileState,
    *,
    verify_hash: bool = True,
    prune_empty_dirs: bool = True,
) -> bool:
    """Delete `rel` if it is still in the `expected` state; False if it was already gone.

    Empty folders left behind are removed up to (not including) the vault root.
    """
    target = resolve_inside(root, rel)
    try:
        if current_state(target) is None:
            return False
    except NotRegularFile:
        raise ChangedSinceScan(rel, "is no longer a regular file") from None
    _check(target, rel, expected, verify_hash)
    os.unlink(target)
    fsync_dir(target.parent)
    if prune_empty_dirs:
        _prune_empty(Path(os.path.realpath(root)), target.parent)
    return True


def _prune_empty(root: Path, folder: Path) -> None:
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def atomic_rename(
    root: str | os.PathLike[str],
    old: str,
    new: str,
    expected: FileState,
    *,
    verify_hash: bool = True,
) -> FileState:
    """Rename `old` to `new` inside the vault if `old` is still in the `expected` state.

    Refuses (`ChangedSinceScan` on `new`) when `new` already exists, unless it is the same file
    under another case on a case-insensitive file system (a case-only rename, which is done).
    Returns the state at the new path.
    """
    src = resolve_inside(root, old)
    _check(src, old, expected, verify_hash)
    dst = make_parents(root, new)
    if os.path.lexists(dst):
        same = fold(old) == fold(new) and os.path.samefile(src, dst)
        if not same:
            raise ChangedSinceScan(new, "already exists")
    before = os.lstat(src)
    os.rename(src, dst)
    state = state_after_rename(dst, before, expected.sha256)
    fsync_dir(dst.parent)
    if src.parent != dst.parent:
        fsync_dir(src.parent)
    return state


def remove_stale_temps(root: str | os.PathLike[str], rels: Iterable[str]) -> int:
    """Delete leftover engine temp files (from a crash) the scanner reported; returns a count."""
    base = os.path.realpath(root)
    n = 0
    for rel in rels:
        name = rel.rsplit("/", 1)[-1]
        if not name.startswith(TEMP_PREFIX) or ".." in rel.split("/"):
            continue
        try:
            parent = resolve_inside(base, rel.rsplit("/", 1)[0]) if "/" in rel else Path(base)
            os.unlink(parent / name)
            n += 1
        except (OSError, CompanionError) as exc:
            log.debug("cannot remove temp file %r: %s", rel, exc)
    return n
