"""The encrypted view of the relay: plaintext paths and contents in, verified changes out.

`RemoteVault` wraps a `RelayClient` with the vault key. Everything it returns has been checked:
each record is opened under its vault id, file id and revision (so a record moved to another
file, another revision or another vault is refused), names the path its file id belongs to,
and does not take a file back to an older revision than this device has seen
(`check_not_rolled_back`). Every content blob is opened under its own id and the assembled
content must match the record's length and SHA-256. A failed check raises a `TamperDetected`
error with a clear message, before the caller writes anything.

Batching: blob existence checks, uploads and downloads go in batches, records are committed
many per request, and one HTTP client (keep-alive) is reused, so a sync of thousands of notes
takes a handful of round trips.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from companion.crypto import (
    ChunkRef,
    FileMeta,
    RolledBack,
    TamperDetected,
    TamperedRecord,
    VaultKey,
    assemble,
    blob_id,
    check_not_rolled_back,
    file_id,
    open_blob,
    open_record,
    seal_blob,
    seal_record,
)
from companion.logs import get_logger
from companion.relay.client import Record, RelayClient
from companion.relay.errors import ConflictError, MissingBlobsError

log = get_logger("sync.remote")

UPLOAD_BATCH_BYTES = 16 * 1024 * 1024  # sealed bytes per upload request (bounds memory)
DOWNLOAD_BATCH = 250  # blob ids per download batch
DOWNLOAD_THREADS = 4  # batches in flight at once (the relay reads blobs in parallel)


@dataclass(frozen=True)
class RemoteChange:
    """One verified revision of one file on the relay."""

    path: str
    file_id: str
    rev: int
    parent_rev: int
    meta: FileMeta
    sealed: bytes
    seq: int | None = None
    device_id: str | None = None
    committed_at: float | None = None

    @property
    def deleted(self) -> bool:
        return self.meta.deleted

    def to_payload(self) -> dict[str, object]:
        """JSON-able form for the engine's persistent inbox (still sealed: re-verified on use)."""
        return {
            "file_id": self.file_id,
            "rev": self.rev,
            "parent_rev": self.parent_rev,
            "sealed": base64.b64encode(self.sealed).decode("ascii"),
            "seq": self.seq,
            "device_id": self.device_id,
            "committed_at": self.committed_at,
        }


@dataclass(frozen=True)
class Outgoing:
    """A record to commit: `meta` (chunks already uploaded) on top of `parent_rev`."""

    meta: FileMeta
    parent_rev: int

    @property
    def rev(self) -> int:
        return self.parent_rev + 1


@dataclass
class PushResult:
    """Per path: committed ``(rev, seq)``, or the verified head that beat us (None: no head)."""

    committed: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    conflicts: dict[str, RemoteChange | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Pulled:
    changes: list[RemoteChange]  # every verified record, in relay order
    seq: int  # pass as `since` next time
    vault_seq: int


class RemoteVault:
    """A vault on a relay, seen through its key. Thread-safe as far as `RelayClient` is."""

    def __init__(self, client: RelayClient, key: VaultKey, vault_id: str) -> None:
        self.client = client
        self.key = key
        self.vault_id = vault_id

    # ------------------------------------------------------------------ ids and records

    def file_id(self, path: str) -> str:
        return file_id(self.key, path)

    def blob_id(self, chunk: bytes) -> str:
        return blob_id(self.key, chunk)

    def open(self, rec: Record) -> RemoteChange:
        """Verify one record from the relay (`TamperedRecord` when it is not what it claims)."""
        if rec.rev != rec.parent_rev + 1:
            raise TamperedRecord(
                f"record rev {rec.rev} of file {rec.file_id[:12]} claims parent {rec.parent_rev}"
            )
        meta = open_record(self.key, self.vault_id, rec.file_id, rec.rev, rec.sealed)
        return RemoteChange(
            path=meta.path,
            file_id=rec.file_id,
            rev=rec.rev,
            parent_rev=rec.parent_rev,
            meta=meta,
            sealed=rec.sealed,
            seq=rec.seq,
            device_id=rec.device_id,
            committed_at=rec.committed_at,
        )

    def open_payload(self, payload: Mapping[str, object]) -> RemoteChange:
        """Re-verify an inbox entry written by `RemoteChange.to_payload`."""
        try:
            rec = Record(
                file_id=str(payload["file_id"]),
                rev=int(payload["rev"]),  # type: ignore[call-overload]
                parent_rev=int(payload["parent_rev"]),  # type: ignore[call-overload]
                sealed=base64.b64decode(str(payload["sealed"])),
                seq=payload.get("seq"),  # type: ignore[arg-type]
                device_id=payload.get("device_id"),  # type: ignore[arg-type]
                committed_at=payload.get("committed_at"),  # type: ignore[arg-type]
            )
        except (KeyError, ValueError, TypeError):
            raise TamperedRecord("a queued remote change is malformed") from None
        return self.open(rec)

    # ------------------------------------------------------------------ pulling

    def pull(
        self,
        since: int,
        seen_revs: Callable[[list[str]], Mapping[str, int]],
        *,
        wait: float = 0,
    ) -> Pulled:
        """Every record committed after `since`, verified, with the rollback checks.

        `seen_revs(paths)` maps each path to the highest revision of that file this device
        already holds (paths it holds nothing of may be left out). A legitimate relay lists a
        file's revisions in increasing order, and the newest one it lists is never older than
        what this device has seen; anything else is a replay.
        """
        page = self.client.changes_page(since, wait)
        records = list(page.records)
        while page.more:
            page = self.client.changes_page(page.seq, 0)
            records.extend(page.records)
        changes = [self.open(r) for r in records]
        newest: dict[str, RemoteChange] = {}
        for ch in changes:
            prev = newest.get(ch.file_id)
            if prev is not None and ch.rev <= prev.rev:
                raise RolledBack(
                    f"the relay listed revision {ch.rev} of file {ch.file_id[:12]} after "
                    f"revision {prev.rev}: refusing a replayed older revision"
                )
            newest[ch.file_id] = ch
        seen = seen_revs([ch.path for ch in newest.values()])
        for ch in newest.values():
            check_not_rolled_back(seen.get(ch.path), ch.rev, file_id=ch.file_id)
        return Pulled(changes, page.seq, page.vault_seq)

    def wait_for_changes(self, since: int, wait: float) -> bool:
        """Long-poll: True as soon as something was committed after `since` (no decryption)."""
        page = self.client.changes_page(since, wait, limit=1)
        return bool(page.records)

    def _open_for(self, fid: str, rec: Record) -> RemoteChange:
        if rec.file_id != fid:
            raise TamperedRecord(
                f"asked the relay for file {fid[:12]}, it sent a record of file {rec.file_id[:12]}"
            )
        return self.open(rec)

    def head(self, path: str) -> RemoteChange | None:
        fid = self.file_id(path)
        rec = self.client.head(fid)
        return None if rec is None else self._open_for(fid, rec)

    def record(self, path: str, rev: int) -> RemoteChange | None:
        fid = self.file_id(path)
        rec = self.client.record(fid, rev)
        if rec is None:
            return None
        if rec.rev != rev:
            raise TamperedRecord(f"asked the relay for revision {rev}, it sent {rec.rev}")
        return self._open_for(fid, rec)

    def history(self, path: str, limit: int = 1000) -> list[RemoteChange]:
        """Retained revisions of `path`, newest first, each verified."""
        fid = self.file_id(path)
        out = [self._open_for(fid, r) for r in self.client.history(fid, limit)]
        for a, b in zip(out, out[1:], strict=False):
            if b.rev >= a.rev:
                raise TamperedRecord("the relay's history of a file is out of order")
        return out

    # ------------------------------------------------------------------ content

    def fetch(self, metas: Sequence[FileMeta]) -> dict[str, bytes]:
        """Contents of live files (by SHA-256), every blob and every file verified."""
        ids = list(dict.fromkeys(c.blob_id for m in metas if not m.deleted for c in m.chunks))
        batches = [ids[i : i + DOWNLOAD_BATCH] for i in range(0, len(ids), DOWNLOAD_BATCH)]
        chunks: dict[str, bytes] = {}
        if len(batches) > 1:
            with ThreadPoolExecutor(DOWNLOAD_THREADS, thread_name_prefix="sync-get") as pool:
                for part in pool.map(self._fetch_batch, batches):
                    chunks.update(part)
        elif batches:
            chunks = self._fetch_batch(batches[0])
        out: dict[str, bytes] = {}
        for m in metas:
            if m.deleted or m.sha256 in out:
                continue
            out[m.sha256] = assemble(m, [chunks[c.blob_id] for c in m.chunks])
        return out

    def _fetch_batch(self, ids: list[str]) -> dict[str, bytes]:
        got = self.client.get_blobs(ids)
        out = {}
        for bid in ids:
            sealed = got.get(bid)
            if sealed is None:
                raise TamperDetected(f"the relay did not send blob {bid[:12]}")
            out[bid] = open_blob(self.key, self.vault_id, bid, sealed)
        return out

    def fetch_one(self, meta: FileMeta) -> bytes:
        return self.fetch([meta])[meta.sha256]

    def iter_chunks(
        self, meta: FileMeta, only: Iterable[int] | None = None
    ) -> Iterator[tuple[int, bytes]]:
        """A large file's chunks (index, verified plaintext) one by one, for resumable writes;
        `only` limits it to the chunks still missing."""
        wanted = None if only is None else set(only)
        for i, ref in enumerate(meta.chunks):
            if wanted is not None and i not in wanted:
                continue
            sealed = self.client.get_blob(ref.blob_id)
            chunk = open_blob(self.key, self.vault_id, ref.blob_id, sealed)
            yield i, chunk

    def upload(self, chunks: Mapping[str, bytes] | Iterable[tuple[str, bytes]]) -> int:
        """Make sure the relay has these chunks (keyed by blob id); returns how many were sent.

        One batched existence check, then the missing ones sealed and sent in batches of about
        `UPLOAD_BATCH_BYTES` so memory stays bounded.
        """
        items = dict(chunks.items() if isinstance(chunks, Mapping) else chunks)
        if not items:
            return 0
        missing = [bid for bid in self.client.has_blobs(items) if bid in items]
        sent = 0
        batch: list[tuple[str, bytes]] = []
        size = 0
        for bid in missing:
            _, sealed = seal_blob(self.key, self.vault_id, items[bid])
            batch.append((bid, sealed))
            size += len(sealed)
            if size >= UPLOAD_BATCH_BYTES:
                sent += self._put(batch)
                batch, size = [], 0
        if batch:
            sent += self._put(batch)
        return sent

    def _put(self, batch: list[tuple[str, bytes]]) -> int:
        """Upload a batch. "Taken" means another upload of the same plaintext (sealed with
        another nonce, e.g. by a process killed mid-sync) got there first: that is as good,
        since a blob is only ever accepted after it opens under its own id on download."""
        for _attempt in range(3):
            try:
                self.client.put_blobs(batch)
                return len(batch)
            except ConflictError as exc:
                if exc.code != "blob_id_taken":
                    raise
                still = set(self.client.has_blobs(bid for bid, _ in batch))
                batch = [(bid, data) for bid, data in batch if bid in still]
                if not batch:
                    return 0
        raise ConflictError("the relay keeps refusing blob uploads as taken", code="blob_id_taken")

    def upload_one(self, bid: str, chunk: bytes) -> None:
        """Upload a single chunk if the relay lacks it (large files, chunk by chunk)."""
        if self.client.has_blobs([bid]):
            _, sealed = seal_blob(self.key, self.vault_id, chunk)
            try:
                self.client.put_blob(bid, sealed)
            except ConflictError as exc:
                if exc.code != "blob_id_taken":
                    raise

    # ------------------------------------------------------------------ committing

    def commit(
        self,
        groups: Sequence[Sequence[Outgoing]],
        *,
        reupload: Callable[[list[str]], None] | None = None,
        max_records: int | None = None,
    ) -> PushResult:
        """Commit records; each group (e.g. the two halves of a rename) lands in one request.

        Conflicts come back verified in `PushResult.conflicts` (the rest is retried without
        them). `reupload(ids)` is called if the relay lost blobs between upload and commit.
        """
        limit = max_records or int(self.client.limits().get("max_records_per_commit", 1000))
        result = PushResult()
        batch: list[Outgoing] = []
        for group in groups:
            if batch and len(batch) + len(group) > limit:
                self._commit_batch(batch, result, reupload)
                batch = []
            batch.extend(group)
        if batch:
            self._commit_batch(batch, result, reupload)
        return result

    def _commit_batch(
        self,
        batch: list[Outgoing],
        result: PushResult,
        reupload: Callable[[list[str]], None] | None,
    ) -> None:
        now = time.time_ns()
        # seal once: a retry must resend identical bytes so the relay sees a duplicate
        sealed_by_fid: dict[str, tuple[Outgoing, Record]] = {}
        for out in batch:
            meta = out.meta
            if meta.recorded_ns is None:
                meta = replace(meta, recorded_ns=now)
            fid, sealed = seal_record(self.key, self.vault_id, out.rev, meta)
            blobs = tuple(c.blob_id for c in meta.chunks)
            sealed_by_fid[fid] = (out, Record(fid, out.rev, out.parent_rev, sealed, blobs))
        todo = list(sealed_by_fid)
        for _attempt in range(4):
            if not todo:
                return
            try:
                res = self.client.commit([sealed_by_fid[fid][1] for fid in todo])
            except MissingBlobsError as exc:
                if reupload is None:
                    raise
                reupload(exc.missing)
                continue
            retry = []
            for r in res.results:
                out = sealed_by_fid[r.file_id][0]
                if r.status == "conflict":
                    result.conflicts[out.meta.path] = self._conflict_head(out, r.head)
                elif r.status == "duplicate" or (res.committed and r.status == "committed"):
                    result.committed[out.meta.path] = (r.rev, r.seq)
                else:
                    retry.append(r.file_id)
            if res.committed:
                return
            todo = retry
        if todo:
            log.warning("gave up committing %d records after repeated aborts", len(todo))

    def _conflict_head(self, out: Outgoing, head: Record | None) -> RemoteChange | None:
        """The verified head that beat `out`; a head older than our parent is a rollback."""
        if head is None:
            if out.parent_rev > 0:
                raise RolledBack(
                    f"the relay has no revision of a file this device synced at revision "
                    f"{out.parent_rev}: it lost data or was restored from an older backup"
                )
            return None
        ch = self.open(head)
        if ch.path != out.meta.path and self.file_id(ch.path) != self.file_id(out.meta.path):
            raise TamperedRecord("the relay answered a commit with another file's head")
        check_not_rolled_back(out.parent_rev, ch.rev, file_id=ch.file_id)
        return ch


def chunk_refs(remote: RemoteVault, chunks: Sequence[bytes]) -> tuple[ChunkRef, ...]:
    return tuple(ChunkRef(remote.blob_id(c), len(c)) for c in chunks)
