"""The sync engine of one vault copy: scan, plan, execute, record, until nothing is pending.

A round first carries out the person's recorded decisions (held and quarantined files) and asks
the relay again for quarantined files, then runs passes (at most `MAX_PASSES`). Each pass:

1. **pull** (`pull.Puller`): every record committed since the saved cursor, verified, admitted
   into the inbox, held or quarantined (`plan.plan_admission`), with the cursor in one
   transaction;
2. **scan** the vault (all of it, or the paths a watcher batch named plus the inbox's paths):
   the scan only reads; what it found to fix (names to turn into NFC, the stat of touched
   files) the round carries out next, in a step of its own (`_scan`), before planning;
3. **plan** (`plan.plan_apply`, then `plan.plan_push`): pure functions from the scan, the inbox
   and the index to typed steps;
4. **execute and record**: `apply.Applier` writes what changed remotely (atomically, checked
   against the scan), `push.Pusher` commits what changed here (compare-and-swap per file, the
   two halves of a rename together); each records what it did in the index.

The round ends when a pass finds nothing to pull, apply or push. Nothing is ever written
outside the vault or through a symlink (`pathsafe`), and every version that is not kept in the
note goes to a conflict copy, which is then synced like any other file.

Only the vault's folder is synced (`folder.py`): the round checks its marker first, again after
each scan and before the executors write or delete. A folder that is not the vault's (an
unmounted drive's mount point) ends the round with `VaultMissing` ("vault folder missing",
exit 6), nothing written, deleted or recorded from it; the next round that finds the folder
back scans every file.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from companion.credentials.store import SecretStore, open_store
from companion.crypto.errors import TamperDetected
from companion.errors import CompanionError, InputError
from companion.logs import get_logger
from companion.paths import DevicePaths
from companion.relayclient.client import RelayClient
from companion.relayclient.errors import AuthError, QuotaExceeded, RelayUnreachable
from companion.sync.local.atomic import remove_stale_temps
from companion.sync.local.filestate import FileState, current_state
from companion.sync.local.folder import VaultMissing
from companion.sync.local.ignore import IgnoreRules
from companion.sync.local.pathsafe import normalize, resolve_inside
from companion.sync.remote.vault import (
    HUMAN,
    Refused,
    RelayLostRevision,
    RemoteChange,
    RemoteVault,
)
from companion.sync.round.core import VERIFY_BYTES_PER_ROUND, VERIFY_PER_ROUND, Clock, Core
from companion.sync.round.guard import MassDeleteRefused
from companion.sync.round.holds import policy_from_config
from companion.sync.round.model import Local, Outcome, Pushed, device_kind
from companion.sync.round.plan import STALE_SAVE_WINDOW_NS, Incoming, plan_apply, plan_push
from companion.sync.round.pull import META_CURSOR, Puller
from companion.sync.round.report import ConflictInfo, RoundReport
from companion.sync.round.scanner import (
    DEFAULT_SETTLE_NS,
    ChangeKind,
    LocalChange,
    NameRepair,
    ScanResult,
    Skipped,
    SkipReason,
    repair_names,
    scan,
    size_limit,
)
from companion.sync.round.views import copy_paths, held_view, problem_views, quarantine_view
from companion.sync.state import status as status_file_mod
from companion.sync.state.device import DeviceState, status_file, sync_index_path, vault_dir
from companion.sync.state.files import Entry, FileStore
from companion.sync.state.held import HeldRow
from companion.sync.state.index import SyncIndex
from companion.sync.state.quarantine import QuarantineRow

if TYPE_CHECKING:
    from companion.sync.round.apply import Applier
    from companion.sync.round.push import Pusher

log = get_logger("sync.engine")

MAX_PASSES = 10
# what a scan skips that the person should hear of (a special file is no note, and says so)
NOT_SYNCED_REASONS = frozenset(
    {SkipReason.TOO_LARGE, SkipReason.BAD_NAME, SkipReason.UNREADABLE, SkipReason.SYMLINK}
)
NOT_SYNCED_SHOWN = 200  # entries kept in status.json; the count says how many in all
META_IGNORE = "ignore_hash"
META_VERIFY = "verify_cursor"
MAX_WAIT_S = 2.0  # longest wait, in one pass, for a young file to settle
FULL_SCAN_OVER = 2000  # paths: a partial scan of more than this is a full one
MAX_REPAIR_SCANS = 16  # scans again after renames: one per level of nested names not in NFC


class NotConverged(CompanionError):
    """A round ended with changes still pending (the vault kept changing, or items deferred)."""


class SyncEngine:
    """Sync one vault copy with its relay. Not thread-safe: one round at a time.

    `store` and `client` can be passed in (tests, the daemon); by default the secret store the
    config names and a `RelayClient` for the relay `init` recorded are used.

    What the round shares is `core` (`sync/round/core.py`): the vault root, the index, the
    relay, the device, the ignore rules, the saved status, the stop event; a caller takes the
    one it needs from there (`engine.core.index`), and the relay cursor from `puller.cursor`.
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
        verify_per_round: int = VERIFY_PER_ROUND,
        verify_bytes_per_round: int = VERIFY_BYTES_PER_ROUND,
        clock: Clock = time.time_ns,
    ) -> None:
        root = Path(os.path.realpath(vault_root))
        if not root.is_dir() and not DeviceState.exists(app_paths, root):
            raise InputError(f"the vault folder {os.fspath(vault_root)!r} does not exist")
        self.paths = app_paths
        self.config = config
        device = device or DeviceState.load(app_paths, root)
        if not root.is_dir():  # set up here, and gone: an unmounted drive, not a bad argument
            raise VaultMissing(
                f"vault folder missing: {root} is not there (is the drive mounted?); "
                "nothing was synced",
                root,
            )
        store = store if store is not None else open_store(config)
        # the token first: when the store lost both, joining again (which brings the key back
        # too) is the advice, not the key's unlock, which needs the token
        token = device.load_token(store) if client is None else None
        key = device.key_loader(store)  # checked now, built when a record is sealed or opened
        if client is None:
            client = RelayClient(
                device.relay_url,
                token,
                device.vault_id,
                timeout=timeout,
                verify=device.verify,
                insecure_http=device.insecure_http,
            )
        self.client = client
        kind = device_kind(device.kind)
        from companion.sync.state.trust import DeviceTrust

        # this device's key and the person's roster (docs/trust.md): records signed on the way
        # out, their author decided by the roster on the way in once this device is anchored
        self.trust = DeviceTrust(root, app_paths, device, store)
        self.core = Core(
            root=root,
            index=SyncIndex(sync_index_path(app_paths, root)),
            remote=RemoteVault(client, key, device.vault_id, self.trust),
            device=device,
            ignore=IgnoreRules(root, config.settings.sync.ignore),
            status=status_file_mod.StatusStore(status_file(app_paths, root)),
            holds=policy_from_config(config, kind),
            partial_dir=vault_dir(app_paths, root) / "partial",
            name=device.device_name,
            kind=kind,
            max_file_bytes=size_limit(config.settings.sync.max_file_mb),
            mass_delete_ratio=config.settings.sync.mass_delete_ratio,
            settle_ns=settle_ns,
            verify_per_round=verify_per_round,
            verify_bytes_per_round=verify_bytes_per_round,
            clock=clock,
            case_insensitive_hint=case_insensitive,
        )
        self._check_index_owner()
        self.puller = Puller(self.core)
        self._applier: Applier | None = None
        self._pusher: Pusher | None = None
        self.busy: frozenset[str] = frozenset()  # files a watcher saw open for writing
        # local files the scans skip (too large, a name no device can hold, unreadable, a
        # symbolic link): path -> (reason, detail); a full scan replaces it, a partial one
        # updates what it looked at. Shown by status and the desktop app, never synced.
        self.not_synced: dict[str, tuple[str, str]] = {}
        # the last round found the vault folder missing: the next one that finds it back
        # scans every file (whatever a watcher noted meanwhile was about another folder)
        self.folder_was_missing = False
        # run after each round that settles; each returns the vault paths it wrote, which one
        # more round then syncs (the review's notes and decisions: `companion.review.rounds`)
        self.after_round: list[Callable[[SyncEngine, RoundReport], set[str]]] = []
        self._in_after_round = False

    # ------------------------------------------------------------------ the shared parts

    @property
    def applier(self) -> Applier:
        """Made on first use: a quiet round never needs it (nor imports its modules)."""
        if self._applier is None:
            from companion.sync.round.apply import Applier

            self._applier = Applier(self.core)
        return self._applier

    @property
    def pusher(self) -> Pusher:
        if self._pusher is None:
            from companion.sync.round.push import Pusher

            self._pusher = Pusher(self.core)
        return self._pusher

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self.core.close()
        self.core.index.close()
        self.client.close()

    def __enter__(self) -> SyncEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_index_owner(self) -> None:
        index, device = self.core.index, self.core.device
        vid = index.meta.get("vault_id")
        if vid is None:
            index.meta.set("vault_id", device.vault_id)
            index.meta.set("device_id", device.device_id)
        elif vid != device.vault_id:
            raise CompanionError(
                f"the sync index at {index.path} belongs to another vault ({vid}); "
                "remove that folder to start this copy's sync afresh"
            )

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
        core = self.core
        t0 = time.monotonic()
        report = RoundReport()
        started = time.time()
        core.status.update(
            lambda s: replace(s, state=status_file_mod.SYNCING, last_attempt=started)
        )
        try:
            core.check_folder()  # nothing of a folder that is not the vault's
            if self.folder_was_missing:
                log.info("the vault folder %s is back: scanning every file", core.root)
                paths = None
            self.folder_was_missing = False
            rules_changed = self._check_ignore_rules()
            core.index.applied.prune(core.clock() - STALE_SAVE_WINDOW_NS)
            # new ignore rules may let in files no watcher reported (it skips ignored paths)
            scope = None if paths is None or rules_changed else set(paths)
            from companion.sync.round.decisions import carry_out

            decided = carry_out(core, report)
            decided |= self.puller.retry_quarantined(report)
            if scope is not None:
                scope |= decided
            verify = self._rotation() if scope is None else []
            for _ in range(max_passes):
                if core.stop_event.is_set():
                    report.stopped = True
                    break
                report.passes += 1
                work, touched = self._pass(scope, allow_mass_delete, report, verify)
                verify = []
                if not work:
                    report.converged = not report.held_deletes and not report.busy
                    break
                # the next pass looks again only at what this one touched (and the inbox):
                # a full scan found everything else quiet a moment ago
                scope = set(touched) if scope is None else scope | touched
            report.pending_download = core.index.inbox.count()
            report.live_files = core.index.files.count_live()
        except QuotaExceeded as exc:  # online, but this agent device's writes are held
            self._failed(report, t0, status_file_mod.THROTTLED, "quota", exc, online=True)
            raise
        except RelayUnreachable as exc:
            self._failed(report, t0, status_file_mod.OFFLINE, "offline", exc, online=False)
            raise
        except AuthError as exc:
            self._failed(report, t0, status_file_mod.ERROR, "auth", exc, online=True)
            raise
        except VaultMissing as exc:
            self.folder_was_missing = True
            self._failed(
                report, t0, status_file_mod.VAULT_MISSING, "vault_missing", exc, online=None
            )
            raise
        except TamperDetected as exc:
            self._failed(report, t0, status_file_mod.ERROR, "tamper", exc, online=True)
            raise type(exc)(
                f"refused data from the relay: {exc}. Nothing from it was written to the vault"
            ) from None
        except Exception as exc:
            kind = "mass_delete" if isinstance(exc, MassDeleteRefused) else "error"
            self._failed(report, t0, status_file_mod.ERROR, kind, exc, online=None)
            raise
        report.elapsed_s = time.monotonic() - t0
        self._finished(report)
        if report.converged and self.after_round and not self._in_after_round:
            self._run_after_round(report, allow_mass_delete, max_passes)
        if report.held_deletes:
            total = max(report.held_of, report.held_deletes)
            refused = MassDeleteRefused(report.held_deletes, total, core.mass_delete_ratio)
            core.status.add_error("mass_delete", str(refused))
            core.status.update(lambda s: replace(s, state=status_file_mod.ERROR))
            raise refused
        return report

    def _pass(
        self,
        scope: set[str] | None,
        allow_mass_delete: bool,
        report: RoundReport,
        verify: list[str],
    ) -> tuple[bool, set[str]]:
        core = self.core
        self.trust.refresh()  # a roster file or the anchor changed since the last pass?
        announced = self._prepare_trust()  # after a pass that brought the first roster file
        if announced and scope is not None:
            scope = scope | {announced}
        self.puller.pull(report)
        inbox = self.puller.load_inbox()
        res, repaired = self._scan(None if scope is None else scope | set(inbox), verify)
        core.check_folder()  # the folder may have gone during the scan: nothing derives from it
        report.full_scan |= not res.partial
        core.phase("scanned")
        for fix in repaired:
            if not fix.twin_of:
                continue
            nfc, twin = fix.twin_of, fix.new
            msg = (f"{nfc}: another file had the same name in decomposed Unicode (as macOS "
                   f"writes it); both are kept, that one as {twin!r}")  # fmt: skip
            report.conflicts.append(
                ConflictInfo(nfc, twin, core.name, core.name, "unicode_twin", msg)
            )
        local = _local_changes(res.changed)
        report.busy = sorted(res.busy)
        applied = core.index.applied.get_many(
            p for p, lc in local.items() if lc.kind is ChangeKind.MODIFIED
        )
        view = _Preloaded(core.index.files, {*inbox, *local})
        plan = plan_apply(
            inbox, local, view, unstable=res.unstable, applied=applied,
            case_insensitive=core.case_insensitive, agent_twins=core.kind == HUMAN,
        )  # fmt: skip
        done = self.applier.run(plan, report) if plan.steps else Outcome()
        touched = set(done.touched)
        if done.quarantine:
            self.puller.quarantine_heads(done.quarantine, report)
        if core.stop_event.is_set():
            return done.work, touched
        core.phase("applied")
        blocked = {row.path for row in core.index.held.rows()}
        blocked |= {row.path for row in core.index.quarantine.rows() if row.path}
        push_plan = plan_push(
            {**plan.push, **done.back}, core.index.files, blocked=blocked,
            live=core.index.files.count_live(), mass_delete_ratio=core.mass_delete_ratio,
            allow_mass_delete=allow_mass_delete,
        )  # fmt: skip
        report.waiting.extend(p for p in push_plan.kept_back if p not in report.waiting)
        touched |= set(push_plan.held_deletes) | set(push_plan.kept_back)  # still there next pass
        report.held_deletes = len(push_plan.held_deletes)
        report.held_of = push_plan.live
        report.pending_upload = len(plan.push) + len(done.back)
        try:
            pushed = self.pusher.run(push_plan, report) if not push_plan.empty else Pushed()
        except RelayLostRevision:
            if report.relay_restored:  # resynchronised once this round: the relay lies
                raise
            touched |= self.puller.resync_after_refused_commit(report)
            return True, touched  # the next pass reads the feed from 0 and re-offers
        touched |= pushed.touched
        self.puller.skip_own_commits(pushed.seqs, pushed.marks)
        if pushed.heads:
            self.puller.admit_heads(pushed.heads, report)
        if pushed.refused:
            self.puller.quarantine_heads(pushed.refused, report)
        core.phase("pushed")
        waiting = self.puller.waiting() > 0  # deferred remote changes: another pass
        young = [p for p in res.unstable if p not in res.busy]
        if young:
            touched |= set(young)
            wait_ns = res.retry_in_ns or max(core.settle_ns, 10_000_000)
            core.stop_event.wait(min(MAX_WAIT_S, wait_ns / 1e9))
        return done.work or pushed.work or waiting or bool(young), touched

    def _prepare_trust(self) -> str | None:
        """This device's signing key and its announcement in the vault (docs/trust.md §1):
        made once, then only looked at. A secret store that fails here does not stop the
        round: its records go unsigned (counted as an agent's on anchored devices) until it
        works again."""
        try:
            return self.trust.prepare()
        except (CompanionError, OSError) as exc:
            log.warning("could not set up this device's signing key: %s", exc)
            return None

    def _scan(
        self, paths: set[str] | None, verify: list[str]
    ) -> tuple[ScanResult, list[NameRepair]]:
        """Scan (a pure read), then carry out what the scan found to fix, before anything is
        planned from it: names not in NFC renamed (and the vault scanned again, to see them
        under their new names: a folder's files are found once it is renamed), the stat of
        touched files written back, stale temporary files removed. Returns the last scan and
        the renames made."""
        core = self.core
        if paths is not None and len(paths) > FULL_SCAN_OVER:
            paths = None  # one walk beats thousands of lookups
        res = self._scan_once(paths, verify)
        repaired: list[NameRepair] = []
        failed: list[Skipped] = []
        for _ in range(MAX_REPAIR_SCANS):
            if not res.repairs:
                break
            done, failed = repair_names(core.root, res.repairs)
            if not done:
                break
            repaired += done
            failed = []  # the scan below lists again what is still to fix
            if paths is not None:
                paths = paths | {fix.new for fix in done}
            res = self._scan_once(paths, verify)
        res.skipped += failed
        if res.touched:
            core.index.files.update_stats(res.touched)
        if res.stale_temp:
            remove_stale_temps(core.root, res.stale_temp)
        self._note_skipped(paths, res)
        return res, repaired

    def _scan_once(self, paths: set[str] | None, verify: list[str]) -> ScanResult:
        core = self.core
        return scan(
            core.root,
            core.index,
            core.ignore,
            paths=paths,
            max_file_bytes=core.max_file_bytes,
            settle_ns=core.settle_ns,
            fix_names=True,
            clock=core.clock,
            busy=self.busy,
            verify=verify,
        )

    def _note_skipped(self, paths: set[str] | None, res: ScanResult) -> None:
        skipped = {
            s.path: (s.reason.value, s.detail or s.reason.value)
            for s in res.skipped
            if s.reason in NOT_SYNCED_REASONS
        }
        if not res.partial:
            self.not_synced = skipped
            return
        for path in paths or ():  # looked at again: skipped now, or not any more
            self.not_synced.pop(path, None)
        self.not_synced.update(skipped)

    def _rotation(self) -> list[str]:
        """The next slice of the vault to re-hash whatever its stat says (a full round)."""
        core = self.core
        if core.verify_per_round <= 0:
            return []
        after = core.index.meta.get(META_VERIFY) or ""
        rows = core.index.files.rotation(
            after, core.verify_per_round, max_bytes=core.verify_bytes_per_round
        )
        if rows:
            core.index.meta.set(META_VERIFY, rows[-1].path)
        return [e.path for e in rows]

    def _failed(
        self,
        report: RoundReport,
        t0: float,
        state: str,
        kind: str,
        exc: BaseException,
        online: bool | None,
    ) -> None:
        status = self.core.status
        report.elapsed_s = time.monotonic() - t0
        status.add_conflicts(_conflict_entries(report))
        status.add_error(kind, str(exc))
        summary = report.summary()
        status.update(
            lambda s: replace(
                s, state=state, last_round=summary, online=s.online if online is None else online
            )
        )
        log.info("sync round failed (%s): %s", kind, exc)  # the caller reports it

    def _run_after_round(self, report: RoundReport, allow: bool, max_passes: int) -> None:
        """The hooks, then one more round for what they wrote (its work added to `report`)."""
        self._in_after_round = True
        try:
            wrote: set[str] = set()
            for hook in self.after_round:
                wrote |= hook(self, report)
            if wrote:
                # this process wrote them on purpose, after the round: not an editor saving a
                # stale buffer over what the round just applied (the stale-save rule)
                self.core.index.applied.drop(wrote)
                more = self.round(wrote, allow_mass_delete=allow, max_passes=max_passes)
                report.uploaded += more.uploaded
                report.downloaded += more.downloaded
                report.conflicts += more.conflicts
                report.passes += more.passes
                report.converged = more.converged
        finally:
            self._in_after_round = False

    def _finished(self, report: RoundReport) -> None:
        core = self.core
        core.status.add_conflicts(_conflict_entries(report))
        problems = problem_views(core.index.inbox.rows())
        state = status_file_mod.PENDING
        if report.converged and not problems:
            copies = copy_paths(core.index.files.kept_copy_candidates())
            state = status_file_mod.CONFLICT if copies else status_file_mod.SYNCED
        st = status_file_mod
        shown = sorted(self.not_synced.items())[:NOT_SYNCED_SHOWN]
        summary = report.summary()
        now = time.time()
        held = tuple(st.HeldEntry.from_json(held_view(r)) for r in core.index.held.rows())
        quarantined = tuple(
            st.QuarantinedEntry.from_json(quarantine_view(r)) for r in core.index.quarantine.rows()
        )
        core.status.update(
            lambda s: replace(
                s,
                state=state,
                online=True,
                last_round=summary,
                last_sync=now if report.converged else s.last_sync,
                pending=st.Pending(report.pending_upload, report.pending_download),
                held=held,
                quarantined=quarantined,
                problems=tuple(st.ProblemEntry.from_json(p) for p in problems),
                not_synced=tuple(st.NotSyncedEntry(p, r, d) for p, (r, d) in shown),
                not_synced_count=len(self.not_synced),
            )
        )
        if report.changed:
            log.info(
                "sync: %d down, %d deleted here, %d up, %d deleted remotely, %d conflicts "
                "(%d passes, %.2fs)",
                len(report.downloaded), len(report.deleted_local), len(report.uploaded),
                len(report.deleted_remote), len(report.conflicts), report.passes,
                report.elapsed_s,
            )  # fmt: skip

    def _check_ignore_rules(self) -> bool:
        """When the ignore rules change, pull everything again: files once skipped may count.
        True when they changed since the last round (that round must scan every file)."""
        core = self.core
        core.ignore.reload_if_changed()
        digest = hashlib.sha256("\n".join(core.ignore.patterns).encode()).hexdigest()
        old = core.index.meta.get(META_IGNORE)
        if old == digest:
            return False
        with core.index.transaction():
            if old is not None:
                core.index.meta.set(META_CURSOR, "0")
            core.index.meta.set(META_IGNORE, digest)
        return True

    # ------------------------------------------------------------------ held and quarantined

    def held_changes(self) -> list[HeldRow]:
        return self.core.index.held.rows()

    def quarantined(self) -> list[QuarantineRow]:
        return self.core.index.quarantine.rows()

    def quarantine_files(self, refused: Iterable[Refused], report: RoundReport) -> None:
        """Record files whose newest record cannot be opened; each is reported once."""
        paths = self.core.index.files.paths_for_file_ids(r.file_id for r in refused)
        self.puller.quarantine_heads({paths.get(r.file_id, ""): r for r in refused}, report)

    # ------------------------------------------------------------------ history and restore

    def history(self, rel: str) -> list[RemoteChange | Refused]:
        """Revisions of `rel` the relay still keeps, newest first, verified (a revision that
        fails verification comes back as `Refused`)."""
        return self.core.remote.history(normalize(rel))

    def restore(self, rel: str, rev: int) -> RoundReport:
        """Make revision `rev` of `rel` the current version, as a new edit synced right away.

        The current version is synced first, so it stays in the history: nothing is destroyed.
        """
        core = self.core
        rel = normalize(rel)
        self.round()
        ch = core.remote.record(rel, rev)
        if ch is None:
            raise InputError(
                f"the relay has no revision {rev} of {rel!r} (see `companion history`; "
                "old revisions are pruned after the relay's retention period)"
            )
        if ch.deleted:
            raise InputError(
                f"revision {rev} of {rel!r} is a deletion; restore an earlier revision"
            )
        content = core.remote.fetch_one(ch.meta)
        target = resolve_inside(core.root, rel)
        current: FileState | None = current_state(target, with_hash=True)
        core.write(rel, content, current)
        core.index.applied.drop([rel])  # the person's choice, not a stale save
        log.info("restored %r to revision %d", rel, rev)
        return self.round(paths=[rel])


class _Preloaded:
    """The index as the planner reads it, with the entries of the paths it will ask about
    loaded in a few queries instead of one each."""

    def __init__(self, files: FileStore, paths: Iterable[str]) -> None:
        self.files = files
        self.loaded = set(paths)
        self.entries = files.get_many(self.loaded)

    def get(self, path: str) -> Entry | None:
        if path in self.loaded:
            return self.entries.get(path)
        return self.files.get(path)

    def paths_with_fold(self, key: str) -> list[str]:
        return self.files.paths_with_fold(key)


def _conflict_entries(report: RoundReport) -> list[status_file_mod.ConflictEntry]:
    return [status_file_mod.ConflictEntry(**asdict(c)) for c in report.conflicts]


def _local_changes(changes: Iterable[LocalChange]) -> dict[str, Local]:
    """The scan's changes as the planner takes them: a rename as its two halves."""
    out: dict[str, Local] = {}
    for c in changes:
        if c.kind is ChangeKind.RENAMED and c.old_path is not None:
            out[c.old_path] = Local(ChangeKind.DELETED, c.old_path, rename_to=c.path)
            out[c.path] = Local(
                ChangeKind.CREATED, c.path, c.state, c.is_text, rename_from=c.old_path
            )
        else:
            out[c.path] = Local(c.kind, c.path, c.state, c.is_text)
    return out


__all__ = [
    "HUMAN", "ConflictInfo", "Incoming", "Local", "NotConverged", "RoundReport", "SyncEngine",
    "held_view", "quarantine_view",
]  # fmt: skip
