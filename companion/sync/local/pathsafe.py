"""Vault-relative paths: one canonical spelling, and no way out of the vault.

Every path the engine stores, sends or receives is *normalised*: Unicode NFC (macOS writes NFD),
forward slashes, relative, no empty/``.``/``..`` segments, no control characters, and never one
of the engine's own temp names. `resolve_inside` turns such a path into a real location under the
vault and refuses one that would leave it, including through a symbolic link anywhere on the way
(a record that names ``notes/link/../x`` or a folder replaced by a link to ``/etc``).

Residual risk, by design: a check and the write that follows are two system calls; a local
process that can swap a folder for a symlink in between could redirect one write. Such a process
can already write anywhere the user can, so this only guards against remote input.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from companion.errors import CompanionError
from companion.fileio import TEMP_PREFIX  # one name for every temporary file we make
from companion.textsafe import LONE_SURROGATES, SHOWN_PATH, is_unicode, shown

# the characters `name_problem` refuses, in one pattern for every entry a scan meets
BAD_NAME_CHARS = re.compile(f"[\\x00-\\x1f\\x7f\\\\{LONE_SURROGATES}]")


class UnsafePath(CompanionError):
    """A path that is not a valid vault-relative path or would lead outside the vault."""


class UnusableName(UnsafePath):
    """A valid path this file system cannot hold: a name over its length limit, a path over
    the system's, a name it refuses (`:` on FAT). A problem of that one file, like a path
    through a symbolic link, never of the whole round."""


# what a file system answers for a name it cannot hold; a full disk or an I/O error is not one
_NAME_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL})

# What Windows refuses in a name (the Obsidian plugin's `windowsNameProblem`, the same rule):
# these characters, a trailing dot or space, and the device names with or without extension.
# Checked before a write there, since a ':' would not fail: it names an alternate data stream.
_WINDOWS_CHARS = re.compile(r'[<>:"|?*]')
_WINDOWS_DEVICES = re.compile(r"(?i)^(?:CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])(?:\..*)?$")
WINDOWS_NAMES = os.name == "nt"  # this file system refuses what Windows refuses


def windows_name_verdict(rel: str) -> tuple[str, str, str] | None:
    """What Windows refuses in the vault path `rel`: ``(kind, name, char)`` for the first
    refused name, kind ``char`` (`char` is the character), ``trailing`` (a dot or a space
    ends it) or ``device`` (``CON``, ``lpt1.md``), or None. The plugin's `windowsNameVerdict`
    decides the same (tests/vectors/rules_v1.json)."""
    for seg in rel.split("/"):
        m = _WINDOWS_CHARS.search(seg)
        if m:
            return ("char", seg, m.group())
        if seg.endswith((".", " ")):
            return ("trailing", seg, seg[-1])
        if _WINDOWS_DEVICES.match(seg):
            return ("device", seg, "")
    return None


def windows_name_problem(rel: str) -> str | None:
    """Why Windows cannot hold the vault path `rel`, or None. An agent on Linux can make such
    a name; a person's Windows device keeps its change as a problem of that file."""
    verdict = windows_name_verdict(rel)
    if verdict is None:
        return None
    kind, seg, char = verdict
    name = shown(seg, SHOWN_PATH)
    if kind == "char":
        return f"the name '{name}' contains '{char}', which Windows does not allow"
    if kind == "trailing":
        return f"the name '{name}' ends with a dot or a space, which Windows does not allow"
    return f"'{name}' is a device name on Windows, not a file name"


@contextmanager
def name_errors(rel: str) -> Iterator[None]:
    """Turn the file system's refusal of `rel`'s name into `UnusableName`; every other error
    (a full disk, a read-only mount) stops the round as before."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in _NAME_ERRNOS:
            raise
        raise UnusableName(
            f"this file system cannot hold the path '{shown(rel, SHOWN_PATH)}' "
            f"({len(rel.encode())} bytes): {exc.strerror}"
        ) from None


def is_temp_name(name: str) -> bool:
    """True for the engine's own temporary files (never synced, never reported)."""
    return name.startswith(TEMP_PREFIX)


# Unicode's bidirectional controls: embeddings, overrides, isolates and the invisible marks.
# In a name they make it read otherwise than it is (`\u202egnp.md` shows as `dm.png`), the
# "Trojan Source" trick; no name needs them, so every path rule refuses them (issue 44.8).
BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def normalize(rel: str) -> str:
    """The canonical form of a vault-relative path, or `UnsafePath`.

    Backslashes are taken as separators (a path typed on Windows); everything else that is not
    a plain relative path is refused rather than repaired, so two spellings never map to one
    file silently. A ':' is a name character here, also after a first letter: `Q: open
    questions.md` is a note on Linux, macOS and Android, not a drive. Where the file system has
    drive letters, `resolve_inside` refuses it as Windows refuses any ':' (`UnusableName`, a
    problem of that one file), before it could ever be joined as a drive.
    """
    if not isinstance(rel, str) or not rel:
        raise UnsafePath("empty path")
    p = unicodedata.normalize("NFC", rel).replace("\\", "/")
    shown = ascii(rel)[1:-1][:200]
    if re.search(r"[\x00-\x1f\x7f]", p):
        raise UnsafePath(f"path {shown!r} contains a control character")
    if not is_unicode(p):
        raise UnsafePath(f"path {shown!r} is not valid UTF-8")
    if p.startswith("/"):
        raise UnsafePath(f"path {shown!r} is absolute, expected a path inside the vault")
    if BIDI_CONTROLS.search(p):
        raise UnsafePath(
            f"path {shown!r} contains a bidirectional text control, which shows the name "
            "other than it is"
        )
    for seg in p.split("/"):
        if seg == "":
            raise UnsafePath(f"path {shown!r} has an empty segment")
        if seg in (".", ".."):
            raise UnsafePath(f"path {shown!r} contains '{seg}'")
        if is_temp_name(seg):
            raise UnsafePath(f"path {shown!r} is an engine temporary file")
        first = unicodedata.normalize("NFKC", seg[0])
        if (seg[0] != "." and first == ".") or unicodedata.normalize("NFKC", seg) in (".", ".."):
            raise UnsafePath(
                f"path {shown!r} starts a name with a character that looks like a dot: it "
                "would pass for a hidden folder or '..'"
            )
    return p


def name_problem(name: str) -> str | None:
    """Why a single on-disk file name cannot be synced as is, or None.

    Cheap enough for every entry of a scan. Non-NFC names are not a problem here: the scanner
    renames or maps them.
    """
    if not is_unicode(name):
        return "its name is not valid UTF-8 (rename it)"
    if BAD_NAME_CHARS.search(name):
        return "its name contains a backslash or a control character"
    if BIDI_CONTROLS.search(name):
        return "its name contains a bidirectional text control (it shows otherwise than it is)"
    if name and name[0] != "." and unicodedata.normalize("NFKC", name[0]) == ".":
        return "its name starts with a character that looks like a dot (rename it)"
    if name in (".", ".."):
        return "reserved name"
    return None


def fold(rel: str) -> str:
    """The key two names share when a case-insensitive file system opens one file: NFC, upper
    case, then lower case, NFC (`ß` and `SS`, `ſ` and `s`, the Kelvin sign and `K`, `ı` and
    `i` meet, as in the upper-case tables of NTFS and APFS). The one fold of both engines
    (the plugin's `paths.fold`; tests/vectors/rules_v1.json) for case collisions and holds."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", rel).upper().lower())


def resolve_inside(root: str | os.PathLike[str], rel: str) -> Path:
    """The absolute location of `rel` inside the vault at `root`.

    Raises `UnsafePath` if `rel` is not a valid relative path or if any existing component on the
    way (the final one included) is a symbolic link: a link could point anywhere, so the engine
    neither reads nor writes through one. Missing components are fine (the caller creates them).
    """
    p = normalize(rel)
    if WINDOWS_NAMES and (why := windows_name_problem(p)):
        raise UnusableName(why)
    parts = p.split("/")
    base = os.path.realpath(root)
    cur = base
    with name_errors(rel):
        for i, seg in enumerate(parts):
            cur = os.path.join(cur, seg)
            try:
                st = os.lstat(cur)
            except (FileNotFoundError, NotADirectoryError):
                break
            if stat.S_ISLNK(st.st_mode):
                via = "/".join(parts[: i + 1])
                raise UnsafePath(f"path {rel!r} goes through the symbolic link {via!r}; refused")
            if i < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
                break  # a file where a folder should be: the operation itself will fail
    return Path(base, *parts)


def make_parents(root: str | os.PathLike[str], rel: str) -> Path:
    """Create the missing folders above `rel` inside the vault; returns the resolved path."""
    target = resolve_inside(root, rel)
    with name_errors(rel):
        target.parent.mkdir(parents=True, exist_ok=True)
    # mkdir may have raced with a link being planted: check the result again
    return resolve_inside(root, rel)


def is_case_insensitive_fs(root: str | os.PathLike[str]) -> bool:
    """Probe whether the file system holding `root` treats names case-insensitively."""
    fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX + "case-", dir=os.fspath(root))
    os.close(fd)
    try:
        p = Path(name)
        return os.path.lexists(p.with_name(p.name.upper()))
    finally:
        os.unlink(name)
