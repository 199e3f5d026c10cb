"""Chunked upload streaming and the resumable download assembler."""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

import pytest

from companion.sync.local.atomic import ChangedSinceScan, atomic_write
from companion.sync.local.chunking import (
    ChunkAssembler,
    ChunkMismatch,
    ChunkSpec,
    chunk_lengths,
    iter_chunks,
    prune_partials,
    sha256_hex,
)
from companion.sync.local.filestate import hash_file

CS = 64 * 1024  # small chunks keep the tests fast


def specs_of(data: bytes, size: int = CS) -> list[ChunkSpec]:
    return [
        ChunkSpec(len(data[i : i + size]), sha256_hex(data[i : i + size]))
        for i in range(0, len(data), size)
    ]


def test_chunk_lengths() -> None:
    assert chunk_lengths(0, 4) == []
    assert chunk_lengths(4, 4) == [4]
    assert chunk_lengths(9, 4) == [4, 4, 1]
    with pytest.raises(ValueError):
        chunk_lengths(3, 0)


def test_iter_chunks_streams_the_file(tmp_path: Path) -> None:
    data = os.urandom(3 * CS + 123)
    p = tmp_path / "f.bin"
    p.write_bytes(data)
    chunks = list(iter_chunks(p, chunk_size=CS, expected=hash_file(p).state))
    assert [c.index for c in chunks] == [0, 1, 2, 3]
    assert [c.offset for c in chunks] == [0, CS, 2 * CS, 3 * CS]
    assert [len(c.data) for c in chunks] == chunk_lengths(len(data), CS)
    assert b"".join(c.data for c in chunks) == data
    assert all(c.sha256 == sha256_hex(c.data) for c in chunks)
    (tmp_path / "empty").write_bytes(b"")
    assert list(iter_chunks(tmp_path / "empty")) == []


def test_iter_chunks_refuses_a_file_changed_since_scan(tmp_path: Path) -> None:
    p = tmp_path / "f.bin"
    p.write_bytes(b"a" * (2 * CS))
    seen = hash_file(p).state
    p.write_bytes(b"b" * (2 * CS + 1))
    with pytest.raises(ChangedSinceScan):
        list(iter_chunks(p, chunk_size=CS, expected=seen))


def test_iter_chunks_detects_a_write_during_the_read(tmp_path: Path) -> None:
    p = tmp_path / "f.bin"
    p.write_bytes(b"a" * (3 * CS))
    it = iter_chunks(p, chunk_size=CS)
    next(it)
    with open(p, "ab") as f:  # someone appends while we upload
        f.write(b"more")
    with pytest.raises(ChangedSinceScan):
        list(it)


def test_assemble_in_any_order_and_install(tmp_path: Path) -> None:
    data = os.urandom(4 * CS + 5)
    total = sha256_hex(data)
    specs = specs_of(data)
    partial = tmp_path / "data" / "partial"
    with ChunkAssembler(partial, total, len(data), specs) as asm:
        assert asm.missing() == [0, 1, 2, 3, 4]
        for i in (3, 0, 4, 1, 2):
            asm.add(i, data[i * CS : (i + 1) * CS])
        assert asm.complete
        vault = tmp_path / "vault"
        vault.mkdir()
        with asm.open() as stream:
            st = atomic_write(vault, "big.bin", stream, None)
        asm.discard()
    assert (vault / "big.bin").read_bytes() == data and st.sha256 == total
    assert not list(partial.iterdir())


def test_download_resumes_after_a_restart(tmp_path: Path) -> None:
    data = os.urandom(5 * CS)
    total = sha256_hex(data)
    specs = specs_of(data)
    partial = tmp_path / "partial"
    asm = ChunkAssembler(partial, total, len(data), specs)
    asm.add(0, data[:CS])
    asm.add(2, data[2 * CS : 3 * CS])
    asm.close()  # the process stops here
    resumed = ChunkAssembler(partial, total, len(data), specs)
    assert resumed.missing() == [1, 3, 4]
    for i in resumed.missing():
        resumed.add(i, data[i * CS : (i + 1) * CS])
    assert resumed.finish().read_bytes() == data
    resumed.close()


def test_resume_reverifies_a_damaged_partial(tmp_path: Path) -> None:
    data = os.urandom(3 * CS)
    total = sha256_hex(data)
    specs = specs_of(data)
    asm = ChunkAssembler(tmp_path, total, len(data), specs)
    for i in range(3):
        asm.add(i, data[i * CS : (i + 1) * CS])
    asm.close()
    with open(asm.path, "r+b") as f:  # corrupt one byte of chunk 1 on disk
        f.seek(CS + 10)
        f.write(bytes([data[CS + 10] ^ 0xFF]))
    again = ChunkAssembler(tmp_path, total, len(data), specs)
    assert again.missing() == [1]
    again.close()


def test_bad_chunk_is_refused_and_not_written(tmp_path: Path) -> None:
    data = os.urandom(2 * CS)
    asm = ChunkAssembler(tmp_path, sha256_hex(data), len(data), specs_of(data))
    with pytest.raises(ChunkMismatch):
        asm.add(0, b"x" * CS)
    with pytest.raises(ChunkMismatch):
        asm.add(0, data[: CS - 1])
    with pytest.raises(ChunkMismatch):
        asm.add(7, data[:CS])
    assert asm.missing() == [0, 1]
    with pytest.raises(ChunkMismatch, match="missing"):
        asm.finish()
    asm.close()


def test_keyed_digest_like_blob_ids(tmp_path: Path) -> None:
    key = b"k" * 32

    def blob_id(chunk: bytes) -> str:
        return hmac.new(key, chunk, hashlib.sha256).hexdigest()

    data = os.urandom(CS + 1)
    specs = [ChunkSpec(CS, blob_id(data[:CS])), ChunkSpec(1, blob_id(data[CS:]))]
    asm = ChunkAssembler(tmp_path, sha256_hex(data), len(data), specs, digest=blob_id)
    asm.add(0, data[:CS])
    asm.add(1, data[CS:])
    assert asm.finish().read_bytes() == data
    asm.close()


def test_bad_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        ChunkAssembler(tmp_path, "0" * 64, 10, [ChunkSpec(5, "x")])
    with pytest.raises(ValueError):
        ChunkAssembler(tmp_path, "not-a-hash", 0, [])


def test_prune_partials(tmp_path: Path) -> None:
    old, keep, fresh = (tmp_path / f"{c * 64}.part" for c in "abc")
    for p in (old, keep, fresh):
        p.write_bytes(b"x")
    os.utime(old, (0, 0))
    os.utime(keep, (0, 0))
    assert prune_partials(tmp_path, keep=["b" * 64]) == 1
    assert sorted(p.name[0] for p in tmp_path.iterdir()) == ["b", "c"]
