"""Read one note's bytes safely and decode them to text.

The file is opened read-only, without following a symlink and without blocking (a FIFO that
replaced a note since the walk must not hang us), and must still be a regular file. Decoding is
UTF-8 (a BOM is dropped); UTF-16 with a BOM is decoded too; other bytes that are not UTF-8 are
read with replacement characters and a warning, so links are still found. A NUL byte means the
file is binary, not a note.
"""

from __future__ import annotations

import os
import stat
from typing import NamedTuple

from companion.vault.walk import Issue, too_large_message

_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)


class ReadResult(NamedTuple):
    text: str | None
    warnings: list[str]
    issue: Issue | None  # set when the note could not be read at all


def decode_note(data: bytes) -> tuple[str | None, list[str], str | None]:
    """(text, warnings, error). `error` is set (and text None) for binary data."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            text = "\x00"
        if "\x00" in text:
            return None, [], "binary file (not UTF-8 or UTF-16 text)"
        return text, ["UTF-16 text: read, never rewritten"], None
    if b"\x00" in data:
        return None, [], "binary file (contains NUL bytes)"
    try:
        return data.decode("utf-8"), [], None
    except UnicodeDecodeError as exc:
        where = f"first bad byte at offset {exc.start}"
        warning = f"not valid UTF-8 ({where}): read with replacement characters"
        return data.decode("utf-8", "replace"), [warning], None


def read_note_text(
    path: str | os.PathLike[str], rel: str, max_bytes: int | None = None
) -> ReadResult:
    """Read and decode the note at `path` (shown as `rel`); never raises for bad files."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        return ReadResult(None, [], Issue(rel, "unreadable", f"cannot open: {exc.strerror or exc}"))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return ReadResult(None, [], Issue(rel, "warning", "not a regular file: skipped"))
        if max_bytes and st.st_size > max_bytes:
            return ReadResult(
                None, [], Issue(rel, "warning", too_large_message(st.st_size, max_bytes))
            )
        chunks = []
        limit = (max_bytes + 1) if max_bytes else None
        got = 0
        while True:
            chunk = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if max_bytes and got > max_bytes:  # grew since the walk
                return ReadResult(
                    None, [], Issue(rel, "warning", too_large_message(None, max_bytes))
                )
        data = b"".join(chunks)
    except OSError as exc:
        return ReadResult(None, [], Issue(rel, "unreadable", f"cannot read: {exc.strerror or exc}"))
    finally:
        os.close(fd)
    text, warnings, error = decode_note(data)
    if error:
        return ReadResult(None, [], Issue(rel, "unreadable", error))
    return ReadResult(text, warnings, None)
