"""Applying remote changes to the vault: the inbox, renames, bulk writes, conflicts.

`ApplyMixin` is one half of `SyncEngine` (it uses the engine's index, remote, root and report
plumbing). A file changed only remotely is written, deleted or renamed atomically, refusing to
overwrite anything that changed since the scan (`ChangedSinceScan` defers it to the next pass);
many such files are written together (`bulkwrite`). A file changed on both sides goes through
`conflicts.resolve`. After applying, the index records the remote head as the last synced
revision; when the note must differ from that head (a merge, a local win) the index keeps the
head's hash with an empty stat, so the next scan sees a local change and pushes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from companion.crypto import FileMeta, TamperDetected
from companion.logs import get_logger
from companion.sync.atomic import (
    ChangedSinceScan,
    atomic_delete,
    atomic_rename,
    atomic_write,
    fsync_dir,
)
from companion.sync.bulkwrite import WriteJob, write_many
from companion.sync.chunking import ChunkAssembler, ChunkSpec
from companion.sync.conflicts import Version, case_collision_name, resolve
from companion.sync.filestate import FileState, is_text
from companion.sync.index import Entry
from companion.sync.model import ConflictInfo, Local, RoundReport, entry_state
from companion.sync.pathsafe import UnsafePath, fold, normalize, resolve_inside
from companion.sync.remote import Refused, RemoteChange
from companion.sync.scanner import ChangeKind

log = get_logger("sync.engine")

MEMORY_GROUP_BYTES = 32 * 1024 * 1024  # remote contents held in memory at once while applying
GROUP_FILES = 1500  # files per apply group (the next group downloads while one is written)
FIRST_GROUP_FILES = 250  # a small first group, so writing starts early
WRITE_THREADS = 16  # parallel local writes: fsync waits on the disk, not the CPU
BULK_WRITE_MIN = 32  # from this many files on, one file-system flush beats one fsync each


class ApplyMixin:
    """Remote -> local. Mixed into `SyncEngine`."""

    def _apply_inbox(
        self,
        inbox: dict[str, tuple[int, RemoteChange]],
        local: dict[str, Local],
        unstable: set[str],
        report: RoundReport,
        touched: set[str],
    ) -> bool:
        if not inbox:
            return False
        work = False
        todo = dict(inbox)
        # stale items (already synced through another path, e.g. our own commit) go first
        known = self.index.get_many(todo)
        stale = [p for p, (_op, ch) in todo.items() if p in known and ch.rev <= known[p].rev]
        self.index.complete_many(todo.pop(p)[0] for p in stale)
        work |= self._apply_renames(todo, local, unstable, report, touched)
        deletions = sorted(p for p, (_, ch) in todo.items() if ch.deleted)
        writes = sorted(p for p, (_, ch) in todo.items() if not ch.deleted)
        for path in deletions:
            if self.stop_event.is_set():
                return work
            op_id, ch = todo[path]
            work |= self._process(op_id, ch, None, local, unstable, report, touched, path)
        ready = [p for p in writes if p not in unstable]
        for path in writes:
            if path in unstable:  # being written here: wait for it to settle
                work |= self._process(*todo[path], None, local, unstable, report, touched, path)
        for group, contents in self._prefetched(self._content_groups([todo[p][1] for p in ready])):
            if self.stop_event.is_set():
                return work
            plain: list[tuple[int, str, RemoteChange, bytes]] = []
            for ch in group:
                path = normalize(ch.meta.path)
                op_id = todo[path][0]
                content = contents.get(ch.meta.sha256)
                if isinstance(content, TamperDetected):  # this file only: quarantined
                    refused = Refused(
                        ch.file_id, ch.rev, ch.seq, str(content), ch.device_id, ch.author_name
                    )
                    self._quarantine_heads({path: refused}, report)
                    self.index.complete(op_id)
                    work = True
                    continue
                if path not in local and isinstance(content, bytes) and not self.case_insensitive:
                    plain.append((op_id, path, ch, content))
                    continue
                work |= self._process(op_id, ch, content, local, unstable, report, touched, path)
            work |= self._apply_plain_many(plain, report, touched)
        return work

    def _apply_plain_many(
        self,
        items: list[tuple[int, str, RemoteChange, bytes]],
        report: RoundReport,
        touched: set[str],
    ) -> bool:
        """Many files changed only remotely, written in parallel; each folder is fsynced once,
        and only then does the index (one transaction) say the files are there."""
        if not items:
            return False
        known = self.index.get_many(path for _op, path, _ch, _content in items)
        jobs = [
            WriteJob(path, content, entry_state(known.get(path)), ch.meta.mtime_ns,
                     ch.meta.executable)
            for _op, path, ch, content in items
        ]  # fmt: skip
        if len(jobs) >= BULK_WRITE_MIN:
            results: list[Any] = write_many(self.root, jobs, self._pool())
        else:
            results = list(self._pool().map(self._write_one, jobs))
            folders = {(self.root / j.rel).parent for j, r in zip(jobs, results, strict=True)
                       if isinstance(r, FileState)}  # fmt: skip
            list(self._pool().map(fsync_dir, folders | {self.root}))
        done = [
            (path, ch, res, content, op_id)
            for (op_id, path, ch, content), res in zip(items, results, strict=True)
            if isinstance(res, FileState)
        ]
        with self.index.transaction():
            self._record_many(done)
            for (op_id, path, _ch, _content), res in zip(items, results, strict=True):
                touched.add(path)
                if isinstance(res, FileState):
                    report.downloaded.append(path)
                elif isinstance(res, ChangedSinceScan):
                    log.info("deferred remote change of %r: %s", path, res)
                    report.deferred += 1
                elif isinstance(res, UnsafePath):
                    report.skipped.append(str(res))
                    log.info("not applying a remote change: %s", res)
                    self.index.complete(op_id)
                else:
                    raise res
        for (_op, path, _ch, _c), res in zip(items, results, strict=True):
            if isinstance(res, FileState):
                self._expect(path, res)
        return True

    def _write_one(self, job: WriteJob) -> FileState | Exception:
        try:
            return atomic_write(
                self.root, job.rel, job.data, job.expected, mtime_ns=job.mtime_ns,
                executable=job.executable, sync_dir=False,
            )  # fmt: skip
        except (ChangedSinceScan, UnsafePath, OSError) as exc:
            return exc

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="sync-write")
        return self._executor

    def _prefetched(
        self, groups: list[list[RemoteChange]]
    ) -> Iterator[tuple[list[RemoteChange], dict[str, bytes | Path | TamperDetected]]]:
        """Each group with its verified contents; the next group downloads while the caller
        writes this one (a tampered group raises before anything of it is written)."""
        if not groups:
            return
        with ThreadPoolExecutor(1, thread_name_prefix="sync-prefetch") as ahead:
            future = ahead.submit(self._fetch_group, groups[0])
            for i, group in enumerate(groups):
                contents = future.result()
                if i + 1 < len(groups) and not self.stop_event.is_set():
                    future = ahead.submit(self._fetch_group, groups[i + 1])
                yield group, contents

    def _content_groups(self, changes: list[RemoteChange]) -> list[list[RemoteChange]]:
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
    ) -> dict[str, bytes | Path | TamperDetected]:
        """Verified contents by SHA-256: bytes for small files, a verified partial file for
        large ones (resumable: chunks already downloaded are kept across crashes).

        A blob that fails verification costs its own file only: the batch is fetched again file
        by file and each file that still fails maps to its `TamperDetected` error.
        """
        small = [ch.meta for ch in group if len(ch.meta.chunks) <= 1]
        out: dict[str, bytes | Path | TamperDetected] = {}
        try:
            out.update(self.remote.fetch(small))
        except TamperDetected:
            for meta in small:
                if meta.deleted or meta.sha256 in out:
                    continue
                try:
                    out[meta.sha256] = self.remote.fetch_one(meta)
                except TamperDetected as exc:
                    out[meta.sha256] = exc
        for ch in group:
            meta = ch.meta
            if len(meta.chunks) > 1 and meta.sha256 not in out:
                try:
                    out[meta.sha256] = self._fetch_large(meta)
                except TamperDetected as exc:
                    out[meta.sha256] = exc
        return out

    def _fetch_large(self, meta: FileMeta) -> Path:
        specs = [ChunkSpec(c.length, c.blob_id) for c in meta.chunks]
        asm = ChunkAssembler(
            self.partial_dir, meta.sha256, meta.size, specs, digest=self.remote.blob_id
        )
        try:
            for i, chunk in self.remote.iter_chunks(meta, only=asm.missing()):
                asm.add(i, chunk)
            return asm.finish()
        finally:
            asm.close()

    def _content_bytes(self, content: bytes | Path | None) -> bytes | None:
        if content is None or isinstance(content, bytes):
            return content
        return content.read_bytes()

    def _write(
        self,
        rel: str,
        content: bytes | Path,
        expected: FileState | None,
        meta: FileMeta | None = None,
    ) -> FileState:
        mtime = meta.mtime_ns if meta is not None else None
        executable = meta.executable if meta is not None else None
        if isinstance(content, Path):
            with open(content, "rb") as stream:
                state = atomic_write(
                    self.root, rel, stream, expected, mtime_ns=mtime, executable=executable
                )
            content.unlink(missing_ok=True)
        else:
            state = atomic_write(
                self.root, rel, content, expected, mtime_ns=mtime, executable=executable
            )
        self._expect(rel, state)
        return state

    def _prune_empty_dirs(self, rel: str) -> None:
        """Remove folders a remote rename emptied, up to (not including) the vault root."""
        folder = (self.root / rel).parent
        while folder != self.root and self.root in folder.parents:
            try:
                folder.rmdir()
            except OSError:
                return
            folder = folder.parent

    def _taken(self, rel: str) -> bool:
        try:
            target = resolve_inside(self.root, rel)
        except UnsafePath:
            return True
        if os.path.lexists(target):
            return True
        entry = self.index.get(rel)
        if entry is not None and not entry.deleted:
            return True
        return self.case_insensitive and bool(self.index.paths_with_fold(fold(rel)))

    def _record_remote(
        self,
        path: str,
        ch: RemoteChange,
        state: FileState | None,
        content: bytes | None,
        op_id: int | None,
    ) -> None:
        """The index now holds `ch` as the last synced revision of `path`.

        `state` is the local file when it equals the remote content; None when the local file
        differs from it (the next scan then reports a change to push on top of `ch`).
        """
        self._record_many([(path, ch, state, content, op_id)])

    def _record_many(
        self,
        items: list[tuple[str, RemoteChange, FileState | None, bytes | None, int | None]],
    ) -> None:
        """`_record_remote` for many files in one transaction."""
        entries = []
        bases: list[tuple[str, bytes | None]] = []
        for path, ch, state, content, _op in items:
            meta = ch.meta
            if meta.deleted:
                entries.append(
                    Entry(
                        path, "", 0, 0, 0, rev=ch.rev, file_id=ch.file_id, deleted=True,
                        device=ch.author_name, device_kind=ch.author_kind,
                    )
                )  # fmt: skip
                bases.append((path, None))
                continue
            text = content is not None and is_text(content)
            if state is None:
                state = FileState(meta.size, 0, 0, meta.sha256)
            entries.append(
                Entry(
                    path, meta.sha256, meta.size, state.mtime_ns, state.inode, rev=ch.rev,
                    file_id=ch.file_id, is_text=text, device=ch.author_name,
                    device_kind=ch.author_kind,
                )
            )  # fmt: skip
            bases.append((path, content if text else None))
        with self.index.transaction():
            self.index.put_many(entries)
            self.index.set_bases(bases, mapper=self._pool().map)
            self.index.complete_many(op_id for *_rest, op_id in items if op_id is not None)

    def _apply_renames(
        self,
        todo: dict[str, tuple[int, RemoteChange]],
        local: dict[str, Local],
        unstable: set[str],
        report: RoundReport,
        touched: set[str],
    ) -> bool:
        """A remote rename (tombstone of A + B with rename_from A) as a local rename of A."""
        work = False
        for new, (new_op, ch) in sorted(todo.items()):
            old = ch.meta.rename_from
            if ch.deleted or not old:
                continue
            try:
                old = normalize(old)
            except UnsafePath:
                continue
            if old not in todo or not todo[old][1].deleted:
                continue
            if {old, new} & (set(local) | unstable):
                continue
            old_entry, new_entry = self.index.get(old), self.index.get(new)
            expected = entry_state(old_entry)
            if expected is None or expected.sha256 != ch.meta.sha256:
                continue
            if new_entry is not None and not new_entry.deleted:
                continue
            if self.case_insensitive and any(
                p != old for p in self.index.paths_with_fold(fold(new))
            ):
                continue
            try:
                state = atomic_rename(self.root, old, new, expected)
            except (ChangedSinceScan, UnsafePath, OSError) as exc:
                log.debug("remote rename %s applied as delete + write instead: %s", new, exc)
                continue
            self._expect(old, None)
            self._expect(new, state)
            self._prune_empty_dirs(old)
            old_op, old_ch = todo.pop(old)
            del todo[new]
            assert old_entry is not None
            with self.index.transaction():
                self.index.move_base(old, new)
                self._record_remote(old, old_ch, None, None, old_op)
                meta = ch.meta
                self.index.put(
                    Entry(
                        new, meta.sha256, meta.size, state.mtime_ns, state.inode, rev=ch.rev,
                        file_id=ch.file_id, is_text=old_entry.is_text, device=ch.author_name,
                        device_kind=ch.author_kind,
                    )
                )  # fmt: skip
                self.index.complete(new_op)
            report.renamed_local.append((old, new))
            touched.update((old, new))
            work = True
        return work

    def _process(
        self,
        op_id: int,
        ch: RemoteChange,
        content: bytes | Path | None,
        local: dict[str, Local],
        unstable: set[str],
        report: RoundReport,
        touched: set[str],
        path: str,
    ) -> bool:
        """Apply one remote change; False when it must wait for another pass."""
        if path in unstable:
            report.deferred += 1
            local.pop(path, None)
            return False
        lc = local.pop(path, None)
        touched.add(path)
        try:
            if lc is None:
                self._apply_plain(op_id, path, ch, content, report)
            else:
                return self._apply_conflict(op_id, path, ch, content, lc, report, touched)
        except ChangedSinceScan as exc:
            log.info("deferred remote change of %r: %s", path, exc)
            report.deferred += 1
            return False
        except UnsafePath as exc:
            report.skipped.append(str(exc))
            log.info("not applying a remote change: %s", exc)
            self.index.complete(op_id)
        return True

    def _apply_plain(
        self,
        op_id: int,
        path: str,
        ch: RemoteChange,
        content: bytes | Path | None,
        report: RoundReport,
    ) -> None:
        """Only the remote side changed: bring the local file to the remote head."""
        entry = self.index.get(path)
        expected = entry_state(entry)
        if ch.deleted:
            if expected is not None and atomic_delete(self.root, path, expected):
                self._expect(path, None)
                report.deleted_local.append(path)
            self._record_remote(path, ch, None, None, op_id)
            return
        assert content is not None, "live remote change without content"
        if self.case_insensitive and expected is None:
            others = [p for p in self.index.paths_with_fold(fold(path)) if p != path]
            if others:
                self._case_collision(op_id, path, ch, content, others[0], report)
                return
        data = content if isinstance(content, bytes) else None
        state = self._write(path, content, expected, ch.meta)
        self._record_remote(path, ch, state, data, op_id)
        report.downloaded.append(path)

    def _case_collision(
        self,
        op_id: int,
        path: str,
        ch: RemoteChange,
        content: bytes | Path,
        other: str,
        report: RoundReport,
    ) -> None:
        """`path` differs from an existing file only by case, and this file system cannot hold
        both: the remote file is kept under another name, which then replaces it everywhere."""
        copy = case_collision_name(path, self._taken)
        self._write(copy, content, None, ch.meta)
        # recorded as synced but absent here: the next scan pushes it as a rename to `copy`
        self._record_remote(path, ch, FileState(ch.meta.size, 0, 0, ch.meta.sha256), None, op_id)
        msg = f"{path}: its name differs only by case from {other}; saved as {copy!r}"
        report.conflicts.append(
            ConflictInfo(path, copy, self.name, ch.author_name, "case_collision", msg)
        )
        log.info("%s", msg)

    def _apply_conflict(
        self,
        op_id: int,
        path: str,
        ch: RemoteChange,
        content: bytes | Path | None,
        lc: Local,
        report: RoundReport,
        touched: set[str],
    ) -> bool:
        """Changed here and remotely: `conflicts.resolve` decides, then we write what it says."""
        if lc.kind is ChangeKind.DELETED or lc.state is None:
            local_data: bytes | None = None
            local_state = None
        else:
            got = self._read_local(path, lc.state)
            if got is None:
                report.deferred += 1
                return False
            local_data, local_state = got[0], lc.state
        remote_data = None if ch.deleted else self._content_bytes(content)
        if isinstance(content, Path):
            content.unlink(missing_ok=True)  # a large download, now in memory
        entry = self.index.get(path)
        if entry is None or entry.deleted:
            base: bytes | None = b""  # both sides created the file: the common version is empty
        else:
            base = self.index.get_base(path)
        meta = ch.meta
        res = resolve(
            path,
            Version(local_data, self.name, self.kind),
            Version(remote_data, ch.author_name, ch.author_kind),
            base,
            when=datetime.now(),
            taken=self._taken,
        )
        if res.copy is not None:  # the losing version is safe on disk before the note changes
            self._write(res.copy.path, res.copy.data, None)
            touched.add(res.copy.path)
        state: FileState | None = None
        if res.write_local:
            if res.note is None:
                assert local_state is not None
                if atomic_delete(self.root, path, local_state):
                    self._expect(path, None)
            else:
                state = self._write(
                    path, res.note, local_state, meta if res.note == remote_data else None
                )
        elif res.note is not None and res.note == local_data:
            state = local_state
        in_sync = res.note == remote_data
        self._record_remote(path, ch, state if in_sync else None, remote_data, op_id)
        if res.copy is not None:
            report.conflicts.append(
                ConflictInfo(
                    path=path,
                    copy=res.copy.path,
                    kept=self.name if res.outcome.value == "local_wins" else ch.author_name,
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
        if res.write_local and res.note is not None and in_sync:
            report.downloaded.append(path)
        return True
