"""`companion relay export | import` (issue #20): a relay's data moves between SQLite and
PostgreSQL as it is, without any vault key, and the devices carry on: the sync probe (an edit
each way, both copies converged) passes before the move and after it, with no resync."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from companion.errors import InputError
from companion.relay.auth import hash_secret
from companion.relay.sqlite_storage import SqliteStorage
from companion.relay.storage import Device, NewRecord, RelayStorage
from companion.relay.transfer import export_relay, import_relay
from tests.relaybackends import Backend
from tests.relayproxy import RelayProxy
from tests.syncharness import ProcessRelay, SyncCluster

V = "00000000000000aa"


def populate(store: RelayStorage) -> None:
    store.create_vault(V, 1000.0)
    store.put_key_blob(V, b"k1" * 40, None, 1001.0, "d" * 16)
    store.put_key_blob(V, b"k2" * 40, hashlib.sha256(b"k1" * 40).hexdigest(), 1002.0, "d" * 16)
    store.add_invite(V, hash_secret("unused"), 1000.0, 1e12, "human")
    store.add_invite(V, hash_secret("used"), 1000.0, 1e12)
    store.redeem_invite(V, hash_secret("used"), Device("d" * 16, V, "laptop", "", b"t" * 32,
                                                       1003.0), 1003.0)  # fmt: skip
    store.load_device(Device("e" * 16, V, "old", "agent", b"u" * 32, 1004.0, 1005.0))
    for i in range(30):
        blob = f"{i:032x}"
        store.put_blob(V, blob, os.urandom(1000 + i), 1006.0)
        store.commit(V, "d" * 16, [NewRecord(f"{i % 7:032x}", i // 7 + 1, i // 7,
                                             os.urandom(200), (blob,))], 1007.0 + i)  # fmt: skip
    store.put_blob(V, "ff" * 16, b"uploaded, not yet committed", 1040.0)


def snapshot(store: RelayStorage) -> dict:
    out: dict = {
        "vaults": store.dump_vaults(),
        "wraps": [store.key_history(v.vault_id) for v in store.dump_vaults()],
        "invites": sorted(store.dump_invites(), key=lambda i: i.code_hash),
        "devices": sorted(store.list_devices(), key=lambda d: d.device_id),
        "records": store.changes(V, 0, 10_000, 1 << 30).records,
        "blobs": [(b, store.read_blob(V, b.info.blob_id)[1]) for b in store.list_blobs(V, "", 999)],
    }
    return out


@pytest.mark.parametrize("source, target", [("sqlite", "postgres"), ("postgres", "sqlite")])
def test_export_then_import_keeps_everything(tmp_path, source, target):
    src_b, dst_b = Backend(source), Backend(target)
    src = src_b.storage(tmp_path / "src")
    dst = dst_b.storage(tmp_path / "dst")
    try:
        populate(src)
        before = snapshot(src)
        counts = export_relay(src, tmp_path / "export", source=source)
        assert counts == {"vaults": 1, "invites": 2, "devices": 2, "records": 30, "blobs": 31}
        assert import_relay(dst, tmp_path / "export") == counts
        assert snapshot(dst) == before
        # and the imported store works on: seq, CAS heads and one-time invites carried over
        out = dst.commit(V, "d" * 16, [NewRecord(f"{0:032x}", 6, 5, b"next")], 2000.0)
        assert out.committed and out.seq == 31
        again = dst.commit(V, "d" * 16, [NewRecord(f"{0:032x}", 6, 5, b"x")], 2000.0)
        assert again.results[0].status == "conflict"
        newcomer = Device("f" * 16, V, "new", "", b"v" * 32, 2001.0)
        _, dev = dst.redeem_invite(V, hash_secret("unused"), newcomer, 2001.0)
        assert dev.kind == "human"
        with pytest.raises(InputError, match="already holds"):
            import_relay(dst, tmp_path / "export")  # never over existing data
    finally:
        src.close()
        dst.close()


def test_a_damaged_export_is_refused(tmp_path, backend):
    src = SqliteStorage(tmp_path / "src")
    populate(src)
    export_relay(src, tmp_path / "export", source="sqlite")
    src.close()
    victim = next((tmp_path / "export" / "blobs").rglob("*0003"))
    victim.write_bytes(b"altered")
    dst = backend.storage(tmp_path / "dst")
    try:
        with pytest.raises(Exception, match="0003"):
            import_relay(dst, tmp_path / "export")
    finally:
        dst.close()


def relay_cli(*args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "companion", "relay", *args],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out


def test_devices_carry_on_after_the_relay_moves_to_postgresql_and_back(tmp_path: Path) -> None:
    """SQLite relay -> export -> PostgreSQL relay -> export -> SQLite relay, devices pointed at
    one proxy address throughout (as behind a DNS name): the sync probe passes at every step,
    nothing is uploaded again after a move, and no device takes a move for a restore (the
    relay names the same record at its cursor, `at_since`)."""
    with SyncCluster(tmp_path, relay="process", relay_log_level="warning") as c:
        assert isinstance(c.relay, ProcessRelay)
        with RelayProxy(c.relay.url) as proxy:
            a = c.add_device("laptop", "human", relay_url=proxy.url)
            b = c.add_device("server", "agent", relay_url=proxy.url)
            for i in range(20):
                a.write(f"notes/{i}.md", f"note {i}\n" * (i + 1))
            a.write("big.bin", os.urandom(3 * 1024 * 1024))

            def probe(tag: str) -> None:  # the sync probe: an edit each way, converged
                a.write(f"probe/{tag}-a.md", f"from the laptop, {tag}\n")
                first = a.sync()  # the same record at its cursor: a move is not a restore
                assert first.converged and not first.relay_restored
                assert not b.sync().relay_restored
                assert b.read(f"probe/{tag}-a.md") == f"from the laptop, {tag}\n".encode()
                b.write(f"probe/{tag}-b.md", f"from the server, {tag}\n")
                assert b.sync().converged
                a.sync()
                assert a.read(f"probe/{tag}-b.md") == f"from the server, {tag}\n".encode()
                c.assert_converged()

            probe("sqlite")
            c.relay.stop()
            relay_cli("export", "--data", str(c.relay.data_dir), "--to", str(tmp_path / "x1"))
            url = Backend("postgres").database()
            relay_cli("import", "--database", url, "--from", str(tmp_path / "x1"))
            pg = ProcessRelay(tmp_path / "pg-relay", log_level="warning", database=url)
            proxy.upstreams[:] = [pg.url]
            a.restart()
            b.restart()
            up = a.sync()
            assert up.uploaded == [] and up.downloaded == []  # nothing to resync
            probe("postgres")
            hist = a.engine().core.remote.history("probe/sqlite-a.md")
            assert len(hist) == 1  # history carried over
            pg.stop()
            relay_cli("export", "--database", url, "--to", str(tmp_path / "x2"))
            back = tmp_path / "sqlite-again"
            relay_cli("import", "--data", str(back), "--from", str(tmp_path / "x2"))
            again = ProcessRelay(back, log_level="warning")
            proxy.upstreams[:] = [again.url]
            a.restart()
            b.restart()
            probe("sqlite-again")
            again.stop()
