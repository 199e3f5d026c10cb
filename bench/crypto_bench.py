"""Crypto layer timings: key wrap/unwrap at default Argon2id cost, seal/open throughput.

Run:  python bench/crypto_bench.py [--quick]
Prints a Markdown table. Throughput counts plaintext bytes of a 1 MiB file, sealed the way the
sync engine will (blob id + sealed blob per chunk, then one sealed record) and opened back
(open each blob, assemble with SHA-256 check, open the record). `--quick` (a smoke run) times
each operation once instead of 5 (wrap, unwrap) and 7 (seal, open) times.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import time
from collections.abc import Callable

from companion.crypto import (
    DEFAULT_KDF_PARAMS,
    ChunkRef,
    FileMeta,
    VaultKey,
    assemble,
    open_blob,
    open_record,
    seal_blob,
    seal_record,
    unwrap_vault_key,
    wrap_vault_key,
)

VID = "bench-vault"
MIB = 1024 * 1024


def markdown(n: int, seed: int = 7) -> bytes:
    """Note-like text: varied words, headings, links, lists (compresses about like real notes)."""
    rng = random.Random(seed)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
        for _ in range(3000)
    ]
    out: list[str] = []
    size = 0
    while size < n:
        kind = rng.random()
        if kind < 0.08:
            line = "## " + " ".join(rng.choices(words, k=rng.randint(2, 5)))
        elif kind < 0.3:
            line = "- " + " ".join(rng.choices(words, k=rng.randint(4, 12)))
        else:
            text = " ".join(rng.choices(words, k=rng.randint(10, 40)))
            line = text + f" See [[{rng.choice(words)}/{rng.choice(words)}]]."
        out.append(line)
        size += len(line) + 1
    return "\n".join(out).encode()[:n]


def timed(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def seal_file(key: VaultKey, path: str, content: bytes, chunk: int):
    pieces = [content[i : i + chunk] for i in range(0, len(content), chunk)]
    sealed = [seal_blob(key, VID, p) for p in pieces]
    meta = FileMeta(
        path=path,
        size=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
        chunks=tuple(ChunkRef(bid, len(p)) for (bid, _), p in zip(sealed, pieces, strict=True)),
    )
    fid, record = seal_record(key, VID, 1, meta)
    return fid, record, sealed


def open_file(key: VaultKey, fid: str, record: bytes, sealed: list[tuple[str, bytes]]) -> bytes:
    meta = open_record(key, VID, fid, 1, record)
    blobs = dict(sealed)
    return assemble(meta, [open_blob(key, VID, c.blob_id, blobs[c.blob_id]) for c in meta.chunks])


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="each operation once (a smoke run)")
    args = ap.parse_args()
    kdf_runs, seal_runs = (1, 1) if args.quick else (5, 7)
    key = VaultKey.generate()
    p = DEFAULT_KDF_PARAMS
    wrapped = wrap_vault_key(key, "bench passphrase", vault_id=VID)
    wrap_s = timed(lambda: wrap_vault_key(key, "bench passphrase", vault_id=VID), kdf_runs)
    unwrap_s = timed(lambda: unwrap_vault_key(wrapped, "bench passphrase", vault_id=VID), kdf_runs)

    print(
        f"Argon2id default: {p.memory_kib // 1024} MiB, {p.iterations} iterations, {p.lanes} lanes"
    )
    print(f"CPU count: {os.cpu_count()}\n")
    print("| operation | content | chunk | time (median) | MiB/s | sealed size |")
    print("|---|---|---|---|---|---|")
    print(f"| wrap vault key | - | - | {wrap_s * 1000:.0f} ms | - | 89 B |")
    print(f"| unwrap vault key | - | - | {unwrap_s * 1000:.0f} ms | - | - |")
    for label, content in (("markdown", markdown(MIB)), ("random", os.urandom(MIB))):
        for chunk in (MIB, 256 * 1024):
            fid, record, sealed = seal_file(key, "bench/file.md", content, chunk)
            assert open_file(key, fid, record, sealed) == content
            size = len(record) + sum(len(s) for _, s in sealed)
            seal_s = timed(
                lambda c=content, k=chunk: seal_file(key, "bench/file.md", c, k), seal_runs
            )
            open_s = timed(lambda f=fid, r=record, s=sealed: open_file(key, f, r, s), seal_runs)
            kib = f"{chunk // 1024} KiB"
            print(
                f"| seal 1 MiB | {label} | {kib} | {seal_s * 1000:.1f} ms | "
                f"{1 / seal_s:.0f} | {size / 1024:.0f} KiB |"
            )
            print(
                f"| open 1 MiB | {label} | {kib} | {open_s * 1000:.1f} ms | {1 / open_s:.0f} | - |"
            )


if __name__ == "__main__":
    main()
