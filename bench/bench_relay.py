"""Relay throughput on loopback, beside the floors of this machine.

    python bench/bench_relay.py [--records 20000] [--blobs 200] [--quick]
    python bench/bench_relay.py --backend postgres --processes 2 [--quick]

The second form is the scale-out run (issue #20): commit ingest with 1, 4 and 16 clients
(separate processes, each a device of its own vault, and 16 devices sharing one vault) through
1..N relay processes on one PostgreSQL database (a throw-away cluster with PostgreSQL's
durable defaults, fsync on), and the long-poll wake latency across processes (a commit through
relay B waking a long-poll waiting on relay A), beside the SQLite relay (one process) in the
same run. Targets: >= 20,000 records/s with 16 clients on 2 processes; wake p95 <= 50 ms.
`--quick` is a smoke run of either form (seconds, the targets meaningless): 2,000 records, 20
blobs, 10 wake rounds, and in the scale-out run 1 and 4 clients instead of 1, 4 and 16.

Starts `companion relay serve` as a separate process on 127.0.0.1 (its default settings:
SQLite WAL with synchronous=FULL, blobs fsynced), then measures through the real HTTP API:

- commit ingest: batches of 100 records of ~300 B sealed payload, records per second;
- blob upload and download of 1 MB blobs, one per request and batched, MB/s;

and, for scale, the floors: raw SQLite inserts in 100-row transactions with the same pragmas,
AES-GCM encryption of 1 MB with `cryptography`, SHA-256 of 1 MB (the relay verifies every blob
on upload and on read), writing 1 MB files with fsync (what a durable upload costs at least on
this disk), and two transport floors between two Python processes on loopback: a bare TCP
socket (sendall / recv_into, no protocol at all) and bare HTTP (uvicorn serving an ASGI app
that reads or writes the body and does nothing else, with the same httpx client). Prints one
Markdown table.
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

from companion.relayclient.client import Record, RelayClient

MB = 1_000_000
BATCH = 100
SEALED = 300


def start_relay(data: Path) -> tuple[subprocess.Popen, str]:
    """One SQLite relay on `data` (`start_serve` with that store)."""
    return start_serve(["--data", str(data)], data.parent, "relay")


def invite(data: Path) -> str:
    return admin_invite(["--data", str(data)], data.parent)


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


def disk_floor(tmp: Path, n: int, size: int = MB) -> float:
    """Writing `n` 1 MB files with fsync, in 64 KiB pieces as the relay does, one pass: what
    `n` durable uploads cost at least. One pass of the same volume as the upload, not a best
    of several short ones: this disk sustains far less than it bursts."""
    data = os.urandom(size)
    folder = tmp / "disk-floor"
    folder.mkdir()
    t0 = time.perf_counter()
    for i in range(n):
        with open(folder / f"{i}", "wb") as f:
            for at in range(0, size, 1 << 16):
                f.write(data[at : at + (1 << 16)])
            f.flush()
            os.fsync(f.fileno())
    return n * size / MB / (time.perf_counter() - t0)


def sha256_floor(size: int = MB, n: int = 200) -> float:
    data = os.urandom(size)

    def run() -> None:
        for _ in range(n):
            hashlib.sha256(data).digest()

    return n * size / MB / best(run)


def _serve_bare_http(port_file: Path) -> None:
    """The HTTP floor's server: uvicorn, an ASGI app that only reads or writes bodies."""
    import socket

    import uvicorn

    chunk = os.urandom(MB)

    async def app(scope, receive, send):  # noqa: ANN001, ANN202 - a bare ASGI callable
        if scope["type"] != "http":
            return
        if scope["method"] == "POST":
            while (await receive()).get("more_body"):
                pass
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        n = int(scope["query_string"] or b"1")
        headers = [(b"content-length", str(n * MB).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for i in range(n):
            await send({"type": "http.response.body", "body": chunk, "more_body": i < n - 1})

    sock = socket.create_server(("127.0.0.1", 0))
    port_file.write_text(str(sock.getsockname()[1]))
    cfg = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(cfg).run(sockets=[sock])


def _sink_tcp(port_file: Path) -> None:
    """The TCP floor's receiver: accept one connection and read it to the end."""
    import socket

    srv = socket.create_server(("127.0.0.1", 0))
    port_file.write_text(str(srv.getsockname()[1]))
    conn, _ = srv.accept()
    view = memoryview(bytearray(1 << 20))
    while conn.recv_into(view):
        pass
    conn.sendall(b"k")  # done: the sender's clock stops when everything was read


def _helper(mode: str, tmp: Path) -> tuple[subprocess.Popen, int]:
    port_file = tmp / f"{mode}.port"
    proc = subprocess.Popen([sys.executable, __file__, f"--{mode}", str(port_file)])
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the {mode} helper did not start")
        time.sleep(0.05)
    return proc, int(port_file.read_text())


def tcp_floor(tmp: Path, n: int = 500) -> float:
    """One Python process sending 1 MB buffers to another over a loopback TCP socket."""
    import socket

    proc, port = _helper("sink-tcp", tmp)
    data = os.urandom(MB)
    try:
        with socket.create_connection(("127.0.0.1", port)) as conn:
            t0 = time.perf_counter()
            for _ in range(n):
                conn.sendall(data)
            conn.shutdown(socket.SHUT_WR)
            conn.recv(1)
            return n / (time.perf_counter() - t0)
    finally:
        proc.wait(timeout=30)


def http_floor(tmp: Path, n: int) -> tuple[float, float]:
    """Upload and download MB/s of streamed bodies through uvicorn + httpx, doing nothing."""
    import httpx

    proc, port = _helper("bare-http", tmp)
    data = os.urandom(MB)
    url = f"http://127.0.0.1:{port}/"
    try:
        with httpx.Client(timeout=120) as http:

            def up() -> None:
                http.post(url, content=(data for _ in range(n))).raise_for_status()

            def down() -> None:
                with http.stream("GET", f"{url}?{n}") as resp:
                    for _ in resp.iter_raw():
                        pass

            return n / best(up), n / best(down)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


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


# -- scale-out: several relay processes on PostgreSQL (issue #20) --------------------------------


def start_serve(store: list[str], tmp: Path, name: str) -> tuple[subprocess.Popen, str]:
    port_file = tmp / f"{name}.port"
    env = {**os.environ, "COMPANION_HOME": str(tmp / f"home-{name}")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion", "relay", "serve", *store, "--port", "0",
         "--port-file", str(port_file), "--no-access-log", "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"relay {name} did not start")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}"


def admin_invite(store: list[str], tmp: Path, *extra: str) -> str:
    env = {**os.environ, "COMPANION_HOME": str(tmp / "home-admin")}
    out = subprocess.run(
        [sys.executable, "-m", "companion", "relay", "invite", *store, *extra],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    return out.stdout.strip()


def _ingest_worker(url: str, token: str, vault: str, batches: int, start, out) -> None:  # noqa: ANN001
    client = RelayClient(url, token, vault, timeout=120)
    prefix = os.urandom(6).hex()
    payloads = [os.urandom(SEALED) for _ in range(BATCH)]
    start.wait()
    t0 = time.perf_counter()
    for n in range(batches):
        recs = [Record(f"{prefix}{n:010x}{i:04x}", 1, 0, payloads[i]) for i in range(BATCH)]
        assert client.commit(recs).ok
    out.put((t0, time.perf_counter(), batches * BATCH))
    client.close()


def scale_ingest(urls: list[str], devices: list[tuple[str, str]], records: int) -> float:
    """records/s of len(devices) client processes committing batches at once; client k talks
    to relay k % len(urls)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    start = ctx.Barrier(len(devices))
    out = ctx.Queue()
    per = max(1, records // BATCH // len(devices))
    procs = [
        ctx.Process(target=_ingest_worker,
                    args=(urls[k % len(urls)], tok, vault, per, start, out))
        for k, (tok, vault) in enumerate(devices)
    ]  # fmt: skip
    for p in procs:
        p.start()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(60)
    t0 = min(r[0] for r in results)
    t1 = max(r[1] for r in results)
    return sum(r[2] for r in results) / (t1 - t0)


def wake_latency(waiter_url: str, writer_url: str, dev_w: tuple[str, str],
                 dev_c: tuple[str, str], rounds: int) -> list[float]:  # fmt: skip
    """Seconds from a commit's answer (through one relay) to the waiting long-poll's answer
    (on another), `rounds` times."""
    waiter = RelayClient(waiter_url, dev_w[0], dev_w[1], timeout=60)
    writer = RelayClient(writer_url, dev_c[0], dev_c[1], timeout=60)
    lat: list[float] = []
    for n in range(rounds):
        since = waiter.changes_page(0, limit=1).vault_seq
        got: dict[str, float] = {}

        def wait(since: int = since, got: dict[str, float] = got) -> None:
            page = waiter.changes_page(since, wait=30)
            got["at"] = time.perf_counter()
            got["n"] = len(page.records)

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.15)  # the long-poll is waiting on the other relay
        writer.commit([Record(f"{n:032x}", 1, 0, b"wake")])
        sent = time.perf_counter()  # the commit has been answered: it is durable
        t.join(60)
        if got.get("n"):
            lat.append(max(0.0, got["at"] - sent))
    waiter.close()
    writer.close()
    return lat


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def scale_run(args: argparse.Namespace) -> None:
    from companion.relay.pg_schema import migrate
    from companion.relay.pgtesting import TempCluster

    clients = [1, 4] if args.quick else [1, 4, 16]
    rows: list[tuple[str, int, int, float]] = []  # store, processes, clients, rec/s
    shared: dict[tuple[str, int], float] = {}
    wakes: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-relay-scale-") as tmp_s:
        tmp = Path(tmp_s)
        setups: list[tuple[str, list[str], list[int]]] = [("sqlite", ["--data", str(tmp / "sq")],
                                                           [1])]  # fmt: skip
        cluster = None
        if args.backend == "postgres":
            cluster = TempCluster(durable=True, max_connections=300).start()
            cluster.create_database("relay")
            migrate(cluster.url("relay"))
            setups.append(("postgres", ["--database", cluster.url("relay")],
                           list(range(1, args.processes + 1))))  # fmt: skip
        try:
            for name, store, process_counts in setups:
                n_relays = max(process_counts)
                relays = [start_serve(store, tmp, f"{name}-{i}") for i in range(n_relays)]
                try:

                    def join(
                        vault: str | None = None, relays=relays, store=store
                    ) -> tuple[str, str]:
                        extra = ["--vault", vault] if vault else ["--new-vault"]
                        c = RelayClient(relays[0][1])
                        j = c.join(admin_invite(store, tmp, *extra), "bench")
                        c.close()
                        return j.token, j.vault_id

                    own = [join() for _ in range(max(clients))]
                    for n_proc in process_counts:
                        urls = [u for _, u in relays[:n_proc]]
                        for n in clients:
                            rate = scale_ingest(urls, own[:n], args.records)
                            rows.append((name, n_proc, n, rate))
                            print(f"  {name} x{n_proc}, {n} clients: {rate:,.0f} rec/s",
                                  file=sys.stderr)  # fmt: skip
                    one = own[0][1]
                    team = [own[0]] + [join(one) for _ in range(max(clients) - 1)]
                    n_proc = max(process_counts)
                    shared[(name, n_proc)] = scale_ingest([u for _, u in relays[:n_proc]],
                                                          team, args.records)  # fmt: skip
                    waiter_url = relays[0][1]
                    writer_url = relays[-1][1]  # another process when there are several
                    wakes[name] = wake_latency(waiter_url, writer_url, own[1], (own[1][0],
                                               own[1][1]), args.wake_rounds)  # fmt: skip
                finally:
                    for proc, _ in relays:
                        proc.terminate()
                        proc.wait(timeout=30)
        finally:
            if cluster is not None:
                cluster.stop()

    print(f"\nRelay scale-out on loopback ({os.cpu_count()} CPUs, Python "
          f"{sys.version.split()[0]}); `python bench/bench_relay.py --backend {args.backend} "
          f"--processes {args.processes}`; batches of {BATCH} x {SEALED} B\n")  # fmt: skip
    print("| store | relay processes | clients (each its own vault) | commit ingest |")
    print("|---|---|---|---|")
    for name, n_proc, n, rate in rows:
        print(f"| {name} | {n_proc} | {n} | {rate:,.0f} rec/s |")
    for (name, n_proc), rate in shared.items():
        print(f"| {name} | {n_proc} | {max(clients)}, all in one vault | {rate:,.0f} rec/s |")
    print("\n| long-poll wake | p50 | p95 | rounds |")
    print("|---|---|---|---|")
    for name, lat in wakes.items():
        where = "across processes" if name == "postgres" and args.processes > 1 else "same process"
        if lat:
            print(f"| {name}, {where} | {_pct(lat, 0.5) * 1000:.1f} ms | "
                  f"{_pct(lat, 0.95) * 1000:.1f} ms | {len(lat)} |")  # fmt: skip
    if args.backend == "postgres":
        best = max((r for r in rows if r[0] == "postgres" and r[1] == min(2, args.processes)
                    and r[2] == 16), key=lambda r: r[3], default=None)  # fmt: skip
        p95 = _pct(wakes.get("postgres", [1.0]), 0.95)
        got = f"{best[3]:,.0f}" if best else "-"
        print(f"\nTargets: >= 20,000 rec/s with 16 clients on 2 processes: "
              f"{'met' if best and best[3] >= 20_000 else 'NOT met'} ({got}); "
              f"cross-process wake p95 <= 50 ms: {'met' if p95 <= 0.05 else 'NOT met'} "
              f"({p95 * 1000:.1f} ms).")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--backend",
        choices=["sqlite", "postgres"],
        help="the scale-out run: ingest by clients and relay processes, wake latency",
    )
    ap.add_argument("--processes", type=int, default=2, help="relay processes (postgres)")
    ap.add_argument("--wake-rounds", type=int, default=40)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--blobs", type=int, default=200, help="1 MB blobs per measurement")
    ap.add_argument("--quick", action="store_true", help="small counts (a smoke run)")
    ap.add_argument("--bare-http", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--sink-tcp", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.bare_http:
        return _serve_bare_http(args.bare_http)
    if args.sink_tcp:
        return _sink_tcp(args.sink_tcp)
    if args.quick:
        args.records, args.blobs, args.wake_rounds = 2_000, 20, 10
    if args.backend:
        return scale_run(args)
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
            floor_disk = disk_floor(tmp, args.blobs)  # right after the uploads, same volume
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        floor_sql = sqlite_floor(args.records, tmp)
        floor_tcp = tcp_floor(tmp)
        floor_http_up, floor_http_down = http_floor(tmp, args.blobs)
    floor_aes = aesgcm_floor()
    floor_sha = sha256_floor()

    print(f"\nRelay on loopback ({os.cpu_count()} CPUs, Python {sys.version.split()[0]}); "
          f"`python bench/bench_relay.py`\n")  # fmt: skip
    print("| measurement | rate | vs AES-GCM 1 MB | vs the real floor of this path |")
    print("|---|---|---|---|")
    print(f"| commit ingest, 1 client (batches of {BATCH} x {SEALED} B) | {ingest_1:,.0f} rec/s "
          f"| | {ingest_1 / floor_sql:.2f} of SQLite inserts |")  # fmt: skip
    print(f"| commit ingest, 4 clients | {ingest_4:,.0f} rec/s | "
          f"| {ingest_4 / floor_sql:.2f} of SQLite inserts |")  # fmt: skip
    real = {"upload": (floor_disk, "write + fsync"), "download": (floor_http_down, "bare HTTP")}
    for name, rate in blobs.items():
        floor, what = real[name.split(",")[0]]
        print(f"| blob {name}, 1 MB | {rate:,.0f} MB/s | {floor_aes / rate:.1f}x slower "
              f"| {rate / floor:.2f} of {what} |")  # fmt: skip
    floors = [
        ("AES-GCM encryption of 1 MB", floor_aes, "MB/s"),
        ("SQLite inserts, 100-row transactions, WAL, synchronous=FULL", floor_sql, "rec/s"),
        ("SHA-256 of 1 MB", floor_sha, "MB/s"),
        (f"write + fsync of {args.blobs} 1 MB files, one pass", floor_disk, "MB/s"),
        ("bare TCP, Python process to Python process", floor_tcp, "MB/s"),
        ("bare HTTP upload, uvicorn + httpx, body discarded", floor_http_up, "MB/s"),
        ("bare HTTP download, uvicorn + httpx, body discarded", floor_http_down, "MB/s"),
    ]
    for name, rate, unit in floors:
        vs_aes = "" if unit != "MB/s" or rate == floor_aes else f"{floor_aes / rate:.1f}x slower"
        print(f"| floor: {name} | {rate:,.0f} {unit} | {vs_aes} | |")
    target_ok = max(ingest_1, ingest_4) >= 5000
    best_blob = min(blobs["upload, batched"], blobs["download, batched"])
    print(
        f"\nTargets: ingest >= 5,000 rec/s: {'met' if target_ok else 'NOT met'}; "
        f"batched 1 MB blobs within 3x of AES-GCM: "
        f"{'met' if floor_aes / best_blob <= 3 else 'NOT met'} "
        f"({floor_aes / best_blob:.1f}x). For scale, on this machine durable disk writes are "
        f"{floor_aes / floor_disk:.1f}x and bare loopback TCP {floor_aes / floor_tcp:.1f}x "
        f"slower than AES-GCM."
    )


if __name__ == "__main__":
    main()
