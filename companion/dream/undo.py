"""Reverting a dream: one change (the review window) or a whole day (`companion dream --undo
DATE`, and the review window's "Revert the whole dream"). The one implementation of both.

The day's report is the snapshot: each change holds the whole file before and after, with
their SHA-256. Undo walks the changes newest first. A file that still holds exactly what the
dream wrote (its newest change's `after`) gets its pre-dream bytes back; one that already holds
them (undone on another device and synced here) is left as it is; a note a person wrote in after
the dream loses only the dream's own lines (`companion.dream.unwrite`: when the dream only added
lines and the person touched none of them). Any other edit since the dream refuses the whole
undo: nothing is restored and the error names the files. A `before` snapshot that no longer
matches its recorded checksum is refused. MEMORY.md and USER.md are restored under the same lock
the agent takes; on a device without them (the laptop, when the agent runs on the server) they
are left for an undo on that device, and the result says so. The write is an atomic replace, so
the sync engine carries it to the other copies. Files put back exactly are recorded as the
dream's own writes in its device state, so the next dream does not take them for a person's
recent edit. Undone lessons are remembered in the ledger, so the next dream does not write them
again, and the report is marked `undone_at` once nothing of the day is left to undo.

Refusals are `RevertRefused` with a `reason` code (and the note concerned), so the desktop
app words them in its own language; the English message is for the command line.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from filelock import FileLock

from companion.dream.ledger import Ledger
from companion.dream.report import MEMORY_NOTES, Change, DreamReport, load_report, write_json_atomic
from companion.dream.state import DreamState
from companion.dream.unwrite import revert_own_lines
from companion.errors import CompanionError, InputError
from companion.fileio import KEEP, write_atomic
from companion.paths import device_paths

# RevertRefused.reason
EDITED_SINCE = "edited_since"  # the file changed after the dream
OUTSIDE_VAULT = "outside_vault"  # the report names a path outside the vault
BAD_SNAPSHOT = "bad_snapshot"  # `before` does not match its recorded checksum
NO_SNAPSHOT = "no_snapshot"  # the report has a checksum but no `before` text
NO_MEMORIES = "no_memories"  # MEMORY.md / USER.md are not on this device
UNKNOWN_CHANGE = "unknown_change"
DREAM_REFUSED = "dream_refused"  # a whole-day revert refused: `parts` says why, per file


class RevertRefused(CompanionError):
    """A revert that would lose an edit or cannot be done; nothing was written."""

    def __init__(
        self, reason: str, note: str, message: str, parts: tuple[RevertRefused, ...] = ()
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.note = note  # the note concerned (a change id for UNKNOWN_CHANGE, a date for DAY)
        self.parts = parts


UndoRefused = RevertRefused  # the name `companion dream --undo` has always raised


@dataclass
class UndoResult:
    date: str
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)  # memory files not on this device


@dataclass(frozen=True)
class NoteLocator:
    """Turns a report's `note` into a file: vault-relative notes, or the Hermes memory files
    (`memories`: the `memories/` folder of the Hermes home; None or absent: not here)."""

    vault: Path
    memories: Path | None = None

    def here(self, note: str) -> bool:
        """Whether the file lives on this device (the memory files may not)."""
        return note not in MEMORY_NOTES or (self.memories is not None and self.memories.is_dir())

    def resolve(self, note: str) -> Path:
        if note in MEMORY_NOTES:
            if not self.here(note):
                raise RevertRefused(
                    NO_MEMORIES,
                    note,
                    f"{note} is not on this device (the agent's Hermes home); revert it there",
                )
            assert self.memories is not None
            return self.memories / note
        rel = PurePosixPath(note.replace("\\", "/"))
        outside = RevertRefused(
            OUTSIDE_VAULT, note, f"the report names a file outside the vault: {note}"
        )
        if rel.is_absolute() or not rel.parts or ".." in rel.parts:
            raise outside
        path = self.vault.joinpath(*rel.parts)
        if not path.resolve().is_relative_to(self.vault.resolve()):
            raise outside
        return path


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def note_status(change: Change, locator: NoteLocator) -> str:
    """ "applied" (the file holds what this change wrote), "reverted" (what it held before),
    "edited" (anything else: the person or a later change edited it) or "elsewhere" (the
    agent's memory files, on the agent's machine, not this one)."""
    if not locator.here(change.note):
        return "elsewhere"
    try:
        current = _sha(_read(locator.resolve(change.note)))
    except (RevertRefused, OSError):
        return "edited"
    if current == change.expected_after_sha256:
        return "applied"
    if current == (change.recorded_before_sha256 or change.before_sha256):
        return "reverted"
    return "edited"


@dataclass(frozen=True)
class _Step:
    """Put `path` back from `newest.after` to `oldest.before` (a chain of changes to it)."""

    note: str
    path: Path
    newest: Change
    oldest: Change


def _target(oldest: Change) -> bytes | None:
    """The bytes to write back (None: remove the file the dream created)."""
    if oldest.before is None:
        if oldest.recorded_before_sha256:
            raise RevertRefused(
                NO_SNAPSHOT,
                oldest.note,
                f"the report keeps no copy of {oldest.note} from before the dream",
            )
        return None
    if not oldest.snapshot_intact():
        raise RevertRefused(
            BAD_SNAPSHOT,
            oldest.note,
            f"the report's copy of {oldest.note} does not match its checksum; not reverted",
        )
    return oldest.before.encode("utf-8")


def _check(step: _Step) -> None:
    if _sha(_read(step.path)) != step.newest.expected_after_sha256:
        raise RevertRefused(
            EDITED_SINCE,
            step.note,
            f"{step.note} changed after the dream (edited by you or a later change)",
        )


def _apply(step: _Step, result: UndoResult) -> None:
    target = _target(step.oldest)
    lock = None
    if step.note in MEMORY_NOTES:  # one writer at a time: the sidecar lock Hermes takes
        lock = FileLock(step.path.with_name(step.path.name + ".lock"), timeout=10)
        lock.acquire()
    try:
        _check(step)  # again, right before writing: the person may have saved meanwhile
        if target is None:
            step.path.unlink(missing_ok=True)
            result.removed.append(step.note)
        else:
            write_atomic(step.path, target, mode=KEEP, make_parents=True)
            result.restored.append(step.note)
    finally:
        if lock is not None:
            lock.release()


def _own_lines_out(chain: list[Change], now: bytes | None) -> str | None:
    """A note a person wrote in since the dream: its text without the dream's own lines
    (`companion.dream.unwrite`), or None when that would touch what the person wrote."""
    newest, oldest = chain[0], chain[-1]
    if newest.note in MEMORY_NOTES or now is None or newest.after is None:
        return None
    try:
        current = now.decode("utf-8")
    except UnicodeDecodeError:
        return None
    crlf = "\r\n" in newest.after

    def lf(t: str | None) -> str | None:
        return t.replace("\r\n", "\n") if t is not None and crlf else t

    kept = revert_own_lines(lf(oldest.before), lf(newest.after) or "", lf(current) or "")
    if kept is None:
        return None
    return kept.replace("\n", "\r\n") if crlf else kept


def _record_restores(
    vault: Path, changes: list[Change], result: UndoResult, state: DreamState | None
) -> None:
    """Files put back exactly as they were are the dream's own writes, not a person's edit
    (else the next dream would leave them alone for a day); a file merged with a person's
    newer edit stays theirs."""
    if state is None:
        state = DreamState.for_vault(device_paths().data_dir, vault)
    for note in [*result.restored, *result.removed]:
        if note in MEMORY_NOTES:
            continue
        oldest = next((c for c in changes if c.note == note), None)
        data = _read(vault / note)
        if oldest is not None and data == (
            oldest.before.encode("utf-8") if oldest.before is not None else None
        ):
            state.record_write(note, data)
    try:
        state.save()
    except OSError:
        pass  # the next dream treats the files as a person's recent edit: the safe side


def _reject(vault: Path, changes: list[Change], date: str) -> None:
    """Lessons a person reverted are not written again by later dreams."""
    keys = [k for c in changes for k in c.keys]
    if not keys:
        return
    ledger = Ledger.load(vault)
    for key in keys:
        ledger.reject(key, date)
    ledger.save()


def revert_change(
    report: DreamReport,
    change_id: str,
    locator: NoteLocator,
    *,
    state: DreamState | None = None,
) -> Path:
    """Put one change's file back as it was before that change; refuse if edited since (a
    later change to the same file must be reverted first)."""
    change = report.change(change_id)
    if change is None:
        raise RevertRefused(UNKNOWN_CHANGE, change_id, f"the report has no change {change_id!r}")
    step = _Step(change.note, locator.resolve(change.note), change, change)
    _target(change)
    _check(step)
    result = UndoResult(report.date)
    _apply(step, result)
    _record_restores(locator.vault, [change], result, state)
    _reject(locator.vault, [change], report.date)
    return step.path


def revert_dream(
    report: DreamReport,
    locator: NoteLocator,
    *,
    now: dt.datetime | None = None,
    state: DreamState | None = None,
) -> UndoResult:
    """Revert every change of the report's day, or none: every file is checked first."""
    result = UndoResult(report.date)
    chains: dict[str, list[Change]] = {}
    for change in reversed(report.changes):  # newest first
        if not locator.here(change.note):
            if change.note not in result.elsewhere:
                result.elsewhere.append(change.note)
            continue
        chains.setdefault(change.note, []).append(change)
    result.elsewhere.sort()
    steps: list[_Step] = []
    merged: list[tuple[_Step, bytes, str]] = []  # a person wrote in it: the dream's lines out
    refused: list[RevertRefused] = []
    for note, chain in chains.items():
        try:
            step = _Step(note, locator.resolve(note), chain[0], chain[-1])
            _target(step.oldest)
            data = _read(step.path)
            current = _sha(data)
            if current == step.newest.expected_after_sha256:
                steps.append(step)
            elif current != (step.oldest.recorded_before_sha256 or step.oldest.before_sha256):
                kept = _own_lines_out(chain, data)
                if kept is None:
                    _check(step)  # raises EDITED_SINCE
                else:
                    assert data is not None
                    merged.append((step, data, kept))
        except RevertRefused as exc:
            refused.append(exc)
    if refused:
        names = ", ".join(r.note for r in refused)
        raise RevertRefused(
            DREAM_REFUSED,
            report.date,
            f"cannot undo the dream of {report.date}: {names}: "
            + "; ".join(str(r) for r in refused)
            + ". Nothing was restored",
            tuple(refused),
        )
    for step in steps:
        _apply(step, result)
    for step, seen, kept in merged:
        if _read(step.path) != seen:
            raise RevertRefused(
                EDITED_SINCE, step.note, f"{step.note} changed while undoing; the rest was kept"
            )
        write_atomic(step.path, kept.encode("utf-8"), mode=KEEP)
        result.restored.append(step.note)
    _record_restores(locator.vault, list(report.changes), result, state)
    _reject(locator.vault, list(report.changes), report.date)
    if not result.elsewhere and report.path is not None:
        report.undone_at = (now or dt.datetime.now(dt.UTC)).isoformat()
        write_json_atomic(report.path, report.to_dict())
    return result


def undo_dream(
    vault: Path,
    date: str,
    memories: Path | None,
    *,
    now: dt.datetime | None = None,
    state: DreamState | None = None,
) -> UndoResult:
    """`companion dream VAULT --undo DATE`."""
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise InputError(f"--undo needs a date as YYYY-MM-DD, got {date!r}") from None
    report = load_report(vault, date)
    if report is None:
        raise InputError(f"no dream report for {date} in {vault}")
    if report.undone_at:
        raise CompanionError(f"the dream of {date} was already undone at {report.undone_at}")
    return revert_dream(report, NoteLocator(vault, memories), now=now, state=state)
