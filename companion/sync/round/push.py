"""Carrying out the push plan (`plan.plan_push`): read, chunk, upload, commit with CAS, record.

Contents are read and checked against the scanned state (a file that changed meanwhile waits
for the next pass), small files become one blob each, large ones are chunked and uploaded chunk
by chunk; blob existence checks and uploads are batched, and records are committed many per
request, the two halves of a rename together: if one half loses its compare-and-swap, neither
is committed. A record that loses brings back the head, verified, for the next pass (into the
inbox, or held, or quarantined).
"""

from __future__ import annotations

import hashlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from companion.crypto import ChunkRef, FileMeta
from companion.sync.local.atomic import ChangedSinceScan
from companion.sync.local.chunking import iter_chunks
from companion.sync.local.filestate import FileState, NotRegularFile
from companion.sync.local.folder import VaultMissing
from companion.sync.local.pathsafe import UnsafePath, resolve_inside
from companion.sync.remote.vault import Outgoing, PushResult
from companion.sync.round.core import Core
from companion.sync.round.model import Prepared, Pushed
from companion.sync.round.plan import PushPlan, Tombstone, Upload
from companion.sync.round.record import Committed, record_committed
from companion.sync.round.report import RoundReport
from companion.sync.state.bases import base_streams, pack_bases


class Pusher:
    """Local -> remote, over the shared `Core`."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def run(self, plan: PushPlan, report: RoundReport) -> Pushed:
        """Push in batches, as a pipeline: while earlier batches' blobs and records travel to
        the relay (`SENDERS` threads), the next batch is read and sealed here."""
        core = self.core
        out = Pushed()
        committed = 0
        with ThreadPoolExecutor(SENDERS, thread_name_prefix="sync-send") as sender:
            sending: deque[tuple[_Batch, Future[PushResult]]] = deque()
            for ups, tombs in _batches(plan):
                if core.stop_event.is_set():
                    break
                try:  # no deletion derived from a folder that is not the vault's
                    core.check_folder()
                except VaultMissing:
                    while sending:  # what went out is recorded, the rest waits
                        committed += self._record(*sending.popleft(), report, out)
                    raise
                batch = self._prepare_batch(ups, tombs, out)
                while len(sending) >= SENDERS:
                    committed += self._record(*sending.popleft(), report, out)
                if not batch.empty:
                    sending.append((batch, sender.submit(self._send, batch)))
            while sending:
                committed += self._record(*sending.popleft(), report, out)
        pending = len(plan.uploads) + len(plan.tombstones) + len(plan.held_deletes)
        report.pending_upload = pending - committed
        return out

    def _prepare_batch(self, ups: list[Upload], tombs: list[Tombstone], out: Pushed) -> _Batch:
        batch = _Batch()
        folders: dict[str, Path] = {}
        for up in ups:
            p = self._prepare(up, batch.small, folders)
            if p is None:
                out.touched.add(up.local.path)  # changed while read: next pass
                continue
            batch.prepared[up.local.path] = p
        batch.tombstones = {t.path: self._tombstone(t) for t in tombs}
        batch.renames = {t.path for t in tombs if t.rename_to}
        return batch

    def _send(self, batch: _Batch) -> PushResult:
        remote = self.core.remote
        streams: dict[str, bytes] = {}  # blob id -> its zlib stream, made while sealing it
        if batch.small:
            remote.upload(batch.small, streams=streams)
        groups = _groups(batch.prepared, batch.tombstones)
        result = remote.commit(groups, reupload=lambda ids: self._reupload(ids, batch.prepared))
        committed = [path for path in result.committed if path in batch.prepared]
        batch.packed = pack_bases(((path, batch.base(path)) for path in committed),
                                  base_streams(((path, batch.prepared[path].out.meta.chunks)
                                                for path in committed), streams))  # fmt: skip
        return result

    def _record(
        self, batch: _Batch, sent: Future[PushResult], report: RoundReport, out: Pushed
    ) -> int:
        """Record a batch's commits in the index (one transaction); returns how many."""
        core = self.core
        result = sent.result()
        done: list[Committed] = []
        for path, (rev, seq) in result.committed.items():
            if seq is not None:
                out.seqs.append(seq)
            fid = core.remote.file_id(path)
            if path in batch.tombstones:
                done.append(Committed(path, rev, fid, None))
                if path not in batch.renames:
                    report.deleted_remote.append(path)
                continue
            p = batch.prepared[path]
            done.append(Committed(path, rev, fid, p.state, p.is_text, batch.base(path)))
            report.uploaded.append(path)
        record_committed(core, done, packed=batch.packed)
        for path, head in result.conflicts.items():
            out.touched.add(path)
            if head is not None:
                out.heads[path] = head
        out.touched |= result.deferred
        out.marks.update(result.marks)
        out.refused.update(result.refused_heads)
        out.work |= bool(result.committed or result.conflicts or result.refused_heads)
        return len(result.committed)

    def _tombstone(self, t: Tombstone) -> Outgoing:
        core = self.core
        meta = FileMeta(
            path=t.path, size=0, sha256=t.sha256, deleted=True, device_id=core.device.device_id,
            device_name=core.name, device_kind=core.kind,
        )  # fmt: skip
        return Outgoing(meta, t.parent_rev)

    def _prepare(
        self, up: Upload, small: dict[str, bytes], folders: dict[str, Path] | None = None
    ) -> Prepared | None:
        """Read a live file for upload (verifying it is still what the scan saw)."""
        core = self.core
        c = up.local
        assert c.state is not None
        content: bytes | None
        if c.state.size > core.chunk_size:
            chunks = self._upload_large(c.path, c.state)
            if chunks is None:
                return None
            content = None
            executable = core.executable(c.path)
        else:
            got = core.read_local(c.path, c.state, folders)
            if got is None:
                return None
            content, executable = got
            if content:
                bid = core.remote.blob_id(content)
                small[bid] = content
                chunks = (ChunkRef(bid, len(content)),)
            else:
                chunks = ()
        state = c.state
        if not state.sha256:
            digest = hashlib.sha256(content or b"").hexdigest()
            state = FileState(state.size, state.mtime_ns, state.inode, digest, state.ctime_ns)
        meta = FileMeta(
            path=c.path,
            size=state.size,
            sha256=state.sha256,
            chunks=chunks,
            mtime_ns=state.mtime_ns,
            executable=executable,
            device_id=core.device.device_id,
            device_name=core.name,
            device_kind=core.kind,
            rename_from=c.rename_from,
        )
        return Prepared(Outgoing(meta, up.parent_rev), state, c.is_text, content)

    def _upload_large(self, rel: str, state: FileState) -> tuple[ChunkRef, ...] | None:
        """Chunk, upload (what the relay lacks) and describe a large file, streaming."""
        core = self.core
        refs: list[ChunkRef] = []
        try:
            target = resolve_inside(core.root, rel)
            for chunk in iter_chunks(target, chunk_size=core.chunk_size, expected=state):
                bid = core.remote.blob_id(chunk.data)
                core.remote.upload_one(bid, chunk.data)
                refs.append(ChunkRef(bid, len(chunk.data)))
        except (ChangedSinceScan, OSError, NotRegularFile, UnsafePath):
            return None
        return tuple(refs)

    def _reupload(self, ids: list[str], prepared: dict[str, Prepared]) -> None:
        want = set(ids)
        chunks = {}
        for p in prepared.values():
            if p.content is not None and p.out.meta.chunks:
                bid = p.out.meta.chunks[0].blob_id
                if bid in want:
                    chunks[bid] = p.content
        self.core.remote.upload(chunks)


SENDERS = 2  # batches in flight: the relay works on one while the other waits on its disk
BATCH_RECORDS = 1000  # records per pipelined batch (the relay's commit limit, by default)
BATCH_BYTES = 16 << 20  # and contents read ahead per batch


@dataclass
class _Batch:
    prepared: dict[str, Prepared] = field(default_factory=dict)
    small: dict[str, bytes] = field(default_factory=dict)  # blob id -> content
    tombstones: dict[str, Outgoing] = field(default_factory=dict)
    renames: set[str] = field(default_factory=set)  # tombstones that end a rename

    packed: dict[str, bytes] = field(default_factory=dict)  # merge bases, compressed by _send

    @property
    def empty(self) -> bool:
        return not self.prepared and not self.tombstones

    def base(self, path: str) -> bytes | None:
        """The merge base an upload leaves once committed: its content, when it is text."""
        p = self.prepared[path]
        return p.content if p.content is not None and p.is_text else None


def _batches(plan: PushPlan) -> list[tuple[list[Upload], list[Tombstone]]]:
    """The plan in batches, the two halves of a rename always in the same one."""
    tombs = {t.path: t for t in plan.tombstones}
    units: list[tuple[list[Upload], list[Tombstone], int]] = []
    for up in plan.uploads:
        pair = tombs.pop(up.local.rename_from, None) if up.local.rename_from else None
        size = up.local.state.size if up.local.state is not None else 0
        units.append(([up], [pair] if pair is not None else [], size))
    units.extend(([], [t], 0) for t in tombs.values())
    out: list[tuple[list[Upload], list[Tombstone]]] = []
    cur_u: list[Upload] = []
    cur_t: list[Tombstone] = []
    count = size = 0
    for ups, ts, n in units:
        if count and (count + len(ups) + len(ts) > BATCH_RECORDS or size + n > BATCH_BYTES):
            out.append((cur_u, cur_t))
            cur_u, cur_t, count, size = [], [], 0, 0
        cur_u += ups
        cur_t += ts
        count += len(ups) + len(ts)
        size += n
    if count:
        out.append((cur_u, cur_t))
    return out


def _groups(prepared: dict[str, Prepared], tombstones: dict[str, Outgoing]) -> list[list[Outgoing]]:
    """Commit groups: the two halves of a rename together, everything else alone."""
    groups: list[list[Outgoing]] = []
    used: set[str] = set()
    for p in prepared.values():
        old = p.out.meta.rename_from
        if old and old in tombstones and old not in used:
            groups.append([tombstones[old], p.out])
            used.add(old)
        else:
            groups.append([p.out])
    groups.extend([t] for path, t in tombstones.items() if path not in used)
    return groups
