"""Limits on an agent's writes through MCP: writes per minute, bytes per day, new notes per day.

Each landed write syncs to every device at once, so a runaway or prompt-injected agent could
fill the person's disks in seconds (issue 44: 150 writes of 99,000 characters in 14 s). The
limits are `[mcp] writes_per_minute`, `bytes_per_day` and `new_notes_per_day` (0: none).

The count is the agent-write record of this device (`companion.mcp.writelog`): every landed
write is there with its time, the bytes of text it carried and whether it created a note. So a
server the agent restarts, or a second server on the same device, counts the same writes; the
record is read incrementally (it only grows during a day). Days are UTC days, like the
record's files. A write past a limit is refused before anything is written, with one line
naming the limit, its setting and when it frees up, so the agent can tell the person or wait.

Within one server, `hold()` makes check-then-write atomic across the tool threads.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from companion.mcp.context import ToolRefused

MINUTE = dt.timedelta(seconds=60)


@dataclass(frozen=True)
class Quota:
    writes_per_minute: int = 30
    bytes_per_day: int = 10_000_000
    new_notes_per_day: int = 200


@dataclass
class _Tail:
    """What has been read of one day's record: (time, size, new) per write."""

    offset: int = 0
    writes: list[tuple[dt.datetime, int, bool]] = field(default_factory=list)


def _when(now: dt.datetime, at: dt.datetime) -> str:
    """`HH:MM:SS UTC (in 42 s)` / `00:00 UTC (in 5 h 12 min)`."""
    seconds = max(1, int((at - now).total_seconds() + 0.999))
    if seconds < 120:
        wait = f"{seconds} s"
    elif seconds < 7200:
        wait = f"{seconds // 60} min"
    else:
        wait = f"{seconds // 3600} h {seconds % 3600 // 60} min"
    clock = at.strftime("%H:%M") if at.second == 0 else at.strftime("%H:%M:%S")
    return f"{clock} UTC (in {wait})"


class QuotaGuard:
    """Counts this device's recorded writes and refuses one past a limit."""

    def __init__(
        self,
        quota: Quota,
        day_file: Callable[[dt.date], Path],
        clock: Callable[[], dt.datetime],
    ) -> None:
        self.quota = quota
        self.day_file = day_file
        self.clock = clock
        self._tails: dict[Path, _Tail] = {}
        self._lock = threading.RLock()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Hold between the check and the record of a write (one write at a time here)."""
        with self._lock:
            yield

    def _read(self, day: dt.date) -> list[tuple[dt.datetime, int, bool]]:
        path = self.day_file(day)
        tail = self._tails.setdefault(path, _Tail())
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < tail.offset:  # replaced by something shorter: read it afresh
                    tail.offset, tail.writes = 0, []
                f.seek(tail.offset)
                data = f.read(size - tail.offset)
        except FileNotFoundError:
            tail.offset, tail.writes = 0, []
            return tail.writes
        except OSError:
            return tail.writes
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        for raw in data[:end].splitlines():
            try:
                d = json.loads(raw)
                t = dt.datetime.fromisoformat(str(d["time"]).replace("Z", "+00:00"))
            except (ValueError, KeyError, TypeError):
                continue
            size_ = d.get("size")
            tail.writes.append(
                (
                    t if t.tzinfo else t.replace(tzinfo=dt.UTC),
                    size_ if isinstance(size_, int) and size_ > 0 else 0,
                    d.get("new") is True,
                )
            )
        tail.offset += end
        return tail.writes

    def check(self, *, size: int = 0, new: bool = False, at_least: bool = False) -> None:
        """Refuse (ToolRefused) a write of `size` bytes (creating a note when `new`) that
        would go past a limit. `size` 0 and `new` False: refuse only when a limit is used up;
        `at_least`: `size` is a lower bound (before the note is composed)."""
        q = self.quota
        now = self.clock().astimezone(dt.UTC)
        today = now.date()
        with self._lock:
            writes = list(self._read(today))
            if now - MINUTE < dt.datetime.combine(today, dt.time(), dt.UTC):
                writes = self._read(today - dt.timedelta(days=1)) + writes
        midnight = dt.datetime.combine(today + dt.timedelta(days=1), dt.time(), dt.UTC)
        if q.writes_per_minute:
            recent = sorted(t for t, _s, _n in writes if now - MINUTE < t <= now)
            if len(recent) >= q.writes_per_minute:
                frees = recent[len(recent) - q.writes_per_minute] + MINUTE
                raise ToolRefused(
                    f"refused: this agent's quota of {q.writes_per_minute:,} writes a minute "
                    f"([mcp] writes_per_minute) is used up; it frees up at {_when(now, frees)}. "
                    "Nothing was written"
                )
        todays = [(s, n) for t, s, n in writes if t.date() == today]
        if q.bytes_per_day:
            used = sum(s for s, _n in todays)
            if used >= q.bytes_per_day or (size and used + size > q.bytes_per_day):
                raise ToolRefused(
                    f"refused: this agent's quota of {q.bytes_per_day:,} bytes of notes a day "
                    f"([mcp] bytes_per_day) is used up ({used:,} written today"
                    + (f"; this write: {size:,}{' or more' if at_least else ''}" if size else "")
                    + f"); it frees up at {_when(now, midnight)}. Nothing was written"
                )
        if q.new_notes_per_day and new:
            created = sum(1 for _s, n in todays if n)
            if created >= q.new_notes_per_day:
                raise ToolRefused(
                    f"refused: this agent's quota of {q.new_notes_per_day:,} new notes a day "
                    f"([mcp] new_notes_per_day) is used up; it frees up at "
                    f"{_when(now, midnight)}. Add to an existing note instead (edit_note, "
                    "append_journal). Nothing was written"
                )
