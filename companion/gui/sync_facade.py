"""The engine for a vault copy set up for sync: the sync daemon, in this process, as an
`EngineFacade`.

`SyncFacade` runs `companion.sync.service.daemon.Daemon` (watcher + relay long-poll + rounds) on a
background thread, exactly what `companion watch` runs, and answers the tray from memory: the
daemon's online flag, the round in progress, the status file the engine writes after each round.
"Sync now" asks the daemon for a round and waits for its outcome; "Pause" stops the daemon (no
threads, no network) and releases the vault lock; "Dream now" runs the dream here with the sync
hook, so it takes the relay's per-night lease and syncs until quiet (offline, it dreams anyway
and sync reconciles later); while another process owns the copy, Verify's rounds are asked of it
(`sync/service/dreamhook.py`).

When another process already syncs this copy (a `companion watch` service), the facade
watches its status file, hands the rounds the person asks for ("Sync now", held decisions,
review ticks, a confirmed mass deletion) to that process through the job queue, as
`companion sync` does (`sync/service/requests.py`), and takes over when that process stops.

Events (`drain_events`): new dream reports and conflict copies (as `IdleEngine`), a mass
deletion held back, a keyring that cannot give the vault key, and a secret in a note that a
round just carried. "Relay unreachable" is the app's own rule over `snapshot().online`.

Qt-free, like the engine it hosts.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from companion.config import Config
from companion.errors import CompanionError
from companion.gui.events import (
    ChangesHeld,
    EngineEvent,
    HeldChange,
    KeyringProblem,
    MassDeleteTripped,
    ReviewChanged,
    SecretFound,
)
from companion.gui.facade import IdleEngine
from companion.gui.i18n import tr
from companion.gui.status import EngineSnapshot
from companion.logs import get_logger, redact
from companion.paths import DevicePaths
from companion.relayclient.errors import RelayUnreachable
from companion.review import desk
from companion.review.hook import install as install_review
from companion.review.model import is_review_path
from companion.review.rounds import GRACE_S, device_for
from companion.sync.commands.statusview import local_pending
from companion.sync.local.folder import VaultMissing
from companion.sync.round.engine import SyncEngine
from companion.sync.round.guard import MassDeleteRefused
from companion.sync.round.report import RoundReport
from companion.sync.round.scanner import SkipReason
from companion.sync.service import requests
from companion.sync.service.daemon import Daemon, RoundOutcome
from companion.sync.service.dreamhook import dream_sync_hook, rounds_until_quiet
from companion.sync.service.lock import LockHeld, VaultLock
from companion.sync.state.device import (
    DeviceState,
    SecretMissing,
    TokenMissing,
    status_file,
    sync_index_path,
    vault_dir,
)
from companion.sync.state.status import SYNCING, Status, StatusStore, StatusVersionError

if TYPE_CHECKING:
    from companion.dream.verify import SyncHook

log = get_logger("gui.sync")

SYNC_NOW_TIMEOUT_S = 600.0


def is_sync_copy(paths: DevicePaths, vault: Path) -> bool:
    """True when `companion init` set this folder up for sync on this device."""
    return DeviceState.exists(paths, os.path.realpath(vault))


class _DaemonSyncHook:
    """The dream's `SyncHook` over the running daemon (rounds on its thread, lease on its
    relay client)."""

    def __init__(self, facade: SyncFacade) -> None:
        self.facade = facade

    def sync_until_quiet(self, max_rounds: int) -> int:
        return rounds_until_quiet(self.facade._round_now, max_rounds)

    def acquire_lease(self, name: str, ttl: float) -> bool:
        engine = self.facade._engine
        if engine is None:
            return True  # not syncing (paused): nobody to coordinate with from here
        try:
            return bool(engine.client.lease(name, ttl).acquired)
        except RelayUnreachable:
            return True  # offline: dream here; sync reconciles afterwards


class SyncFacade(IdleEngine):
    """`EngineFacade` for a sync copy; `close()` stops the daemon and releases the lock."""

    START_RETRY_S = 30.0  # after a failed start (keyring locked, secret missing)
    OFFLINE_PENDING_S = 5.0  # how often the pending changes are recounted while offline
    TAKEOVER_RETRY_S = 5.0  # while another process syncs this copy (a lock probe is cheap)
    REVIEW_WAIT_S = GRACE_S  # a person's device writes a missing review note by then

    def __init__(
        self,
        vault: Path,
        config: Config,
        *,
        paused: bool = False,
        engine_options: dict[str, Any] | None = None,
        daemon_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(vault)
        assert self._vault is not None
        self.config = config
        self.paths: DevicePaths = config.paths
        self.root = Path(os.path.realpath(self._vault))
        self.engine_options = dict(engine_options or {})
        self.daemon_options = dict(daemon_options or {})
        self.status = StatusStore(status_file(self.paths, self.root))
        self.lock = VaultLock(
            vault_dir(self.paths, self.root),
            command="companion (desktop app)",
            serves_requests=True,
        )
        self._state_lock = threading.RLock()  # start/stop/pause transitions
        self._events: list[EngineEvent] = []
        self._events_lock = threading.Lock()
        self._engine: SyncEngine | None = None
        self._daemon: Daemon | None = None
        self._thread: threading.Thread | None = None
        self._start_error: str | None = None
        self._elsewhere: str | None = None  # who holds the lock when another process syncs
        self._round_error: str | None = None
        self._held_deletions = 0  # what the mass-deletion guard held back in the last round
        self._paused = bool(paused)
        self._next_start = 0.0  # monotonic time of the next start attempt
        self._pending_cache: tuple[float, int] | None = None  # (monotonic time, count) offline

    # The daemon starts on the first call from the worker (never on the GUI thread: opening
    # the keyring may hang), and again after a failure, at most every START_RETRY_S.

    # ---- the daemon's life -------------------------------------------------------------------

    def _ensure_started(self) -> None:
        if self._daemon is None and not self._paused and time.monotonic() >= self._next_start:
            self._start()

    def _start(self) -> None:
        with self._state_lock:
            if self._daemon is not None or self._paused:
                return
            self._next_start = time.monotonic() + self.START_RETRY_S
            self._start_error = None
            try:
                self.lock.acquire()
            except LockHeld:
                holder = self.lock.holder() or {}
                self._elsewhere = str(holder.get("command") or f"pid {holder.get('pid', '?')}")
                self._next_start = time.monotonic() + self.TAKEOVER_RETRY_S
                return
            self._elsewhere = None
            try:
                engine = SyncEngine(self.root, self.paths, self.config, **self.engine_options)
                install_review(engine)
            except CompanionError as exc:
                self.lock.release()
                self._start_error = redact(str(exc))
                log.error("cannot start syncing %s: %s", self.root, self._start_error)
                if isinstance(exc, SecretMissing) or "keyring" in str(exc).lower():
                    tab = "sync" if isinstance(exc, TokenMissing) else "keys"
                    self._push(KeyringProblem(self._start_error, settings_tab=tab))
                return
            except Exception as exc:
                self.lock.release()
                self._start_error = redact(f"{type(exc).__name__}: {exc}")
                log.exception("cannot start syncing %s", self.root)
                return
            daemon = Daemon(engine, **self.daemon_options)
            daemon.on_round_done(self._after_round)
            self._engine, self._daemon = engine, daemon
            self._thread = threading.Thread(
                target=self._serve, args=(engine, daemon), name="companion-sync", daemon=True
            )
            self._thread.start()
            log.info("syncing %s as %r", self.root, engine.core.name)

    def _serve(self, engine: SyncEngine, daemon: Daemon) -> None:
        try:
            daemon.run()
        except Exception:  # never silent: the tray shows it
            log.exception("the sync daemon crashed")
            daemon.fatal = daemon.fatal or tr("engine.sync_crashed")
        finally:
            try:
                engine.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                log.debug("closing the sync engine failed", exc_info=True)
            self.lock.release()

    def _stop(self, timeout: float = 10.0) -> None:
        with self._state_lock:
            daemon, thread = self._daemon, self._thread
            self._daemon, self._engine, self._thread = None, None, None
        if daemon is not None:
            daemon.stop()
        if thread is not None:
            thread.join(timeout)

    def close(self) -> None:
        """Stop syncing (the current write finishes), release the vault lock."""
        self._stop()

    def ready(self, timeout: float) -> bool:
        """Start if needed and wait for the first round (tests, the benchmark). A start the
        worker thread has under way is waited for, not taken for a failed one."""
        deadline = time.monotonic() + timeout
        self._ensure_started()
        if not self._state_lock.acquire(timeout=timeout):
            return False
        try:
            daemon = self._daemon
        finally:
            self._state_lock.release()
        return daemon is not None and daemon.ready.wait(max(0.0, deadline - time.monotonic()))

    # ---- round outcomes -> state and events --------------------------------------------------

    def _after_round(self, outcome: RoundOutcome) -> None:
        exc = outcome.error
        if exc is None:
            self._round_error = None
            self._held_deletions = 0
            for f in outcome.secrets:  # the daemon's secret guard, told once, ever
                self._push(SecretFound(f.path, f.kind, f.line))
            if outcome.report is not None and outcome.report.held:
                self._push(ChangesHeld(tuple(outcome.report.held)))
            touched = _review_paths(outcome.report)
            if touched:
                self._push(ReviewChanged(touched))
            return
        if isinstance(exc, RelayUnreachable):
            return  # offline is a state (snapshot.online), not an error
        if isinstance(exc, MassDeleteRefused):
            self._held_deletions = exc.n_deletes
            self._push(MassDeleteTripped(exc.n_deletes, exc.n_total))
        self._round_error = _readable(exc)

    def _push(self, event: EngineEvent) -> None:
        with self._events_lock:
            self._events.append(event)

    # ---- EngineFacade ------------------------------------------------------------------------

    def snapshot(self) -> EngineSnapshot:
        base = super().snapshot()
        self._ensure_started()  # also takes over when another process stopped syncing
        daemon = self._daemon
        errors = list(base.errors)
        try:
            saved = self.status.read()
        except StatusVersionError as exc:  # a newer companion wrote it: said, not misread
            saved = Status()
            errors.append(str(exc))
        for problem in (self._start_error, self._round_error, daemon and daemon.fatal):
            if problem:
                errors.append(problem)
        if daemon is not None:
            online = daemon.online is not False
            syncing = daemon.in_round or not daemon.ready.is_set()
        else:
            online = bool(saved.online) if self._elsewhere else True
            syncing = self._elsewhere is not None and saved.state == SYNCING
        count = saved.pending.upload + saved.pending.download
        if not online:  # no round gets far enough to count: look at the disk, as `status` does
            count = self._offline_pending()
        last = saved.last_sync
        unwritable = tuple((p.path, p.reason) for p in saved.problems)
        not_synced = tuple(
            (n.path, n.detail)
            for n in saved.not_synced
            if n.reason != SkipReason.SYMLINK  # left out on purpose
        )
        return EngineSnapshot(
            errors=errors,
            online=online,
            conflicts=base.conflicts,
            syncing=syncing,
            dreaming=base.dreaming,
            paused=self._paused,
            last_sync=datetime.fromtimestamp(last).astimezone() if last else None,
            last_dream=base.last_dream,
            pending=count,
            sync_configured=True,
            held_deletions=self._held_deletions,
            unwritable=unwritable,
            not_synced=not_synced,
        )

    def _offline_pending(self) -> int:
        """Changes waiting while offline (`statusview.local_pending`, read-only), recounted at
        most every OFFLINE_PENDING_S so an offline laptop does not rescan at every poll."""
        now = time.monotonic()
        cached = self._pending_cache
        if cached is not None and now - cached[0] < self.OFFLINE_PENDING_S:
            return cached[1]
        try:
            upload, inbox, _cursor = local_pending(self.paths, self.config, str(self.root))
        except CompanionError as exc:
            log.debug("cannot count the pending changes: %s", exc)
            upload, inbox = 0, 0
        self._pending_cache = (now, upload + inbox)
        return upload + inbox

    def _round_now(
        self, timeout: float = SYNC_NOW_TIMEOUT_S, *, allow_mass_delete: bool = False
    ) -> RoundReport:
        """One round on the daemon's thread, started after this call; its report, or the
        error a person can read."""
        if self._paused:
            raise CompanionError(tr("engine.sync_paused"))
        self._ensure_started()
        daemon = self._daemon
        if daemon is None:
            if self._elsewhere:
                return self._round_by_owner(timeout, allow_mass_delete)
            raise CompanionError(self._start_error or tr("engine.sync_stopped"))
        ticket = daemon.request_round(allow_mass_delete=allow_mass_delete)
        outcome = daemon.wait_round(ticket, timeout)
        if outcome is None:
            raise CompanionError(daemon.fatal or tr("engine.sync_timeout"))
        if isinstance(outcome.error, RelayUnreachable):
            raise CompanionError(tr("engine.offline"))
        if outcome.error is not None:
            raise CompanionError(_readable(outcome.error))
        assert outcome.report is not None
        return outcome.report

    def _round_by_owner(self, timeout: float, allow_mass_delete: bool) -> RoundReport:
        """The round asked of the process that owns the copy (`companion watch`) through the
        job queue, as `companion sync --rescan` asks it: a whole-vault round, as this process's
        own daemon runs for "Sync now"; its report, or the error a person can read. An owner
        that takes no requests (a one-shot `companion sync`, a dream) is named, as before."""
        from companion.sync.state.index import SyncIndex  # noqa: PLC0415

        who = self._elsewhere
        with SyncIndex(sync_index_path(self.paths, self.root)) as index:
            try:
                outcome = requests.by_owner(
                    index, self.lock, requests.ROUND, timeout=timeout,
                    allow_mass_delete=allow_mass_delete, rescan=True,
                )  # fmt: skip
            except LockHeld:
                raise CompanionError(tr("engine.sync_elsewhere", who=who)) from None
            except CompanionError as exc:  # not answered in time: the request is cancelled
                log.warning("%s", exc)
                raise CompanionError(tr("engine.sync_timeout")) from None
        if outcome.code == requests.EXIT_OFFLINE:
            raise CompanionError(tr("engine.offline"))
        if outcome.code != 0:
            raise CompanionError(redact(outcome.message))
        return RoundReport.from_summary(outcome.report or {})

    def sync_now(self) -> None:
        self._round_now()

    def confirm_deletions(self) -> None:
        self._round_now(allow_mass_delete=True)

    def set_paused(self, paused: bool) -> None:
        with self._state_lock:
            self._paused = bool(paused)
        if paused:
            self._stop()
        else:
            self._next_start = 0.0
            self._start()

    def dream_now(self) -> Path | None:
        from companion.dream.engine import DreamSyncError, run_dream  # noqa: PLC0415

        errors = self._vault_errors()
        if errors:
            raise CompanionError(errors[0])
        with self._lock:
            if self._dreaming:
                raise CompanionError(tr("engine.dream_running"))
            self._dreaming = True
        if not self._paused:
            self._ensure_started()
        from companion.sync.state.editors import editors_for_dream  # noqa: PLC0415

        try:
            with (
                self._dream_sync_hook() as hook,
                editors_for_dream(self.root, self.paths, self.config) as editors,
            ):
                report = run_dream(
                    self.root, self.config, paths=self.paths, ran_on="local", sync=hook,
                    editors=editors,
                )  # fmt: skip
        except DreamSyncError as exc:  # landed here; sync settles once the relay answers
            log.warning("%s", exc)
            report = exc.report
        finally:
            with self._lock:
                self._dreaming = False
        if report.status == "skipped":
            log.info("no dream here: %s", "; ".join(report.warnings))
            return None
        return report.path

    @contextlib.contextmanager
    def _dream_sync_hook(self) -> Iterator[SyncHook | None]:
        """Verify's rounds: this process's daemon; else, when another process owns the copy,
        that process through the job queue, as `companion dream` asks it
        (`sync/service/dreamhook.py`, the night's lease on the relay); paused: none."""
        if self._daemon is not None:
            yield _DaemonSyncHook(self)
            return
        if self._paused or not self._elsewhere:
            yield None
            return
        with dream_sync_hook(self.root, self.paths, self.config) as hook:
            yield hook

    # ---- held changes --------------------------------------------------------------------------

    def held_changes(self) -> list[HeldChange]:
        """Read from the sync index (safe while the daemon syncs: SQLite, read only)."""
        from companion.sync.state.index import SyncIndex  # noqa: PLC0415

        db = sync_index_path(self.paths, self.root)
        if not db.exists():
            return []
        with SyncIndex(db) as index:
            return [HeldChange(r.path, r.reason, r.author) for r in index.held.rows()]

    def decide_held(self, paths: list[str] | None, decision: str) -> None:
        """Record the decision (`sync.decisions`), then one round carries it out."""
        from companion.sync.round.decisions import record_held  # noqa: PLC0415
        from companion.sync.state.index import SyncIndex  # noqa: PLC0415

        with SyncIndex(sync_index_path(self.paths, self.root)) as index:
            record_held(index, paths, decision)
        self._round_now()

    # ---- the morning review ------------------------------------------------------------------

    def _watches_review_files(self) -> bool:
        return self._daemon is None  # syncing here: each round says what it carried

    def review(self, note: str | None) -> desk.View:
        """The note's items with the relay's history, through the running engine's relay
        connection; paused or not started: from the note alone."""
        engine = self._engine
        dev = device_for(engine) if engine is not None else None
        return desk.read(self.root, note, dev)

    def decide_review(self, note: str, item_id: str, decision: str) -> desk.Ticked:
        """Tick the line, then one round: it uploads the tick, and this device carries out
        what it decides (a revert, keep mine, take the new value) and writes the outcome,
        exactly as after a tick in Obsidian. A round that cannot run now (offline, paused)
        leaves the tick for the next one, and says why."""
        done = desk.tick(self.root, item_id, decision, note=note)
        if done.status not in (desk.TICKED, desk.ALREADY):
            return done
        try:
            self._round_now()
        except CompanionError as exc:
            return replace(done, waiting=str(exc))
        return done

    def drain_events(self) -> list[EngineEvent]:
        events = super().drain_events()
        with self._events_lock:
            mine, self._events = self._events, []
        return mine + events


def _review_paths(report: RoundReport | None) -> tuple[str, ...]:
    """The review notes a round carried, either way."""
    if report is None:
        return ()
    moved = [*report.downloaded, *report.uploaded, *report.deleted_local, *report.deleted_remote]
    return tuple(sorted({p for p in moved if is_review_path(p)}))


def _readable(exc: BaseException) -> str:
    """A round's error as the app shows it. A held mass deletion is named in a few words:
    the main window explains it and offers the confirmation (the engine's own message tells a
    terminal user to run `companion sync --allow-mass-delete`). A vault folder that is missing or
    not the vault's (`folder.VaultMissing`) is said in the app's language."""
    if isinstance(exc, MassDeleteRefused):
        return tr("engine.deletions_held", n=exc.n_deletes)
    if isinstance(exc, VaultMissing):  # an unmounted drive: the tray's error, in words
        return tr("engine.vault_folder_missing", path=exc.root)
    return redact(str(exc))
