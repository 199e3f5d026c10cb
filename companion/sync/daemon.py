"""`companion watch`: keep one vault copy in sync continuously.

Three sources wake the engine, and one thread runs its rounds, one at a time:

- the **watcher** (debounced batches of changed paths) -> a round scanning just those paths,
  so a saved note is committed right away; its periodic safety rescan -> a full round;
- the **long-poll** thread, waiting on the relay's change feed -> a round the moment another
  device commits (it scans only the paths those changes touch);
- **retries**: when the relay is unreachable the round is retried with exponential backoff
  (0.5 s doubling to `max_backoff_s`, with jitter); when the relay (or a proxy) answers 429 or
  503 with Retry-After (`RelayBusy`), the retry waits that long instead. Local edits simply
  wait on disk, found by the next scan, so nothing is lost across restarts of either side, and
  the daemon never exits because a relay asked it to slow down.

Echo suppression: the engine reports each file it writes to `Watcher.expect`, so applying a
remote change does not come back as a local one. SIGTERM / SIGINT set a flag the engine checks
between files: the current write finishes, the index is closed, the lock released, exit 0.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from types import FrameType
from typing import Any

from companion.crypto import TamperDetected
from companion.errors import CompanionError
from companion.logs import get_logger
from companion.relay.errors import AuthError, RelayBusy, RelayError, RelayUnreachable
from companion.secrets.watch import ChangeScanner
from companion.sync.device import vault_dir
from companion.sync.engine import SyncEngine
from companion.sync.guard import MassDeleteRefused
from companion.sync.model import RoundReport
from companion.sync.wake import WakeFile
from companion.sync.watcher import Batch, Watcher

log = get_logger("sync.daemon")

POLL_WAIT_S = 25.0
WAKE_CHECK_S = 2.0  # how often an idle daemon looks at the wake file (`sync/wake.py`)


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
        self._stop = threading.Event()
        self._retry_at: float | None = None
        self._generation = 0  # rounds completed (the poller waits for the next one)
        self.online: bool | None = None
        self.rounds = 0
        self.fatal: str | None = None
        self.ready = threading.Event()  # set after the first round (tests, the desktop app)
        self.wake_file = WakeFile(vault_dir(engine.paths, engine.root))
        self.secret_scanner = ChangeScanner(
            engine.root, engine.paths.state_dir, engine.config.get("secrets", "allowlist")
        )

    # ---------------------------------------------------------------- wake-ups

    def _wake(self, *, paths: set[str] | None = None, full: bool = False, remote: bool = False):
        with self._cond:
            if paths:
                self._paths |= paths
            self._full |= full
            self._remote |= remote
            self._cond.notify_all()

    def _on_batch(self, batch: Batch) -> None:
        self._wake(paths=set(batch.paths), full=batch.overflow)

    def _on_rescan(self) -> None:
        self._wake(full=True)

    def stop(self) -> None:
        self._stop.set()
        self.engine.stop_event.set()
        with self._cond:
            self._cond.notify_all()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    # ---------------------------------------------------------------- long-poll

    def _poll_loop(self) -> None:
        backoff = Backoff(maximum=self.backoff.maximum)
        seen_gen = -1
        while not self._stop.is_set():
            with self._cond:  # one poll per completed round, or it would return at once
                while not self._stop.is_set() and self._generation == seen_gen:
                    self._cond.wait(1.0)
                seen_gen = self._generation
            if self._stop.is_set():
                return
            try:
                if self.engine.remote.wait_for_changes(self.engine.cursor, self.poll_wait_s):
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

    def _take(self) -> tuple[bool, set[str]] | None:
        """Wait for work; return (full, paths), or None when stopping."""
        with self._cond:
            while not self._stop.is_set():
                now = time.monotonic()
                if self.wake_file.requested():  # another process recorded a decision
                    self._full = True
                retry_due = self._retry_at is not None and now >= self._retry_at
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
            full, paths = self._full, set(self._paths)
            self._full, self._remote, self._paths = False, False, set()
            self._retry_at = None
            return full, paths

    def _after_round(self) -> None:
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def _round(self, full: bool, paths: set[str]) -> None:
        engine = self.engine
        try:
            report = engine.round(None if full else paths, allow_mass_delete=self.allow_mass_delete)
            self.rounds += 1
            for c in report.conflicts:
                log.warning("%s", c.message)
            for msg in report.skipped:
                log.warning("skipped: %s", msg)
            self._warn_secrets(report)
            if self.online is not True:
                log.info("connected to the relay")
            self.online = True
            self.backoff.reset()
        except RelayUnreachable as exc:
            delay = self.backoff.delay_for(exc)
            if self.online is not False:
                what = "busy" if isinstance(exc, RelayBusy) else "unreachable"
                log.warning("relay %s (%s); retrying, edits stay queued", what, exc)
            self.online = False
            self._schedule_retry(delay, full=True)
        except AuthError as exc:
            self.fatal = f"the relay refused this device: {exc}"
            log.error("%s; stopping", self.fatal)
            self.stop()
        except MassDeleteRefused as exc:
            log.error("%s", exc)  # held until the person confirms; other changes went through
        except TamperDetected as exc:
            log.error("%s", exc)
            self._schedule_retry(max(self.backoff.next_delay(), 30.0), full=True)
        except CompanionError as exc:
            log.error("sync round failed: %s", exc)
            self._schedule_retry(self.backoff.next_delay(), full=full, paths=paths)
        except Exception:
            log.exception("sync round crashed")
            self._schedule_retry(self.backoff.next_delay(), full=True)
        finally:
            self._after_round()
            self.ready.set()

    def _warn_secrets(self, report: RoundReport) -> None:
        """The secret guard on the change stream: warn once per finding, never block sync."""
        try:
            found = self.secret_scanner.scan([*report.uploaded, *report.downloaded])
        except Exception:  # the guard must never stop the person's data from flowing
            log.exception("secret scan failed")
            return
        for f in found:
            log.warning(
                "a credential (%s, %s) is in %s line %d; move it to the keyring with: "
                "companion secrets move %s %s:%d --name NAME",
                f.kind,
                f.masked,
                f.path,
                f.line,
                self.engine.root,
                f.path,
                f.line,
            )

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
            engine.root,
            engine.ignore,
            self._on_batch,
            on_rescan=self._on_rescan,
            rescan_interval_s=self.rescan_interval_s,
            quiet_s=self.quiet_s,
            max_latency_s=self.max_latency_s,
        )
        engine.on_local_write = watcher.expect
        poller = threading.Thread(target=self._poll_loop, name="companion-longpoll", daemon=True)
        try:
            watcher.start()
            poller.start()
            while True:
                work = self._take()
                if work is None:
                    break
                self._round(*work)
        finally:
            self._stop.set()
            engine.stop_event.set()
            watcher.stop()
            poller.join(timeout=0.2)  # a waiting long-poll ends on its own; it is a daemon
            engine.on_local_write = None
            engine.stop_event.clear()  # the engine can run rounds again (a paused desktop app)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            log.info("sync daemon stopped")
        return 1 if self.fatal else 0

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: stopping after the current write", signum)
        self.stop()
