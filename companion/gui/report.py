"""Dream reports: load `.companion/dreams/YYYY-MM-DD.json`, diff a change, revert it safely.

The loader is tolerant (optional fields may be missing; a report from a newer dream with extra
fields still loads). A revert writes the `before` snapshot back only when the note still holds
exactly what the dream wrote (sha256 match): a note the person edited since is never touched.
The write is a plain atomic file replace, so the sync engine sees it as the person's own edit.
Qt-free: the review window is a thin layer over this module.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from filelock import FileLock

from companion.errors import CompanionError
from companion.gui.i18n import tr

KINDS: tuple[str, ...] = ("consolidated", "corrected", "promoted", "represented", "recorded")
MEMORY_FILES: frozenset[str] = frozenset({"MEMORY.md", "USER.md"})


class ReportError(CompanionError):
    """A dream report that cannot be read."""


class RevertRefused(CompanionError):
    """A revert that would lose an edit or cannot be done; the message says why."""


@dataclass(frozen=True)
class Provenance:
    source: str
    quote: str = ""
    line: int | None = None
    message_id: str | None = None

    def describe(self) -> str:
        where = self.source
        if self.line is not None:
            where += f":{self.line}"
        if self.message_id:
            where += f" #{self.message_id}"
        return where


@dataclass(frozen=True)
class DreamChange:
    id: str
    kind: str
    note: str
    summary: str = ""
    before: str | None = None
    after: str | None = None
    before_sha256: str | None = None
    after_sha256: str | None = None
    provenance: tuple[Provenance, ...] = ()

    def diff_lines(self, context: int = 3) -> list[str]:
        """Unified diff of before/after (lines without trailing newlines)."""
        before = (self.before or "").splitlines()
        after = (self.after or "").splitlines()
        return list(
            difflib.unified_diff(
                before,
                after,
                fromfile=f"a/{self.note}" if self.before is not None else "/dev/null",
                tofile=f"b/{self.note}" if self.after is not None else "/dev/null",
                n=context,
                lineterm="",
            )
        )


@dataclass(frozen=True)
class DreamReport:
    date: str
    ran_on: str
    changes: tuple[DreamChange, ...]
    counts: dict[str, int] = field(default_factory=dict)
    path: Path | None = None

    def change(self, change_id: str) -> DreamChange:
        for c in self.changes:
            if c.id == change_id:
                return c
        raise RevertRefused(tr("revert.unknown_change", id=change_id))


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _provenance(items: Any) -> tuple[Provenance, ...]:
    out = []
    for p in items if isinstance(items, list) else []:
        if isinstance(p, dict):
            out.append(
                Provenance(
                    source=str(p.get("source") or "?"),
                    quote=str(p.get("quote") or ""),
                    line=_opt_int(p.get("line")),
                    message_id=_opt_str(p.get("message_id")),
                )
            )
    return tuple(out)


def parse_report(data: Any, path: Path | None = None) -> DreamReport:
    """A report from its decoded JSON, tolerant of missing optional fields."""
    if not isinstance(data, dict):
        raise ReportError(tr("report.not_object", path=path or "?"))
    changes = []
    for i, raw in enumerate(data.get("changes") or []):
        if not isinstance(raw, dict) or not isinstance(raw.get("note"), str):
            continue  # nothing sensible to show or revert without the note it touched
        changes.append(
            DreamChange(
                id=str(raw.get("id") or f"change-{i + 1}"),
                kind=str(raw.get("kind") or "changed"),
                note=raw["note"],
                summary=str(raw.get("summary") or ""),
                before=_opt_str(raw.get("before")),
                after=_opt_str(raw.get("after")),
                before_sha256=_opt_str(raw.get("before_sha256")),
                after_sha256=_opt_str(raw.get("after_sha256")),
                provenance=_provenance(raw.get("provenance")),
            )
        )
    counts_raw = data.get("counts")
    if isinstance(counts_raw, dict):
        counts = {str(k): v for k, v in counts_raw.items() if _opt_int(v) is not None}
    else:
        counts = {}
        for c in changes:
            counts[c.kind] = counts.get(c.kind, 0) + 1
    date = str(data.get("date") or (path.stem if path else ""))
    return DreamReport(date, str(data.get("ran_on") or "server"), tuple(changes), counts, path)


def load_report(path: Path) -> DreamReport:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(tr("report.unreadable", path=path, error=exc)) from None
    return parse_report(data, Path(path))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class NoteLocator:
    """Turns a report's `note` into a file: vault-relative notes, or Hermes memory files."""

    vault: Path
    memories: Path | None = None

    def resolve(self, note: str) -> Path:
        if note in MEMORY_FILES:
            if self.memories is None:
                raise RevertRefused(tr("revert.no_memories", note=note))
            return self.memories / note
        rel = PurePosixPath(note.replace("\\", "/"))
        if rel.is_absolute() or not rel.parts or ".." in rel.parts:
            raise RevertRefused(tr("revert.outside_vault", note=note))
        path = self.vault.joinpath(*rel.parts)
        root = self.vault.resolve()
        if not path.resolve().is_relative_to(root):
            raise RevertRefused(tr("revert.outside_vault", note=note))
        return path


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _expected_after(change: DreamChange) -> str | None:
    """sha256 the note must have now (None: the note must not exist)."""
    if change.after_sha256:
        return change.after_sha256
    if change.after is not None:
        return sha256_bytes(change.after.encode("utf-8"))
    return None


def _target_before(change: DreamChange) -> bytes | None:
    """The bytes to write back (None: remove the note the dream created)."""
    if change.before is None:
        if change.before_sha256:
            raise RevertRefused(tr("revert.no_snapshot", note=change.note))
        return None
    data = change.before.encode("utf-8")
    if change.before_sha256 and sha256_bytes(data) != change.before_sha256:
        raise RevertRefused(tr("revert.bad_snapshot", note=change.note))
    return data


@dataclass(frozen=True)
class _Plan:
    note: str
    path: Path
    expected_sha: str | None
    target: bytes | None


def _plan(first: DreamChange, last: DreamChange, locator: NoteLocator) -> _Plan:
    path = locator.resolve(first.note)
    plan = _Plan(first.note, path, _expected_after(last), _target_before(first))
    _check(plan)
    return plan


def _check(plan: _Plan) -> None:
    current = _read(plan.path)
    current_sha = sha256_bytes(current) if current is not None else None
    if current_sha != plan.expected_sha:
        raise RevertRefused(tr("revert.edited_since", note=plan.note))


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return  # not every platform can open a directory (Windows)
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def _apply(plan: _Plan) -> Path:
    lock = None
    if plan.note in MEMORY_FILES:  # one writer at a time, the same sidecar lock Hermes takes
        lock = FileLock(plan.path.with_name(plan.path.name + ".lock"), timeout=10)
        lock.acquire()
    try:
        _check(plan)  # again, right before writing: the person may have saved meanwhile
        if plan.target is None:
            plan.path.unlink()
        else:
            _atomic_write(plan.path, plan.target)
    finally:
        if lock is not None:
            lock.release()
    return plan.path


def note_status(change: DreamChange, locator: NoteLocator) -> str:
    """ "applied" (the note holds what the dream wrote), "reverted" (it holds the earlier text)
    "edited" (anything else: the person or a later change edited it), or "elsewhere" (the
    agent's memory files, which live on the agent's machine, not on this one)."""
    if change.note in MEMORY_FILES and locator.memories is None:
        return "elsewhere"
    try:
        current = _read(locator.resolve(change.note))
    except (RevertRefused, OSError):
        return "edited"
    current_sha = sha256_bytes(current) if current is not None else None
    if current_sha == _expected_after(change):
        return "applied"
    before_sha = change.before_sha256 or (
        sha256_bytes(change.before.encode("utf-8")) if change.before is not None else None
    )
    if current_sha == before_sha:
        return "reverted"
    return "edited"


def revert_change(report: DreamReport, change_id: str, locator: NoteLocator) -> Path:
    """Put one change's note back as it was before the dream; refuse if edited since."""
    change = report.change(change_id)
    return _apply(_plan(change, change, locator))


def _by_note(changes: Iterable[DreamChange]) -> dict[str, list[DreamChange]]:
    groups: dict[str, list[DreamChange]] = {}
    for c in changes:
        groups.setdefault(c.note, []).append(c)
    return groups


def revert_dream(report: DreamReport, locator: NoteLocator) -> list[Path]:
    """Revert every change of the dream, or none: all notes are checked before any is written.

    Several changes to one note are undone together: the note must hold the last change's
    `after`, and gets the first change's `before`.
    """
    plans = []
    refused = []
    for changes in _by_note(report.changes).values():
        if note_status(changes[0], locator) == "reverted":
            continue  # already undone one by one
        try:
            plans.append(_plan(changes[0], changes[-1], locator))
        except RevertRefused as exc:
            refused.append(str(exc))
    if refused:
        raise RevertRefused(tr("revert.dream_refused", reasons="\n".join(refused)))
    return [_apply(p) for p in plans]
