"""The sync engine as the dream's Verify step sees it (`companion.dream.verify.SyncHook`).

Two cases, because the nightly dream on a server usually runs while `companion watch` owns the
vault copy:
- nobody holds the engine lock: the hook takes it and runs sync rounds itself;
- a daemon holds it: the daemon's watcher picks up what the dream wrote, so the hook only waits
  (bounded) for the daemon's status to report a round that started after the dream wrote and
  left nothing pending.
The per-night lease goes straight to the relay in both cases (it needs no engine lock).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from companion.logs import get_logger
from companion.paths import DevicePaths
from companion.relay.client import RelayClient
from companion.sync.device import DeviceState, status_file, vault_dir
from companion.sync.lock import LockHeld, VaultLock
from companion.sync.status import StatusStore

log = get_logger("sync.dreamhook")

# how long one "round" may take when a daemon does the syncing
DAEMON_ROUND_WAIT_S = 10.0


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
    """Waits for the `companion watch` daemon that owns this copy to sync the dream's writes."""

    def __init__(self, status: StatusStore, client: RelayClient, *, clock: Any = time) -> None:
        self.status = status
        self.client = client
        self.clock = clock
        self.started = clock.time()

    def sync_until_quiet(self, max_rounds: int) -> int:
        deadline = self.clock.monotonic() + DAEMON_ROUND_WAIT_S * max(1, max_rounds)
        pending = 1
        while self.clock.monotonic() < deadline:
            st = self.status.read()
            p = st.get("pending") or {}
            pending = int(p.get("upload", 0)) + int(p.get("download", 0))
            last = st.get("last_sync") or 0
            if last >= self.started and pending == 0 and st.get("state") != "syncing":
                return 0
            self.clock.sleep(0.2)
        return pending or 1

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
    from companion.sync.engine import SyncEngine

    lock = VaultLock(vault_dir(paths, root), command="companion dream")
    try:
        lock.acquire()
    except LockHeld as exc:
        log.info("dream: %s; waiting for it to sync the dream's changes", exc)
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
            yield DaemonSyncHook(StatusStore(status_file(paths, root)), client)
        finally:
            client.close()
        return
    try:
        engine = SyncEngine(root, paths, config)
        try:
            yield EngineSyncHook(engine)
        finally:
            engine.close()
    finally:
        lock.release()
