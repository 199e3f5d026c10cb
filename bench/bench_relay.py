"""Relay throughput on loopback, beside the floors of this machine.

    python bench/bench_relay.py [--records 20000] [--blobs 200] [--quick]

Starts `companion relay serve` as a separate process on 127.0.0.1 (its default settings:
SQLite WAL with synchronous=FULL, blobs fsynced), then measures through the real HTTP API:

- commit ingest: batches of 100 records of ~300 B sealed payload, records per second;
- blob upload and download of 1 MB blobs, one per request and batched, MB/s;

and, for scale, the floors: raw SQLite inserts in 100-row transactions with the same pragmas,
AES-GCM encryption of 1 MB with `cryptography`, SHA-256 of 1 MB (the relay verifies every blob
on upload and on read), and writing 1 MB files with fsync (what a durable upload costs at
least on this disk). Prints one Markdown table.
Targets: >= 5,000 records/s; 1 MB blob throughput within 3x of the AES-GCM floor.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from companion.relay.client import Record, RelayClient

MB = 1_000_000
BATCH = 100
SEALED = 300


def start_relay(data: Path) -> tuple[subprocess.Popen, str]:
    port_file = data.parent / "port"
    env = {**os.environ, "COMPANION_HOME": str(data.parent / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion", "relay", "serve", "--data", str(data), "--port", "0",
         "--port-file", str(port_file), "--no-access-log", "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the relay did not start")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}"


def invite(data: Path) -> str:
    env = {**os.environ, "COMPANION_HOME": str(data.parent / "home")}
    out = subprocess.run(
        [sys.executable, "-m", "companion", "relay", "invite", "--data", str(data)],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    return out.stdout.strip()


def best(fn, repeat: int = 3) -> float:
    """Fastest of `repeat` runs, seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


# -- floors ----------------------------------------------------------------------------------


def sqlite_floor(n: int, tmp: Path) -> float:
    db = sqlite3.connect(tmp / "floor.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute(
        "CREATE TABLE r (v TEXT, seq INTEGER, f TEXT, rev INTEGER, p INTEGER, s BLOB, b TEXT,"
        " d TEXT, t REAL, PRIMARY KEY (v, seq), UNIQUE (v, f, rev))"
    )
    payload = os.urandom(SEALED)
    seq = 0

    def run() -> None:
        nonlocal seq
        for _ in range(n // BATCH):
            db.execute("BEGIN IMMEDIATE")
            rows = []
            for _ in range(BATCH):
                seq += 1
                rows.append(("v", seq, os.urandom(16).hex(), 1, 0, payload, "", "d", 0.0))
            db.executemany("INSERT INTO r VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            db.execute("COMMIT")

    dt = best(run)
    db.close()
    return n / dt


def aesgcm_floor(size: int = MB, n: int = 200) -> float:
    aead = AESGCM(AESGCM.generate_key(bit_length=256))
    data, nonce = os.urandom(size), os.urandom(12)

    def run() -> None:
        for _ in range(n):  # each ciphertext is dropped at once, as a streaming encryptor would
            aead.encrypt(nonce, data, None)

    return n * size / MB / best(run)


def disk_floor(tmp: Path, size: int = MB, n: int = 100) -> float:
    """Writing 1 MB files with fsync, one after another: what durable uploads cost at least."""
    data = os.urandom(size)
    folder = tmp / "disk-floor"
    folder.mkdir()

    def run() -> None:
        for i in range(n):
            with open(folder / f"{i}", "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())

    return n * size / MB / best(run)


def sha256_floor(size: int = MB, n: int = 200) -> float:
    data = os.urandom(size)

    def run() -> None:
        for _ in range(n):
            hashlib.sha256(data).digest()

    return n * size / MB / best(run)


# -- through the relay -----------------------------------------------------------------------


def commit_ingest(client: RelayClient, n: int, workers: int = 1) -> float:
    def batch() -> list[Record]:
        base = os.urandom(8).hex()  # fresh files every batch, every run
        return [Record(f"{base}{i:016x}", 1, 0, os.urandom(SEALED)) for i in range(BATCH)]

    def worker(batches: int) -> None:
        for _ in range(batches):
            assert client.commit(batch()).ok

    def run() -> None:
        per = n // BATCH // workers
        threads = [threading.Thread(target=worker, args=(per,)) for _ in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    return n / best(run)


def blob_rates(client: RelayClient, n: int) -> dict[str, float]:
    size = MB
    rows: dict[str, float] = {}
    blobs = [(os.urandom(16).hex(), os.urandom(size)) for _ in range(n)]
    t0 = time.perf_counter()
    for blob_id, data in blobs:
        client.put_blob(blob_id, data)
    rows["upload, one per request"] = n * size / MB / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for blob_id, _ in blobs:
        client.get_blob(blob_id)
    rows["download, one per request"] = n * size / MB / (time.perf_counter() - t0)
    batched = [(os.urandom(16).hex(), os.urandom(size)) for _ in range(n)]
    t0 = time.perf_counter()
    client.put_blobs(batched)
    rows["upload, batched"] = n * size / MB / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    got = sum(len(d) for _, d in client.iter_blobs([b for b, _ in batched]))
    rows["download, batched"] = got / MB / (time.perf_counter() - t0)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--blobs", type=int, default=200, help="1 MB blobs per measurement")
    ap.add_argument("--quick", action="store_true", help="small counts (a smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.records, args.blobs = 2_000, 20
    with tempfile.TemporaryDirectory(prefix="bench-relay-") as tmp_s:
        tmp = Path(tmp_s)
        data = tmp / "relay"
        proc, url = start_relay(data)
        try:
            client = RelayClient(url, timeout=120)
            client.join(invite(data), "bench", "agent")
            ingest_1 = commit_ingest(client, args.records, workers=1)
            ingest_4 = commit_ingest(client, args.records, workers=4)
            blobs = blob_rates(client, args.blobs)
            client.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        floor_sql = sqlite_floor(args.records, tmp)
        floor_disk = disk_floor(tmp)
    floor_aes = aesgcm_floor()
    floor_sha = sha256_floor()

    print(f"\nRelay on loopback ({os.cpu_count()} CPUs, Python {sys.version.split()[0]}); "
          f"`python bench/bench_relay.py`\n")  # fmt: skip
    print("| measurement | rate | floor on this machine | ratio |")
    print("|---|---|---|---|")
    print(
        f"| commit ingest, 1 client (batches of {BATCH} x {SEALED} B) | {ingest_1:,.0f} rec/s "
        f"| SQLite inserts: {floor_sql:,.0f} rec/s | {ingest_1 / floor_sql:.2f} of floor |"
    )
    print(f"| commit ingest, 4 clients | {ingest_4:,.0f} rec/s | SQLite inserts: "
          f"{floor_sql:,.0f} rec/s | {ingest_4 / floor_sql:.2f} of floor |")  # fmt: skip
    for name, rate in blobs.items():
        print(f"| blob {name}, 1 MB | {rate:,.0f} MB/s | AES-GCM 1 MB: {floor_aes:,.0f} MB/s "
              f"| floor is {floor_aes / rate:.1f}x faster |")  # fmt: skip
    print(f"| (for scale) SHA-256 of 1 MB | {floor_sha:,.0f} MB/s | | |")
    print(f"| (for scale) write + fsync of 1 MB files | {floor_disk:,.0f} MB/s | | |")
    target_ok = max(ingest_1, ingest_4) >= 5000
    best_blob = min(blobs["upload, batched"], blobs["download, batched"])
    print(
        f"\nTargets: ingest >= 5,000 rec/s: {'met' if target_ok else 'NOT met'}; "
        f"batched 1 MB blobs within 3x of AES-GCM: "
        f"{'met' if floor_aes / best_blob <= 3 else 'NOT met'} "
        f"({floor_aes / best_blob:.1f}x)."
    )


if __name__ == "__main__":
    main()
