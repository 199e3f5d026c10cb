"""The watcher: file-system events, coalesced into debounced batches of changed paths.

A watchdog observer feeds raw events; they are turned into normalised vault-relative paths
(engine temp files and ignored paths dropped) and collected in a set. A batch is delivered once
the vault has been quiet for `quiet_s`, or at the latest `max_latency_s` after the first event
of the batch, so a save burst becomes one batch and a busy vault still syncs promptly.

Echo suppression: after the engine writes, deletes or renames a file it calls `expect(path,
state)`. When the batch is cut, a path whose file is exactly in that state (stat identity; or
absent for a delete) is dropped: applying a remote change does not come back as a local one.
Expectations expire after `echo_ttl_s`.

Files being written: a file written to and not closed yet (inotify's close-write,
where the platform reports it) is **busy** (`busy_paths()`); the engine does not upload it
until it is closed, so a download or a copy that pauses between blocks never goes out torn.
A file busy for `busy_expiry_s` without any event counts as written (a writer that keeps it
open; or a platform without close events, where the scanner's quiet period decides).

A periodic safety rescan (`on_rescan`) covers anything the OS did not report (event queue
overflow, network drives).

The vault folder itself can be replaced under the watcher: a drive unmounted and mounted again,
a folder restored from a backup or moved away and copied back. The OS watches the folder it was
given (its inode), which no longer holds the vault, so every later edit would go unseen until
the safety rescan. Every `root_check_s` the watcher compares the folder's identity (device,
inode) with the one it watches: when it differs it watches the folder now at that path and
delivers an overflow batch (scan everything); when the folder is gone it stops watching the old
one and delivers an overflow batch too, so the engine says the folder is missing.

A barrier (`barrier`, then `take_pending`) lets the daemon sync what changed without walking the
vault: it creates a cookie file in the vault and waits for its event. The OS reports events in
order (and watchdog keeps that order, holding later events behind a rename it is pairing), so
once the cookie's arrives every change made before the call has been noted. git's fsmonitor
daemon synchronises with its cookie files the same way.

The observer and the debounce thread stop cleanly with `stop()`. The timing rules live in
`Debounce`, a pure class driven by the clock it is given.
"""

from __future__ import annotations

import os
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from watchdog.events import (
    EVENT_TYPE_CLOSED,
    EVENT_TYPE_CREATED,
    EVENT_TYPE_DELETED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_MOVED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from companion.logs import get_logger
from companion.sync.local.filestate import FileState, NotRegularFile, current_state
from companion.sync.local.fslocal import reports_every_change
from companion.sync.local.ignore import IGNORE_FILE, IgnoreRules
from companion.sync.local.pathsafe import TEMP_PREFIX

log = get_logger("sync.watcher")

COOKIE_PREFIX = TEMP_PREFIX + "cookie-"  # a temp name: never synced, swept if left behind
BARRIER_TIMEOUT_S = 2.0

_INTERESTING = {
    EVENT_TYPE_CREATED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_DELETED,
    EVENT_TYPE_MOVED,
    EVENT_TYPE_CLOSED,  # closed after writing
}


class Debounce:
    """When to cut a batch: after `quiet_s` without events, or `max_latency_s` after the first
    event of the batch, whichever comes first. Pure: times are passed in (tests use a fake
    clock; the watcher passes `time.monotonic()`)."""

    def __init__(self, quiet_s: float, max_latency_s: float) -> None:
        self.quiet_s = quiet_s
        self.max_latency_s = max_latency_s
        self.first: float | None = None
        self.last = 0.0

    def note(self, now: float) -> None:
        if self.first is None:
            self.first = now
        self.last = now

    @property
    def pending(self) -> bool:
        return self.first is not None

    def deadline(self) -> float | None:
        if self.first is None:
            return None
        return min(self.last + self.quiet_s, self.first + self.max_latency_s)

    def due(self, now: float) -> bool:
        deadline = self.deadline()
        return deadline is not None and now >= deadline

    def reset(self) -> None:
        self.first = None


@dataclass(frozen=True, slots=True)
class Batch:
    """Changed vault-relative paths (files or folders). `overflow`: too many to list; rescan."""

    paths: frozenset[str]
    overflow: bool = False


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.w = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in _INTERESTING:
            return
        if event.event_type == EVENT_TYPE_CREATED and not event.is_directory:
            name = os.path.basename(os.fsdecode(event.src_path))
            if name.startswith(COOKIE_PREFIX):
                self.w._cookie_arrived(name)
                return
        if event.is_directory and event.event_type in (EVENT_TYPE_MODIFIED, EVENT_TYPE_CLOSED):
            return  # a folder's own mtime; its children report themselves
        kind = event.event_type
        if not event.is_directory and not event.is_synthetic:
            # written to (and not closed yet), or closed, deleted, moved: a moved-in or
            # created file is complete unless writes follow
            self.w._writing(event.src_path, kind == EVENT_TYPE_MODIFIED)
        self.w._note(event.src_path, event.is_directory)
        if kind == EVENT_TYPE_MOVED and event.dest_path:
            self.w._note(event.dest_path, event.is_directory)


class Watcher:
    """Watch the vault at `root` and call `on_batch(Batch)` from a background thread."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        ignore: IgnoreRules,
        on_batch: Callable[[Batch], None],
        *,
        quiet_s: float = 0.075,
        max_latency_s: float = 0.3,
        on_rescan: Callable[[], None] | None = None,
        rescan_interval_s: float | None = 600.0,
        echo_ttl_s: float = 10.0,
        max_paths: int = 10_000,
        busy_expiry_s: float = 60.0,
        root_check_s: float | None = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self._prefix = str(self.root) + os.sep
        self.ignore = ignore
        self.on_batch = on_batch
        self.on_rescan = on_rescan
        self.quiet_s = quiet_s
        self.max_latency_s = max_latency_s
        self.rescan_interval_s = rescan_interval_s
        self.echo_ttl_s = echo_ttl_s
        self.max_paths = max_paths
        self.busy_expiry_s = busy_expiry_s
        self.root_check_s = root_check_s
        self.clock = clock
        self._cond = threading.Condition()
        self._dirty: set[str] = set()
        self._overflow = False
        self._debounce = Debounce(quiet_s, max_latency_s)
        self._busy: dict[str, float] = {}  # open for writing: path -> time of the last event
        self._expect: dict[str, tuple[FileState | None, float]] = {}
        self._stopping = False
        self._observer: Observer | None = None  # type: ignore[valid-type]
        self._thread: threading.Thread | None = None
        self._root_id: tuple[int, int] | None = None
        self._cookies_waited: set[str] = set()
        self._cookies_seen: set[str] = set()
        self._cookie_count = 0
        self.batches_delivered = 0
        self.echoes_dropped = 0

    # ------------------------------------------------------------- lifecycle

    def start(self) -> Watcher:
        self._observer = self._observe()
        self._thread = threading.Thread(target=self._run, name="companion-watch", daemon=True)
        self._thread.start()
        self._root_id = _identity(self.root)
        return self

    def _observe(self) -> Observer:  # type: ignore[valid-type]
        observer = Observer()
        observer.schedule(_Handler(self), str(self.root), recursive=True)
        observer.daemon = True
        observer.start()
        return observer

    def _check_root(self) -> None:
        """Watch the vault folder again when the one at its path is not the one watched (see
        the module docstring); either way, the next batch asks for a full scan."""
        now_id = _identity(self.root)
        if now_id == self._root_id:
            return
        with self._cond:
            old, self._observer = self._observer, None
        if old is not None:
            old.stop()
            old.join(5.0)
        new = None
        if now_id is not None:
            try:
                new = self._observe()
            except OSError as exc:  # gone again, or unreadable: the next check tries again
                log.warning("cannot watch the vault folder %s: %s", self.root, exc)
                now_id = None
        if now_id is None:
            log.warning("the vault folder %s is gone; watching for it to come back", self.root)
        else:
            what = "is back" if self._root_id is None else "was replaced"
            log.info("the vault folder %s %s; watching it and scanning it", self.root, what)
        with self._cond:
            if self._stopping:
                if new is not None:
                    new.stop()
                return
            self._observer = new
            self._root_id = now_id
            self._overflow = True  # what changed meanwhile is known only to a scan
            self._debounce.note(self.clock())
            self._cond.notify_all()

    @property
    def sees_every_change(self) -> bool:
        """Whether the OS reports every change to the vault to this watcher: a local file
        system on Linux (`fslocal.reports_every_change`), and the vault folder is still the
        one it watches (not moved away and replaced). Otherwise (a network share, where
        another machine's writes raise no event) only a scan finds everything."""
        return (
            self.running
            and self._root_id is not None
            and _identity(self.root) == self._root_id
            and reports_every_change(self.root)
        )

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the observer and the debounce thread; pending events are dropped."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._thread = None

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # ------------------------------------------------------------- echo suppression

    def expect(self, rel: str, state: FileState | None) -> None:
        """The engine just made `rel` be `state` (None: removed); don't report that as a change."""
        with self._cond:
            self._expect[rel] = (state, self.clock() + self.echo_ttl_s)
            self._busy.pop(rel, None)  # our own write, closed

    def _is_echo(self, rel: str, now: float) -> bool:
        """Whether `rel` is exactly as the engine left it (caller holds the lock)."""
        hit = self._expect.get(rel)
        if hit is None:
            return False
        state, until = hit
        if now > until:
            del self._expect[rel]
            return False
        try:
            actual = current_state(self.root / rel)
        except NotRegularFile:
            actual = None
            matches = False
        else:
            matches = (
                actual is None
                if state is None
                else (actual is not None and actual.same_stat(state))
            )
        if not matches:
            del self._expect[rel]  # changed after our write: a real change from now on
        return matches

    # ------------------------------------------------------------- events

    def _rel(self, raw: str | bytes) -> str | None:
        path = os.fsdecode(raw)
        if not path.startswith(self._prefix):
            return None
        rel = unicodedata.normalize("NFC", path[len(self._prefix) :].replace(os.sep, "/"))
        if not rel or any(seg.startswith(TEMP_PREFIX) for seg in rel.split("/")):
            return None
        return rel

    def _writing(self, raw: str | bytes, busy: bool) -> None:
        """A file was created or modified (busy), or closed, deleted or moved away (not)."""
        rel = self._rel(raw)
        if rel is None:
            return
        with self._cond:
            if busy:
                self._busy[rel] = self.clock()
            else:
                self._busy.pop(rel, None)

    # ------------------------------------------------------------- barrier

    def barrier(self, timeout: float = BARRIER_TIMEOUT_S) -> bool:
        """True once every change made in the vault before this call has been noted (see the
        module docstring); False when that could not be shown within `timeout` seconds (the
        watcher is stopped, the vault root is not writable, the events are late): then only a
        scan finds everything."""
        if not self.running:
            return False
        with self._cond:
            self._cookie_count += 1
            name = f"{COOKIE_PREFIX}{os.getpid()}-{self._cookie_count}"
            self._cookies_waited.add(name)
        path = self.root / name
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError as exc:
            log.debug("no barrier: cannot create %s: %s", path, exc)
            with self._cond:
                self._cookies_waited.discard(name)
            return False
        try:
            deadline = time.monotonic() + timeout
            with self._cond:
                while name not in self._cookies_seen and not self._stopping:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                return name in self._cookies_seen
        finally:
            with self._cond:
                self._cookies_waited.discard(name)
                self._cookies_seen.discard(name)
            try:
                os.unlink(path)
            except OSError as exc:  # the scanner sweeps a leftover temp name later
                log.debug("cannot remove %s: %s", path, exc)

    def _cookie_arrived(self, name: str) -> None:
        with self._cond:
            if name in self._cookies_waited:
                self._cookies_seen.add(name)
                self._cond.notify_all()

    def take_pending(self) -> frozenset[str] | None:
        """Cut the batch now and return its paths (echoes dropped) for the caller to sync
        itself, instead of delivering them; None after an overflow (scan everything)."""
        with self._cond:
            batch = self._cut(self.clock())
        if batch is None:
            return frozenset()
        return None if batch.overflow else batch.paths

    def pending_paths(self) -> frozenset[str]:
        """Paths noted for the next batch, not delivered yet (echoes not dropped yet)."""
        with self._cond:
            return frozenset(self._dirty)

    def busy_paths(self) -> frozenset[str]:
        """Files opened for writing and not closed yet (those quiet for `busy_expiry_s` are
        taken as written)."""
        with self._cond:
            limit = self.clock() - self.busy_expiry_s
            for rel in [r for r, t in self._busy.items() if t < limit]:
                del self._busy[rel]
            return frozenset(self._busy)

    def _note(self, raw: str | bytes, is_dir: bool) -> None:
        rel = self._rel(raw)
        if rel is None:
            return
        if rel == IGNORE_FILE:
            self.ignore.reload_if_changed()
        elif self.ignore.is_ignored(rel, is_dir=is_dir):
            return
        now = self.clock()
        with self._cond:
            self._debounce.note(now)
            if len(self._dirty) >= self.max_paths:
                self._overflow = True
                self._dirty.clear()
            elif not self._overflow:
                self._dirty.add(rel)
            self._cond.notify_all()

    # ------------------------------------------------------------- debounce thread

    def _run(self) -> None:
        clock = self.clock
        next_rescan = clock() + self.rescan_interval_s if self.rescan_interval_s else None
        next_root_check = clock() + self.root_check_s if self.root_check_s else None
        while True:
            batch: Batch | None = None
            rescan = False
            with self._cond:
                while not self._stopping:
                    now = clock()
                    if self._debounce.due(now):
                        break
                    if next_rescan is not None and now >= next_rescan:
                        break
                    if next_root_check is not None and now >= next_root_check:
                        break
                    deadlines = [
                        d
                        for d in (self._debounce.deadline(), next_rescan, next_root_check)
                        if d is not None
                    ]
                    self._cond.wait(max(0.0, min(deadlines) - now) if deadlines else None)
                if self._stopping:
                    return
                now = clock()
                root_check_due = next_root_check is not None and now >= next_root_check
            if root_check_due:
                self._check_root()  # outside the lock: it stops and starts an observer
                next_root_check = clock() + (self.root_check_s or 0)
            with self._cond:
                if self._stopping:
                    return
                now = clock()
                if not self._debounce.due(now) and not (
                    next_rescan is not None and now >= next_rescan
                ):
                    continue  # only the folder was looked at
                batch = self._cut(now)
                if next_rescan is not None and now >= next_rescan:
                    rescan = True
                    next_rescan = now + (self.rescan_interval_s or 0)
            self._deliver(batch, rescan)

    def _cut(self, now: float) -> Batch | None:
        """The batch noted so far, echoes dropped; the next one starts empty (caller holds the
        lock). None when there is nothing to deliver."""
        self._debounce.reset()
        if not (self._dirty or self._overflow):
            return None
        kept = frozenset(p for p in self._dirty if not self._is_echo(p, now))
        self.echoes_dropped += len(self._dirty) - len(kept)
        batch = Batch(kept, self._overflow) if kept or self._overflow else None
        self._dirty = set()
        self._overflow = False
        self._prune_expectations(now)
        return batch

    def _prune_expectations(self, now: float) -> None:
        for rel in [r for r, (_, until) in self._expect.items() if now > until]:
            del self._expect[rel]

    def _deliver(self, batch: Batch | None, rescan: bool) -> None:
        try:
            if batch is not None:
                self.batches_delivered += 1
                self.on_batch(batch)
            if rescan and self.on_rescan is not None:
                self.on_rescan()
        except Exception:  # a failing callback must not kill the watcher
            log.exception("sync watcher callback failed")


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return st.st_dev, st.st_ino
