"""The sync engine of one vault copy: scan, pull, plan, apply, push, until nothing is pending.

A round is a loop of passes (bounded). Each pass:

1. **Pull**: every record committed since the saved cursor is verified (`RemoteVault.pull`:
   authenticity, file id, replay checks) and the newest revision of each file this device does
   not hold yet goes into the *inbox* (the index's outbox table, kind ``remote``). The cursor
   advances in the same transaction, so a crash never loses or double-applies a change.
2. **Scan** the vault (or only the paths a watcher batch named, plus the inbox's paths).
3. **Apply** the inbox: a file changed only remotely is written (or deleted, or renamed)
   atomically, refusing to overwrite anything that changed since the scan; a file changed on
   both sides goes through `conflicts.resolve` (human precedence, three-way merge,
   delete-vs-edit keeps the edit, conflict copies). The index then records the remote head as
   the last synced revision. When the note must differ from that head (a merge, a local win),
   the index keeps the head's hash with an empty stat, so the next scan sees a local change and
   pushes it on top of the head, like any edit.
4. **Push** the remaining local changes: contents are chunked, uploaded in batches (only the
   blobs the relay lacks), and the records committed many per request with a compare-and-swap
   on each file's head. A record that loses the race brings back the head (verified) into the
   inbox for the next pass. Renames are a tombstone of the old path and a record of the new one
   with `rename_from`, committed together; deletions are tombstones. Deleting more than
   `sync.mass_delete_ratio` of the vault is held back (`MassDeleteRefused` at the end of the
   round) unless `allow_mass_delete`.

Nothing is ever written outside the vault or through a symlink (`pathsafe`), each local write
is temp + fsync + rename with an expected-state check (`atomic`), and every version that is not
kept in the note goes to a conflict copy, which is then synced like any other file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from companion.credentials.store import SecretStore, open_store
from companion.crypto import TamperDetected
from companion.errors import CompanionError, InputError
from companion.logs import get_logger
from companion.paths import DevicePaths
from companion.relay.client import RelayClient
from companion.relay.errors import AuthError, ConflictError, RelayUnreachable
from companion.sync import status as st
from companion.sync.apply import ApplyMixin
from companion.sync.atomic import remove_stale_temps
from companion.sync.chunking import CHUNK_SIZE
from companion.sync.device import DeviceState, status_file, sync_index_path, vault_dir
from companion.sync.filestate import (
    FileState,
    NotRegularFile,
    current_state,
    open_nofollow,
    stat_key,
)
from companion.sync.guard import MassDeleteRefused
from companion.sync.holds import policy_from_config
from companion.sync.ignore import IgnoreRules
from companion.sync.index import Entry, HeldRow, QuarantineRow, SyncIndex
from companion.sync.model import ConflictInfo, Local, RoundReport, device_kind
from companion.sync.pathsafe import UnsafePath, is_case_insensitive_fs, normalize, resolve_inside
from companion.sync.push import PushMixin
from companion.sync.remote import HUMAN, Refused, RemoteChange, RemoteVault
from companion.sync.scanner import DEFAULT_SETTLE_NS, ChangeKind, scan

log = get_logger("sync.engine")

INBOX = "remote"
MAX_PASSES = 10
QUARANTINE_RETRIES = 50  # quarantined files asked for again per round
META_CURSOR = "cursor"
META_IGNORE = "ignore_hash"


class NotConverged(CompanionError):
    """A round ended with changes still pending (the vault kept changing, or items deferred)."""


class SyncEngine(ApplyMixin, PushMixin):
    """Sync one vault copy with its relay. Not thread-safe: one round at a time.

    `store` and `client` can be passed in (tests, the daemon); by default the secret store the
    config names and a `RelayClient` for the relay `init` recorded are used.
    """

    def __init__(
        self,
        vault_root: str | os.PathLike[str],
        app_paths: DevicePaths,
        config: Any,
        *,
        device: DeviceState | None = None,
        store: SecretStore | None = None,
        client: RelayClient | None = None,
        case_insensitive: bool | None = None,
        settle_ns: int = DEFAULT_SETTLE_NS,
        timeout: float = 30.0,
    ) -> None:
        self.root = Path(os.path.realpath(vault_root))
        if not self.root.is_dir():
            raise InputError(f"the vault folder {os.fspath(vault_root)!r} does not exist")
        self.paths = app_paths
        self.config = config
        self.device = device or DeviceState.load(app_paths, self.root)
        store = store if store is not None else open_store(config)
        key = self.device.load_key(store)
        if client is None:
            token = self.device.load_token(store)
            client = RelayClient(
                self.device.relay_url,
                token,
                self.device.vault_id,
                timeout=timeout,
                verify=self.device.verify,
                insecure_http=self.device.insecure_http,
            )
        self.client = client
        self.remote = RemoteVault(client, key, self.device.vault_id)
        self.index = SyncIndex(sync_index_path(app_paths, self.root))
        self._check_index_owner()
        self.ignore = IgnoreRules(self.root, config.get("sync", "ignore"))
        self.status = st.StatusStore(status_file(app_paths, self.root))
        max_mb = float(config.get("sync", "max_file_mb"))
        self.max_file_bytes = int(max_mb * 1024 * 1024) if max_mb > 0 else None
        self.mass_delete_ratio = float(config.get("sync", "mass_delete_ratio"))
        self.settle_ns = settle_ns
        self._case_insensitive = case_insensitive
        self.partial_dir = vault_dir(app_paths, self.root) / "partial"
        self.chunk_size = CHUNK_SIZE  # files larger than this are split (and resumable)
        self.stop_event = threading.Event()
        self.on_local_write: Callable[[str, FileState | None], None] | None = None
        self.name = self.device.device_name
        self.kind = device_kind(self.device.kind)
        self.holds = policy_from_config(config, self.kind)
        self._executor: ThreadPoolExecutor | None = None
        self._verified: dict[str, RemoteChange] = {}  # opened by this pull, queued in the inbox

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        self.index.close()
        self.client.close()

    def __enter__(self) -> SyncEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_index_owner(self) -> None:
        vid = self.index.get_meta("vault_id")
        if vid is None:
            self.index.set_meta("vault_id", self.device.vault_id)
            self.index.set_meta("device_id", self.device.device_id)
        elif vid != self.device.vault_id:
            raise CompanionError(
                f"the sync index at {self.index.path} belongs to another vault ({vid}); "
                "remove that folder to start this copy's sync afresh"
            )

    @property
    def case_insensitive(self) -> bool:
        if self._case_insensitive is None:
            self._case_insensitive = is_case_insensitive_fs(self.root)
        return self._case_insensitive

    @property
    def cursor(self) -> int:
        return int(self.index.get_meta(META_CURSOR) or 0)

    # ------------------------------------------------------------------ the round

    def round(
        self,
        paths: Iterable[str] | None = None,
        *,
        allow_mass_delete: bool = False,
        max_passes: int = MAX_PASSES,
    ) -> RoundReport:
        """Sync until nothing is pending (at most `max_passes` passes).

        `paths` limits the local scan to those vault-relative paths (a watcher batch); the
        paths remote changes touch are always scanned too. Raises `MassDeleteRefused` at the end
        when deletions were held back, `TamperDetected` when the relay's data fails
        verification (nothing of it is written), relay errors when offline or refused.
        """
        t0 = time.monotonic()
        report = RoundReport()
        self.status.update(state=st.SYNCING, last_attempt=time.time())
        try:
            self._check_ignore_rules()
            scope = None if paths is None else set(paths)
            decided = self._carry_out_decisions(report)
            decided |= self._retry_quarantined(report)
            if scope is not None:
                scope |= decided
            for _ in range(max_passes):
                if self.stop_event.is_set():
                    report.stopped = True
                    break
                report.passes += 1
                work, touched = self._pass(scope, allow_mass_delete, report)
                if not work:
                    report.converged = not report.held_deletes
                    break
                if scope is not None:
                    scope |= touched
            report.pending_download = len(self._inbox_ops())
            report.live_files = self.index.count_live()
        except RelayUnreachable as exc:
            self._failed(report, t0, st.OFFLINE, "offline", exc, online=False)
            raise
        except AuthError as exc:
            self._failed(report, t0, st.ERROR, "auth", exc, online=True)
            raise
        except TamperDetected as exc:
            self._failed(report, t0, st.ERROR, "tamper", exc, online=True)
            raise type(exc)(
                f"refused data from the relay: {exc}. Nothing from it was written to the vault"
            ) from None
        except Exception as exc:
            kind = "mass_delete" if isinstance(exc, MassDeleteRefused) else "error"
            self._failed(report, t0, st.ERROR, kind, exc, online=None)
            raise
        report.elapsed_s = time.monotonic() - t0
        self._finished(report)
        if report.held_deletes:
            total = max(report.held_of, report.held_deletes)
            exc = MassDeleteRefused(report.held_deletes, total, self.mass_delete_ratio)
            self.status.add_error("mass_delete", str(exc))
            self.status.update(state=st.ERROR)
            raise exc
        return report

    def _failed(
        self,
        report: RoundReport,
        t0: float,
        state: str,
        kind: str,
        exc: BaseException,
        online: bool | None,
    ) -> None:
        report.elapsed_s = time.monotonic() - t0
        self.status.add_conflicts([asdict(c) for c in report.conflicts])
        self.status.add_error(kind, str(exc))
        changes: dict[str, Any] = {"state": state, "last_round": report.summary()}
        if online is not None:
            changes["online"] = online
        self.status.update(**changes)
        log.info("sync round failed (%s): %s", kind, exc)  # the caller reports it

    def _finished(self, report: RoundReport) -> None:
        self.status.add_conflicts([asdict(c) for c in report.conflicts])
        now = time.time()
        state = st.PENDING
        if report.converged:
            state = st.CONFLICT if report.conflicts else st.SYNCED
        changes: dict[str, Any] = {
            "state": state,
            "online": True,
            "last_round": report.summary(),
            "pending": {"upload": report.pending_upload, "download": report.pending_download},
            "held": [held_view(r) for r in self.index.held()],
            "quarantined": [quarantine_view(r) for r in self.index.quarantined()],
        }
        if report.converged:
            changes["last_sync"] = now
        self.status.update(**changes)
        if report.changed:
            log.info(
                "sync: %d down, %d deleted here, %d up, %d deleted remotely, %d conflicts "
                "(%d passes, %.2fs)",
                len(report.downloaded), len(report.deleted_local), len(report.uploaded),
                len(report.deleted_remote), len(report.conflicts), report.passes,
                report.elapsed_s,
            )  # fmt: skip

    def _check_ignore_rules(self) -> None:
        """When the ignore rules change, pull everything again: files once skipped may count."""
        self.ignore.reload_if_changed()
        digest = hashlib.sha256("\n".join(self.ignore.patterns).encode()).hexdigest()
        old = self.index.get_meta(META_IGNORE)
        if old != digest:
            with self.index.transaction():
                if old is not None:
                    self.index.set_meta(META_CURSOR, "0")
                self.index.set_meta(META_IGNORE, digest)

    def _pass(
        self, scope: set[str] | None, allow_mass_delete: bool, report: RoundReport
    ) -> tuple[bool, set[str]]:
        touched: set[str] = set()
        self._pull(report)
        inbox = self._load_inbox()
        scan_paths = None if scope is None else scope | set(inbox)
        res = scan(
            self.root,
            self.index,
            self.ignore,
            paths=scan_paths,
            max_file_bytes=self.max_file_bytes,
            settle_ns=self.settle_ns,
        )
        if res.stale_temp:
            remove_stale_temps(self.root, res.stale_temp)
        local = self._local_changes(res.changed)
        unstable = set(res.unstable)
        work = self._apply_inbox(inbox, local, unstable, report, touched)
        if self.stop_event.is_set():
            return work, touched
        self._keep_back_blocked(local, report)
        pushed = self._push(local, allow_mass_delete, report, touched)
        waiting = bool(self._inbox_ops())  # deferred remote changes: another pass
        if unstable:
            touched |= unstable
            time.sleep(max(self.settle_ns, 10_000_000) / 1e9)
        return work or pushed or waiting or bool(unstable), touched

    # ------------------------------------------------------------------ pulling

    def _inbox_ops(self) -> list[Any]:
        return [op for op in self.index.pending() if op.kind == INBOX]

    def _pull(self, report: RoundReport) -> int:
        since = self.cursor
        queued = {op.path: int(op.payload.get("rev", 0)) for op in self._inbox_ops()}

        known: dict[str, Entry] = {}

        def seen(paths: list[str]) -> dict[str, int]:
            keys: dict[str, str] = {}
            for path in paths:
                with contextlib.suppress(UnsafePath):
                    keys[path] = normalize(path)
            known.update(self.index.get_many(keys.values()))
            out = {}
            for path, key in keys.items():
                entry = known.get(key)
                best = max(entry.rev if entry else 0, queued.get(key, 0))
                if best:
                    out[path] = best
            return out

        try:
            pulled = self.remote.pull(since, seen)
        except ConflictError as exc:
            if exc.code != "since_ahead":
                raise
            pulled = self._resync_restored_relay(report)
            since = -1  # the cursor is rewritten below
            queued.clear()
            known.clear()
            seen([ch.path for ch in pulled.changes])  # reload what the index now says
        newest: dict[str, RemoteChange] = {}
        for ch in pulled.changes:
            newest[ch.file_id] = ch
        todo: dict[str, dict[str, Any]] = {}  # path -> payload; a later record of a path wins
        held: dict[str, HeldRow] = {}
        held_before = {row.path for row in self.index.held()}
        now = time.time_ns()
        for ch in newest.values():
            path = self._safe_path(ch, report)
            if path is None:
                continue
            entry = known.get(path)
            if entry is not None and ch.rev <= entry.rev:
                continue  # our own commit, or already applied
            if ch.rev <= queued.get(path, 0):
                continue
            if self.ignore.is_ignored(path):
                continue
            todo.pop(path, None)
            reason = self.holds.reason(ch)
            if reason is not None:  # an agent's plugin, setting or executable: the person decides
                held[path] = HeldRow(
                    path, ch.file_id, ch.rev, ch.to_payload(), reason, ch.author_name, now
                )
                continue
            held.pop(path, None)
            todo[path] = ch.to_payload()
            self._verified[path] = ch
            queued[path] = ch.rev
        healed = [ch.file_id for ch in newest.values()]
        refused = self._quarantine_rows(pulled.refused)
        with self.index.transaction():
            self.index.enqueue_many(INBOX, todo.items(), replace=True)
            self.index.hold(held.values())
            self.index.release_held(held_before & set(todo))
            self.index.release_quarantine(healed)
            fresh = self.index.quarantine(refused)
            if pulled.seq != since:
                self.index.set_meta(META_CURSOR, str(pulled.seq))
        self._report_held(report, held.values())
        self._report_quarantined(report, fresh)
        return len(todo)

    def _resync_restored_relay(self, report: RoundReport) -> Any:
        """The relay says its sequence is behind this device's cursor: it was reset or restored
        from a backup, and lost what was committed since. Start its feed from zero and re-offer
        everything it lost: every file whose newest revision there is older than the one this
        device synced (or absent) is marked as a local change on top of what the relay has,
        so the next push restores it. Nothing older than what this device holds is applied, so
        a relay faking a restore cannot roll a file back either; the versions it kept stay in
        its history.
        """
        from companion.sync.decisions import _take_over

        pulled = self.remote.pull(0, lambda _paths: {})  # the replay check cannot hold here
        heads: dict[str, RemoteChange] = {}
        for ch in pulled.changes:
            with contextlib.suppress(UnsafePath):
                heads[normalize(ch.path)] = ch
        reoffered = 0
        with self.index.transaction():
            for entry in list(self.index.iter_entries(include_deleted=True)):
                ch = heads.get(entry.path)
                relay_rev = ch.rev if ch is not None else 0
                if ch is not None and ch.rev > entry.rev:
                    continue  # newer than anything this device saw: applied as usual
                same = ch is not None and not ch.deleted and not entry.deleted and (
                    ch.meta.sha256 == entry.sha256
                )
                gone = ch is None or ch.deleted
                if same or (entry.deleted and gone):
                    if relay_rev != entry.rev:
                        self.index.put(replace(entry, rev=relay_rev))
                    continue
                # the relay lost this device's version: commit it again on top of what is there
                _take_over(self.index, entry.path, entry.file_id or self.remote.file_id(
                    entry.path), relay_rev, "", False)  # fmt: skip
                reoffered += 1
            self.index.set_meta(META_CURSOR, "0")
        report.relay_restored = True
        msg = (
            f"the relay was reset or restored from a backup (its sequence is behind this "
            f"device's); {reoffered} file(s) it lost are offered again"
        )
        log.warning("%s", msg)
        self.status.add_error("relay_restored", msg)
        return pulled

    # ------------------------------------------------------------------ held and quarantined

    def _quarantine_rows(self, refused: Iterable[Refused]) -> list[QuarantineRow]:
        refused = list(refused)
        if not refused:
            return []
        paths = self.index.paths_for_file_ids(r.file_id for r in refused)
        now = time.time_ns()
        return [
            QuarantineRow(
                r.file_id, r.rev, paths.get(r.file_id, ""), r.reason, r.device_name or "", now
            )
            for r in refused
        ]

    def quarantine_files(self, refused: Iterable[Refused], report: RoundReport) -> None:
        """Record files whose newest record cannot be opened; each is reported once."""
        fresh = self.index.quarantine(self._quarantine_rows(refused))
        self._report_quarantined(report, fresh)

    def _retry_quarantined(self, report: RoundReport) -> set[str]:
        """Once per round, ask the relay again for the head of each quarantined file: a record
        damaged in transit, or a file since superseded, heals on its own. Bounded per round."""
        touched: set[str] = set()
        rows = [r for r in self.index.quarantined() if not r.decision][:QUARANTINE_RETRIES]
        for row in rows:
            rec = self.client.head(row.file_id)
            if rec is None:
                # the relay holds no such file: its change feed listed one that is not there,
                # so read the feed again from the start (known revisions are skipped)
                self.index.release_quarantine([row.file_id])
                self.index.set_meta(META_CURSOR, "0")
                continue
            ch = self.remote.try_open(rec)
            if isinstance(ch, Refused):
                if ch.rev != row.rev:
                    self.quarantine_files([ch], report)
                continue
            if ch.file_id != row.file_id:
                continue
            path = self._safe_path(ch, report)
            if path is None:
                continue
            if not ch.deleted and ch.rev == row.rev:
                try:  # the record opens: was it one of its blobs that did not?
                    self.remote.fetch([ch.meta])
                except TamperDetected:
                    continue
            self.index.release_quarantine([row.file_id])
            entry = self.index.get(path)
            if entry is not None and ch.rev <= entry.rev:
                continue
            self._admit_head(path, ch, report)
            touched.add(path)
            log.info("%s is readable again (rev %d): out of quarantine", path, ch.rev)
        return touched

    def _report_held(self, report: RoundReport, rows: Iterable[HeldRow]) -> None:
        for row in rows:
            report.held.append(row.path)
            log.warning(
                "held for your approval: %s from %s %s (companion held list)",
                row.path, row.author or "an agent device", row.reason,
            )  # fmt: skip

    def _report_quarantined(self, report: RoundReport, rows: Iterable[QuarantineRow]) -> None:
        rows = list(rows)
        if rows:
            self.status.add_error(
                "quarantine",
                f"{len(rows)} file(s) quarantined: their newest record from the relay cannot be "
                "opened or verified (companion quarantine list)",
            )
        for row in rows:
            what = row.path or f"a file unknown here (id {row.file_id[:12]})"
            report.quarantined.append(row.path or row.file_id)
            log.warning(
                "quarantined %s: its newest record (rev %d) cannot be opened (%s); the rest of "
                "the vault keeps syncing (companion quarantine list)",
                what, row.rev, row.reason,
            )  # fmt: skip

    def _admit_head(self, path: str, head: RemoteChange, report: RoundReport) -> None:
        """A head that beat our commit: into the inbox, or held like any pulled change."""
        reason = self.holds.reason(head)
        if reason is None:
            self._enqueue(path, head)
            return
        row = HeldRow(
            path, head.file_id, head.rev, head.to_payload(), reason, head.author_name,
            time.time_ns(),
        )  # fmt: skip
        self.index.hold([row])
        self._report_held(report, [row])

    def _quarantine_heads(self, refused: dict[str, Refused], report: RoundReport) -> None:
        now = time.time_ns()
        rows = [
            QuarantineRow(r.file_id, r.rev, path, r.reason, r.device_name or "", now)
            for path, r in refused.items()
        ]
        self._report_quarantined(report, self.index.quarantine(rows))

    def _keep_back_blocked(self, local: dict[str, Local], report: RoundReport) -> None:
        """Local changes to a held or quarantined file wait for the person's decision: pushing
        them would only meet the head this device refuses to open or apply."""
        blocked = {row.path for row in self.index.held()}
        blocked |= {row.path for row in self.index.quarantined() if row.path}
        for path in blocked & set(local):
            lc = local.pop(path)
            if lc.rename_to:  # the other half of a rename goes as a plain creation
                other = local.get(lc.rename_to)
                if other is not None:
                    local[lc.rename_to] = Local(other.kind, other.path, other.state, other.is_text)
            report.waiting.append(path)

    def held_changes(self) -> list[HeldRow]:
        return self.index.held()

    def quarantined(self) -> list[QuarantineRow]:
        return self.index.quarantined()

    def _carry_out_decisions(self, report: RoundReport) -> set[str]:
        """Carry out the person's decisions on held and quarantined files (recorded by
        `companion held` / `companion quarantine`, or the desktop app); returns the paths."""
        from companion.sync.decisions import carry_out

        return carry_out(self.index, self.remote, self.kind, INBOX, report)

    def _safe_path(self, ch: RemoteChange, report: RoundReport) -> str | None:
        try:
            path = normalize(ch.meta.path)
        except UnsafePath as exc:
            report.skipped.append(f"a remote file with an unusable path was skipped: {exc}")
            log.info("skipping remote record of file %s: %s", ch.file_id[:12], exc)
            return None
        return path

    def _load_inbox(self) -> dict[str, tuple[int, RemoteChange]]:
        """The queued remote changes; those verified by this process's pull are not opened again
        (the queue holds them sealed, so after a restart each is verified anew)."""
        out: dict[str, tuple[int, RemoteChange]] = {}
        for op in self._inbox_ops():
            key = (op.payload.get("file_id"), op.payload.get("rev"), op.payload.get("sealed"))
            ch = self._verified.get(op.path)
            if ch is None or (ch.file_id, ch.rev) != key[:2]:
                ch = self.remote.open_payload(op.payload)
            out[op.path] = (op.id, ch)
        self._verified.clear()
        return out

    def _enqueue(self, path: str, ch: RemoteChange) -> None:
        self.index.enqueue(INBOX, path, ch.to_payload(), replace=True)

    # ------------------------------------------------------------------ local changes

    @staticmethod
    def _local_changes(changes: Iterable[Any]) -> dict[str, Local]:
        out: dict[str, Local] = {}
        for c in changes:
            if c.kind is ChangeKind.RENAMED:
                out[c.old_path] = Local(ChangeKind.DELETED, c.old_path, rename_to=c.path)
                out[c.path] = Local(
                    ChangeKind.CREATED, c.path, c.state, c.is_text, rename_from=c.old_path
                )
            else:
                out[c.path] = Local(c.kind, c.path, c.state, c.is_text)
        return out

    def _read_local(self, rel: str, state: FileState) -> tuple[bytes, bool] | None:
        """The file's bytes and executable bit if it is still exactly `state`; else None."""
        try:
            fd = open_nofollow(resolve_inside(self.root, rel))
        except (OSError, NotRegularFile, UnsafePath):
            return None
        try:
            before = os.fstat(fd)
            parts = []
            while True:
                block = os.read(fd, 1 << 20)
                if not block:
                    break
                parts.append(block)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        data = b"".join(parts)
        if stat_key(before) != stat_key(after) or stat_key(after) != state.stat_key():
            return None
        if state.sha256 and hashlib.sha256(data).hexdigest() != state.sha256:
            return None
        return data, bool(after.st_mode & 0o100)

    def _expect(self, rel: str, state: FileState | None) -> None:
        if self.on_local_write is not None:
            self.on_local_write(rel, state)

    # ------------------------------------------------------------------ history and restore

    def history(self, rel: str) -> list[RemoteChange | Refused]:
        """Revisions of `rel` the relay still keeps, newest first, verified (a revision that
        fails verification comes back as `Refused`)."""
        return self.remote.history(normalize(rel))

    def restore(self, rel: str, rev: int) -> RoundReport:
        """Make revision `rev` of `rel` the current version, as a new edit synced right away.

        The current version is synced first, so it stays in the history: nothing is destroyed.
        """
        rel = normalize(rel)
        self.round()
        ch = self.remote.record(rel, rev)
        if ch is None:
            raise InputError(
                f"the relay has no revision {rev} of {rel!r} (see `companion history`; "
                "old revisions are pruned after the relay's retention period)"
            )
        if ch.deleted:
            raise InputError(
                f"revision {rev} of {rel!r} is a deletion; restore an earlier revision"
            )
        content = self.remote.fetch_one(ch.meta)
        target = resolve_inside(self.root, rel)
        current = current_state(target, with_hash=True)
        self._write(rel, content, current)
        log.info("restored %r to revision %d", rel, rev)
        return self.round(paths=[rel])


def held_view(row: HeldRow) -> dict[str, Any]:
    return {
        "path": row.path,
        "rev": row.rev,
        "reason": row.reason,
        "author": row.author,
        "since": row.since_ns / 1e9,
        "decision": row.decision,
    }


def quarantine_view(row: QuarantineRow) -> dict[str, Any]:
    return {
        "path": row.path,
        "file_id": row.file_id,
        "rev": row.rev,
        "reason": row.reason,
        "author": row.author,
        "since": row.since_ns / 1e9,
        "decision": row.decision,
    }


__all__ = ["HUMAN", "ConflictInfo", "Local", "NotConverged", "RoundReport", "SyncEngine"]
