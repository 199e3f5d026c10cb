"""`companion status`: the saved status plus a live look (pending changes, relay reachable).

Read-only and lock-free, so it works while a daemon syncs the same folder: the local scan does
not write the index or rename anything, and the relay is asked one cheap question (how many
records are newer than this device's cursor), with a short timeout.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from companion.errors import CompanionError
from companion.logs import get_logger
from companion.paths import DevicePaths
from companion.sync.service.lock import VaultLock
from companion.sync.state.device import DeviceState, status_file, sync_index_path, vault_dir
from companion.sync.state.status import ErrorEntry, Status, StatusStore, StatusVersionError

log = get_logger("sync.status")
PROBE_TIMEOUT_S = 3.0
PROBE_LIMIT = 1000


def _iso(ts: float | None) -> str | None:
    if not ts:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def collect_status(
    paths: DevicePaths, config: Any, vault: str | os.PathLike[str], *, probe: bool = True
) -> dict[str, Any]:
    """The documented `status --json` shape (see docs/sync.md)."""
    root = os.path.realpath(vault)
    state = DeviceState.load(paths, root)
    saved, unreadable = saved_status(paths, root)
    lock = VaultLock(vault_dir(paths, root))
    holder = lock.holder()
    if holder is not None and not _alive(holder.get("pid")):
        holder = None
    missing = folder_missing(paths, root, state)
    upload, inbox, cursor = local_pending(paths, config, root, scan_folder=not missing)
    attention = _attention(paths, root, [asdict(c) for c in saved.conflicts])
    last_error = unreadable or saved.last_error
    download: int | None = inbox
    online: bool | None = None
    quotas: list[dict[str, Any]] = []
    if probe:
        online, remote_new, quotas = _probe(paths, config, state, cursor)
        if remote_new is not None:
            download = inbox + remote_new
    return {
        "vault": root,
        "device": {"id": state.device_id, "name": state.device_name, "kind": state.kind},
        "vault_id": state.vault_id,
        "key_fingerprint": state.key_fingerprint,
        "relay": state.relay_url,
        "online": online,
        "state": "vault_missing" if missing else _state(saved.state, attention),
        "last_sync": _iso(saved.last_sync),
        "last_sync_ts": saved.last_sync,
        "last_attempt": _iso(saved.last_attempt),
        "pending": {"upload": upload, "download": download},
        "conflicts": attention[2],
        "held": attention[0],
        "quarantined": attention[1],
        "problems": attention[3],
        "not_synced": [asdict(n) for n in saved.not_synced],  # as the last round's scans found
        "not_synced_count": saved.not_synced_total,
        "errors": [asdict(e) for e in saved.errors],
        "last_error": asdict(last_error) if last_error is not None else None,
        "last_round": dict(saved.last_round) if saved.last_round is not None else None,
        "daemon": holder,
        "agent_quotas": quotas,
        "device_keys": device_keys(paths, root, state),
    }


def device_keys(paths: DevicePaths, root: str, state: DeviceState) -> dict[str, Any]:
    """This device's keys and roster in brief (docs/trust.md): anchored or "not set up", and
    how many devices announced a key that the roster does not vouch for."""
    from pathlib import Path

    from companion.sync.state.trust import DeviceTrust

    out: dict[str, Any] = {"anchored": False, "anchor": None, "unvouched": 0, "error": None}
    try:
        ev = DeviceTrust(Path(root), paths, state, None).evaluation()
    except (CompanionError, OSError, ValueError) as exc:
        out["error"] = str(exc)
        return out
    if ev.anchor is not None:
        out["anchored"] = True
        out["anchor"] = {"device_id": ev.anchor.device_id, "name": ev.anchor.name,
                         "fingerprint": ev.anchor.fingerprint}  # fmt: skip
        out["unvouched"] = len(ev.unvouched_devices(state.device_id))
    return out


def saved_status(paths: DevicePaths, root: str) -> tuple[Status, ErrorEntry | None]:
    """The saved status, and what made it unreadable: a file a newer companion wrote reads as
    "never synced" here, with that error as the `last_error` `status` shows."""
    try:
        return StatusStore(status_file(paths, root)).read(), None
    except StatusVersionError as exc:
        return Status(), ErrorEntry(None, "status_version", str(exc))


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _state(saved: str, attention: tuple[list[Any], ...]) -> str | None:
    """The saved state, corrected by what the index says now: conflict copies in the vault make
    a synced copy "conflict", remote changes that cannot apply make it "pending"."""
    if saved in ("synced", "conflict"):
        if attention[3]:
            return "pending"
        return "conflict" if attention[2] else "synced"
    return saved


def _attention(
    paths: DevicePaths, root: str, recent: list[Any]
) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """Held changes, quarantined files, conflict copies in the vault and problems, read live
    from the index (read-only: safe while another process syncs)."""
    from companion.sync.round.views import (
        conflict_views,
        copy_paths,
        held_view,
        problem_views,
        quarantine_view,
    )
    from companion.sync.state.index import SyncIndex, SyncIndexError

    db = sync_index_path(paths, root)
    try:
        index = SyncIndex(db, readonly=True)
    except SyncIndexError:
        return [], [], [], []
    with index:
        copies = copy_paths(index.files.kept_copy_candidates())
        return (
            [held_view(r) for r in index.held.rows()],
            [quarantine_view(r) for r in index.quarantine.rows()],
            conflict_views(copies, recent),
            problem_views(index.inbox.rows()),
        )


def folder_missing(paths: DevicePaths, root: str, state: DeviceState) -> str | None:
    """Why the folder at `root` is not this copy's vault folder now (`folder.check_folder`,
    read-only: an unmarked folder the next round would adopt counts as the vault's), or None."""
    from companion.sync.local.folder import VaultMissing, check_folder
    from companion.sync.state.index import SyncIndex, SyncIndexError

    try:
        index: SyncIndex | None = SyncIndex(sync_index_path(paths, root), readonly=True)
    except SyncIndexError:
        index = None
    try:
        check_folder(
            root,
            state.vault_id,
            state.device_id,
            None if index is None else index.files,
            adopt=False,
        )
    except VaultMissing as exc:
        return str(exc)
    finally:
        if index is not None:
            index.close()
    return None


def local_pending(
    paths: DevicePaths, config: Any, root: str, *, scan_folder: bool | None = None
) -> tuple[int, int, int]:
    """(local changes not pushed yet, remote changes queued, cursor) without writing anything.

    The one count of what waits to go out: `companion status` and the desktop app (while the
    relay cannot be reached, when no round can say) both ask it. Lock-free and read-only. A
    folder that is not the vault's (`folder_missing`; `scan_folder` when the caller knows) has
    nothing to go out: its count is 0.
    """
    if scan_folder is None:
        try:
            scan_folder = folder_missing(paths, root, DeviceState.load(paths, root)) is None
        except CompanionError:
            scan_folder = False
    from companion.sync.local.ignore import IgnoreRules
    from companion.sync.round.scanner import scan, size_limit
    from companion.sync.state.index import SyncIndex, SyncIndexError

    db = sync_index_path(paths, root)
    try:
        index = SyncIndex(db, readonly=True)
    except SyncIndexError:
        return 0, 0, 0
    with index:
        inbox = index.inbox.count()
        cursor = int(index.meta.get("cursor") or 0)
        if not scan_folder:
            return 0, inbox, cursor
        try:
            res = scan(
                root,
                index,
                IgnoreRules(root, config.settings.sync.ignore),
                max_file_bytes=size_limit(config.settings.sync.max_file_mb),
                settle_ns=0,
            )  # read-only: renames nothing, refreshes nothing; skips what a round skips
        except CompanionError as exc:
            log.debug("status scan failed: %s", exc)
            return 0, inbox, cursor
        changed = len(res.changed) + len(res.unstable)
    return changed, inbox, cursor


def _quotas(devices: list[Any]) -> list[dict[str, Any]]:
    """Each agent device's use of its daily quota on the relay (relay/quota.py), as the
    vault's device list reports it: who is throttled, and until when."""
    out = []
    for d in devices:
        q = d.quota
        if d.revoked is not None or not isinstance(q, dict):
            continue
        until = q.get("throttled_until")
        out.append(
            {
                "device_id": d.device_id,
                "name": d.name,
                "kind": d.kind,
                "records": q.get("records", 0),
                "records_limit": q.get("records_limit", 0),
                "bytes": q.get("bytes", 0),
                "bytes_limit": q.get("bytes_limit", 0),
                "throttled_until": _iso(until) if isinstance(until, int | float) else None,
            }
        )
    return out


def _probe(
    paths: DevicePaths, config: Any, state: DeviceState, cursor: int
) -> tuple[bool, int | None, list[dict[str, Any]]]:
    from companion.credentials.store import open_store
    from companion.relayclient.client import RelayClient
    from companion.relayclient.errors import RelayError, RelayUnreachable

    try:
        token = state.load_token(open_store(config))
    except CompanionError:
        return False, None, []
    with RelayClient(
        state.relay_url,
        token,
        state.vault_id,
        timeout=PROBE_TIMEOUT_S,
        verify=state.verify,
        insecure_http=state.insecure_http,
    ) as client:
        try:
            page = client.changes_page(cursor, 0, limit=PROBE_LIMIT)
        except RelayUnreachable:
            return False, None, []
        except RelayError as exc:
            log.debug("status probe refused: %s", exc)
            return True, None, []
        try:
            quotas = _quotas(client.devices())
        except RelayError as exc:
            log.debug("status probe of the devices refused: %s", exc)
            quotas = []
    return True, len(page.records), quotas
