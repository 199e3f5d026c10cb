"""Pushing local changes: read, chunk, upload what the relay lacks, commit with CAS.

`PushMixin` is the other half of `SyncEngine`. Contents are read and checked against the scanned
state (a file that changed meanwhile waits for the next pass), small files become one blob each,
large ones are chunked and uploaded chunk by chunk; blob existence checks and uploads are
batched, and records are committed many per request (the two halves of a rename together).
A record that loses the compare-and-swap brings back the head, verified, into the inbox for the
next pass. Deleting more than `sync.mass_delete_ratio` of the vault is held back.
"""

from __future__ import annotations

import hashlib
import os

from companion.crypto import ChunkRef, FileMeta
from companion.sync.atomic import ChangedSinceScan
from companion.sync.chunking import iter_chunks
from companion.sync.filestate import FileState, NotRegularFile
from companion.sync.guard import is_mass_delete
from companion.sync.index import BASE_TEXT_LIMIT, Entry
from companion.sync.model import Local, Prepared, RoundReport
from companion.sync.pathsafe import UnsafePath, resolve_inside
from companion.sync.remote import Outgoing
from companion.sync.scanner import ChangeKind


class PushMixin:
    """Local -> remote. Mixed into `SyncEngine`."""

    def _push(
        self,
        local: dict[str, Local],
        allow_mass_delete: bool,
        report: RoundReport,
        touched: set[str],
    ) -> bool:
        report.held_deletes = 0
        report.pending_upload = len(local)
        if not local:
            return False
        deletes = [
            c.path for c in local.values() if c.kind is ChangeKind.DELETED and not c.rename_to
        ]
        held: set[str] = set()
        live = self.index.count_live()
        if (
            deletes
            and not allow_mass_delete
            and is_mass_delete(len(deletes), live, self.mass_delete_ratio)
        ):
            held = set(deletes)
        report.held_deletes = len(held)
        report.held_of = live
        prepared: dict[str, Prepared] = {}
        tombstones: dict[str, Outgoing] = {}
        small: dict[str, bytes] = {}
        for c in sorted(local.values(), key=lambda c: c.path):
            if self.stop_event.is_set():
                return False
            if c.path in held:
                continue
            entry = self.index.get(c.path)
            if c.kind is ChangeKind.DELETED:
                if entry is None or entry.deleted:
                    continue  # never reached the relay, or already deleted there
                sha = entry.sha256 if len(entry.sha256) == 64 else ""
                meta = FileMeta(
                    path=c.path, size=0, sha256=sha, deleted=True, device_id=self.device.device_id,
                    device_name=self.name, device_kind=self.kind,
                )  # fmt: skip
                tombstones[c.path] = Outgoing(meta, entry.rev)
                continue
            assert c.state is not None
            p = self._prepare(c, entry, small)
            if p is None:
                touched.add(c.path)  # changed while read: next pass
                continue
            prepared[c.path] = p
        if not prepared and not tombstones:
            return False
        if small:
            self.remote.upload(small)
        groups = self._groups(prepared, tombstones)
        result = self.remote.commit(groups, reupload=lambda ids: self._reupload(ids, prepared))
        with self.index.transaction():
            for path, (rev, _seq) in result.committed.items():
                if path in tombstones:
                    self.index.put(
                        Entry(
                            path, "", 0, 0, 0, rev=rev, file_id=self.remote.file_id(path),
                            deleted=True, device=self.name, device_kind=self.kind,
                        )
                    )  # fmt: skip
                    self.index.set_base(path, None)
                    if local[path].rename_to is None:
                        report.deleted_remote.append(path)
                    continue
                p = prepared[path]
                s = p.state
                self.index.put(
                    Entry(
                        path, s.sha256, s.size, s.mtime_ns, s.inode, rev=rev,
                        file_id=self.remote.file_id(path), is_text=p.is_text,
                        device=self.name, device_kind=self.kind,
                    )
                )  # fmt: skip
                text = p.content is not None and p.is_text and len(p.content) <= BASE_TEXT_LIMIT
                self.index.set_base(path, p.content if text else None)
                report.uploaded.append(path)
            report.pending_upload = len(local) - len(result.committed)
            for path, head in result.conflicts.items():
                touched.add(path)
                if head is not None:
                    self._admit_head(path, head, report)
        if result.refused_heads:
            self._quarantine_heads(result.refused_heads, report)
        return bool(result.committed or result.conflicts or result.refused_heads)

    def _prepare(self, c: Local, entry: Entry | None, small: dict[str, bytes]) -> Prepared | None:
        """Read a live file for upload (verifying it is still what the scan saw)."""
        assert c.state is not None
        parent = entry.rev if entry is not None else 0
        if c.state.size > self.chunk_size:
            chunks = self._upload_large(c.path, c.state)
            if chunks is None:
                return None
            content = None
            executable = self._executable(c.path)
        else:
            got = self._read_local(c.path, c.state)
            if got is None:
                return None
            content, executable = got
            if content:
                bid = self.remote.blob_id(content)
                small[bid] = content
                chunks = (ChunkRef(bid, len(content)),)
            else:
                chunks = ()
        state = c.state
        if not state.sha256:
            state = FileState(state.size, state.mtime_ns, state.inode, _sha(content))
        meta = FileMeta(
            path=c.path,
            size=state.size,
            sha256=state.sha256,
            chunks=chunks,
            mtime_ns=state.mtime_ns,
            executable=executable,
            device_id=self.device.device_id,
            device_name=self.name,
            device_kind=self.kind,
            rename_from=c.rename_from,
        )
        return Prepared(Outgoing(meta, parent), state, c.is_text, content)

    def _executable(self, rel: str) -> bool:
        try:
            return bool(os.lstat(resolve_inside(self.root, rel)).st_mode & 0o100)
        except (OSError, UnsafePath):
            return False

    def _upload_large(self, rel: str, state: FileState) -> tuple[ChunkRef, ...] | None:
        """Chunk, upload (what the relay lacks) and describe a large file, streaming."""
        refs: list[ChunkRef] = []
        try:
            target = resolve_inside(self.root, rel)
            for chunk in iter_chunks(target, chunk_size=self.chunk_size, expected=state):
                bid = self.remote.blob_id(chunk.data)
                self.remote.upload_one(bid, chunk.data)
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
        self.remote.upload(chunks)

    @staticmethod
    def _groups(
        prepared: dict[str, Prepared], tombstones: dict[str, Outgoing]
    ) -> list[list[Outgoing]]:
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


def _sha(data: bytes | None) -> str:
    return hashlib.sha256(data or b"").hexdigest()
