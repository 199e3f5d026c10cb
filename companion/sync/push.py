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
from dataclasses import dataclass, field

from companion.crypto import ChunkRef, FileMeta
from companion.sync.atomic import ChangedSinceScan
from companion.sync.chunking import iter_chunks
from companion.sync.core import Core
from companion.sync.filestate import FileState, NotRegularFile
from companion.sync.index import BASE_TEXT_LIMIT, Entry
from companion.sync.model import Prepared, RoundReport
from companion.sync.pathsafe import UnsafePath, resolve_inside
from companion.sync.plan import PushPlan, Tombstone, Upload
from companion.sync.remote import Outgoing, Refused, RemoteChange


@dataclass
class Pushed:
    """What a push did: `work` (something was committed or came back), the paths to look at
    again, the heads that beat our commits and those that cannot be opened."""

    work: bool = False
    touched: set[str] = field(default_factory=set)
    heads: dict[str, RemoteChange] = field(default_factory=dict)
    refused: dict[str, Refused] = field(default_factory=dict)


class Pusher:
    """Local -> remote, over the shared `Core`."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def run(self, plan: PushPlan, report: RoundReport) -> Pushed:
        core = self.core
        out = Pushed()
        prepared: dict[str, Prepared] = {}
        small: dict[str, bytes] = {}
        for up in plan.uploads:
            if core.stop_event.is_set():
                return out
            p = self._prepare(up, small)
            if p is None:
                out.touched.add(up.local.path)  # changed while read: next pass
                continue
            prepared[up.local.path] = p
        tombstones = {t.path: self._tombstone(t) for t in plan.tombstones}
        renames = {t.path: t.rename_to for t in plan.tombstones if t.rename_to}
        if not prepared and not tombstones:
            return out
        if small:
            core.remote.upload(small)
        groups = _groups(prepared, tombstones)
        result = core.remote.commit(groups, reupload=lambda ids: self._reupload(ids, prepared))
        index = core.index
        with index.transaction():
            for path, (rev, _seq) in result.committed.items():
                fid = core.remote.file_id(path)
                if path in tombstones:
                    index.put(
                        Entry(
                            path, "", 0, 0, 0, rev=rev, file_id=fid, deleted=True,
                            device=core.name, device_kind=core.kind,
                        )
                    )  # fmt: skip
                    index.set_base(path, None)
                    if path not in renames:
                        report.deleted_remote.append(path)
                    continue
                p = prepared[path]
                s = p.state
                index.put(
                    Entry(
                        path, s.sha256, s.size, s.mtime_ns, s.inode, rev=rev, file_id=fid,
                        is_text=p.is_text, device=core.name, device_kind=core.kind,
                        ctime_ns=s.ctime_ns,
                    )
                )  # fmt: skip
                text = p.content is not None and p.is_text and len(p.content) <= BASE_TEXT_LIMIT
                index.set_base(path, p.content if text else None)
                report.uploaded.append(path)
        pending = len(plan.uploads) + len(plan.tombstones) + len(plan.held_deletes)
        report.pending_upload = pending - len(result.committed)
        for path, head in result.conflicts.items():
            out.touched.add(path)
            if head is not None:
                out.heads[path] = head
        out.touched |= result.deferred
        out.refused = dict(result.refused_heads)
        out.work = bool(result.committed or result.conflicts or result.refused_heads)
        return out

    def _tombstone(self, t: Tombstone) -> Outgoing:
        core = self.core
        meta = FileMeta(
            path=t.path, size=0, sha256=t.sha256, deleted=True, device_id=core.device.device_id,
            device_name=core.name, device_kind=core.kind,
        )  # fmt: skip
        return Outgoing(meta, t.parent_rev)

    def _prepare(self, up: Upload, small: dict[str, bytes]) -> Prepared | None:
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
            got = core.read_local(c.path, c.state)
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
