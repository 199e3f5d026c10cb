"""Large files in fixed-size chunks: streamed for upload, resumable on download.

Upload: `iter_chunks` reads a file one chunk at a time (never the whole file in memory) and
checks at the end that the file did not change while it was read.

Download: a `ChunkAssembler` writes chunks into ``<partial_dir>/<sha256>.part`` at their
offsets, each verified against its expected digest before it is written. The partial file is
named by the final content hash, so a download interrupted by a crash or a restart resumes from
the chunks already there (re-verified on open), and a partial for other content is never mixed
in. Once complete, the whole file's SHA-256 is checked before it is handed to `atomic_write`.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from companion.errors import CompanionError
from companion.sync.local.atomic import ChangedSinceScan
from companion.sync.local.filestate import FileState, open_nofollow, stat_key

CHUNK_SIZE = 4 * 1024 * 1024
_HEX64 = re.compile(r"[0-9a-f]{64}")
_O_BINARY = getattr(os, "O_BINARY", 0)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ChunkMismatch(CompanionError):
    """A downloaded chunk or the assembled file does not match what its record promised."""


@dataclass(frozen=True, slots=True)
class Chunk:
    index: int
    offset: int
    data: bytes
    sha256: str


@dataclass(frozen=True, slots=True)
class ChunkSpec:
    """What one chunk of a file must be: its length and digest (as computed by `digest`)."""

    length: int
    digest: str


def chunk_lengths(size: int, chunk_size: int = CHUNK_SIZE) -> list[int]:
    """Lengths of the chunks a file of `size` bytes is cut into (none for an empty file)."""
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    full, rest = divmod(size, chunk_size)
    return [chunk_size] * full + ([rest] if rest else [])


def iter_chunks(
    path: str | os.PathLike[str],
    *,
    chunk_size: int = CHUNK_SIZE,
    expected: FileState | None = None,
) -> Iterator[Chunk]:
    """Yield the file's chunks in order, streaming. With `expected` (the scanned state), raise
    `ChangedSinceScan` if the file is not in that state when opened or changed while read.

    The check at the end runs before the last ``next()`` returns, so a caller that commits the
    file's record only after the loop never commits a torn read.
    """
    shown = os.fspath(path)
    fd = open_nofollow(path)
    try:
        st = os.fstat(fd)
        if expected is not None and not expected.same_stat(FileState.from_stat(st)):
            raise ChangedSinceScan(shown, "was modified")
        whole = hashlib.sha256()
        offset = 0
        index = 0
        while True:
            data = os.read(fd, chunk_size)
            # os.read may return less than asked before EOF; fill the chunk
            while data and len(data) < chunk_size:
                more = os.read(fd, chunk_size - len(data))
                if not more:
                    break
                data += more
            if not data:
                break
            whole.update(data)
            yield Chunk(index, offset, data, sha256_hex(data))
            offset += len(data)
            index += 1
        st2 = os.fstat(fd)
        if stat_key(st2) != stat_key(st) or offset != st.st_size:
            raise ChangedSinceScan(shown, "changed while it was read")
        if expected is not None and expected.sha256 and whole.hexdigest() != expected.sha256:
            raise ChangedSinceScan(shown, "was modified")
    finally:
        os.close(fd)


class ChunkAssembler:
    """Resumable assembly of one file's content in the engine's data dir.

    `digest` computes a chunk's digest as listed in `chunks` (SHA-256 hex by default; the
    transport may pass the vault's keyed blob-id function instead).
    """

    def __init__(
        self,
        partial_dir: str | os.PathLike[str],
        sha256: str,
        size: int,
        chunks: Sequence[ChunkSpec],
        *,
        digest: Callable[[bytes], str] = sha256_hex,
    ) -> None:
        if not _HEX64.fullmatch(sha256):
            raise ValueError("sha256 must be 64 lowercase hex digits")
        if sum(c.length for c in chunks) != size or any(c.length < 1 for c in chunks):
            raise ValueError("chunk lengths must be positive and add up to the file size")
        self.sha256 = sha256
        self.size = size
        self.chunks = list(chunks)
        self.offsets = [0] * len(self.chunks)
        pos = 0
        for i, c in enumerate(self.chunks):
            self.offsets[i] = pos
            pos += c.length
        self._digest = digest
        folder = Path(partial_dir)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = folder / f"{sha256}.part"
        self._done = [False] * len(self.chunks)
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o600)
            fresh = True
        except FileExistsError:
            self._fd = os.open(self.path, os.O_RDWR | _O_BINARY)
            fresh = False
        if os.fstat(self._fd).st_size != size:
            os.ftruncate(self._fd, size)
        if not fresh:
            self._verify_existing()

    def _read_at(self, offset: int, length: int) -> bytes:
        os.lseek(self._fd, offset, os.SEEK_SET)
        out = b""
        while len(out) < length:
            part = os.read(self._fd, length - len(out))
            if not part:
                break
            out += part
        return out

    def _verify_existing(self) -> None:
        for i, spec in enumerate(self.chunks):
            data = self._read_at(self.offsets[i], spec.length)
            self._done[i] = len(data) == spec.length and self._digest(data) == spec.digest

    # ---------------------------------------------------------------- progress

    def missing(self) -> list[int]:
        """Indexes of the chunks still to download."""
        return [i for i, ok in enumerate(self._done) if not ok]

    @property
    def complete(self) -> bool:
        return all(self._done)

    def add(self, index: int, data: bytes) -> None:
        """Verify and store chunk `index`; raises `ChunkMismatch` (nothing written) if wrong."""
        if not 0 <= index < len(self.chunks):
            raise ChunkMismatch(f"chunk {index} does not exist (the file has {len(self.chunks)})")
        spec = self.chunks[index]
        if len(data) != spec.length or self._digest(data) != spec.digest:
            raise ChunkMismatch(f"chunk {index} of {self.sha256[:12]} does not match its digest")
        os.lseek(self._fd, self.offsets[index], os.SEEK_SET)
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)
        self._done[index] = True

    def finish(self) -> Path:
        """Check the whole content's SHA-256 and return the partial file's path.

        A mismatch (which per-chunk checks make nearly impossible) discards the partial file.
        """
        if not self.complete:
            raise ChunkMismatch(f"{len(self.missing())} chunks are still missing")
        h = hashlib.sha256()
        os.lseek(self._fd, 0, os.SEEK_SET)
        while block := os.read(self._fd, 1 << 20):
            h.update(block)
        if h.hexdigest() != self.sha256:
            self.discard()
            raise ChunkMismatch(f"the assembled file does not match {self.sha256[:12]}")
        return self.path

    def open(self) -> BinaryIO:
        """The complete content as a binary stream (pass it to `atomic_write`)."""
        return open(self.finish(), "rb")  # noqa: SIM115 - the caller closes it

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def discard(self) -> None:
        """Close and delete the partial file (after installing it, or to give up)."""
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __enter__(self) -> ChunkAssembler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def prune_partials(
    partial_dir: str | os.PathLike[str],
    keep: Iterable[str] = (),
    older_than_s: float = 7 * 86400,
) -> int:
    """Delete partial downloads not in `keep` (sha256 names) untouched for `older_than_s`."""
    folder = Path(partial_dir)
    keep_set = set(keep)
    cutoff = time.time() - older_than_s
    n = 0
    try:
        entries = list(folder.glob("*.part"))
    except OSError:
        return 0
    for p in entries:
        if p.stem in keep_set:
            continue
        try:
            if p.stat().st_mtime < cutoff:
                p.unlink()
                n += 1
        except OSError:
            continue
    return n
