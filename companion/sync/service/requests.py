"""The one job queue between processes: asking the engine that owns a vault copy to do
something, and waiting for its outcome.

Only one engine owns a copy (`VaultLock`): `companion watch` or the desktop app. Every request
another process makes of it is a row here, in the copy's sync index (SQLite, safe across
processes): a command run meanwhile (`sync`, `restore`, `held accept|refuse`,
`quarantine supersede|dismiss`), the desktop app when another process owns the copy, and the
dream's Verify (`dreamhook.py`). `by_owner` records the row, nudges the owner (`ask`: the wake
file, `sync/service/wake.py`, which only says that a row exists) and waits for the outcome the
owner writes back into the row, so the caller prints the same result and exits with the same
status as if it had run the work itself. Decisions (`held`, `quarantine`) are recorded in the
index first and carried out by a requested round, whose outcome is theirs.

Kinds: ``round`` (run one round: `companion sync`, or to carry out a recorded decision; its
``allow_mass_delete`` argument is honoured) and ``restore``
(`path`, `rev`: `SyncEngine.restore`). A request nobody takes within the wait is cancelled, so
it never runs later by surprise. A holder that takes no requests (another one-shot command:
its lock's holder file says so) is reported at once, exit 4, instead of waited for.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from companion.errors import CompanionError, InputError
from companion.sync.service.lock import VaultLock
from companion.sync.service.wake import nudge
from companion.sync.state.index import SyncIndex
from companion.sync.state.requests_store import RequestRow

ROUND = "round"
RESTORE = "restore"
KINDS = (ROUND, RESTORE)

PENDING = "pending"
RUNNING = "running"
DONE = "done"
FAILED = "failed"
CANCELLED = "cancelled"

WAIT_S = 600.0  # how long a command waits for the engine that owns the copy
POLL_S = 0.05  # the pause between two looks at the outcome (one row read, ~30 us)...
QUICK_POLL_S = 0.001  # ...but during the first QUICK_S: the owner answers a quiet round in
QUICK_S = 0.25  # 5-10 ms, and a coarser look would add half its own pause to every command
KEEP_NS = 24 * 3600 * 10**9  # finished requests are forgotten after a day


@dataclass(frozen=True)
class Outcome:
    """What the owner did: `code` is the exit status the work would have had (0: done)."""

    code: int
    message: str
    report: dict[str, Any] | None = None


def submit(index: SyncIndex, kind: str, **args: Any) -> int:
    if kind not in KINDS:
        raise ValueError(kind)
    return index.requests.add(kind, args)


def ask(index: SyncIndex, engine_folder: str | os.PathLike[str], kind: str, **args: Any) -> int:
    """Record a request and nudge the owner to read the queue: the request's id."""
    request_id = submit(index, kind, **args)
    nudge(engine_folder)
    return request_id


def by_owner(
    index: SyncIndex, lock: VaultLock, kind: str, *, timeout: float = WAIT_S, **args: Any
) -> Outcome:
    """Have the engine holding `lock` do `kind` with `args`, and wait for its outcome (a
    timeout cancels the request and raises, as `wait`). A holder that takes no requests
    (another one-shot command: its holder file says so) is `LockHeld` at once, exit 4."""
    if not lock.owner_serves_requests():
        raise lock.held_elsewhere()
    return wait(index, ask(index, lock.folder, kind, **args), timeout=timeout)


def wait(
    index: SyncIndex,
    request_id: int,
    *,
    timeout: float = WAIT_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Outcome:
    """Wait for the owner's outcome; on timeout the request is cancelled (if not started) and
    a `CompanionError` says so."""
    start = clock()
    deadline = start + timeout
    while True:
        row = index.requests.get(request_id)
        if row is None:
            raise CompanionError(f"request {request_id} disappeared from the sync index")
        if row.state in (DONE, FAILED):
            return outcome_of(row)
        if clock() >= deadline:
            cancelled = index.requests.set(request_id, CANCELLED, only_if=PENDING)
            what = "cancelled" if cancelled else "still running there"
            raise CompanionError(
                f"the companion syncing this copy did not finish within {timeout:.0f} s "
                f"(request {what}); check `companion status`"
            )
        sleep(QUICK_POLL_S if clock() - start < QUICK_S else POLL_S)


def outcome_of(row: RequestRow) -> Outcome:
    r = row.result
    return Outcome(int(r.get("code", 1)), str(r.get("message", "")), r.get("report"))


def pending(index: SyncIndex) -> list[RequestRow]:
    return index.requests.rows(PENDING)


def start(index: SyncIndex, request_id: int) -> bool:
    """Claim a pending request (False when it was cancelled meanwhile)."""
    return index.requests.set(request_id, RUNNING, only_if=PENDING)


def finish(index: SyncIndex, request_id: int, outcome: Outcome) -> None:
    state = DONE if outcome.code == 0 else FAILED
    index.requests.set(
        request_id,
        state,
        {"code": outcome.code, "message": outcome.message, "report": outcome.report},
    )
    index.requests.prune(time.time_ns() - KEEP_NS)


EXIT_MASS_DELETE = 3
EXIT_OFFLINE = 5


def failure(exc: BaseException) -> Outcome:
    """The outcome of work that raised `exc`, with the exit status the command would have
    (the table in `sync/commands/cli.py`)."""
    from companion.relayclient.errors import RelayUnreachable
    from companion.sync.round.guard import MassDeleteRefused

    if isinstance(exc, MassDeleteRefused):
        return Outcome(EXIT_MASS_DELETE, str(exc))
    if isinstance(exc, RelayUnreachable):
        return Outcome(
            EXIT_OFFLINE, f"{exc}; local changes stay queued and go out on the next sync"
        )
    code = getattr(exc, "exit_code", 1) if isinstance(exc, CompanionError) else 1
    return Outcome(code if isinstance(code, int) else 1, str(exc))


def raise_for(outcome: Outcome) -> None:
    """Raise what the command would have raised for a failed outcome."""
    if outcome.code == 0:
        return
    err: CompanionError = (
        InputError(outcome.message) if outcome.code == 2 else CompanionError(outcome.message)
    )
    err.exit_code = outcome.code
    raise err
