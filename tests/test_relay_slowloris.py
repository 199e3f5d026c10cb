"""Half-sent requests cannot stop the relay (issue #12, item 9).

A real `companion relay serve` with a small open-file limit (512) gets 300 connections from
one address that send half a request head, or a complete head and a stalled body (blob
uploads, commits). Before the fix this exhausted the descriptors: health requests were
refused and asyncio logged a traceback per failed accept (about 200 MB in 50 s). Now the
per-address cap drops the excess at once, the header and idle timeouts close the rest, health
requests from another address keep being answered, and the log stays a few lines long.
"""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from companion.relayclient.client import RelayClient

ATTACKERS = 300


def _limit_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512))


@pytest.fixture
def served(tmp_path: Path):
    data, port_file, log = tmp_path / "data", tmp_path / "port", tmp_path / "relay.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "companion", "relay", "serve", "--data", str(data),
             "--port", "0", "--port-file", str(port_file), "--no-access-log",
             "--header-timeout", "1", "--idle-timeout", "1"],
            stdout=out, stderr=out, preexec_fn=_limit_fds,
        )  # fmt: skip
    deadline = time.monotonic() + 30
    while not port_file.exists():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    invite = subprocess.run(
        [sys.executable, "-m", "companion", "relay", "invite", "--data", str(data)],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    try:
        yield int(port_file.read_text()), invite, log, proc
    finally:
        proc.terminate()
        proc.wait(20)


def health_from_elsewhere(port: int) -> bool:
    """One health request on a fresh connection from 127.0.0.2 (another client address)."""
    try:
        with socket.create_connection(
            ("127.0.0.1", port), timeout=5, source_address=("127.0.0.2", 0)
        ) as s:
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def closed_by_peer(s: socket.socket) -> bool:
    try:
        return s.recv(4096) == b""
    except ConnectionResetError:
        return True
    except (BlockingIOError, TimeoutError):
        return False


def test_half_sent_requests_do_not_stop_the_relay_or_flood_its_log(served) -> None:
    port, invite, log, proc = served
    client = RelayClient(f"http://127.0.0.1:{port}")
    client.join(invite, "probe")
    token, vault = client._token, client.vault_id
    client.close()
    heads = [
        b"GET /v1/health HTTP/1.1\r\nHost: relay\r\n",  # the head never ends
        (f"PUT /v1/vaults/{vault}/blobs/{{i:032x}} HTTP/1.1\r\nHost: relay\r\n"
         f"Authorization: Bearer {token}\r\nContent-Type: application/octet-stream\r\n"
         f"X-Content-SHA256: {'0' * 64}\r\nContent-Length: 100000\r\n\r\nxxxxxxxxxx").encode(),
        (f"POST /v1/vaults/{vault}/commit HTTP/1.1\r\nHost: relay\r\n"
         f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
         "Content-Length: 100000\r\n\r\n{\"records\": [").encode(),
    ]  # fmt: skip
    socks = []
    try:
        for i in range(ATTACKERS):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            try:
                s.sendall(heads[i % 3].replace(b"{i:032x}", f"{i:032x}".encode()))
            except OSError:
                pass  # already dropped by the cap
            socks.append(s)
        answered = [health_from_elsewhere(port) for _ in range(10)]
        assert all(answered), f"health answered {sum(answered)} of 10 times"
        for s in socks:
            s.setblocking(False)
        deadline = time.monotonic() + 30
        pending = list(socks)
        while pending and time.monotonic() < deadline:
            pending = [s for s in pending if not closed_by_peer(s)]
            time.sleep(0.1)
        assert not pending, f"{len(pending)} stalled connections are still open"
        assert health_from_elsewhere(port)
        assert proc.poll() is None
    finally:
        for s in socks:
            s.close()
    text = log.read_text(errors="replace")
    assert len(text) < 20_000, text[-3000:]
    assert text.count("Traceback") <= 2, text[-3000:]
