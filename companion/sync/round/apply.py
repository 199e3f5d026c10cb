"""Carrying out the apply steps of a pass (`plan.plan_apply`): remote -> local.

Every local write is atomic and checked against the scanned state (`ChangedSinceScan` leaves
the file alone and the step waits for the next pass); many plain downloads are written
together (`bulkwrite`); contents are downloaded in groups, the next group while this one is
written. A file changed on both sides goes through `conflicts.resolve`, and whatever is not
kept in the note goes to a conflict copy, written before the note changes.

A change this device cannot apply because of something local (a symbolic link on its way) stays
queued as a **problem**: reported every round (status, exit status) until it applies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path

from companion.crypto import FileMeta, TamperDetected
from companion.logs import get_logger
from companion.sync.local.atomic import (
    ChangedSinceScan,
    atomic_delete,
    atomic_rename,
    atomic_write,
    fsync_dir,
)
from companion.sync.local.bulkwrite import WriteJob, write_many
from companion.sync.local.chunking import ChunkAssembler, ChunkSpec
from companion.sync.local.filestate import FileState
from companion.sync.local.pathsafe import UnsafePath
from companion.sync.remote.vault import Refused, RemoteChange
from companion.sync.round.conflicts import Resolution, Version, case_collision_name, resolve
from companion.sync.round.core import Core
from companion.sync.round.model import Local, Outcome, entry_state
from companion.sync.round.plan import (
    ApplyPlan,
    ApplyStep,
    CaseCollision,
    Discard,
    Download,
    FollowLocalRename,
    FollowRemoteRename,
    Incoming,
    MoveHere,
    Reconcile,
    RemoveHere,
    StaleSave,
    Wait,
    is_new_edit,
)
from companion.sync.round.record import Synced, base_of, record_synced
from companion.sync.round.report import ConflictInfo, Problem, RoundReport
from companion.sync.round.scanner import ChangeKind
from companion.sync.state.applied import AppliedRow
from companion.sync.state.bases import base_streams, pack_bases
from companion.textsafe import SHOWN_PATH, shown

log = get_logger("sync.engine")

MEMORY_GROUP_BYTES = 32 * 1024 * 1024  # remote contents held in memory at once while applying
GROUP_FILES = 1500  # files per apply group (the next group downloads while one is written)
FIRST_GROUP_FILES = 250  # a small first group, so writing starts early
BULK_WRITE_MIN = 32  # from this many files on, one file-system flush beats one fsync each

Content = bytes | Path | TamperDetected


def _change_of(step: ApplyStep) -> RemoteChange | None:
    """The remote change whose content a step needs, if any."""
    if isinstance(step, Download | CaseCollision):
        return step.item.change
    if isinstance(step, Reconcile):
        return None if step.item.change.deleted else step.item.change
    if isinstance(step, FollowRemoteRename):
        return step.came.change
    if isinstance(step, FollowLocalRename):
        return step.item.change
    return None


class Applier:
    """Remote -> local, over the shared `Core`."""

    def __init__(self, core: Core) -> None:
        self.core = core

    # ------------------------------------------------------------------ the pass

    def run(self, plan: ApplyPlan, report: RoundReport) -> Outcome:
        out = Outcome()
        core = self.core
        core.check_folder()  # the folder may have gone since the scan (an unmounted drive)
        later: list[ApplyStep] = []
        for step in plan.steps:
            if core.stop_event.is_set():
                return out
            if _change_of(step) is not None:
                later.append(step)
            elif isinstance(step, Discard):
                core.index.inbox.done([step.item.row_id])
            elif isinstance(step, Wait):
                report.deferred += 1
                out.touched.add(step.path)
            elif isinstance(step, MoveHere):
                fallback = self._move_here(step, report, out)
                if fallback is not None:
                    remove, download = fallback
                    self._guarded(
                        remove.item, report, out, partial(self._remove_here, remove, report)
                    )
                    later.append(download)
            elif isinstance(step, RemoveHere):
                self._guarded(step.item, report, out, partial(self._remove_here, step, report))
            elif isinstance(step, StaleSave):
                self._stale_save(step, report, out)
            elif isinstance(step, Reconcile):  # a remote deletion against a local change
                self._guarded(step.item, report, out, partial(
                    self._reconcile, step.item, step.local, None, report, out))  # fmt: skip
        changes = [c for c in (_change_of(s) for s in later) if c is not None]
        by_change = {(s_ch.file_id, s_ch.rev): s for s in later if (s_ch := _change_of(s))}
        for group, contents, streams in self._prefetched(self._content_groups(changes)):
            if core.stop_event.is_set():
                return out
            core.check_folder()
            bulk: list[tuple[Download, bytes]] = []
            for ch in group:
                step = by_change[(ch.file_id, ch.rev)]
                content = contents.get(ch.meta.sha256)
                if isinstance(content, TamperDetected) or content is None:
                    item = _item_of(step)
                    out.quarantine[item.path] = Refused(
                        ch.file_id, ch.rev, ch.seq, str(content or "content missing"),
                        ch.device_id, ch.author_name,
                    )  # fmt: skip
                    core.index.inbox.done([item.row_id])
                    out.work = True
                    continue
                if isinstance(step, Download) and step.bulk and isinstance(content, bytes):
                    bulk.append((step, content))
                    continue
                self._with_content(step, content, report, out)
            self._downloads(bulk, report, out, streams)
        return out

    def _guarded(
        self, item: Incoming, report: RoundReport, out: Outcome, run: Callable[[], None]
    ) -> None:
        """Run one step; a file that moved on waits, an unusable path is a problem."""
        out.touched.add(item.path)
        try:
            run()
            out.work = True
        except ChangedSinceScan as exc:
            self._changed(item.path, exc, report)
        except UnsafePath as exc:
            self._problem(item, str(exc), report)

    def _changed(self, path: str, exc: ChangedSinceScan, report: RoundReport) -> None:
        """The file is not what the scan said: wait for the next pass, and make its scan hash
        the file (its stat may hide the change), so no round can loop on it."""
        log.info("deferred remote change of %r: %s", path, exc)
        report.deferred += 1
        self.core.index.files.forget_stats([path])

    def _problem(self, item: Incoming, reason: str, report: RoundReport) -> None:
        self.core.index.inbox.problem(item.row_id, reason)
        if any(p.path == item.path for p in report.problems):
            return  # a later pass of the same round met it again
        log.warning(
            "cannot apply the remote change of '%s': %s", shown(item.path, SHOWN_PATH), reason
        )
        report.problems.append(Problem(item.path, reason))

    def _with_content(
        self, step: ApplyStep, content: bytes | Path, report: RoundReport, out: Outcome
    ) -> None:
        item = _item_of(step)
        if isinstance(step, Download):
            self._guarded(item, report, out, lambda: self._download(step, content, report))
        elif isinstance(step, CaseCollision):
            self._guarded(
                item, report, out, lambda: self._case_collision(step, content, report, out)
            )
        elif isinstance(step, Reconcile):
            self._guarded(item, report, out, lambda: self._reconcile(
                step.item, step.local, _bytes(content), report, out))  # fmt: skip
        elif isinstance(step, FollowRemoteRename):
            self._guarded(item, report, out, lambda: self._follow_remote(
                step, _bytes(content), report, out))  # fmt: skip
        elif isinstance(step, FollowLocalRename):
            self._guarded(item, report, out, lambda: self._follow_local(
                step, _bytes(content), report, out))  # fmt: skip

    # ------------------------------------------------------------------ one side changed

    def _move_here(
        self, step: MoveHere, report: RoundReport, out: Outcome
    ) -> tuple[RemoveHere, Download] | None:
        """A remote rename as a local rename; when the rename cannot be done (the file moved
        on, something is at the new path), a deletion and a download instead."""
        core = self.core
        try:
            state = atomic_rename(core.root, step.old, step.new, step.expected)
        except (ChangedSinceScan, UnsafePath, OSError) as exc:
            log.debug("remote rename %s applied as delete + write instead: %s", step.new, exc)
            entry = core.index.files.get(step.new)
            return (
                RemoveHere(step.gone, step.expected),
                Download(step.came, entry_state(entry), bulk=False),
            )
        core.expect(step.old, None)
        core.expect(step.new, state)
        _prune_empty_dirs(core.root, step.old)
        old_entry = core.index.files.get(step.old)
        text = old_entry is not None and old_entry.is_text
        with core.index.transaction():
            core.index.bases.move(step.old, step.new)  # the merge base moves with the file
            record_synced(core, [
                Synced(step.old, step.gone.change, None, None, step.gone.row_id),
                Synced(step.new, step.came.change, state, None, step.came.row_id, text=text),
            ], keep_bases=True)  # fmt: skip
        report.renamed_local.append((step.old, step.new))
        out.touched.update((step.old, step.new))
        out.work = True
        return None

    def _remove_here(self, step: RemoveHere, report: RoundReport) -> None:
        core = self.core
        path = step.item.path
        if step.expected is not None and atomic_delete(core.root, path, step.expected):
            core.expect(path, None)
            report.deleted_local.append(path)
        record_synced(core, [Synced(path, step.item.change, None, None, step.item.row_id)])

    def _download(self, step: Download, content: bytes | Path, report: RoundReport) -> None:
        core = self.core
        path, ch = step.item.path, step.item.change
        prev = self._replaced(path, step.expected)
        state = core.write(path, content, step.expected, ch.meta)
        data = content if isinstance(content, bytes) else None
        with core.index.transaction():
            record_synced(core, [Synced(path, ch, state, data, step.item.row_id)])
            if prev is not None:
                core.index.applied.record([prev])
        report.downloaded.append(path)

    def _replaced(self, path: str, expected: FileState | None) -> AppliedRow | None:
        """What a download is about to replace (the synced version, still on disk)."""
        if expected is None:
            return None
        return AppliedRow(path, expected.sha256, self.core.index.bases.get(path), self.core.clock())

    def _downloads(
        self,
        items: Sequence[tuple[Download, bytes]],
        report: RoundReport,
        out: Outcome,
        streams: Mapping[str, bytes],
    ) -> None:
        """Many files changed only remotely, written in parallel; each folder is fsynced once,
        and only then does the index (one transaction) say the files are there. A one-chunk
        file's merge base is the zlib stream its blob's frame held (`streams`, by blob id)."""
        if not items:
            return
        core = self.core
        jobs = [
            WriteJob(s.item.path, content, s.expected, s.item.change.meta.mtime_ns,
                     s.item.change.meta.executable)
            for s, content in items
        ]  # fmt: skip
        prevs = [self._replaced(s.item.path, s.expected) for s, _ in items]
        # the merge bases compress on another thread while the files are written
        known = base_streams(((s.item.path, s.item.change.meta.chunks) for s, _ in items), streams)
        packing = core.pool().submit(
            pack_bases, [(s.item.path, base_of(content)) for s, content in items], known
        )
        if len(jobs) >= BULK_WRITE_MIN:
            results: list[FileState | Exception] = list(write_many(core.root, jobs, core.pool()))
        else:
            results = list(core.pool().map(self._write_one, jobs))
            folders = {(core.root / j.rel).parent for j, r in zip(jobs, results, strict=True)
                       if isinstance(r, FileState)}  # fmt: skip
            list(core.pool().map(fsync_dir, folders | {core.root}))
        done: list[Synced] = []
        applied: list[AppliedRow] = []
        for (step, content), res, prev in zip(items, results, prevs, strict=True):
            path = step.item.path
            out.touched.add(path)
            if isinstance(res, FileState):
                done.append(Synced(path, step.item.change, res, content, step.item.row_id))
                if prev is not None:
                    applied.append(prev)
                report.downloaded.append(path)
                out.work = True
            elif isinstance(res, ChangedSinceScan):
                self._changed(path, res, report)
            elif isinstance(res, UnsafePath):
                self._problem(step.item, str(res), report)
            else:
                raise res
        with core.index.transaction():
            record_synced(core, done, packed=packing.result())
            core.index.applied.record(applied)
        for it in done:
            core.expect(it.path, it.state)

    def _write_one(self, job: WriteJob) -> FileState | Exception:
        try:
            return atomic_write(
                self.core.root, job.rel, job.data, job.expected, mtime_ns=job.mtime_ns,
                executable=job.executable, sync_dir=False,
            )  # fmt: skip
        except (ChangedSinceScan, UnsafePath, OSError) as exc:
            return exc

    def _case_collision(
        self, step: CaseCollision, content: bytes | Path, report: RoundReport, out: Outcome
    ) -> None:
        """`path` differs from an existing file only by case, and this file system cannot hold
        both: the remote file is kept under another name, which then replaces it everywhere."""
        core = self.core
        path, ch = step.item.path, step.item.change
        copy = case_collision_name(path, core.taken)
        core.write(copy, content, None, ch.meta)
        out.touched.add(copy)
        # recorded as synced but absent here: the next scan pushes it as a rename to `copy`
        state = FileState(ch.meta.size, 0, 0, ch.meta.sha256)
        record_synced(core, [Synced(path, ch, state, None, step.item.row_id)])
        msg = f"{path}: its name differs only by case from {step.other}; saved as {copy!r}"
        report.conflicts.append(
            ConflictInfo(path, copy, core.name, ch.author_name, "case_collision", msg)
        )
        log.info("%s", msg)

    # ------------------------------------------------------------------ both sides changed

    def _local_version(self, rel: str, lc: Local) -> tuple[bytes | None, FileState | None] | None:
        """(content, state) of a local change; (None, None) for a deletion; None when the file
        is no longer what the scan saw."""
        if lc.kind is ChangeKind.DELETED or lc.state is None:
            return None, None
        got = self.core.read_local(rel, lc.state)
        if got is None:
            return None
        return got[0], lc.state

    def _settle(
        self,
        target: str,
        res: Resolution,
        local: tuple[bytes | None, FileState | None],
        remote_data: bytes | None,
        meta: FileMeta | None,
        report: RoundReport,
        out: Outcome,
    ) -> FileState | None:
        """Write what `resolve` decided at `target` (the copy first); the local file's state
        when it ends holding the remote version, else None."""
        core = self.core
        local_data, local_state = local
        if res.copy is not None:  # the losing version is safe on disk before the note changes
            core.write(res.copy.path, res.copy.data, None)
            out.touched.add(res.copy.path)
        state: FileState | None = None
        if res.write_local:
            if res.note is None:
                assert local_state is not None
                if atomic_delete(core.root, target, local_state):
                    core.expect(target, None)
            else:
                keep_meta = meta if res.note == remote_data else None
                state = core.write(target, res.note, local_state, keep_meta)
                if local_data is not None:
                    sha = local_state.sha256 if local_state is not None else ""
                    core.index.applied.record([AppliedRow(target, sha, local_data, core.clock())])
        elif res.note is not None and res.note == local_data:
            state = local_state
        return state if res.note == remote_data else None

    def _report(self, path: str, res: Resolution, author: str, report: RoundReport) -> None:
        core = self.core
        if res.copy is not None:
            report.conflicts.append(
                ConflictInfo(
                    path=path,
                    copy=res.copy.path,
                    kept=core.name if res.outcome.value == "local_wins" else author,
                    moved=res.copy.device_name,
                    outcome=res.outcome.value,
                    message=res.message,
                )
            )
            log.info("%s", res.message)  # in the round report; the caller shows it
        elif res.outcome.value == "merged":
            report.merged.append(path)
        elif res.outcome.value == "keep_edit":
            report.kept_edits.append(path)
            log.info("%s", res.message)

    def _resolve(
        self, path: str, local_data: bytes | None, remote_data: bytes | None,
        author: str, author_kind: str, base: bytes | None,
    ) -> Resolution:  # fmt: skip
        core = self.core
        return resolve(
            path,
            Version(local_data, core.name, core.kind),
            Version(remote_data, author, author_kind),
            base,
            when=datetime.now(),
            taken=core.taken,
        )

    def _base(self, path: str) -> bytes | None:
        entry = self.core.index.files.get(path)
        if entry is None or entry.deleted:
            return b""  # both sides created the file: the common version is empty
        return self.core.index.bases.get(path)

    def _reconcile(
        self, item: Incoming, lc: Local, remote_data: bytes | None, report: RoundReport,
        out: Outcome,
    ) -> None:  # fmt: skip
        """Changed here and remotely: `conflicts.resolve` decides, then we write what it says."""
        path, ch = item.path, item.change
        local = self._local_version(path, lc)
        if local is None:
            report.deferred += 1
            return
        res = self._resolve(path, local[0], remote_data, ch.author_name, ch.author_kind,
                            self._base(path))  # fmt: skip
        state = self._settle(path, res, local, remote_data, ch.meta, report, out)
        record_synced(self.core, [Synced(path, ch, state, remote_data, item.row_id)])
        self._report(path, res, ch.author_name, report)
        if res.write_local and res.note is not None and res.note == remote_data:
            report.downloaded.append(path)

    def _follow_remote(
        self, step: FollowRemoteRename, remote_data: bytes | None, report: RoundReport,
        out: Outcome,
    ) -> None:  # fmt: skip
        """Renamed there, edited here: the local edit moves to the new path, merged with the
        remote version against the last common version; the old path goes."""
        core = self.core
        local = self._local_version(step.old, step.local)
        if local is None or local[0] is None or local[1] is None:
            report.deferred += 1
            return
        ch = step.came.change
        res = self._resolve(step.new, local[0], remote_data, ch.author_name, ch.author_kind,
                            core.index.bases.get(step.old))  # fmt: skip
        # the note at the new path is a new file here; the old one is removed once it is there
        if res.copy is not None:
            core.write(res.copy.path, res.copy.data, None)
            out.touched.add(res.copy.path)
        state: FileState | None = None
        if res.note is not None:
            synced = res.note == remote_data
            state = core.write(step.new, res.note, None, ch.meta if synced else None)
            state = state if synced else None
        try:
            if atomic_delete(core.root, step.old, local[1]):
                core.expect(step.old, None)
        except ChangedSinceScan:
            log.info("%s changed again while its edit moved to %s; kept", step.old, step.new)
        record_synced(core, [
            Synced(step.old, step.gone.change, None, None, step.gone.row_id),
            Synced(step.new, ch, state, remote_data, step.came.row_id),
        ])  # fmt: skip
        log.info("%s was renamed to %s on %s and edited here: the edit follows the rename",
                 step.old, step.new, ch.author_name)  # fmt: skip
        report.renamed_local.append((step.old, step.new))
        self._report(step.new, res, ch.author_name, report)
        out.touched.update((step.old, step.new))

    def _follow_local(
        self, step: FollowLocalRename, remote_data: bytes | None, report: RoundReport,
        out: Outcome,
    ) -> None:  # fmt: skip
        """Renamed here, edited there: the remote edit is reconciled into the new path; the
        old path is recorded at the remote revision, so the rename goes out on top of it."""
        core = self.core
        local = self._local_version(step.new, step.local_new)
        if local is None:
            report.deferred += 1
            return
        ch = step.item.change
        res = self._resolve(step.new, local[0], remote_data, ch.author_name, ch.author_kind,
                            core.index.bases.get(step.old))  # fmt: skip
        self._settle(step.new, res, local, remote_data, None, report, out)
        record_synced(core, [Synced(step.old, ch, None, remote_data, step.item.row_id)])
        log.info("%s was edited on %s and renamed here to %s: the edit follows the rename",
                 step.old, ch.author_name, step.new)  # fmt: skip
        self._report(step.new, res, ch.author_name, report)
        if res.outcome.value == "take_remote":
            report.downloaded.append(step.new)
        out.touched.update((step.old, step.new))

    def _stale_save(self, step: StaleSave, report: RoundReport, out: Outcome) -> None:
        """A save that landed right after a remote change replaced the file: if it was made
        from the replaced version, reconcile it three-way against that version."""
        core = self.core
        lc, rec = step.local, step.applied
        path = lc.path
        entry = core.index.files.get(path)
        head = core.index.bases.get(path)
        local = self._local_version(path, lc)
        if entry is None or entry.deleted or local is None or local[0] is None:
            out.back[path] = lc
            return
        data = local[0]
        if head is None or is_new_edit(rec.prev_data, head, data):
            out.back[path] = lc  # an edit of the new version: pushed as it is
            return
        author = entry.device or "another device"
        kind = entry.device_kind if entry.device_kind == "human" else "agent"
        res = self._resolve(path, data, head, author, kind, rec.prev_data)
        log.info("%s was saved right after a change from %s arrived, from the version before "
                 "it: %s", path, author, res.outcome.value)  # fmt: skip
        out.touched.add(path)
        out.work = True
        try:
            state = self._settle(path, res, local, head, None, report, out)
        except ChangedSinceScan as exc:
            self._changed(path, exc, report)
            return
        if state is not None:  # back to exactly the remote version
            core.index.files.put(replace(entry, mtime_ns=state.mtime_ns, size=state.size,
                                   inode=state.inode, ctime_ns=state.ctime_ns))  # fmt: skip
        elif res.note == data:  # the save stands as it was (a merge that added nothing):
            core.index.applied.drop([path])  # an ordinary edit from now on, pushed now
            out.back[path] = lc
        self._report(path, res, author, report)

    # ------------------------------------------------------------------ contents

    def _prefetched(
        self, groups: list[list[RemoteChange]]
    ) -> Iterator[tuple[list[RemoteChange], dict[str, Content], dict[str, bytes]]]:
        """Each group with its verified contents (and the zlib streams of its blobs, by id); the
        next group downloads while the caller writes this one."""
        if not groups:
            return
        with ThreadPoolExecutor(1, thread_name_prefix="sync-prefetch") as ahead:
            future = ahead.submit(self._fetch_group, groups[0])
            for i, group in enumerate(groups):
                contents, streams = future.result()
                if i + 1 < len(groups) and not self.core.stop_event.is_set():
                    future = ahead.submit(self._fetch_group, groups[i + 1])
                yield group, contents, streams

    @staticmethod
    def _content_groups(changes: list[RemoteChange]) -> list[list[RemoteChange]]:
        groups: list[list[RemoteChange]] = []
        cur: list[RemoteChange] = []
        size = 0
        for ch in changes:
            limit = GROUP_FILES if groups else FIRST_GROUP_FILES  # start writing early
            if cur and (size + ch.meta.size > MEMORY_GROUP_BYTES or len(cur) >= limit):
                groups.append(cur)
                cur, size = [], 0
            cur.append(ch)
            size += ch.meta.size
        if cur:
            groups.append(cur)
        return groups

    def _fetch_group(
        self, group: list[RemoteChange]
    ) -> tuple[dict[str, Content], dict[str, bytes]]:
        """Verified contents by SHA-256: bytes for small files, a verified partial file for
        large ones (resumable: chunks already downloaded are kept across crashes).

        A blob that fails verification costs its own file only: the batch is fetched again file
        by file and each file that still fails maps to its `TamperDetected` error.
        """
        remote = self.core.remote
        out: dict[str, Content] = {}
        read = self.core.read_notes  # read for the hold rules at admission: already verified
        for ch in group:
            data = read.pop(ch.meta.sha256, None)
            if data is not None and not ch.meta.deleted:
                out[ch.meta.sha256] = data
        small = [ch.meta for ch in group if len(ch.meta.chunks) <= 1 and ch.meta.sha256 not in out]
        streams: dict[str, bytes] = {}
        try:
            out.update(remote.fetch(small, streams=streams))
        except TamperDetected:
            for meta in small:
                if meta.deleted or meta.sha256 in out:
                    continue
                try:
                    out[meta.sha256] = remote.fetch_one(meta)
                except TamperDetected as exc:
                    out[meta.sha256] = exc
        for ch in group:
            meta = ch.meta
            if len(meta.chunks) > 1 and meta.sha256 not in out:
                try:
                    out[meta.sha256] = self._fetch_large(meta)
                except TamperDetected as exc:
                    out[meta.sha256] = exc
        return out, streams

    def _fetch_large(self, meta: FileMeta) -> Path:
        core = self.core
        specs = [ChunkSpec(c.length, c.blob_id) for c in meta.chunks]
        asm = ChunkAssembler(
            core.partial_dir, meta.sha256, meta.size, specs, digest=core.remote.blob_id
        )
        try:
            for i, chunk in core.remote.iter_chunks(meta, only=asm.missing()):
                asm.add(i, chunk)
            return asm.finish()
        finally:
            asm.close()


def _item_of(step: ApplyStep) -> Incoming:
    if isinstance(step, FollowRemoteRename):
        return step.came
    if isinstance(step, Download | Reconcile | CaseCollision | FollowLocalRename):
        return step.item
    raise TypeError(f"no remote change in {step!r}")


def _bytes(content: bytes | Path | None) -> bytes | None:
    """A large download, now in memory (a conflict holds both versions while it is resolved)."""
    if content is None or isinstance(content, bytes):
        return content
    data = content.read_bytes()
    content.unlink(missing_ok=True)
    return data


def _prune_empty_dirs(root: Path, rel: str) -> None:
    """Remove folders a remote rename emptied, up to (not including) the vault root."""
    folder = (root / rel).parent
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
