"""The sync engine as the dream's Verify step sees it (`companion.dream.verify.SyncHook`).

Two cases, because the nightly dream on a server usually runs while `companion watch` owns the
vault copy:
- nobody holds the engine lock: the hook takes it and runs sync rounds itself;
- `companion watch` or the desktop app holds it: the hook asks that engine for each round the
  way `companion sync` does (`sync/service/requests.py`: a row in the job queue, then a nudge
  of the wake file) and waits for *that* round's outcome. The owner claims a request only in a round
  that starts after it was recorded, once its watcher has noted every change made before
  (`Daemon._watched_scope`), so a round that started before the dream wrote can never stand
  for the dream's files; an idle daemon, which runs no round on its own, answers at once.
  Another one-shot command holding the lock (it takes no requests) makes the round fail at
  once with `LockHeld`, which Verify reports.
The per-night lease goes straight to the relay in both cases (it needs no engine lock).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from companion.logs import get_logger
from companion.paths import DevicePaths
from companion.relayclient.client import RelayClient
from companion.sync.round.report import RoundReport
from companion.sync.service import requests
from companion.sync.service.lock import LockHeld, VaultLock
from companion.sync.state.device import DeviceState, sync_index_path, vault_dir
from companion.sync.state.index import SyncIndex

log = get_logger("sync.dreamhook")

# how long the hook waits for the owner to carry out one round it asked for (a quiet round
# takes milliseconds; a big first download longer; a request nobody took is cancelled)
OWNER_ROUND_WAIT_S = 120.0


def rounds_until_quiet(round_once: Callable[[], Any], max_rounds: int) -> int:
    """Run `round_once` (returns a RoundReport) until a round converges with nothing pending,
    at most `max_rounds` times; what is still pending (at least 1 when not converged)."""
    pending = 0
    for _ in range(max(1, max_rounds)):
        rep = round_once()
        pending = rep.pending_upload + rep.pending_download
        if rep.converged and pending == 0:
            return 0
    return max(pending, 1)


class EngineSyncHook:
    """Runs rounds on an engine this process owns."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def sync_until_quiet(self, max_rounds: int) -> int:
        return rounds_until_quiet(self.engine.round, max_rounds)

    def acquire_lease(self, name: str, ttl: float) -> bool:
        return bool(self.engine.client.lease(name, ttl).acquired)


class DaemonSyncHook:
    """Asks the engine that owns this copy (`companion watch`, the desktop app) for rounds, as
    `companion sync` does through it, and waits for each one's outcome."""

    def __init__(
        self,
        index: SyncIndex,
        lock: VaultLock,
        client: RelayClient,
        *,
        timeout: float = OWNER_ROUND_WAIT_S,
    ) -> None:
        self.index = index
        self.lock = lock
        self.client = client
        self.timeout = timeout

    def round(self) -> RoundReport:
        """One round by the owner, asked for now: its report (its failure raised with the exit
        status the round would have had here)."""
        # a one-shot command holding the lock takes no requests: LockHeld at once
        outcome = requests.by_owner(self.index, self.lock, requests.ROUND, timeout=self.timeout)
        requests.raise_for(outcome)
        return RoundReport.from_summary(outcome.report or {})

    def sync_until_quiet(self, max_rounds: int) -> int:
        return rounds_until_quiet(self.round, max_rounds)

    def acquire_lease(self, name: str, ttl: float) -> bool:
        return bool(self.client.lease(name, ttl).acquired)


@contextlib.contextmanager
def dream_sync_hook(
    vault: str | Path, paths: DevicePaths, config: Any
) -> Iterator[EngineSyncHook | DaemonSyncHook | None]:
    """The hook for `vault`, or None when it is not a sync copy (Verify then says so)."""
    root = Path(vault).resolve()
    if not DeviceState.exists(paths, root):
        yield None
        return
    from companion.credentials.store import open_store
    from companion.sync.round.engine import SyncEngine

    lock = VaultLock(vault_dir(paths, root), command="companion dream")
    try:
        lock.acquire()
    except LockHeld:
        holder = lock.holder() or {}
        log.info(
            "dream: pid %s (`%s`) syncs this copy; asking it for the dream's sync rounds",
            holder.get("pid", "?"), holder.get("command", "?"),
        )  # fmt: skip
        state = DeviceState.load(paths, root)
        store = open_store(config)
        client = RelayClient(
            state.relay_url,
            state.load_token(store),
            state.vault_id,
            verify=state.verify,
            insecure_http=state.insecure_http,
        )
        try:
            with SyncIndex(sync_index_path(paths, root)) as index:
                yield DaemonSyncHook(index, lock, client)
        finally:
            client.close()
        return
    try:
        engine = SyncEngine(root, paths, config)
        from companion.review.hook import install

        install(engine)
        try:
            yield EngineSyncHook(engine)
        finally:
            engine.close()
    finally:
        lock.release()
