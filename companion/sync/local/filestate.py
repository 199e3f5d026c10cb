"""What the engine knows about one file on disk: its stat identity and its content hash.

`FileState` is the unit the scanner records, the index stores and the atomic writer checks
("is the file still what was scanned?"). The stat part (size, mtime in ns, inode, inode change
time in ns) is what a quiet rescan compares; the SHA-256 is computed only when the stat part
changed. The change time (ctime) is what makes the stat honest: a program can set a file's
mtime back (`touch -d`, `cp -p`, an editor keeping the size), but every write moves the ctime
and nothing can set it back, as git relies on. A ctime of 0 means "not known" and is not
compared.

Text detection is defined once here and used everywhere: a file is text when it is valid UTF-8
and contains no NUL byte (so it can be three-way merged line by line).
"""

from __future__ import annotations

import codecs
import hashlib
import os
import stat as stat_mod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

READ_SIZE = 1 << 20  # 1 MiB per read when hashing
_U64 = 1 << 64
_I63 = 1 << 63
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


def inode_key(ino: int) -> int:
    """An inode number folded into SQLite's signed 64-bit integer range.

    Some file systems report 64-bit (or, on Windows ReFS, 128-bit) ids; the fold is stable, so
    comparing folded values is as good as comparing the originals for change detection.
    """
    ino %= _U64
    return ino - _U64 if ino >= _I63 else ino


StatKey = tuple[int, int, int, int]  # (mtime_ns, size, inode, ctime_ns)


@dataclass(frozen=True, slots=True)
class FileState:
    """A regular file as seen at one moment: stat identity plus (optionally) its SHA-256."""

    size: int
    mtime_ns: int
    inode: int
    sha256: str = ""
    ctime_ns: int = 0

    @classmethod
    def from_stat(cls, st: os.stat_result, sha256: str = "") -> FileState:
        return cls(st.st_size, st.st_mtime_ns, inode_key(st.st_ino), sha256, st.st_ctime_ns)

    def stat_key(self) -> StatKey:
        """``(mtime_ns, size, inode, ctime_ns)``: the tuple a quiet rescan compares."""
        return (self.mtime_ns, self.size, self.inode, self.ctime_ns)

    def same_stat(self, other: FileState) -> bool:
        """The same file, unchanged: mtime, size and inode equal, and the ctime too when both
        sides know it."""
        if (self.mtime_ns, self.size, self.inode) != (other.mtime_ns, other.size, other.inode):
            return False
        return not (self.ctime_ns and other.ctime_ns) or self.ctime_ns == other.ctime_ns


def stat_key(st: os.stat_result) -> StatKey:
    """``(mtime_ns, size, inode, ctime_ns)`` of a stat result, as the index stores it."""
    return (st.st_mtime_ns, st.st_size, inode_key(st.st_ino), st.st_ctime_ns)


def state_after_rename(
    target: str | os.PathLike[str], before: os.stat_result, sha256: str
) -> FileState:
    """The state of a file just renamed into place, whose stat was `before` (taken on the temp
    file or its descriptor). A rename moves the ctime, so it is read again from the target;
    if the target is no longer that file (someone wrote it in between), the ctime is left
    unknown and the next scan hashes it."""
    state = FileState(before.st_size, before.st_mtime_ns, inode_key(before.st_ino), sha256)
    try:
        after = os.lstat(target)
    except OSError:
        return state
    same = (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino, before.st_size, before.st_mtime_ns,
    )  # fmt: skip
    return (
        FileState(state.size, state.mtime_ns, state.inode, sha256, after.st_ctime_ns)
        if same
        else state
    )


class FileUnstable(Exception):
    """The file changed while it was being read (someone is still writing it)."""


class NotRegularFile(Exception):
    """The path is a symbolic link, a directory or a special file, not a regular file."""


@dataclass(frozen=True, slots=True)
class Hashed:
    """The result of reading a file completely: its state (with SHA-256) and text-ness."""

    state: FileState
    is_text: bool


class _TextSniffer:
    """Streaming version of `is_text`: valid UTF-8 and no NUL, fed chunk by chunk."""

    def __init__(self) -> None:
        self.ok = True
        self._dec = codecs.getincrementaldecoder("utf-8")()

    def feed(self, chunk: bytes) -> None:
        if not self.ok:
            return
        if b"\x00" in chunk:
            self.ok = False
            return
        try:
            self._dec.decode(chunk)
        except UnicodeDecodeError:
            self.ok = False

    def finish(self) -> bool:
        if self.ok:
            try:
                self._dec.decode(b"", final=True)
            except UnicodeDecodeError:
                self.ok = False
        return self.ok


def is_text(data: bytes) -> bool:
    """True when `data` is valid UTF-8 without NUL bytes (mergeable as text)."""
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def hash_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def open_nofollow(path: str | os.PathLike[str]) -> int:
    """Open a regular file read-only without following a symbolic link at the last component.

    Raises `NotRegularFile` for a link, directory or special file (the caller skips it).
    """
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_BINARY)
    except OSError as exc:
        if _O_NOFOLLOW and exc.errno == getattr(os, "ELOOP", -1):  # a symlink
            raise NotRegularFile(str(path)) from None
        if isinstance(exc, IsADirectoryError):
            raise NotRegularFile(str(path)) from None
        raise
    st = os.fstat(fd)
    if not stat_mod.S_ISREG(st.st_mode) or (not _O_NOFOLLOW and os.path.islink(path)):
        os.close(fd)
        raise NotRegularFile(str(path))
    return fd


def hash_file(
    path: str | os.PathLike[str],
    *,
    on_hash: Callable[[str], None] | None = None,
) -> Hashed:
    """Read `path` once: SHA-256, size and text-ness, streaming (bounded memory).

    The state is taken from the open descriptor before reading; if the file's stat differs
    after reading, it was being written and `FileUnstable` is raised. Never follows a symlink.
    """
    if on_hash is not None:
        on_hash(os.fspath(path))
    fd = open_nofollow(path)
    try:
        before = os.fstat(fd)
        h = hashlib.sha256()
        sniff = _TextSniffer()
        size = 0
        while True:
            chunk = os.read(fd, READ_SIZE)
            if not chunk:
                break
            h.update(chunk)
            sniff.feed(chunk)
            size += len(chunk)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if stat_key(before) != stat_key(after) or size != after.st_size:
        raise FileUnstable(os.fspath(path))
    return Hashed(FileState.from_stat(after, h.hexdigest()), sniff.finish())


def current_state(path: Path | str, *, with_hash: bool = False) -> FileState | None:
    """The file's state now (lstat), or None when nothing is there.

    Raises `NotRegularFile` when the path exists but is not a regular file.
    """
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat_mod.S_ISREG(st.st_mode):
        raise NotRegularFile(os.fspath(path))
    if not with_hash:
        return FileState.from_stat(st)
    try:
        return hash_file(path).state
    except FileNotFoundError:
        return None
