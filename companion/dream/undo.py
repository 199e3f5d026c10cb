"""`companion dream VAULT --undo DATE`: put back every file a day's dreams changed.

The day's report is the snapshot: each change holds the whole file before and after, with
their SHA-256. Undo walks the changes newest first. A file that still holds exactly what the
dream wrote (its `after`) gets its pre-dream bytes back; one that already holds them (undone
on another device and synced here) is left as it is; a note a person wrote in after the dream
loses only the dream's own lines (`companion.dream.unwrite`: when the dream only added lines
and the person touched none of them). Any other edit since the dream refuses the whole undo:
nothing is restored and the error names the files. MEMORY.md and USER.md are restored under
the same lock the agent takes; on a device without them (the laptop, when the agent runs on the
server) they are left for an undo on that device, and the result says so. Files put back
exactly are recorded as the dream's own writes in its device state, so the next dream does not
take them for a person's recent edit. Undone lessons are remembered in the ledger, so the next
dream does not write them again, and the report is marked `undone_at` once nothing is left to
undo.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from filelock import FileLock

from companion.dream.ledger import Ledger
from companion.dream.plan import atomic_write
from companion.dream.report import MEMORY_NOTES, Change, load_report, write_json_atomic
from companion.dream.state import DreamState
from companion.dream.unwrite import revert_own_lines
from companion.errors import CompanionError, InputError
from companion.paths import device_paths


class UndoRefused(CompanionError):
    """Undo would lose an edit made after the dream; nothing was restored."""


@dataclass
class UndoResult:
    date: str
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)  # memory files not on this device


def _locate(change: Change, vault: Path, memories: Path) -> Path:
    if change.note in MEMORY_NOTES:
        return memories / change.note
    rel = PurePosixPath(change.note)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise UndoRefused(f"the report names a file outside the vault: {change.note}")
    return vault.joinpath(*rel.parts)


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


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


def undo_dream(
    vault: Path,
    date: str,
    memories: Path,
    *,
    now: dt.datetime | None = None,
    state: DreamState | None = None,
) -> UndoResult:
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise InputError(f"--undo needs a date as YYYY-MM-DD, got {date!r}") from None
    report = load_report(vault, date)
    if report is None:
        raise InputError(f"no dream report for {date} in {vault}")
    if report.undone_at:
        raise CompanionError(f"the dream of {date} was already undone at {report.undone_at}")
    changes = list(reversed(report.changes))
    result = UndoResult(date)
    if not memories.is_dir():
        # The agent's memory files live on another device (the server): undo them there.
        result.elsewhere = sorted({c.note for c in changes if c.note in MEMORY_NOTES})
        changes = [c for c in changes if c.note not in MEMORY_NOTES]
    # Check every file before touching any: it must hold what the dream wrote last (its
    # newest change's `after`), or already hold what it had before the dream (undone on
    # another device and synced here: nothing to do).
    chains: dict[Path, list[Change]] = {}
    for ch in changes:  # newest first
        chains.setdefault(_locate(ch, vault, memories), []).append(ch)
    todo: list[Change] = []
    edited = []
    merged: dict[Path, tuple[Change, bytes, str]] = {}  # path -> (newest, seen bytes, result)
    for path, chain in chains.items():
        data = _read(path)
        now_sha = _sha(data)
        if now_sha == chain[0].after_sha256:
            todo.extend(chain)
        elif now_sha != chain[-1].before_sha256:
            kept = _own_lines_out(chain, data)
            if kept is None:
                edited.append(str(path))
            else:
                assert data is not None
                merged[path] = (chain[0], data, kept)
    if edited:
        raise UndoRefused(
            f"cannot undo the dream of {date}: edited since the dream: {', '.join(edited)}. "
            "Nothing was restored"
        )
    for ch in [c for c in changes if c in todo]:
        path = _locate(ch, vault, memories)
        lock = None
        if ch.note in MEMORY_NOTES:
            lock = FileLock(path.with_name(path.name + ".lock"), timeout=10)
            lock.acquire()
        try:
            if _sha(_read(path)) != ch.after_sha256:
                raise UndoRefused(f"{path} changed while undoing; the rest was not restored")
            if ch.before is None:
                path.unlink(missing_ok=True)
                result.removed.append(ch.note)
            else:
                atomic_write(path, ch.before.encode("utf-8"))
                if ch.note not in result.restored:
                    result.restored.append(ch.note)
        finally:
            if lock is not None:
                lock.release()
    for path, (ch, seen, kept) in merged.items():
        if _read(path) != seen:
            raise UndoRefused(f"{path} changed while undoing; the rest was not restored")
        atomic_write(path, kept.encode("utf-8"))
        result.restored.append(ch.note)
    _record_restores(vault, report.changes, result, state)
    ledger = Ledger.load(vault)
    for ch in report.changes:
        for key in ch.keys:
            ledger.reject(key, date)
    ledger.save()
    stamp = (now or dt.datetime.now(dt.UTC)).isoformat()
    if not result.elsewhere:
        report.undone_at = stamp
    assert report.path is not None
    write_json_atomic(report.path, report.to_dict())
    return result
