"""The daily quota of an agent device: records committed and bytes stored per UTC day.

An agent device holds the vault key and a token, so nothing in the sealed data stops it from
committing as fast as it can, and every record reaches every device. The relay caps what each
*agent* device may add in one UTC day (`Limits.agent_records_per_day`,
`agent_bytes_per_day`; `companion relay serve --agent-records-per-day N --agent-bytes-per-day
N`; 0 turns one off). A human device is never limited by it: the person's own writes are not
the threat, and a person must never be locked out of their vault by a quota.

Counted per device: each record committed, and the bytes of its sealed payload and of every
blob it uploads that the relay did not already have. Past either limit, commits and uploads
are answered 429 `quota_exceeded` with `Retry-After` (seconds to the next UTC midnight, when the
count starts over); a commit that would take the records past the limit is refused whole
(unless it is the device's first of the day, so one large commit cannot be refused forever).
The vault's device list (`GET /devices`) shows each agent's usage, so every device sees it.

The count lives in the relay process's memory: a restarted relay starts the day's count
afresh, and several relay processes behind a balancer each count their own share.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

from companion.relay.limits import Limits
from companion.relay.storage import Device


@dataclass(frozen=True)
class Usage:
    records: int
    bytes: int
    records_limit: int
    bytes_limit: int
    throttled_until: float | None  # the next midnight while a limit is used up


def _day(now: float) -> dt.date:
    return dt.datetime.fromtimestamp(now, dt.UTC).date()


def next_midnight(now: float) -> float:
    day = _day(now) + dt.timedelta(days=1)
    return dt.datetime.combine(day, dt.time(), dt.UTC).timestamp()


class AgentQuota:
    def __init__(self, limits: Limits, clock: Callable[[], float]) -> None:
        self.records_limit = limits.agent_records_per_day
        self.bytes_limit = limits.agent_bytes_per_day
        self.clock = clock
        self._counts: dict[str, tuple[dt.date, int, int]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def applies(device: Device) -> bool:
        return device.kind != "human"

    def _get(self, device_id: str, day: dt.date) -> tuple[int, int]:
        got = self._counts.get(device_id)
        return (got[1], got[2]) if got is not None and got[0] == day else (0, 0)

    def usage(self, device: Device) -> Usage | None:
        """The device's usage today (None for a human device)."""
        if not self.applies(device):
            return None
        now = self.clock()
        with self._lock:
            records, size = self._get(device.device_id, _day(now))
        over = (self.records_limit and records >= self.records_limit) or (
            self.bytes_limit and size >= self.bytes_limit
        )
        return Usage(
            records, size, self.records_limit, self.bytes_limit,
            next_midnight(now) if over else None,
        )  # fmt: skip

    def refusal(self, device: Device, records: int = 0) -> tuple[str, int, Usage] | None:
        """(message, Retry-After seconds, usage) when the device may not add `records` records
        (or any bytes) now; None when it may."""
        if not self.applies(device):
            return None
        now = self.clock()
        with self._lock:
            used, size = self._get(device.device_id, _day(now))
        wait = max(1, math.ceil(next_midnight(now) - now))
        usage = Usage(used, size, self.records_limit, self.bytes_limit, next_midnight(now))
        if self.records_limit and (
            used >= self.records_limit or (used and used + records > self.records_limit)
        ):
            return (
                f"this agent device has committed {used:,} records today; its quota is "
                f"{self.records_limit:,} records a day (relay setting --agent-records-per-day). "
                "It starts over at 00:00 UTC",
                wait,
                usage,
            )
        if self.bytes_limit and size >= self.bytes_limit:
            return (
                f"this agent device has stored {size:,} bytes today; its quota is "
                f"{self.bytes_limit:,} bytes a day (relay setting --agent-bytes-per-day). "
                "It starts over at 00:00 UTC",
                wait,
                usage,
            )
        return None

    def add(self, device: Device, records: int = 0, size: int = 0) -> None:
        if not self.applies(device) or (not records and not size):
            return
        day = _day(self.clock())
        with self._lock:
            used, total = self._get(device.device_id, day)
            self._counts[device.device_id] = (day, used + records, total + size)
