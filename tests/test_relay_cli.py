"""`companion relay ...` as a person or script runs it: serve, invite, revoke, devices, prune,
TLS, and a relay killed with SIGKILL in the middle of a flood of commits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from companion.cli import cli
from companion.relay.sqlite_storage import SqliteStorage
from companion.relay.testing import self_signed_cert
from companion.relayclient.client import AuthError, Record, RelayClient, RelayError
from tests.relaybackends import open_store


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_HOME", str(tmp_path / "home"))


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "companion", "relay", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


class Served:
    def __init__(self, data: Path, *extra: str, store: list[str] | None = None) -> None:
        self.port_file = data.parent / f"{data.name}.port"
        self.port_file.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "companion", "relay", "serve",
             *(store or ["--data", str(data)]),
             "--port", "0", "--port-file", str(self.port_file), "--no-access-log", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not self.port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise AssertionError(f"relay did not start: {self.proc.communicate()}")
            time.sleep(0.05)
        self.port = int(self.port_file.read_text())
        self.line = self.proc.stdout.readline().strip()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=20)
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()


def test_every_command_has_help_with_an_example():
    runner = CliRunner()
    for cmd in ("serve", "invite", "revoke", "devices", "prune"):
        out = runner.invoke(cli, ["relay", cmd, "--help"])
        assert out.exit_code == 0 and "Example:" in out.output, (cmd, out.output)


def test_serve_invite_join_revoke(tmp_path, backend):
    data = tmp_path / "relay"
    store = backend.store_args(data)
    served = Served(data, store=store)
    try:
        url = f"http://127.0.0.1:{served.port}"
        assert served.line == f"relay listening on {url}"
        inv = run("invite", *store, "--kind", "human")
        assert inv.returncode == 0, inv.stderr
        code = inv.stdout.strip()
        assert "\n" not in code and "new vault" in inv.stderr and "a human device" in inv.stderr
        laptop = RelayClient(url)
        j = laptop.join(code, "laptop")
        assert j.is_new_vault and code.startswith(j.vault_id + "-") and j.kind == "human"
        assert laptop.commit([Record("ab" * 16, 1, 0, b"sealed")]).ok
        # the same code again: one-time
        with pytest.raises(AuthError, match="already used"):
            RelayClient(url).join(code, "thief", "human")
        # a second invite joins the same vault
        code2 = run("invite", *store, "--expires", "10m").stdout.strip()
        server = RelayClient(url)
        joined = server.join(code2, "server", "agent")
        assert joined.vault_id == j.vault_id and joined.kind == "agent"  # agent: the default

        listing = run("devices", *store)
        assert "laptop" in listing.stdout and "server" in listing.stdout
        out = run("revoke", *store, "laptop")  # by unique name
        assert out.returncode == 0 and j.device_id in out.stdout
        with pytest.raises(AuthError, match="revoked"):
            laptop.changes(0)
        assert server.changes(0).seq == 1  # others unaffected
        devs = json.loads(run("devices", *store, "--json").stdout)
        assert {d["name"]: d["revoked"] is not None for d in devs} == {
            "laptop": True,
            "server": False,
        }
        laptop.close()
        server.close()
    finally:
        rc = served.stop()
    assert rc == 0  # a graceful shutdown
    assert not served.port_file.exists()  # removed on a clean shutdown


def test_sigterm_releases_waiting_long_polls_at_once(tmp_path):
    data = tmp_path / "relay"
    served = Served(data)
    c = RelayClient(f"http://127.0.0.1:{served.port}")
    c.join(run("invite", "--data", str(data)).stdout.strip(), "laptop")
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("changes", c.changes(0, wait=50)))
    t.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    assert served.stop() == 0
    t.join(timeout=30)
    assert out["changes"].records == []  # answered (empty), not cut off
    assert time.monotonic() - t0 < 8  # not held until the 50 s wait or the 10 s grace
    c.close()


def test_invite_target_errors(tmp_path):
    data = str(tmp_path / "relay")
    assert run("invite", "--data", data, "--create").returncode == 0
    assert run("invite", "--data", data, "--new-vault").returncode == 0
    out = run("invite", "--data", data)
    assert out.returncode == 2 and "2 vaults" in out.stderr and "--vault" in out.stderr
    assert "Traceback" not in out.stderr
    vault = SqliteStorage(data).list_vaults()[0].vault_id
    assert run("invite", "--data", data, "--vault", vault).stdout.startswith(vault + "-")
    out = run("invite", "--data", data, "--vault", "ffffffffffffffff")
    assert out.returncode == 2 and "no vault ffffffffffffffff" in out.stderr
    out = run("invite", "--data", data, "--expires", "soon")
    assert out.returncode == 2 and "duration" in out.stderr
    out = run("invite", "--data", data, "--vault", vault, "--kind", "robot")
    assert out.returncode == 2 and "robot" in out.stderr


def test_admin_commands_on_missing_data_and_unknown_device(tmp_path):
    out = run("revoke", "--data", str(tmp_path / "none"), "abc")
    assert out.returncode == 2 and "no relay data in" in out.stderr
    data = str(tmp_path / "relay")
    run("invite", "--data", data, "--create")
    out = run("revoke", "--data", data, "0123456789abcdef")
    assert out.returncode == 2 and "no device" in out.stderr
    out = run("prune", "--data", data)
    assert out.returncode == 0 and "pruned 0 old revisions" in out.stdout


def test_port_in_use_is_a_clear_error(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out = run("serve", "--data", str(tmp_path / "r"), "--port", str(port))
    assert out.returncode == 1 and f"cannot serve on 127.0.0.1:{port}" in out.stderr
    assert "Traceback" not in out.stderr
    # nothing was created for a relay that never served (#39, item 8d)
    assert not (tmp_path / "r").exists()


def test_serve_over_tls(tmp_path):
    certfile, keyfile = self_signed_cert(tmp_path)
    data = tmp_path / "relay"
    served = Served(data, "--certfile", str(certfile), "--keyfile", str(keyfile))
    try:
        assert served.line.startswith("relay listening on https://127.0.0.1:")
        c = RelayClient(f"https://127.0.0.1:{served.port}", verify=str(certfile))
        c.join(run("invite", "--data", str(data)).stdout.strip(), "laptop")
        assert c.commit([Record("cd" * 16, 1, 0, b"x")]).ok
        c.close()
    finally:
        served.stop()
    out = run("serve", "--data", str(data), "--certfile", str(certfile))
    assert out.returncode == 2 and "go together" in out.stderr


def test_sigkill_mid_flood_loses_no_acknowledged_commit_and_leaves_no_partial_batch(
    tmp_path, backend
):
    data = tmp_path / "relay"
    store_args = backend.store_args(data)
    served = Served(data, store=store_args)
    url = f"http://127.0.0.1:{served.port}"
    client = RelayClient(url, timeout=10)
    client.join(run("invite", *store_args).stdout.strip(), "flood", "agent")
    per_batch = 25
    acked: list[tuple[int, int]] = []
    attempted: list[tuple[int, int]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def fid(worker: int, batch: int, i: int) -> str:
        return f"{worker:08x}{batch:08x}{i:016x}"

    def flood(worker: int) -> None:
        batch = 0
        while not stop.is_set():
            records = [
                Record(fid(worker, batch, i), 1, 0, os.urandom(300)) for i in range(per_batch)
            ]
            with lock:
                attempted.append((worker, batch))
            try:
                ok = client.commit(records).ok
            except RelayError:
                return  # the relay is gone
            if ok:
                with lock:
                    acked.append((worker, batch))
            batch += 1

    threads = [threading.Thread(target=flood, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(acked) < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    served.proc.send_signal(signal.SIGKILL)
    served.stop()
    stop.set()
    for t in threads:
        t.join(timeout=30)
    client.close()
    assert len(acked) >= 40

    store = open_store(store_args)
    vault = store.list_vaults()[0].vault_id
    present = {r.file_id for r in store.changes(vault, 0, 10**6, 1 << 40).records}
    for worker, batch in acked:
        assert all(fid(worker, batch, i) in present for i in range(per_batch)), (worker, batch)
    for worker, batch in attempted:
        n = sum(fid(worker, batch, i) in present for i in range(per_batch))
        assert n in (0, per_batch), f"partial batch {worker}/{batch}: {n} of {per_batch}"
    assert len(present) == store.get_vault(vault).seq  # seq counts exactly what is stored
    store.close()

    served = Served(data, store=store_args)  # and the relay starts again on the same data
    try:
        again = RelayClient(f"http://127.0.0.1:{served.port}")
        again.join(run("invite", *store_args).stdout.strip(), "after")
        assert len(again.changes(0).records) == len(present)
        again.close()
    finally:
        served.stop()


def test_a_device_name_the_schema_allows_is_listed_escaped(tmp_path):
    """The relay accepts what its published schema allows (an unassigned code point, #39), and
    the admin's terminal shows anything invisible in a name escaped, never raw."""
    data = tmp_path / "relay"
    served = Served(data)
    try:
        code = run("invite", "--data", str(data), "--kind", "human").stdout.strip()
        client = RelayClient(f"http://127.0.0.1:{served.port}")
        client.join(code, "lab\U000580f3")
        client.close()
        listing = run("devices", "--data", str(data))
        assert listing.returncode == 0, listing.stderr
        assert "lab\\u580f3" in listing.stdout and "\U000580f3" not in listing.stdout
        out = run("revoke", "--data", str(data), "lab\U000580f3")
        assert out.returncode == 0 and "(lab\\u580f3," in out.stdout
    finally:
        served.stop()
