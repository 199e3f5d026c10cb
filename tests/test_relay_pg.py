"""Several relay processes on one PostgreSQL database (issue #20), against real servers on
loopback: `companion relay serve --database URL` twice, a real PostgreSQL cluster, and for
the object-store path a real S3 endpoint (moto's server, an HTTP S3 implementation).

- compare-and-swap commits stay exact when clients race through both processes;
- a long-poll on one process wakes when the other commits (LISTEN/NOTIFY);
- an invite redeemed through both at once admits one device; failed-auth limits add up;
- `companion relay migrate` versions the schema, and `serve` refuses an unmigrated database;
- blobs in S3: stored, deduplicated, verified on read, pruned.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from companion.relay.storage import NewRecord, RetentionPolicy
from companion.relayclient.client import AuthError, Record, RelayBusy, RelayClient, RelayError
from tests.pgcluster import empty_database, fresh_database, release


def fid(n: int) -> str:
    return f"{n:032x}"


class Served:
    """`companion relay serve --database URL` in its own process."""

    def __init__(self, tmp: Path, name: str, *store: str) -> None:
        self.port_file = tmp / f"{name}.port"
        self.log = tmp / f"{name}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "companion", "relay", "serve", *store, "--port", "0",
                 "--port-file", str(self.port_file), "--no-access-log"],
                stdout=out, stderr=out, env={**os.environ, "COMPANION_HOME": str(tmp / name)},
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while not self.port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise AssertionError(f"relay {name} did not start: {self.log.read_text()}")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{int(self.port_file.read_text())}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)


def admin(*args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "companion", "relay", *args],
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.fixture
def two(tmp_path):
    """Two relay processes on one fresh database, and an admin helper for invites."""
    url = fresh_database()
    a = Served(tmp_path, "a", "--database", url)
    b = Served(tmp_path, "b", "--database", url)

    def invite(*extra: str) -> str:
        out = admin("invite", "--database", url, *extra)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    try:
        yield a, b, invite, url
    finally:
        a.stop()
        b.stop()
        release(url)


def test_cas_commits_stay_exact_when_clients_race_through_two_processes(two):
    a, b, invite, _ = two
    first = RelayClient(a.url)
    j = first.join(invite("--kind", "human"), "laptop")
    clients = [first]
    for i in range(5):
        c = RelayClient(b.url if i % 2 == 0 else a.url)
        c.join(invite("--vault", j.vault_id), f"agent-{i}")
        clients.append(c)
    rounds = 30
    wins: dict[int, list[int]] = {}
    lock = threading.Lock()
    barrier = threading.Barrier(len(clients))

    def racer(k: int, c: RelayClient) -> None:
        barrier.wait()
        for rev in range(1, rounds + 1):
            while True:  # race for rev `rev` of one file until someone holds it
                head = c.head(fid(1))
                have = head.rev if head else 0
                if have >= rev:
                    break
                res = c.commit([Record(fid(1), have + 1, have, f"{k}:{have + 1}".encode())])
                if res.ok and res.results[0].status == "committed":
                    with lock:
                        wins.setdefault(have + 1, []).append(k)

    threads = [threading.Thread(target=racer, args=(k, c)) for k, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(wins) == list(range(1, rounds + 1))
    assert all(len(w) == 1 for w in wins.values()), {r: w for r, w in wins.items() if len(w) > 1}
    hist = first.history(fid(1), limit=100)
    assert [r.rev for r in hist] == list(range(rounds, 0, -1))  # no gap, no duplicate
    for r in hist:  # every stored revision is the one its winner committed
        assert r.sealed == f"{wins[r.rev][0]}:{r.rev}".encode()
    page = first.changes_page(0)
    assert [r.seq for r in page.records] == list(range(1, rounds + 1))  # seq in commit order
    for c in clients:
        c.close()


def test_a_long_poll_on_one_process_wakes_when_the_other_commits(two):
    a, b, invite, _ = two
    waiter = RelayClient(a.url)
    j = waiter.join(invite(), "server")
    writer = RelayClient(b.url)
    writer.join(invite("--vault", j.vault_id), "laptop")
    for n in range(3):
        since = waiter.changes_page(0).vault_seq
        out: dict = {}

        def wait(out: dict = out, since: int = since) -> None:
            out["records"] = waiter.changes(since, wait=20).records
            out["woke"] = time.monotonic()

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.3)  # let the request reach relay a and start waiting ...
        assert t.is_alive()  # ... it is waiting, not answered empty
        sent = time.monotonic()
        writer.commit([Record(fid(100 + n), 1, 0, b"from the other process")])
        t.join(20)
        assert [r.file_id for r in out["records"]] == [fid(100 + n)]
        assert out["woke"] - sent < 10  # woken by the NOTIFY, well before its 20 s wait
    waiter.close()
    writer.close()


def test_an_invite_redeemed_through_both_processes_at_once_admits_one_device(two):
    a, b, invite, _ = two
    for _ in range(5):
        code = invite()
        results: list[object] = []
        barrier = threading.Barrier(2)

        def redeem(url: str, code=code, results=results, barrier=barrier) -> None:
            barrier.wait()
            try:
                results.append(RelayClient(url).join(code, "racer"))
            except RelayError as exc:
                results.append(exc)

        threads = [threading.Thread(target=redeem, args=(u,)) for u in (a.url, b.url)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        joined = [r for r in results if not isinstance(r, Exception)]
        refused = [r for r in results if isinstance(r, AuthError)]
        assert len(joined) == 1 and len(refused) == 1, results
        assert refused[0].code == "invite_used"


def test_failed_authentications_add_up_across_processes(two):
    a, b, invite, _ = two
    good = RelayClient(a.url)
    good.join(invite(), "server")
    bad = [RelayClient(u, "0123456789abcdef." + "C" * 43, good.vault_id) for u in (a.url, b.url)]
    for i in range(10):  # the default bucket: 10 failures
        with pytest.raises(AuthError):
            bad[i % 2].changes(0)
    for c in bad:
        with pytest.raises(RelayBusy):
            c.changes(0)
    assert RelayClient(b.url, good._token, good.vault_id).changes(0).seq == 0


def test_migrate_versions_the_schema_and_serve_refuses_an_unmigrated_database(tmp_path):
    url = empty_database()
    out = admin("serve", "--database", url, "--port", "0")
    assert out.returncode == 2 and "companion relay migrate" in out.stderr
    assert "Traceback" not in out.stderr
    out = admin("migrate", "--database", url)
    assert out.returncode == 0 and "schema 0 -> 1" in out.stdout, out.stderr
    out = admin("migrate", "--database", url)
    assert out.returncode == 0 and "up to date" in out.stdout
    # the URL may come from the environment, keeping a password out of the process list
    out = admin("invite", env={"COMPANION_RELAY_DATABASE": url})
    assert out.returncode == 0 and out.stdout.strip()
    out = admin("devices", "--database", "postgresql://postgres@127.0.0.1:9/none")
    assert out.returncode == 2 and "cannot connect" in out.stderr and "Traceback" not in out.stderr
    out = admin("devices", "--data", str(tmp_path), "--database", url)
    assert out.returncode == 2 and "not both" in out.stderr


def test_two_migrations_at_once_apply_each_step_once():
    from companion.relay.pg_schema import LATEST, migrate

    url = empty_database()
    results: list[tuple[int, int]] = []
    threads = [threading.Thread(target=lambda: results.append(migrate(url))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [(0, LATEST)] + [(LATEST, LATEST)] * 3


# -- blobs in an S3-compatible store -------------------------------------------------------------


@pytest.fixture(scope="module")
def s3():
    """moto's S3 server on loopback: real HTTP, real boto3 requests."""
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    old = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                          "AWS_DEFAULT_REGION")}  # fmt: skip
    os.environ.update(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
                      AWS_DEFAULT_REGION="us-east-1")  # fmt: skip
    import boto3

    endpoint = f"http://127.0.0.1:{port}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="relay-blobs")
    yield endpoint
    server.stop()
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def test_blobs_in_s3_are_stored_deduplicated_verified_and_pruned(s3):
    import boto3

    from companion.relay.pg_storage import PgStorage, S3Blobs
    from companion.relay.storage import BlobCorrupt

    url = fresh_database()
    store = PgStorage(url, blobs=S3Blobs("s3://relay-blobs/v1", endpoint_url=s3))
    bucket = boto3.client("s3", endpoint_url=s3)
    V = "00000000000000aa"

    def objects() -> list[str]:
        got = bucket.list_objects_v2(Bucket="relay-blobs", Prefix="v1/")
        return sorted(o["Key"] for o in got.get("Contents", []))

    try:
        store.create_vault(V, 1000.0)
        data = os.urandom(3 * 1024 * 1024 + 17)
        assert store.put_blob(V, "ab" * 16, data, 1000.0).created
        assert not store.put_blob(V, "ab" * 16, data, 1000.0).created  # dedup by id
        assert store.put_blob(V, "cd" * 16, data, 1000.0).created  # same bytes, another id
        assert len(objects()) == 1  # stored once
        assert store.read_blob(V, "cd" * 16)[1] == data
        rec = NewRecord(fid(1), 1, 0, b"r", ("ab" * 16,))
        assert store.commit(V, "d" * 16, [rec], 1000.0).committed
        # the object is altered in the store behind the relay's back: refused, forgotten
        store.put_blob(V, "ef" * 16, b"other bytes", 1000.0)
        key = next(k for k in objects() if k.endswith(__import__("hashlib").sha256(
            b"other bytes").hexdigest()))  # fmt: skip
        bucket.put_object(Bucket="relay-blobs", Key=key, Body=b"altered bytes")
        with pytest.raises(BlobCorrupt):
            store.read_blob(V, "ef" * 16)
        assert store.missing_blobs(V, ["ef" * 16]) == ["ef" * 16]
        # "cd" is referenced by nothing: pruned after the grace period; "ab" stays (a record)
        stats = store.prune(RetentionPolicy(blob_grace_s=60), 1000.0 + 3600)
        assert stats.blobs == 1 and store.missing_blobs(V, ["ab" * 16, "cd" * 16]) == ["cd" * 16]
        assert len(objects()) == 1  # the shared content is still needed by "ab"
        store.commit(V, "d" * 16, [NewRecord(fid(1), 2, 1, b"r2")], 1000.0)
        store.prune(RetentionPolicy(keep_days=0, keep_last=1, blob_grace_s=60), 1000.0 + 9e6)
        assert objects() == []  # nothing references it any more: the object is deleted
    finally:
        store.close()
        release(url)


def test_serve_with_blobs_in_s3(tmp_path, s3):
    url = fresh_database()
    served = Served(tmp_path, "s3", "--database", url, "--blobs", "s3://relay-blobs/served",
                    "--s3-endpoint", s3)  # fmt: skip
    try:
        code = admin("invite", "--database", url).stdout.strip()
        c = RelayClient(served.url)
        c.join(code, "server")
        blobs = {f"{i:032x}": os.urandom(50_000 + i) for i in range(5)}
        assert sorted(c.put_blobs(blobs)) == sorted(blobs)
        assert c.get_blobs(list(blobs)) == blobs
        c.close()
    finally:
        served.stop()
        release(url)
