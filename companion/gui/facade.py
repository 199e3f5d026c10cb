"""The engine as the desktop app sees it: the `EngineFacade` protocol and `IdleEngine`.

The sync engine and the dream implement `EngineFacade`; the GUI only ever talks to this
protocol (through `bridge.EngineWorker`, off the GUI thread). Until sync is set up for a vault,
`IdleEngine` is the real implementation: it reads the vault's dream reports and conflict copies
and can start a dream through the `companion dream` command, but does not sync.

Qt-free, so the engine can import these types without pulling in Qt.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import threading
import time
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from companion.dream.report import ReportError, list_reports, read_report
from companion.errors import CompanionError
from companion.gui.events import (
    ConflictsCreated,
    DreamLanded,
    EngineEvent,
    HeldChange,
    ReviewChanged,
)
from companion.gui.i18n import tr
from companion.gui.status import EngineSnapshot
from companion.logs import get_logger
from companion.services.units import companion_command
from companion.sync.round.conflicts import is_conflict_copy

if TYPE_CHECKING:
    from companion.review.desk import Ticked, View

log = get_logger("gui.facade")


@runtime_checkable
class EngineFacade(Protocol):
    """What the desktop app needs from the engine.

    Every method may be called from a worker thread (never the GUI thread), possibly while
    another call runs, so implementations must be thread-safe. `snapshot`, `conflicts`,
    `vault_path`, `latest_dream_report` and `drain_events` should answer from in-memory state
    in well under a second; `sync_now` and `dream_now` may take long and block until done.
    Errors a person can act on are raised as `companion.errors.CompanionError` with a clear
    message; the GUI shows the message.
    """

    def snapshot(self) -> EngineSnapshot:
        """The state now (tray icon, tooltip, menu)."""
        ...

    def sync_now(self) -> None:
        """Run one sync round now (blocks until it ends)."""
        ...

    def set_paused(self, paused: bool) -> None:
        """Pause or resume syncing (the GUI also stores `sync.paused` in the config)."""
        ...

    def dream_now(self) -> Path | None:
        """Dream now, on this computer (blocks until the report is written); returns the
        report written, or None when no dream ran (another device holds tonight's lease)."""
        ...

    def vault_path(self) -> Path | None:
        """The vault folder, or None when none is chosen yet."""
        ...

    def latest_dream_report(self) -> Path | None:
        """The newest `.companion/dreams/YYYY-MM-DD.json`, if any."""
        ...

    def conflicts(self) -> list[Path]:
        """Conflict copies in the vault now (absolute paths, sorted)."""
        ...

    def drain_events(self) -> list[EngineEvent]:
        """Events since the previous call (each returned once), oldest first."""
        ...

    def set_problems(self, problems: list[str]) -> None:
        """Problems outside the engine a person must fix (the config file's): part of
        `snapshot().errors` until replaced by an empty list. Cheap; any thread."""
        ...

    def held_changes(self) -> list[HeldChange]:
        """Changes from agent devices held for the person's approval (see sync/round/holds.py)."""
        ...

    def decide_held(self, paths: list[str] | None, decision: str) -> None:
        """Accept or refuse held changes (`paths` None: all) and sync; blocks until done."""
        ...

    def confirm_deletions(self) -> None:
        """Sync once deleting what the mass-deletion guard held back (the person confirmed
        it: `snapshot().held_deletions`); blocks until done."""
        ...

    def review(self, note: str | None) -> View:
        """The items of review note `note` (vault-relative; None: the newest), with the
        relay's history when it answers (`companion.review.desk.read`); may take a while."""
        ...

    def decide_review(self, note: str, item_id: str, decision: str) -> Ticked:
        """Tick the line deciding `item_id` in `note` (what a tap in Obsidian does), then
        sync once so it is carried out; blocks until done."""
        ...


def _walk_conflicts(vault: Path) -> tuple[list[Path], dict[str, int]]:
    """(conflict copies, {folder: mtime_ns}); each folder's time is read before it is listed,
    so a change while walking shows as a changed time at the next look."""
    found: list[Path] = []
    folders: dict[str, int] = {}
    stack = [str(vault)]
    while stack:
        folder = stack.pop()
        try:
            folders[folder] = os.stat(folder).st_mtime_ns
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif is_conflict_copy(entry.name):
                        found.append(Path(entry.path))
        except OSError:  # gone meanwhile, or unreadable: the next look sees the change
            folders[folder] = -1
    return sorted(found), folders


class ConflictScanner:
    """The conflict copies of one vault, cheap to ask for every few seconds.

    A walk lists every folder; a look in between only stats the folders the last walk saw. A
    copy appearing, leaving or being renamed changes its folder's mtime, and so does a new
    subfolder, so the vault is walked again only then (and after `max_age_s`, for file
    systems with coarse folder times).
    """

    def __init__(self, vault: Path, max_age_s: float = 300.0) -> None:
        self.vault = vault
        self.max_age_s = max_age_s
        self._lock = threading.Lock()
        self._folders: dict[str, int] | None = None
        self._found: list[Path] = []
        self._at = 0.0
        self.walks = 0

    def _unchanged(self) -> bool:
        assert self._folders is not None
        for folder, mtime in self._folders.items():
            try:
                if os.stat(folder).st_mtime_ns != mtime:
                    return False
            except OSError:
                return False
        return True

    def scan(self) -> list[Path]:
        with self._lock:
            now = time.monotonic()
            if self._folders is not None and now - self._at < self.max_age_s and self._unchanged():
                return list(self._found)
            self._found, self._folders = _walk_conflicts(self.vault)
            self._at = now
            self.walks += 1
            return list(self._found)


class IdleEngine:
    """The engine for a vault with no sync configured: reports and conflicts, no syncing.

    `dream_now` runs `companion dream VAULT` in a subprocess when this installation has the
    dream command, so "Dream now" works before sync is set up.
    """

    # How long a new dream report's `DreamLanded` waits for the night's review note, so the
    # morning notification counts and opens the note's items (a sync copy: the note follows
    # the report from the dreaming device); past it, the report is told alone.
    REVIEW_WAIT_S = 0.0

    def __init__(self, vault: Path | None, *, fresh_hours: float = 24) -> None:
        self._vault = Path(vault).expanduser() if vault else None
        self._lock = threading.Lock()
        self._drain_lock = threading.Lock()
        self._paused = False
        self._dreaming = False
        self._errors: list[str] = []  # problems a person must fix (a broken config file)
        self._seen_reports: dict[Path, tuple[int, int]] | None = None  # path: (mtime_ns, size)
        self._seen_conflicts: set[Path] | None = None
        self._fresh = timedelta(hours=fresh_hours)
        self._scanner = ConflictScanner(self._vault) if self._vault is not None else None
        self._landed: list[tuple[float, DreamLanded]] = []  # waiting for their review note
        self._seen_notes: dict[str, tuple[int, int]] | None = None  # review note: signature

    def vault_path(self) -> Path | None:
        return self._vault

    def set_problems(self, problems: list[str]) -> None:
        """Problems outside the engine a person must fix (the config file's), shown as the
        error state until they are gone."""
        with self._lock:
            self._errors = list(problems)

    def _vault_errors(self) -> list[str]:
        if self._vault is None:
            return [tr("engine.no_vault")]
        if not self._vault.is_dir():
            return [tr("engine.vault_missing", path=self._vault)]
        return []

    def snapshot(self) -> EngineSnapshot:
        errors = self._vault_errors()
        latest = None if errors else self.latest_dream_report()
        last_dream = datetime.fromtimestamp(latest.stat().st_mtime).astimezone() if latest else None
        conflicts = 0 if errors else len(self.conflicts())
        with self._lock:
            return EngineSnapshot(
                errors=errors + self._errors,
                online=False,
                conflicts=conflicts,
                syncing=False,
                dreaming=self._dreaming,
                paused=self._paused,
                last_sync=None,
                last_dream=last_dream,
                pending=0,
                sync_configured=False,
            )

    def sync_now(self) -> None:
        raise CompanionError(tr("engine.sync_not_configured"))

    def set_paused(self, paused: bool) -> None:
        with self._lock:
            self._paused = bool(paused)

    @staticmethod
    def dream_available() -> bool:
        return importlib.util.find_spec("companion.dream.cli") is not None

    def dream_now(self) -> Path | None:
        errors = self._vault_errors()
        if errors:
            raise CompanionError(errors[0])
        if not self.dream_available():
            raise CompanionError(tr("engine.dream_unavailable"))
        with self._lock:
            if self._dreaming:
                raise CompanionError(tr("engine.dream_running"))
            self._dreaming = True
        try:
            proc = subprocess.run(
                [*companion_command(), "dream", str(self._vault)],
                capture_output=True,
                text=True,
                timeout=3600,
            )
        finally:
            with self._lock:
                self._dreaming = False
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout or "").strip().splitlines()
            detail = lines[-1] if lines else f"exit status {proc.returncode}"
            raise CompanionError(tr("engine.dream_failed", error=detail))
        return self.latest_dream_report()

    def latest_dream_report(self) -> Path | None:
        if self._vault is None:
            return None
        reports = list_reports(self._vault)
        return reports[-1] if reports else None

    def conflicts(self) -> list[Path]:
        if self._scanner is None or not self._scanner.vault.is_dir():
            return []
        return self._scanner.scan()

    def held_changes(self) -> list[HeldChange]:
        return []  # nothing syncs here, so nothing can be held

    def decide_held(self, paths: list[str] | None, decision: str) -> None:
        raise CompanionError(tr("engine.sync_stopped"))

    def confirm_deletions(self) -> None:
        raise CompanionError(tr("engine.sync_not_configured"))

    def review(self, note: str | None) -> View:
        from companion.review import desk  # noqa: PLC0415

        if self._vault is None:
            raise CompanionError(tr("engine.no_vault"))
        return desk.read(self._vault, note)

    def decide_review(self, note: str, item_id: str, decision: str) -> Ticked:
        """The tick only: nothing syncs here to carry it out."""
        from companion.review import desk  # noqa: PLC0415

        if self._vault is None:
            raise CompanionError(tr("engine.no_vault"))
        done = desk.tick(self._vault, item_id, decision, note=note)
        return replace(done, waiting=tr("engine.sync_not_configured"))

    def _with_review(self, event: DreamLanded) -> DreamLanded | None:
        """`event` with its night's review note and what it waits for, or None while the
        note has not arrived (and may still: see REVIEW_WAIT_S)."""
        from companion.review import desk  # noqa: PLC0415

        assert self._vault is not None
        rel = desk.note_for(self._vault, Path(event.report).stem)
        if rel is None:
            return None
        try:
            waiting = desk.open_counts(self._vault, rel)
        except (OSError, UnicodeDecodeError) as exc:  # told without it, never lost
            log.warning("cannot read the review note %s: %s", rel, exc)
            return event
        return replace(event, review=rel, waiting=waiting)

    def _watches_review_files(self) -> bool:
        """Whether review notes changing on disk are told as `ReviewChanged` (here: what
        another process, a `companion watch` service, syncs; a running sync engine tells its
        own rounds instead)."""
        return True

    def _review_notes_changed(self) -> tuple[str, ...]:
        """The review notes written since the last look (none the first time)."""
        from companion.review.rounds import note_files  # noqa: PLC0415

        if self._vault is None or not self._watches_review_files():
            self._seen_notes = None
            return ()
        now: dict[str, tuple[int, int]] = {}
        for _night, rel in note_files(self._vault):
            try:
                st = (self._vault / rel).stat()
            except OSError:
                continue
            now[rel] = (st.st_mtime_ns, st.st_size)
        seen, self._seen_notes = self._seen_notes, now
        if seen is None:
            return ()
        return tuple(sorted(rel for rel, sig in now.items() if seen.get(rel) != sig))

    def _landings(self, new: list[DreamLanded]) -> list[EngineEvent]:
        """The reports to tell now: each with its review note once it is here; one still
        without it waits up to REVIEW_WAIT_S for it."""
        now = time.monotonic()
        out: list[EngineEvent] = []
        waiting = [(t, e) for t, e in self._landed if e.report not in {n.report for n in new}]
        self._landed = []
        for since, event in [*waiting, *((now, e) for e in new)]:
            told = self._with_review(event)
            if told is not None:
                out.append(told)
            elif now - since >= self.REVIEW_WAIT_S:
                out.append(event)
            else:
                self._landed.append((since, event))
        return out

    def drain_events(self) -> list[EngineEvent]:
        """New dream reports and conflict copies since the last call.

        A report written again (a later run of the same night, a revert) is new again: its
        `DreamLanded` refreshes an open review window (the notification, keyed by the night, is
        not shown twice). On the first call, a report younger than `fresh_hours` counts as new
        (the app started after the dream landed); older reports and existing conflict copies
        do not.
        """
        with self._drain_lock:
            return self._drain()

    def _drain(self) -> list[EngineEvent]:
        if self._vault is None or not self._vault.is_dir():
            return []
        events: list[EngineEvent] = []
        reports: dict[Path, tuple[int, int]] = {}
        for path in list_reports(self._vault):
            try:
                st = path.stat()
            except OSError:  # gone meanwhile
                continue
            reports[path] = (st.st_mtime_ns, st.st_size)
        if self._seen_reports is None:
            cutoff = (datetime.now().timestamp() - self._fresh.total_seconds()) * 1e9
            fresh = sorted(p for p, (mtime, _size) in reports.items() if mtime >= cutoff)
            new = set(fresh[-1:])  # at most the newest one
            self._seen_reports = {p: sig for p, sig in reports.items() if p not in new}
        changed = sorted(p for p, sig in reports.items() if self._seen_reports.get(p) != sig)
        self._seen_reports = reports
        landed = []
        for path in changed:
            try:
                rep = read_report(path)
            except ReportError as exc:
                log.warning("skipping unreadable dream report: %s", exc)
                continue
            landed.append(DreamLanded(path, rep.date, rep.ran_on, dict(rep.counts)))
        events += self._landings(landed)
        conflicts = set(self.conflicts())
        if self._seen_conflicts is None:
            self._seen_conflicts = conflicts
        new_conflicts = sorted(conflicts - self._seen_conflicts)
        self._seen_conflicts = conflicts
        if new_conflicts:
            events.append(ConflictsCreated(tuple(new_conflicts)))
        notes = self._review_notes_changed()
        if notes:
            events.append(ReviewChanged(notes))
        return events
