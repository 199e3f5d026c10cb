"""De-duplicate log storms: the first of a run of identical records is logged, the repeats
within `window` seconds are counted, and one summary line says how many were left out.

"Identical" means the same logger, level, message template (before arguments are filled in)
and exception type, so "dropped a connection from %s: %s" a thousand times, or asyncio's
"socket.accept() out of system resource" with its traceback on every loop turn, becomes two
lines a minute instead of megabytes. Records differing in template are never merged.

`install` puts a `DedupFilter` first on each handler of the relay's loggers (uvicorn's error
logger, the companion logger, and the root logger that asyncio logs through; never the access
log, whose lines differ by design); `flush_all` emits the summaries that are due (the server
calls it every few seconds and once at shutdown).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable

WINDOW_S = 60.0
_SUMMARY = "_dedup_summary"


class DedupFilter(logging.Filter):
    def __init__(
        self,
        handler: logging.Handler,
        window: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.handler = handler
        self.window = window
        self.clock = clock
        self._lock = threading.Lock()
        # key -> [window start, repeats left out, the first record of the run]
        self._runs: dict[tuple[object, ...], list] = {}

    @staticmethod
    def _key(record: logging.LogRecord) -> tuple[object, ...]:
        # computed once per record: a later handler's filters see a record an earlier
        # handler's redactor has already rewritten (message filled in)
        key = getattr(record, "_dedup_key", None)
        if key is None:
            exc = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else None
            key = (record.name, record.levelno, str(record.msg), exc)
            record._dedup_key = key
        return key  # type: ignore[no-any-return]

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, _SUMMARY, False):
            return True
        now = self.clock()
        due = self._expire(now)
        key = self._key(record)
        with self._lock:
            run = self._runs.get(key)
            if run is None:
                self._runs[key] = [now, 0, record]
                passed = True
            else:
                run[1] += 1
                passed = False
        self._emit(due)
        return passed

    def _expire(self, now: float) -> list[tuple[logging.LogRecord, int, float]]:
        with self._lock:
            done = [k for k, run in self._runs.items() if now - run[0] >= self.window]
            out = []
            for k in done:
                start, count, first = self._runs.pop(k)
                if count:
                    out.append((first, count, now - start))
            return out

    def _emit(self, due: list[tuple[logging.LogRecord, int, float]]) -> None:
        for first, count, span in due:
            msg = first.msg if isinstance(first.msg, str) else str(first.msg)
            head = msg.splitlines()[0] if msg else ""
            summary = logging.LogRecord(
                first.name,
                first.levelno,
                first.pathname,
                first.lineno,
                "the previous message (%s) repeated %d more time(s) in %.0f s",
                (head[:120], count, span),
                None,
            )
            setattr(summary, _SUMMARY, True)
            self.handler.handle(summary)

    def flush(self, force: bool = False) -> None:
        """Emit the summaries that are due (all of them when `force`, e.g. at shutdown)."""
        now = self.clock() + (self.window if force else 0.0)
        self._emit(self._expire(now))


_installed: list[DedupFilter] = []
_install_lock = threading.Lock()


def install(
    logger_names: tuple[str, ...] = ("uvicorn", "uvicorn.error", "companion", ""),
    window: float = WINDOW_S,
) -> list[DedupFilter]:
    """Put a DedupFilter first on every handler of these loggers (once per handler). The
    root logger gets a stderr handler when it has none, so asyncio's errors are filtered too
    instead of going to logging's last-resort handler."""
    root = logging.getLogger()
    if "" in logger_names and not root.handlers:
        h = logging.StreamHandler(sys.stderr)
        h.setLevel(logging.WARNING)
        h.setFormatter(logging.Formatter("%(levelname)s: %(name)s: %(message)s"))
        root.addHandler(h)
    added = []
    with _install_lock:
        for name in logger_names:
            for handler in logging.getLogger(name).handlers:
                if any(isinstance(f, DedupFilter) for f in handler.filters):
                    continue
                f = DedupFilter(handler, window)
                handler.filters.insert(0, f)  # before the redactor: it keys on the template
                _installed.append(f)
                added.append(f)
    return added


def flush_all(force: bool = False) -> None:
    for f in list(_installed):
        f.flush(force)
