"""What to do when a file changed both here and on another device: a pure decision.

`resolve` takes the local version, the remote head and (for text) the last common version, and
returns what the note must contain, whether that must be written locally and/or pushed, and the
conflict copy to create, if any. Rules, in order:

1. Both sides hold the same content (or both deleted): nothing to do.
2. One side is unchanged since the common version: take the other (a plain update).
3. Deleted on one side, edited on the other: keep the edit (the file comes back).
4. Text on both sides with a known common version: three-way merge; a clean merge is used.
5. Otherwise (overlapping edits, binary files, unknown base) a true conflict: a human device's
   version stays in the note and an agent device's goes to a conflict copy next to it; between
   two devices of the same kind the remote head wins (it reached the relay first) and the local
   version goes to the copy. Nothing is ever silently overwritten: every version that is not
   in the note is in the copy (or was already the common version, kept in the relay history).

Conflict copies are named ``Note (conflict DEVICE YYYY-MM-DD HHMM).md``.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from companion.sync.round.merge import is_text, merge_bytes
from companion.sync.state.kinds import AGENT, HUMAN, KINDS

MAX_NAME_BYTES = 255
_BAD_DEVICE_CHARS = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]+')


def _never(_: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Version:
    """One side of a conflict: content (None when deleted) and the device that wrote it."""

    data: bytes | None
    device_name: str
    device_kind: str

    def __post_init__(self) -> None:
        if self.device_kind not in KINDS:
            raise ValueError(f"device kind must be one of {KINDS}, got {self.device_kind!r}")

    @property
    def deleted(self) -> bool:
        return self.data is None


class Outcome(StrEnum):
    IDENTICAL = "identical"
    BOTH_DELETED = "both_deleted"
    TAKE_REMOTE = "take_remote"  # local unchanged since the common version
    KEEP_LOCAL = "keep_local"  # remote unchanged since the common version
    KEEP_EDIT = "keep_edit"  # delete against edit: the edit survives
    MERGED = "merged"
    LOCAL_WINS = "local_wins"  # conflict: local stays in the note, remote to a copy
    REMOTE_WINS = "remote_wins"  # conflict: remote in the note, local to a copy


@dataclass(frozen=True, slots=True)
class ConflictCopy:
    path: str
    data: bytes
    device_name: str
    device_kind: str


@dataclass(frozen=True, slots=True)
class Resolution:
    """`note` is the note's content afterwards (None: deleted). `write_local`: the local file
    must be replaced by it; `push`: it must be committed as a new revision. `copy`, when set,
    is a new file to create locally and push."""

    outcome: Outcome
    note: bytes | None
    write_local: bool
    push: bool
    copy: ConflictCopy | None = None
    message: str = ""


def sanitize_device(name: str) -> str:
    """A device name that is safe inside a file name on every platform."""
    clean = " ".join(unicodedata.normalize("NFC", name).split())  # tabs, newlines -> a space
    clean = _BAD_DEVICE_CHARS.sub("_", clean).strip(" .")
    clean = clean[:40].strip(" .")
    return clean or "unknown device"


def _fit(stem: str, suffix: str, ext: str) -> str:
    """stem + suffix + ext, the stem shortened so the name fits in MAX_NAME_BYTES."""
    budget = MAX_NAME_BYTES - len((suffix + ext).encode("utf-8"))
    short = stem.encode("utf-8")[: max(budget, 1)].decode("utf-8", "ignore")
    return short + suffix + ext


def _variant(path: str, tag: str, taken: Callable[[str], bool]) -> str:
    folder, _, name = path.rpartition("/")
    stem, ext = posixpath.splitext(name)
    n = 1
    while True:
        label = tag if n == 1 else f"{tag} {n}"
        cand_name = _fit(stem, f" ({label})", ext)
        cand = f"{folder}/{cand_name}" if folder else cand_name
        if not taken(cand):
            return cand
        n += 1


def conflict_copy_name(
    path: str, device: str, when: datetime, taken: Callable[[str], bool] = _never
) -> str:
    """``dir/Note (conflict DEVICE YYYY-MM-DD HHMM).md``, with `` 2``, `` 3``... if `taken`."""
    tag = f"conflict {sanitize_device(device)} {when:%Y-%m-%d %H%M}"
    return _variant(path, tag, taken)


# What `conflict_copy_name` writes, read back: "<stem> (conflict <device> <date> <HHMM>[ N])"
# then the extension, if any (the date and time are fixed-width).
_CONFLICT_NAME = re.compile(r"^.+ \(conflict .+ \d{4}-\d{2}-\d{2} \d{4}(?: \d+)?\)(?:\.[^.]*)?$")


def is_conflict_copy(name: str) -> bool:
    """True for a file name `conflict_copy_name` wrote: "Note (conflict laptop 2025-11-28
    1403).md", the second that minute "... 1403 2).md", "Makefile (conflict pc ... 1403)"."""
    return _CONFLICT_NAME.match(name) is not None


def case_collision_name(path: str, taken: Callable[[str], bool] = _never) -> str:
    """A local name for a file whose name collides with another on a case-insensitive disk."""
    return _variant(path, "case conflict", taken)


def unicode_twin_name(path: str, taken: Callable[[str], bool] = _never) -> str:
    """A name for the decomposed (NFD) twin of the NFC file `path` in the same folder:
    ``naïve (unicode conflict).md``. Both spellings cannot sync (every device sees one name)."""
    return _variant(path, "unicode conflict", taken)


# Names the engine gives to a second version of a note, besides conflict copies.
_NAME_COPY = re.compile(r"^.+ \((?:case|unicode) conflict(?: \d+)?\)(?:\.[^.]*)?$")


def is_kept_copy(name: str) -> bool:
    """A conflict copy, or a file kept under another name because its name collided (case,
    Unicode spelling): what `companion status` lists as conflicts to look at."""
    return is_conflict_copy(name) or _NAME_COPY.match(name) is not None


def _done(
    outcome: Outcome,
    local: Version,
    remote: Version,
    note: bytes | None,
    message: str,
    copy: ConflictCopy | None = None,
) -> Resolution:
    return Resolution(
        outcome=outcome,
        note=note,
        write_local=note != local.data,
        push=note != remote.data,
        copy=copy,
        message=message,
    )


def resolve(
    path: str,
    local: Version,
    remote: Version,
    base: bytes | None,
    *,
    when: datetime,
    taken: Callable[[str], bool] = _never,
) -> Resolution:
    """Decide a file changed on both sides. `base` is the last common content (None: unknown).

    `when` stamps a conflict copy's name; `taken` says whether a candidate copy path is already
    used (pass a case-insensitive check on such file systems). Pure: touches no file.
    """
    ours, theirs = local.data, remote.data
    if ours is None and theirs is None:
        return _done(Outcome.BOTH_DELETED, local, remote, None, f"{path}: deleted on both sides")
    if ours == theirs:
        return _done(Outcome.IDENTICAL, local, remote, ours, f"{path}: same content on both sides")
    if base is not None:
        if ours is not None and ours == base:
            return _done(
                Outcome.TAKE_REMOTE,
                local,
                remote,
                theirs,
                f"{path}: updated from {remote.device_name}",
            )
        if theirs is not None and theirs == base:
            return _done(Outcome.KEEP_LOCAL, local, remote, ours, f"{path}: local change kept")
    if ours is None or theirs is None:
        editor = remote if ours is None else local
        deleter = local if ours is None else remote
        return _done(
            Outcome.KEEP_EDIT,
            local,
            remote,
            editor.data,
            f"{path}: deleted on {deleter.device_name} but edited on {editor.device_name}; "
            "the edit is kept",
        )
    if base is not None and is_text(base) and is_text(ours) and is_text(theirs):
        merged = merge_bytes(base, ours, theirs)
        if merged.clean and merged.text is not None:
            return _done(
                Outcome.MERGED,
                local,
                remote,
                merged.text.encode("utf-8"),
                f"{path}: merged edits from {local.device_name} and {remote.device_name}",
            )
    local_wins = local.device_kind == HUMAN and remote.device_kind == AGENT
    winner, loser = (local, remote) if local_wins else (remote, local)
    assert loser.data is not None and winner.data is not None
    copy_path = conflict_copy_name(path, loser.device_name, when, taken)
    copy = ConflictCopy(copy_path, loser.data, loser.device_name, loser.device_kind)
    why = (
        "a person's edit wins over an agent's"
        if winner.device_kind == HUMAN and loser.device_kind == AGENT
        else "the version that reached the relay first wins"
    )
    return _done(
        Outcome.LOCAL_WINS if local_wins else Outcome.REMOTE_WINS,
        local,
        remote,
        winner.data,
        f"{path}: conflict; kept {winner.device_name}'s version ({why}), "
        f"{loser.device_name}'s saved as {copy_path!r}",
        copy,
    )
