"""`companion watch` (and the desktop app's engine): keep one vault copy in sync continuously.

Several sources wake the engine, and one thread runs its rounds, one at a time:

- the **watcher** (debounced batches of changed paths) -> a round scanning just those paths,
  so a saved note is committed right away; its periodic safety rescan -> a full round;
- the **long-poll** thread, waiting on the relay's change feed -> a round the moment another
  device commits (it scans only the paths those changes touch); this device's own commits,
  which the round that made them steps over, wake nothing;
- **requests**: this process asks for a round (`request_round`, then `wait_round` for its
  outcome: the desktop app's "Sync now"); another process records a row in the job queue
  (`sync/service/requests.py`: `companion sync`, `restore`, `held`, `quarantine`, the dream's
  Verify, the desktop app while this daemon owns the copy) and nudges it through the wake file
  (`wake.py`), which is watched and looked at every `WAKE_CHECK_S` anyway. The nudge only says
  "read the queue": the rows, read at start and after each nudge, hold the work, and the
  daemon writes each one's outcome back into its row (`_serve_requests`);
- **retries**: when the relay is unreachable the round is retried with exponential backoff
  (0.5 s doubling to `max_backoff_s`, with jitter); when the relay (or a proxy) answers 429 or
  503 with Retry-After (`RelayBusy`), the retry waits that long instead. Local edits simply
  wait on disk, found by the next scan, so nothing is lost across restarts of either side, and
  the daemon never exits because a relay asked it to slow down.

- the **vault folder** gone or not the vault's (`folder.VaultMissing`: an unmounted drive's
  mount point): the round writes and deletes nothing; the daemon keeps running and tries again
  when the watcher sees another folder at the vault's path (it compares the folder's identity
  every few seconds) or every `FOLDER_RETRY_S`, and the first round that finds the vault's
  folder back scans every file.

After every round, `on_round_done` callbacks hear its outcome (report or error). Echo
suppression: the engine reports each file it writes to `Watcher.expect`, so applying a remote
change does not come back as a local one; files the watcher sees open for writing are left
alone until closed. SIGTERM / SIGINT set a flag the engine checks between files: the current
write finishes, the index is closed, the lock released, exit 0.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from types import FrameType
from typing import Any

from watchdog.events import (
    EVENT_TYPE_CLOSED,
    EVENT_TYPE_CREATED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_MOVED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from companion.crypto import TamperDetected
from companion.errors import CompanionError
from companion.logs import get_logger
from companion.relayclient.errors import AuthError, RelayBusy, RelayError, RelayUnreachable
from companion.secrets.watch import ChangeScanner
from companion.sync.local.folder import VaultMissing
from companion.sync.local.watcher import Batch, Watcher
from companion.sync.round.engine import SyncEngine
from companion.sync.round.guard import MassDeleteRefused
from companion.sync.round.report import RoundReport
from companion.sync.service import requests
from companion.sync.service.wake import WAKE_NAME, WakeFile
from companion.sync.state.device import vault_dir
from companion.sync.state.requests_store import RequestRow

log = get_logger("sync.daemon")

POLL_WAIT_S = 25.0
WAKE_CHECK_S = 2.0  # how often an idle daemon looks at the wake file, besides watching it
FOLDER_RETRY_S = 10.0  # a missing vault folder is looked for again (besides the watcher's look)


class Backoff:
    """Exponential backoff with full jitter, reset on success."""

    def __init__(self, first: float = 0.5, maximum: float = 60.0) -> None:
        self.first = first
        self.maximum = maximum
        self.failures = 0

    def next_delay(self) -> float:
        self.failures += 1
        cap = min(self.maximum, self.first * 2 ** (self.failures - 1))
        return cap / 2 + random.uniform(0, cap / 2)

    def reset(self) -> None:
        self.failures = 0

    def delay_for(self, exc: RelayUnreachable) -> float:
        """The wait before retrying after `exc`: what a busy relay asked for (plus a little
        jitter, so many devices do not come back in the same instant), else the backoff."""
        if isinstance(exc, RelayBusy):
            self.failures += 1
            return exc.retry_after + random.uniform(0, min(1.0, exc.retry_after / 10))
        return self.next_delay()


@dataclass(frozen=True)
class RoundOutcome:
    """What one round ended with: its report, or the exception it raised. `number` counts the
    daemon's rounds from 1; `secrets`: credentials the secret guard found, for the first time,
    in the notes the round carried (each found once, ever)."""

    number: int
    report: RoundReport | None
    error: BaseException | None
    secrets: tuple[Any, ...] = ()


@dataclass(frozen=True)
class _Work:
    full: bool
    paths: frozenset[str]
    requests: bool  # another process may have recorded requests
    allow_mass_delete: bool = False  # the person confirmed a held mass deletion


class _WakeWatch(FileSystemEventHandler):
    """Wakes the daemon as soon as another process writes the wake file.

    It only wakes the main loop, which then compares the file's content with what it saw last
    (`WakeFile.nudged`): that comparison alone decides whether to read the job queue. Reads
    are not writes: inotify reports them as "opened" and "closed_no_write", and the daemon's
    own look at the file makes such a pair, so they are ignored."""

    WRITES = frozenset(
        (EVENT_TYPE_CREATED, EVENT_TYPE_MODIFIED, EVENT_TYPE_MOVED, EVENT_TYPE_CLOSED)
    )

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in self.WRITES:
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if raw and os.path.basename(os.fsdecode(raw)) == WAKE_NAME:
                self.daemon._wake()
                return


class Daemon:
    """Run `engine` until `stop()` (or SIGTERM/SIGINT when `run` is on the main thread)."""

    def __init__(
        self,
        engine: SyncEngine,
        *,
        rescan_interval_s: float | None = 600.0,
        poll_wait_s: float = POLL_WAIT_S,
        max_backoff_s: float = 60.0,
        allow_mass_delete: bool = False,
        quiet_s: float = 0.05,
        max_latency_s: float = 0.25,
    ) -> None:
        self.engine = engine
        self.rescan_interval_s = rescan_interval_s
        self.poll_wait_s = poll_wait_s
        self.allow_mass_delete = allow_mass_delete
        self.quiet_s = quiet_s
        self.max_latency_s = max_latency_s
        self.backoff = Backoff(maximum=max_backoff_s)
        self._cond = threading.Condition()
        self._paths: set[str] = set()
        self._full = True  # the first round scans everything
        self._remote = False
        self._requests = True  # requests recorded before this daemon started
        self._allow_once = False  # the next round may delete what the guard holds back
        self._stop = threading.Event()
        self._retry_at: float | None = None
        self._generation = 0  # rounds completed (the poller waits for the next one)
        self._asked = 0  # rounds asked for with request_round (tickets)
        self._serving = 0  # tickets the round in progress serves
        self._served = 0
        self._in_round = False
        self._holds = 0
        self._last: RoundOutcome | None = None
        self._listeners: list[Callable[[RoundOutcome], None]] = []
        self._watcher: Watcher | None = None
        self.online: bool | None = None
        self.folder_missing = False  # the last round found no vault folder (VaultMissing)
        # a round held deletions back (MassDeleteRefused) and no whole-vault round has found
        # the vault clear since: a round asked for scans everything, or, scoped to what the
        # watcher noted since, it would miss them and answer "synced" for a held deletion
        self.deletions_held = False
        self.rounds = 0
        self.fatal: str | None = None
        self.ready = threading.Event()  # set after the first round
        self.engine_folder = vault_dir(engine.paths, engine.core.root)
        self.wake_file = WakeFile(self.engine_folder)
        self.secret_scanner = ChangeScanner(
            engine.core.root, engine.paths.state_dir, engine.config.settings.secrets.allowlist
        )

    # ---------------------------------------------------------------- public API

    def request_round(
        self,
        *,
        full: bool = True,
        paths: Iterable[str] | None = None,
        allow_mass_delete: bool = False,
    ) -> int:
        """Ask for a round now (not after a pending backoff); returns a ticket for
        `wait_round`. With `allow_mass_delete` (the person confirmed the deletions the guard
        held back) that round deletes them; later rounds guard again."""
        with self._cond:
            self._asked += 1
            self._allow_once |= allow_mass_delete
            self._full |= full
            if paths:
                self._paths |= set(paths)
            self._retry_at = None
            self._cond.notify_all()
            return self._asked

    def wait_round(self, ticket: int, timeout: float) -> RoundOutcome | None:
        """The outcome of a round that started after `request_round` returned `ticket`; None
        when none finished within `timeout` seconds (or the daemon stopped)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._served < ticket and not self._stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(min(left, 1.0))
            return self._last if self._served >= ticket else None

    def on_round_done(self, callback: Callable[[RoundOutcome], None]) -> None:
        """Call `callback(outcome)` after every round, on the daemon's thread."""
        self._listeners.append(callback)

    @property
    def in_round(self) -> bool:
        return self._in_round

    @property
    def idle(self) -> bool:
        """No round running and none due: nothing queued here or in the watcher, no retry
        scheduled, no request. It stays so until an event arrives (a file changes, a device
        commits, a request)."""
        watcher = self._watcher
        if watcher is not None and watcher.pending_paths():
            return False
        with self._cond:
            return not (
                self._in_round or self._paths or self._full or self._remote or self._requests
                or self._retry_at is not None or self._asked > self._served
            )  # fmt: skip

    @property
    def last_outcome(self) -> RoundOutcome | None:
        return self._last

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """No round starts while this is held (one in progress finishes first): a caller can
        prepare a state that the next round must see as a whole (several edits; a test)."""
        with self._cond:
            self._holds += 1
            while self._in_round:
                self._cond.wait(1.0)
        try:
            yield
        finally:
            with self._cond:
                self._holds -= 1
                self._cond.notify_all()

    def busy_paths(self) -> frozenset[str]:
        """Files the watcher saw opened for writing and not closed yet."""
        return self._watcher.busy_paths() if self._watcher is not None else frozenset()

    def stop(self) -> None:
        self._stop.set()
        self.engine.core.stop_event.set()
        with self._cond:
            self._cond.notify_all()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    # ---------------------------------------------------------------- wake-ups

    def _wake(
        self, *, paths: set[str] | None = None, full: bool = False, remote: bool = False,
        requests: bool = False,
    ) -> None:  # fmt: skip
        with self._cond:
            if paths:
                self._paths |= paths
            self._full |= full
            self._remote |= remote
            self._requests |= requests
            self._cond.notify_all()

    def _on_batch(self, batch: Batch) -> None:
        if batch.overflow and self.folder_missing:
            with self._cond:  # another folder at the vault's path: maybe the vault's, look now
                self._retry_at = None
        self._wake(paths=set(batch.paths), full=batch.overflow)

    def _on_rescan(self) -> None:
        self._wake(full=True)

    # ---------------------------------------------------------------- long-poll

    def _still_new(self, seq: int) -> bool:
        """Whether the record `seq` the long-poll saw still needs a round. The poll waiting
        during a round returns with that round's own commit, which the round then steps over
        (`Puller.skip_own_commits`): once the round is done, a seq behind the cursor has been
        taken in, and waking for it would only run a round that finds nothing."""
        with self._cond:
            while self._in_round and not self._stop.is_set():
                self._cond.wait(1.0)
        return seq > self.engine.puller.cursor

    def _poll_loop(self) -> None:
        backoff = Backoff(maximum=self.backoff.maximum)
        seen_gen = 0  # the first poll starts after the first round (which pulls everything)
        while not self._stop.is_set():
            with self._cond:  # one poll per completed round, or it would return at once
                while not self._stop.is_set() and self._generation == seen_gen:
                    self._cond.wait(1.0)
                seen_gen = self._generation
            if self._stop.is_set():
                return
            try:
                first = self.engine.core.remote.first_change_after(
                    self.engine.puller.cursor, self.poll_wait_s
                )
                if first is not None and self._still_new(first):
                    self._wake(remote=True)
                else:
                    seen_gen = -1  # nothing new: poll again right away
                backoff.reset()
            except RelayUnreachable as exc:
                if self._stop.is_set():
                    return
                self._stop.wait(backoff.delay_for(exc))
                self._wake(remote=True)  # let the main loop find out and report it
            except (RelayError, CompanionError) as exc:
                log.warning("long-poll failed: %s", exc)
                self._stop.wait(backoff.next_delay())
                seen_gen = -1
            except Exception:  # never let the poller die silently
                if self._stop.is_set():
                    return
                log.exception("long-poll crashed; retrying")
                self._stop.wait(backoff.next_delay())
                seen_gen = -1

    # ---------------------------------------------------------------- main loop

    def _take(self) -> _Work | None:
        """Wait for work; None when stopping."""
        with self._cond:
            while not self._stop.is_set():
                now = time.monotonic()
                if self.wake_file.nudged():  # another process recorded a row
                    self._requests = True
                retry_due = self._retry_at is not None and now >= self._retry_at
                asked = self._asked > self._served
                if self._holds:
                    self._cond.wait(WAKE_CHECK_S)
                    continue
                if asked or self._requests:
                    break
                if (self._paths or self._full or self._remote) and (
                    self._retry_at is None or retry_due
                ):
                    break
                if retry_due:  # nothing queued but a retry is due: do a full round
                    self._full = True
                    break
                timeout = WAKE_CHECK_S
                if self._retry_at is not None:
                    timeout = min(timeout, max(0.0, self._retry_at - now))
                self._cond.wait(timeout)
            if self._stop.is_set():
                return None
            work = _Work(self._full, frozenset(self._paths), self._requests, self._allow_once)
            self._full, self._remote, self._paths, self._requests = False, False, set(), False
            self._allow_once = False
            self._retry_at = None
            self._serving = self._asked
            self._in_round = True
            return work

    def _round(self, work: _Work) -> None:
        """One round (or the requests another process recorded), with its outcome told."""
        engine = self.engine
        if self._watcher is not None:
            engine.busy = self._watcher.busy_paths()
        try:
            served = self._serve_requests(work) if work.requests else None
            if served is None:
                paths = None if work.full else set(work.paths)
                allow = self.allow_mass_delete or work.allow_mass_delete
                served = self._guarded(
                    lambda: engine.round(paths, allow_mass_delete=allow),
                    full=work.full, paths=set(work.paths),
                )  # fmt: skip
            self._done(served)
        finally:
            with self._cond:
                self._generation += 1
                self._served = max(self._served, self._serving)
                self._in_round = False
                self._cond.notify_all()
            self.ready.set()

    def _serve_requests(self, work: _Work) -> RoundOutcome | None:
        """Carry out what other processes asked for; None when there was nothing (then the
        caller runs an ordinary round). A round asked for scans only what changed when the
        watcher vouches for that (`_watched_scope`), else the whole vault."""
        engine = self.engine
        rows = requests.pending(engine.core.index)
        if not rows:
            return None
        last: RoundOutcome | None = None
        rounds: dict[str, list[RequestRow]] = {}  # one round per distinct ask
        for r in rows:
            if r.kind == requests.ROUND:
                rounds.setdefault(json.dumps(r.args, sort_keys=True), []).append(r)
        firsts = [group[0] for group in rounds.values()]
        for row in [r for r in rows if r.kind != requests.ROUND] + firsts:
            if not requests.start(engine.core.index, row.id):
                continue
            if row.kind == requests.RESTORE:
                path, rev = str(row.args.get("path", "")), int(row.args.get("rev", 0))
                last = self._guarded(partial(engine.restore, path, rev), full=True)
                mine = [row]
            else:  # one round answers every round request asking the same
                allow = (
                    self.allow_mass_delete
                    or work.allow_mass_delete
                    or bool(row.args.get("allow_mass_delete"))
                )
                scope = None if row.args.get("rescan") else self._watched_scope(work)
                run = partial(engine.round, scope, allow_mass_delete=allow)
                last = self._guarded(run, full=scope is None, paths=scope)
                same = rounds[json.dumps(row.args, sort_keys=True)][1:]
                mine = [row] + [r for r in same if requests.start(engine.core.index, r.id)]
            result = (
                requests.failure(last.error) if last.error is not None
                else requests.Outcome(0, "", last.report.summary() if last.report else None)
            )  # fmt: skip
            for r in mine:
                requests.finish(engine.core.index, r.id, result)
        return last

    def _watched_scope(self, work: _Work) -> set[str] | None:
        """The paths a round must scan to find every local change, or None for the whole
        vault. Only the watcher can vouch for a smaller set, and only when it sees every change
        (a local file system), nothing since the last full round needs one (`work.full`: the
        first round, an overflow, a rescan or a retry; `deletions_held`: deletions the guard
        holds back, which the watcher reported once), and its barrier shows it has noted
        every change made before now. Then: what it noted, plus what it already delivered."""
        watcher = self._watcher
        if work.full or self.deletions_held or watcher is None or not watcher.sees_every_change:
            return None
        if not watcher.barrier():
            return None
        noted = watcher.take_pending()
        with self._cond:
            if noted is None or self._full:  # an overflow, or a rescan came due meanwhile
                return None
            delivered, self._paths = self._paths, set()
        return set(work.paths) | delivered | noted

    def _guarded(
        self, run: Callable[[], RoundReport], *, full: bool, paths: set[str] | None = None
    ) -> RoundOutcome:
        """Run one round-like call; errors become retries, never the daemon's end."""
        try:
            report = run()
        except BaseException as exc:
            self._failed(exc, full, paths or set())
            return RoundOutcome(self.rounds + 1, None, exc)
        self.rounds += 1
        if report.full_scan:
            self.deletions_held = False  # the whole vault looked at, nothing held back
        for c in report.conflicts:
            log.warning("%s", c.message)
        for msg in report.skipped:
            log.warning("skipped: %s", msg)
        found = self._warn_secrets(report)
        if self.online is not True:
            log.info("connected to the relay")
        if self.folder_missing:
            log.info("the vault folder %s is back; syncing again", self.engine.core.root)
            self.folder_missing = False
        self.online = True
        self.backoff.reset()
        return RoundOutcome(self.rounds, report, None, tuple(found))

    def _failed(self, exc: BaseException, full: bool, paths: set[str]) -> None:
        if isinstance(exc, RelayUnreachable):
            delay = self.backoff.delay_for(exc)
            if self.online is not False:
                what = "busy" if isinstance(exc, RelayBusy) else "unreachable"
                log.warning("relay %s (%s); retrying, edits stay queued", what, exc)
            self.online = False
            self._schedule_retry(delay, full=True)
        elif isinstance(exc, AuthError):
            self.fatal = f"the relay refused this device: {exc}"
            log.error("%s; stopping", self.fatal)
            self.stop()
        elif isinstance(exc, MassDeleteRefused):
            log.error("%s", exc)  # held until the person confirms; other changes went through
            self.deletions_held = True
        elif isinstance(exc, VaultMissing):
            if not self.folder_missing:  # said once, not at every look
                log.error("%s; looking again every %g s", exc, FOLDER_RETRY_S)
            self.folder_missing = True
            self._schedule_retry(FOLDER_RETRY_S, full=True)
        elif isinstance(exc, TamperDetected):
            log.error("%s", exc)
            self._schedule_retry(max(self.backoff.next_delay(), 30.0), full=True)
        elif isinstance(exc, CompanionError):
            log.error("sync round failed: %s", exc)
            self._schedule_retry(self.backoff.next_delay(), full=full, paths=paths)
        elif isinstance(exc, Exception):
            log.exception("sync round crashed", exc_info=exc)
            self._schedule_retry(self.backoff.next_delay(), full=True)
        else:
            raise exc  # KeyboardInterrupt, SystemExit

    def _done(self, outcome: RoundOutcome) -> None:
        with self._cond:
            self._last = outcome
        for callback in list(self._listeners):
            try:
                callback(outcome)
            except Exception:  # a listener must not stop the daemon
                log.exception("a round listener failed")

    def _warn_secrets(self, report: RoundReport) -> list[Any]:
        """The secret guard on the change stream: warn once per finding, never block sync."""
        try:
            found = list(self.secret_scanner.scan([*report.uploaded, *report.downloaded]))
        except Exception:  # the guard must never stop the person's data from flowing
            log.exception("secret scan failed")
            return []
        for f in found:
            log.warning(
                "a credential (%s, %s) is in %s line %d; move it to the keyring with: "
                "companion secrets move %s %s:%d --name NAME",
                f.kind, f.masked, f.path, f.line, self.engine.core.root, f.path, f.line,
            )  # fmt: skip
        return found

    def _schedule_retry(self, delay: float, *, full: bool, paths: set[str] | None = None) -> None:
        with self._cond:
            self._retry_at = time.monotonic() + delay
            self._full |= full
            if paths:
                self._paths |= paths

    def run(self) -> int:
        """Serve until stopped; 0 on a clean stop, 1 when a fatal error stopped it."""
        previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, self._on_signal)
        engine = self.engine
        watcher = Watcher(
            engine.core.root,
            engine.core.ignore,
            self._on_batch,
            on_rescan=self._on_rescan,
            rescan_interval_s=self.rescan_interval_s,
            quiet_s=self.quiet_s,
            max_latency_s=self.max_latency_s,
        )
        engine.core.on_local_write = watcher.expect
        poller = threading.Thread(target=self._poll_loop, name="companion-longpoll", daemon=True)
        wake_watch: Any = None
        try:
            watcher.start()
            self._watcher = watcher
            wake_watch = self._watch_wake_file()
            poller.start()
            while True:
                work = self._take()
                if work is None:
                    break
                self._round(work)
        finally:
            self._stop.set()
            engine.core.stop_event.set()
            watcher.stop()
            self._watcher = None
            if wake_watch is not None:
                wake_watch.stop()
                wake_watch.join(5)
            poller.join(timeout=0.2)  # a waiting long-poll ends on its own; it is a daemon
            engine.core.on_local_write = None
            engine.busy = frozenset()
            engine.core.stop_event.clear()  # the engine can run rounds again (a paused desktop app)
            with self._cond:
                self._cond.notify_all()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            log.info("sync daemon stopped")
        return 1 if self.fatal else 0

    def _watch_wake_file(self) -> Any:
        """Watch the engine folder for the wake file (the 2 s look stays as a fallback)."""
        try:
            self.engine_folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            observer = Observer()
            observer.schedule(_WakeWatch(self), str(self.engine_folder), recursive=False)
            observer.daemon = True
            observer.start()
            return observer
        except Exception as exc:  # inotify limits: the periodic look still works
            log.info("cannot watch %s (%s); checking it every %g s", self.engine_folder, exc,
                     WAKE_CHECK_S)  # fmt: skip
            return None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: stopping after the current write", signum)
        self.stop()
