"""Walk a vault: one `os.scandir` pass that lists notes (with their stat data) and other files.

What it skips, and why:
- Hidden names (`.obsidian/`, `.trash/`, `.companion/`, `.git/`, any dotfile): app state, not
  notes.
- Symlinks are never followed. One that points to a file inside the vault is listed as a
  linkable file (links to it resolve) but not read; one that points outside the vault, loops,
  dangles or names a folder is reported and skipped.
- Notes larger than the size cap are reported and not read.
- Names that are not valid UTF-8, special files (FIFOs, sockets, devices) and folders that
  cannot be listed are reported and skipped.
Nothing is ever opened for writing.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

IGNORED_DIRS = frozenset({".obsidian", ".trash", ".companion", ".git"})  # hidden anyway


class FileStat(NamedTuple):
    mtime_ns: int
    size: int
    ctime_ns: int = 0  # status change time: moves with every write, cannot be set by tools


class Issue(NamedTuple):
    """A file the walk or the reader could not use as a note, or used with a caveat.
    `kind` is "unreadable" (counted as a problem by `vault check`) or "warning"."""

    path: str
    kind: str
    message: str


@dataclass
class ScanResult:
    root: Path
    notes: dict[str, FileStat] = field(default_factory=dict)
    too_large: dict[str, FileStat] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)  # attachments and in-vault file symlinks
    issues: list[Issue] = field(default_factory=list)

    def all_paths(self) -> list[str]:
        """Every path a link may point to: notes (also too large ones) and other files."""
        return [*self.notes, *self.too_large, *self.files]


def display_name(name: str) -> str:
    """A printable form of a name that may carry undecodable bytes (surrogate escapes)."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def is_note_name(name: str) -> bool:
    return name[-3:].lower() == ".md"


def walk_vault(root: str | Path, max_file_bytes: int | None = None) -> ScanResult:
    """List the vault under `root`. `max_file_bytes` (None or 0: no cap) skips bigger notes."""
    root = Path(root)
    real_root = os.path.realpath(root)
    result = ScanResult(root=root)
    notes, files, issues = result.notes, result.files, result.issues
    cap = max_file_bytes or None
    stack: list[tuple[str, str]] = [(os.fspath(root), "")]
    while stack:
        dirpath, prefix = stack.pop()
        try:
            it = os.scandir(dirpath)
        except OSError as exc:
            issues.append(
                Issue(prefix.rstrip("/") or ".", "unreadable", _why("cannot list folder", exc))
            )
            continue
        with it:
            try:
                for entry in it:
                    name = entry.name
                    if name[0] == ".":
                        continue
                    if not name.isascii():
                        shown = display_name(name)
                        if shown != name:
                            issues.append(
                                Issue(prefix + shown, "warning", "name is not valid UTF-8: skipped")
                            )
                            continue
                    rel = prefix + name
                    try:
                        if entry.is_symlink():
                            _symlink(entry, rel, real_root, files, issues)
                        elif entry.is_dir(follow_symlinks=False):
                            stack.append((entry.path, rel + "/"))
                        elif entry.is_file(follow_symlinks=False):
                            if name[-3:].lower() == ".md":
                                st = entry.stat(follow_symlinks=False)
                                fs = FileStat(st.st_mtime_ns, st.st_size, st.st_ctime_ns)
                                if cap is not None and st.st_size > cap:
                                    result.too_large[rel] = fs
                                    issues.append(
                                        Issue(rel, "warning", too_large_message(st.st_size, cap))
                                    )
                                else:
                                    notes[rel] = fs
                            else:
                                files.add(rel)
                        elif is_note_name(name):
                            issues.append(Issue(rel, "warning", "not a regular file: skipped"))
                    except OSError as exc:
                        issues.append(Issue(rel, "unreadable", _why("cannot read", exc)))
            except OSError as exc:
                where = prefix.rstrip("/") or "."
                issues.append(Issue(where, "unreadable", _why("cannot list folder", exc)))
    return result


def human_size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"  # pragma: no cover


def too_large_message(size: int | None, cap: int) -> str:
    got = f" ({human_size(size)})" if size is not None else ""
    return f"larger than the size cap of {human_size(cap)}{got} (vault.max_file_mb): skipped"


def _symlink(
    entry: os.DirEntry[str], rel: str, real_root: str, files: set[str], issues: list[Issue]
) -> None:
    try:
        st = os.stat(entry.path)  # follows: tells loops and dangling links apart
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            issues.append(Issue(rel, "warning", "symlink loop: skipped"))
        elif exc.errno == errno.ENOENT:
            issues.append(Issue(rel, "warning", "broken symlink: skipped"))
        else:
            issues.append(Issue(rel, "warning", _why("symlink cannot be followed", exc)))
        return
    target = os.path.realpath(entry.path)
    inside = target == real_root or target.startswith(real_root.rstrip(os.sep) + os.sep)
    if not inside:
        issues.append(Issue(rel, "warning", "symlink points outside the vault: not followed"))
    elif stat.S_ISDIR(st.st_mode):
        issues.append(Issue(rel, "warning", "symlink to a folder: not followed"))
    elif stat.S_ISREG(st.st_mode):
        files.add(rel)  # linkable; its content is read through the real path
    else:
        issues.append(Issue(rel, "warning", "symlink to a special file: skipped"))


def _why(what: str, exc: OSError) -> str:
    return f"{what}: {exc.strerror or exc}"
