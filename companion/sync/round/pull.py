"""Pulling: the relay's new records, verified, admitted into the inbox, held or quarantined.

Every record committed after this device's cursor is fetched and verified (`RemoteVault.pull`);
`plan.plan_admission` decides where the newest change of each file goes, and this module
records it in one transaction with the new cursor, so a crash can neither lose nor double-apply
a remote change. It also asks the relay again, once per round, for the head of each quarantined
file (damage in transit heals by itself), and resynchronises with a relay restored from a
backup (`plan.plan_resync`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from companion.crypto import TamperDetected
from companion.logs import get_logger
from companion.relayclient.client import SeqMark
from companion.relayclient.errors import ConflictError
from companion.sync.local.pathsafe import UnsafePath, normalize
from companion.sync.remote.vault import Pulled, Refused, RelayRestored, RemoteChange
from companion.sync.round.core import Core
from companion.sync.round.holds import NOTE_CHECK_BYTES, config_folders, note_code
from companion.sync.round.plan import (
    Diverged,
    Enqueue,
    Hold,
    Incoming,
    Renumber,
    Reoffer,
    admit_head,
    cursor_after_own_commits,
    plan_admission,
    plan_resync,
    resync_checks,
    safe_path,
)
from companion.sync.round.record import take_over
from companion.sync.round.report import RoundReport
from companion.sync.round.scopes import load_scopes
from companion.sync.state.files import Entry
from companion.sync.state.held import HeldRow
from companion.sync.state.quarantine import QuarantineRow

if TYPE_CHECKING:
    from companion.crypto import FileMeta  # the cipher is loaded only when a round needs it

log = get_logger("sync.engine")

META_CURSOR = "cursor"
# The record this device saw at its cursor, "SEQ FILE_ID REV SHA256": a relay that holds
# another one there was restored from a backup (R3). Used only while SEQ is the cursor, so
# whatever moves the cursor without it (back to 0, say) leaves nothing to compare.
META_CURSOR_MARK = "cursor_mark"
QUARANTINE_RETRIES = 50  # quarantined files asked for again per round
READ_NOTES_BUDGET = 32 * 1024 * 1024  # notes read for the hold rules, kept for the apply
NOTE_BATCH_BYTES = 8 * 1024 * 1024  # notes read for the hold rules, fetched at a time


class Puller:
    """Relay -> inbox, over the shared `Core`."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self._verified: dict[str, RemoteChange] = {}  # opened by this pull, queued in the inbox

    @property
    def cursor(self) -> int:
        return int(self.core.index.meta.get(META_CURSOR) or 0)

    def cursor_mark(self, cursor: int) -> SeqMark | None:
        """The record this device saw at `cursor` (None: not known)."""
        parts = (self.core.index.meta.get(META_CURSOR_MARK) or "").split(" ")
        if len(parts) != 4 or parts[0] != str(cursor) or cursor <= 0:
            return None
        return SeqMark(parts[1], int(parts[2]), parts[3])

    def _set_cursor(self, seq: int, mark: SeqMark | None) -> None:
        """The cursor and what sits there, together (inside the caller's transaction)."""
        index = self.core.index
        index.meta.set(META_CURSOR, str(seq))
        index.meta.set(META_CURSOR_MARK, f"{seq} {mark.file_id} {mark.rev} {mark.sha256}"
                       if mark is not None else "")  # fmt: skip

    # ------------------------------------------------------------------ pulling

    def pull(self, report: RoundReport, *, restored: bool = False) -> int:
        """Fetch, verify and admit what is new; returns how many changes were queued.
        `restored`: the relay is known to have been restored (`resync_after_refused_commit`),
        resync with it without asking."""
        core = self.core
        index = core.index
        since = self.cursor
        queued = {r.path: int(r.payload.get("rev", 0)) for r in index.inbox.rows()}
        known: dict[str, Entry] = {}

        def seen(paths: list[str]) -> dict[str, int]:
            keys: dict[str, str] = {}
            for path in paths:
                with contextlib.suppress(UnsafePath):
                    keys[path] = normalize(path)
            known.update(index.files.get_many(keys.values()))
            out = {}
            for path, key in keys.items():
                entry = known.get(key)
                best = max(entry.rev if entry else 0, queued.get(key, 0))
                if best:
                    out[path] = best
            return out

        pulled: Pulled | None = None
        if not restored:
            try:
                pulled = core.remote.pull(
                    since, seen, held_revs=index.files.revs_for_file_ids,
                    mark=self.cursor_mark(since),
                )  # fmt: skip
            except (ConflictError, RelayRestored) as exc:
                if isinstance(exc, ConflictError) and exc.code != "since_ahead":
                    raise
        if pulled is None:
            pulled = self._resync_restored_relay(report)
            since = -1  # the cursor is rewritten below
            queued.clear()
            known.clear()
            seen([ch.path for ch in pulled.changes])  # reload what the index now says

        class _Known:
            def get(self, path: str) -> Entry | None:
                return known.get(path)

            def paths_with_fold(self, key: str) -> list[str]:
                return index.files.paths_with_fold(key)

        changes, refused_now = pulled.changes, list(pulled.refused)
        named: dict[str, str] = {}  # file id -> path, of the notes whose content did not verify
        contents: dict[str, bytes] = {}
        hidden: list[str] = []
        if core.holds.active and changes:
            core.holds = core.holds.with_scopes(load_scopes(core.root))
            newest = {ch.file_id: ch for ch in changes}
            todo = [ch for ch in newest.values() if self._new_here(ch, known, queued)]
            contents, bad = self.note_contents(todo, keep=True)
            if bad:
                gone = {r.file_id for r in bad}
                named = {
                    ch.file_id: p for ch in todo if not isinstance(p := safe_path(ch), UnsafePath)
                }
                changes = [ch for ch in changes if ch.file_id not in gone]
                refused_now += bad
        elif core.read_notes:
            core.read_notes = {}
        held_rows = index.held.rows()
        if core.holds.active and changes:  # held files count too (an agent's `.x/app.json`)
            hidden = index.files.hidden_folder_paths() + [r.path for r in held_rows]
        plan = plan_admission(
            changes,
            refused_now,
            _Known(),
            queued=queued,
            held={r.path: r.rev for r in held_rows},
            ignored=core.ignore.is_ignored,
            holds=core.holds,
            known=hidden,
            contents=contents,
        )
        now = time.time_ns()
        holds = [self._held_row(h, now) for h in plan.hold]
        refused = self._quarantine_rows(plan.quarantine, named)
        with index.transaction():
            index.inbox.add((e.path, e.change.to_payload()) for e in plan.enqueue)
            index.held.add(holds)
            index.held.release(plan.release)
            index.quarantine.release(plan.healed)
            fresh = index.quarantine.add(refused)
            if pulled.seq != since:
                self._set_cursor(pulled.seq, pulled.mark)
        for e in plan.enqueue:
            self._verified[e.path] = e.change
        self._report_held(report, holds)
        self._report_quarantined(report, fresh)
        return len(plan.enqueue)

    def _new_here(
        self, ch: RemoteChange, known: Mapping[str, Entry], queued: Mapping[str, int]
    ) -> bool:
        """An agent's note the hold rules must read, newer than anything here or queued."""
        if not self.core.holds.needs_content(ch):
            return False
        path = safe_path(ch)
        if isinstance(path, UnsafePath) or self.core.ignore.is_ignored(path):
            return False
        entry = known.get(path)
        return ch.rev > max(entry.rev if entry else 0, queued.get(path, 0))

    def note_contents(
        self, changes: Iterable[RemoteChange], *, keep: bool = False
    ) -> tuple[dict[str, bytes], list[Refused]]:
        """What the hold rules read of the agents' notes (`HoldPolicy.needs_content`), by
        SHA-256, fetched and verified before admission, `NOTE_BATCH_BYTES` at a time so that a
        first sync of a large vault never holds them all: a note that holds no code a plugin
        runs comes back as `b""` (all the rules need to know of it), one that does as its
        bytes. With `keep`, up to `READ_NOTES_BUDGET` of the real contents are handed to the
        apply (`Core.read_notes`), so they are not downloaded twice. A note larger than
        `NOTE_CHECK_BYTES` is left out (held as unchecked); one whose content does not verify
        is refused, so it is quarantined like any file whose blob does not open."""
        changes = list(changes)
        by_sha: dict[str, list[RemoteChange]] = {}
        for ch in changes:
            if self.core.holds.needs_content(ch) and ch.meta.size <= NOTE_CHECK_BYTES:
                by_sha.setdefault(ch.meta.sha256, []).append(ch)
        out: dict[str, bytes] = {}
        bad: list[Refused] = []
        kept: dict[str, bytes] = {}
        budget = READ_NOTES_BUDGET if keep else 0
        batch: list[FileMeta] = []
        size = 0
        todo = [chs[0].meta for chs in by_sha.values()]
        for i, meta in enumerate(todo):
            batch.append(meta)
            size += meta.size
            if size < NOTE_BATCH_BYTES and i + 1 < len(todo):
                continue
            got, failed = self._fetch_notes(batch)
            for sha, exc in failed.items():
                bad += [Refused(ch.file_id, ch.rev, ch.seq, str(exc), ch.device_id,
                                ch.author_name) for ch in by_sha[sha]]  # fmt: skip
            for sha, data in got.items():
                if len(data) <= budget:
                    kept[sha] = data
                    budget -= len(data)
                code = note_code(data.decode("utf-8", errors="replace"))
                out[sha] = b"" if code is None else data
            batch, size = [], 0
        if keep:
            self.core.read_notes = kept
        return out, bad

    def _fetch_notes(
        self, metas: list[FileMeta]
    ) -> tuple[dict[str, bytes], dict[str, TamperDetected]]:
        remote = self.core.remote
        try:
            return remote.fetch(metas), {}
        except TamperDetected:
            pass
        got: dict[str, bytes] = {}
        failed: dict[str, TamperDetected] = {}
        for meta in metas:
            try:
                got[meta.sha256] = remote.fetch_one(meta)
            except TamperDetected as exc:
                failed[meta.sha256] = exc
        return got, failed

    def skip_own_commits(
        self, seqs: Iterable[int], marks: Mapping[int, SeqMark] | None = None
    ) -> None:
        """Move the cursor past this device's just-recorded commits when nothing else lies
        between them (`plan.cursor_after_own_commits`): they are not listed back. `marks`:
        our record at each seq, the one at the new cursor remembered with it."""
        cursor = self.cursor
        after = cursor_after_own_commits(cursor, seqs)
        if after != cursor:
            with self.core.index.transaction():
                self._set_cursor(after, (marks or {}).get(after))

    def load_inbox(self) -> dict[str, Incoming]:
        """The queued remote changes; those verified by this process's pull are not opened again
        (the queue holds them sealed, so after a restart each is verified anew)."""
        out: dict[str, Incoming] = {}
        for row in self.core.index.inbox.rows():
            ch = self._verified.get(row.path)
            if ch is None or (ch.file_id, ch.rev) != (
                row.payload.get("file_id"),
                row.payload.get("rev"),
            ):
                ch = self.core.remote.open_payload(row.payload)
            out[row.path] = Incoming(row.id, row.path, ch)
        self._verified.clear()
        return out

    def waiting(self) -> int:
        """Queued remote changes that another pass may apply (not those blocked by a problem)."""
        return sum(1 for row in self.core.index.inbox.rows() if not row.problem)

    # ------------------------------------------------------------------ heads from a push

    def admit_heads(self, heads: Mapping[str, RemoteChange], report: RoundReport) -> None:
        """Heads that beat our commits: into the inbox, or held like any pulled change."""
        now = time.time_ns()
        enqueue: list[Enqueue] = []
        holds: list[HeldRow] = []
        if self.core.holds.active:
            self.core.holds = self.core.holds.with_scopes(load_scopes(self.core.root))
        policy = self.core.holds
        contents: dict[str, bytes] = {}
        config_dirs: frozenset[str] = frozenset()
        if policy.active:
            contents, bad = self.note_contents(heads.values())
            if bad:
                self.quarantine_heads({p: r for p, h in heads.items() for r in bad
                                       if r.file_id == h.file_id}, report)  # fmt: skip
                gone = {r.file_id for r in bad}
                heads = {p: h for p, h in heads.items() if h.file_id not in gone}
            index = self.core.index
            known = index.files.hidden_folder_paths() + [r.path for r in index.held.rows()]
            config_dirs = config_folders([*known, *heads])
        for path, head in heads.items():
            step = admit_head(path, head, policy, config_dirs, contents.get(head.meta.sha256),
                              self.core.index.files)  # fmt: skip
            if isinstance(step, Hold):
                holds.append(self._held_row(step, now))
            else:
                enqueue.append(step)
        with self.core.index.transaction():
            self.core.index.inbox.add((e.path, e.change.to_payload()) for e in enqueue)
            self.core.index.held.add(holds)
        self._report_held(report, holds)

    def quarantine_heads(self, refused: Mapping[str, Refused], report: RoundReport) -> None:
        now = time.time_ns()
        rows = [
            QuarantineRow(r.file_id, r.rev, path, r.reason, r.device_name or "", now)
            for path, r in refused.items()
        ]
        self._report_quarantined(report, self.core.index.quarantine.add(rows))

    # ------------------------------------------------------------------ quarantine

    def _quarantine_rows(
        self, refused: Iterable[Refused], named: Mapping[str, str] | None = None
    ) -> list[QuarantineRow]:
        refused = list(refused)
        if not refused:
            return []
        paths = {
            **self.core.index.files.paths_for_file_ids(r.file_id for r in refused),
            **(named or {}),
        }
        now = time.time_ns()
        return [
            QuarantineRow(
                r.file_id, r.rev, paths.get(r.file_id, ""), r.reason, r.device_name or "", now
            )
            for r in refused
        ]

    def retry_quarantined(self, report: RoundReport) -> set[str]:
        """Once per round, ask the relay again for the head of each quarantined file: a record
        damaged in transit, or a file since superseded, heals on its own. Bounded per round."""
        core = self.core
        index = core.index
        touched: set[str] = set()
        rows = [r for r in index.quarantine.rows() if not r.decision][:QUARANTINE_RETRIES]
        for row in rows:
            rec = core.remote.client.head(row.file_id)
            if rec is None:
                # the relay holds no such file: its change feed listed one that is not there,
                # so read the feed again from the start (known revisions are skipped)
                index.quarantine.release([row.file_id])
                index.meta.set(META_CURSOR, "0")
                continue
            ch = core.remote.try_open(rec)
            if isinstance(ch, Refused):
                if ch.rev != row.rev:
                    fresh = index.quarantine.add(self._quarantine_rows([ch]))
                    self._report_quarantined(report, fresh)
                continue
            if ch.file_id != row.file_id:
                continue
            path = safe_path(ch)
            if isinstance(path, UnsafePath):
                report.skipped.append(f"a remote file with an unusable path was skipped: {path}")
                continue
            if not ch.deleted and ch.rev == row.rev:
                try:  # the record opens: was it one of its blobs that did not?
                    core.remote.fetch([ch.meta])
                except TamperDetected:
                    continue
            index.quarantine.release([row.file_id])
            entry = index.files.get(path)
            if entry is not None and ch.rev <= entry.rev:
                continue
            self.admit_heads({path: ch}, report)
            touched.add(path)
            log.info("%s is readable again (rev %d): out of quarantine", path, ch.rev)
        return touched

    # ------------------------------------------------------------------ a restored relay

    def resync_after_refused_commit(self, report: RoundReport) -> set[str]:
        """A commit was refused because the relay has no revision at or after the one this
        device committed on (`RelayLostRevision`): a restore the pull did not notice (this
        device's round stopped before pulling its own commit back, the backup lacks it, and
        the record at the cursor is unchanged). Resync as the pull does: its feed read from 0
        and admitted as the pull admits it. Returns the paths to scan again (re-offered files
        and what was queued)."""
        files = self.core.index.files
        before = {e.path: (e.rev, e.sha256) for e in files.iter_entries(include_deleted=True)}
        self.pull(report, restored=True)
        after = files.iter_entries(include_deleted=True)
        changed = {e.path for e in after if (e.rev, e.sha256) != before.get(e.path)}
        return changed | {r.path for r in self.core.index.inbox.rows()}

    def _resync_restored_relay(self, report: RoundReport) -> Pulled:
        """The relay's sequence is behind this device's cursor (`since_ahead`), or it holds
        another record at the cursor than the one this device saw there (`RelayRestored`: others
        committed past the cursor since): it was reset or restored from a backup, and lost what
        was committed after it. Start its feed from zero and re-offer everything it lost
        (`plan_resync`): its versions stay in its history. A file the relay holds another
        version of at this device's revision (`Diverged`: changed there after the restore; its
        head there, or under a newer head its record there, `_records_at`) is put just below
        the relay's revision with this device's version as a local change and no merge base,
        so the pull queues the relay's head and the apply reconciles the two
        (`conflicts.resolve`: a conflict copy, or the edit over a deletion), never one over
        the other unseen."""
        core = self.core
        pulled = core.remote.pull(0, lambda _paths: {})  # the replay check cannot hold here
        heads: dict[str, RemoteChange] = {}
        for ch in pulled.changes:
            with contextlib.suppress(UnsafePath):
                heads[normalize(ch.path)] = ch
        entries = list(core.index.files.iter_entries(include_deleted=True))
        steps = plan_resync(entries, heads, self._records_at(entries, heads))
        reoffered = 0
        with core.index.transaction():
            for step in steps:
                if isinstance(step, Renumber):
                    core.index.files.put(replace(step.entry, rev=step.rev))
                elif isinstance(step, Reoffer):
                    e = step.entry
                    take_over(core, e.path, e.file_id or core.remote.file_id(e.path),
                              step.relay_rev, "", False)  # fmt: skip
                    reoffered += 1
                elif isinstance(step, Diverged):
                    e = step.entry
                    take_over(core, e.path, e.file_id or core.remote.file_id(e.path),
                              step.relay_rev - 1, "", e.deleted)  # fmt: skip
                    core.index.bases.drop(e.path)  # this device's own version: no common one
                    reoffered += 1
            self._set_cursor(0, None)
        report.relay_restored = True
        msg = (
            f"the relay was reset or restored from a backup (it lost records this device "
            f"saw); {reoffered} file(s) it lost are offered again"
        )
        log.warning("%s", msg)
        core.status.add_error("relay_restored", msg)
        return pulled

    def _records_at(
        self, entries: list[Entry], heads: Mapping[str, RemoteChange]
    ) -> dict[str, RemoteChange]:
        """The relay's record at this device's revision of each file `resync_checks` names
        (one request each: the files others changed on the restored relay). One the relay
        pruned, or that does not open, is left out: the head is then applied as usual."""
        by_path = {e.path: e for e in entries}
        out: dict[str, RemoteChange] = {}
        for path in resync_checks(entries, heads):
            with contextlib.suppress(TamperDetected):
                rec = self.core.remote.record(path, by_path[path].rev)
                if rec is not None:
                    out[path] = rec
        return out

    # ------------------------------------------------------------------ reports

    def _held_row(self, step: Hold, now: int) -> HeldRow:
        ch = step.change
        return HeldRow(step.path, ch.file_id, ch.rev, ch.to_payload(), step.reason,
                       ch.author_name, now)  # fmt: skip

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
            self.core.status.add_error(
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
