"""The GUI's side of the engine: `EngineWorker` runs every engine call off the GUI thread.

Engine calls go to a `QThreadPool`; results come back as Qt signals, delivered on the GUI
thread (queued connections), so a slow sync, a long dream or a hung keyring never freezes the
tray. The protocol and the no-sync implementation live in the Qt-free `facade` module and are
re-exported here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QThreadPool, Signal

from companion.errors import CompanionError
from companion.gui.events import EngineEvent, HeldChange
from companion.gui.facade import EngineFacade, IdleEngine
from companion.gui.i18n import tr
from companion.gui.status import EngineSnapshot
from companion.logs import get_logger, redact

__all__ = [
    "EngineFacade",
    "EngineSnapshot",
    "EngineView",
    "EngineWorker",
    "IdleEngine",
    "TaskRunner",
]

log = get_logger("gui.bridge")


@dataclass(frozen=True)
class EngineView:
    """Everything one poll learned: what the tray, menu and main window show."""

    snapshot: EngineSnapshot
    conflicts: list[Path] = field(default_factory=list)
    latest_report: Path | None = None
    vault: Path | None = None
    held: list[HeldChange] = field(default_factory=list)


class TaskRunner(QObject):
    """Runs named calls on a thread pool; results come back as signals on the GUI thread.

    A second call of a name still running is refused (two "Dream now" clicks start one dream).
    """

    call_started = Signal(str)
    call_done = Signal(str, object)  # name, result
    call_failed = Signal(str, str)  # name, message for a person

    def __init__(self, pool: QThreadPool | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        if pool is None:
            pool = QThreadPool(self)
            # Deleted with this runner (its window's deleteLater), the pool waits for the calls
            # still running; when the deletion comes through a Python `event()` (the Settings
            # window has one) that wait holds the GIL those calls need: the app froze for good
            # (seen as a hung test when a key store read outlived its window). Wait for them
            # here first: `destroyed` comes before the children go, and waitForDone lets go of
            # the GIL.
            self.destroyed.connect(lambda *_: pool.waitForDone())
        self.pool = pool
        self.pool.setMaxThreadCount(max(self.pool.maxThreadCount(), 3))
        self._lock = threading.Lock()
        self._running: set[str] = set()

    def busy(self, name: str) -> bool:
        with self._lock:
            return name in self._running

    def _claim(self, name: str) -> bool:
        with self._lock:
            if name in self._running:
                return False
            self._running.add(name)
            return True

    def _release(self, name: str) -> None:
        with self._lock:
            self._running.discard(name)

    def _finished(self, name: str) -> None:
        """Hook run on the pool thread after each call (EngineWorker refreshes)."""

    def run(self, name: str, fn: Callable[[], Any]) -> bool:
        """Run `fn` on the pool; emits call_started, then call_done or call_failed."""
        if not self._claim(name):
            return False
        self.call_started.emit(name)

        def job() -> None:
            try:
                result = fn()
            except Exception as exc:
                if not isinstance(exc, CompanionError):
                    log.exception("call %s failed", name)
                self._release(name)
                self.call_failed.emit(name, _message(exc))
            else:
                self._release(name)
                self.call_done.emit(name, result)
            self._finished(name)

        self.pool.start(job)
        return True

    def shutdown(self, timeout_ms: int = 3000) -> bool:
        """Wait for running calls (bounded) before the app quits."""
        return self.pool.waitForDone(timeout_ms)


class EngineWorker(TaskRunner):
    """Runs `EngineFacade` calls off the GUI thread and polls it for the tray.

    `refresh()` polls snapshot, conflicts, latest report and events (one poll in flight at a
    time) and emits `view_ready` (and `events_ready` when there are events). Every engine
    call is followed by a poll so the tray shows its effect at once.
    """

    view_ready = Signal(object)  # EngineView
    events_ready = Signal(list)  # list[EngineEvent]

    def __init__(
        self,
        engine: EngineFacade,
        pool: QThreadPool | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(pool, parent)
        self.engine = engine
        self.last_view: EngineView | None = None
        self._poll_again = False  # a call ended while a poll ran: poll once more after it
        self.view_ready.connect(self._remember)

    def _remember(self, view: EngineView) -> None:
        self.last_view = view

    def _finished(self, name: str) -> None:
        self.refresh(after_change=True)

    def refresh(self, *, after_change: bool = False) -> bool:
        """Poll the engine; False when a poll is already running. That poll may have read
        the engine before the change an `after_change` caller (a call that just ended) wants
        shown, so another poll follows it; the timer's polls are simply skipped."""
        with self._lock:
            if "refresh" in self._running:
                self._poll_again |= after_change
                return False
            self._running.add("refresh")

        def job() -> None:
            events: list[EngineEvent] = []
            try:
                e = self.engine
                view = EngineView(
                    snapshot=e.snapshot(),
                    conflicts=list(e.conflicts()),
                    latest_report=e.latest_dream_report(),
                    vault=e.vault_path(),
                    held=list(e.held_changes()),
                )
                events = list(e.drain_events())
            except Exception as exc:  # the engine's bug must not kill the tray
                log.exception("engine poll failed")
                view = EngineView(EngineSnapshot(errors=[_message(exc)]))
            finally:
                with self._lock:
                    self._running.discard("refresh")
                    again, self._poll_again = self._poll_again, False
            self.view_ready.emit(view)
            if events:
                self.events_ready.emit(events)
            if again:
                self.refresh()

        self.pool.start(job)
        return True

    def sync_now(self) -> bool:
        return self.run("sync_now", self.engine.sync_now)

    def dream_now(self) -> bool:
        return self.run("dream_now", self.engine.dream_now)

    def set_paused(self, paused: bool) -> bool:
        return self.run("set_paused", lambda: self.engine.set_paused(paused))

    def decide_held(self, paths: list[str] | None, decision: str) -> bool:
        return self.run("decide_held", lambda: self.engine.decide_held(paths, decision))

    def confirm_deletions(self) -> bool:
        return self.run("confirm_deletions", self.engine.confirm_deletions)

    def review(self, note: str | None) -> bool:
        """The items of a review note (`call_done("review", View)`): talks to the relay."""
        return self.run("review", lambda: self.engine.review(note))

    def decide_review(self, note: str, item_id: str, decision: str) -> bool:
        """Tick a review line and sync once (`call_done("decide_review", Ticked)`)."""
        return self.run("decide_review", lambda: self.engine.decide_review(note, item_id, decision))


def _message(exc: BaseException) -> str:
    if isinstance(exc, CompanionError):
        return redact(str(exc))
    return redact(tr("error.unexpected", error=f"{type(exc).__name__}: {exc}"))
