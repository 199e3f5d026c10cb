"""Connection hygiene for the relay's HTTP server: a connection cap, header and idle timeouts.

uvicorn on its own waits forever for a request's headers, and for a body that stops
arriving; every such connection holds a file descriptor (and, for an upload, a temporary
file). A few hundred half-sent requests then exhaust the open-file limit: `accept()` fails,
healthy clients are refused, and asyncio logs a traceback per failed accept. `guarded_protocol`
wraps uvicorn's h11 protocol so that:

- **caps**: at most `max_connections` connections at once, and `max_per_address` from one
  client address (a reverse proxy's addresses are exempt: everything arrives from them); a
  connection over a cap is dropped as soon as it is accepted;
- **header timeout**: a connection must deliver a complete request head within
  `header_timeout` seconds of connecting (or of the first byte of its next request);
- **idle timeout**: while a request's body is expected and the server is ready to read it, the
  client must send something at least every `idle_timeout` seconds. Waiting on the server
  (a long-poll, a slow commit) never counts: only a silent client does.

Connections cut this way are aborted (no lingering buffers) and counted; the log gets one line
per kind of cut per minute through the de-duplicating filter (`logdedup.py`), never one line per
connection. `default_max_connections` derives the cap from RLIMIT_NOFILE so the cap is reached
well before the process runs out of descriptors.
"""

from __future__ import annotations

import asyncio
import resource
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from companion.logs import get_logger

log = get_logger("relay.conn")

FD_RESERVE = 192  # the database (3 per worker thread, 40 threads), logs, listeners
FDS_PER_CONNECTION = 2  # the socket, and a temporary file while a blob upload streams
MAX_DEFAULT_CONNECTIONS = 8192
SWEEP_INTERVAL_S = 0.5


def raise_nofile_limit() -> int:
    """Raise the soft open-file limit to the hard one (systemd's LimitNOFILE sets both);
    returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return int(soft)


def default_max_connections(nofile: int | None = None) -> int:
    """The most connections the open-file limit leaves room for (at least 16)."""
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    room = (int(nofile) - FD_RESERVE) // FDS_PER_CONNECTION
    return max(16, min(MAX_DEFAULT_CONNECTIONS, room))


def default_max_per_address(max_connections: int) -> int:
    return max(8, min(256, max_connections // 2))


@dataclass
class ConnectionGuard:
    max_connections: int
    max_per_address: int
    header_timeout: float = 10.0
    idle_timeout: float = 30.0
    exempt: frozenset[str] = frozenset()  # addresses the per-address cap does not apply to
    exempt_all: bool = False
    open: int = 0
    per_address: Counter[str] = field(default_factory=Counter)
    cut: Counter[str] = field(default_factory=Counter)  # why connections were dropped
    _protocols: set[GuardedProtocol] = field(default_factory=set)
    _sweeping: bool = False

    @classmethod
    def from_trusted(cls, trusted: str | Iterable[str] | None, **kw: Any) -> ConnectionGuard:
        """`trusted` as uvicorn's forwarded_allow_ips: comma-separated addresses, or '*'."""
        items = trusted.split(",") if isinstance(trusted, str) else list(trusted or ())
        names = frozenset(i.strip() for i in items if i.strip())
        return cls(exempt=names - {"*"}, exempt_all="*" in names, **kw)

    def admit(self, address: str) -> str | None:
        """Count a new connection in; the reason when it must be dropped instead."""
        if self.open >= self.max_connections:
            return "connection limit"
        capped = not self.exempt_all and address not in self.exempt
        if capped and self.per_address[address] >= self.max_per_address:
            return "per-address connection limit"
        self.open += 1
        self.per_address[address] += 1
        return None

    def release(self, address: str) -> None:
        self.open -= 1
        self.per_address[address] -= 1
        if self.per_address[address] <= 0:
            del self.per_address[address]

    def drop(self, reason: str, address: str) -> None:
        self.cut[reason] += 1
        log.warning("dropped a connection from %s: %s", address, reason)

    def start_sweeping(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._sweeping:
            self._sweeping = True
            loop.call_later(SWEEP_INTERVAL_S, self._sweep, loop)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        for p in list(self._protocols):
            p.check_deadlines(now)
        if self._protocols:
            loop.call_later(SWEEP_INTERVAL_S, self._sweep, loop)
        else:
            self._sweeping = False


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol under a `ConnectionGuard` (set on the class by
    `guarded_protocol`)."""

    guard: ConnectionGuard

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._address = self.client[0] if self.client else "unknown"
        self._admitted = False
        reason = self.guard.admit(self._address)
        if reason is not None:
            self.guard.drop(reason, self._address)
            transport.abort()
            return
        self._admitted = True
        now = self.loop.time()
        self._last_data = now
        self._header_deadline: float | None = now + self.guard.header_timeout
        self._cycle_seen: object | None = None
        self.guard._protocols.add(self)
        self.guard.start_sweeping(self.loop)

    def connection_lost(self, exc: Exception | None) -> None:
        if getattr(self, "_admitted", False):
            self._admitted = False
            self.guard._protocols.discard(self)
            self.guard.release(self._address)
        super().connection_lost(exc)

    def _idle_between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def data_received(self, data: bytes) -> None:
        now = self.loop.time()
        self._last_data = now
        if self._header_deadline is None and self._idle_between_requests():
            self._header_deadline = now + self.guard.header_timeout  # a new request starts
        super().data_received(data)
        if self.cycle is not None and self.cycle is not self._cycle_seen:
            self._cycle_seen = self.cycle  # the request head is complete
            self._header_deadline = None

    def check_deadlines(self, now: float) -> None:
        if self.transport.is_closing():
            return
        if self._header_deadline is not None and now > self._header_deadline:
            self._cut("no complete request head within the header timeout")
            return
        if self.flow.read_paused:  # the server is not reading: the client is not idle
            self._last_data = now
            return
        cycle = self.cycle
        if (
            cycle is not None
            and not cycle.response_complete
            and cycle.more_body
            and now - self._last_data > self.guard.idle_timeout
        ):
            self._cut("the request body stopped arriving (idle timeout)")

    def _cut(self, reason: str) -> None:
        self.guard.drop(reason, self._address)
        self.transport.abort()


def guarded_protocol(guard: ConnectionGuard) -> type[GuardedProtocol]:
    """A protocol class for `uvicorn.Config(http=...)` bound to `guard`."""
    return type("RelayHttpProtocol", (GuardedProtocol,), {"guard": guard})
