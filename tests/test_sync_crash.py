"""Crash safety: `kill -9` of a syncing client and of the relay at random moments, many times.

After every kill: no note is torn or empty (each visible file holds a complete version that was
written to it), no edit acknowledged by a successful sync is lost, and the next round converges.
`COMPANION_SYNC_CRASH_ITERATIONS` (default 8) sets how many kills each test makes.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from companion.errors import CompanionError
from tests.syncharness import Device, SyncCluster

ITERATIONS = int(os.environ.get("COMPANION_SYNC_CRASH_ITERATIONS", "8"))


class Versions:
    """Every version the test ever wrote, per path (a file must always hold one of them)."""

    def __init__(self) -> None:
        self.by_path: dict[str, set[bytes]] = {}

    def write(self, dev: Device, rel: str, data: bytes) -> None:
        dev.write(rel, data)
        self.by_path.setdefault(rel, set()).add(data)

    def check_whole(self, dev: Device) -> None:
        for rel, data in dev.files().items():
            assert data in self.by_path.get(rel, set()), f"{dev.name}:{rel} is torn: {data[:60]!r}"


def _body(tag: str, rng: random.Random) -> bytes:
    return (
        f"# {tag}\n" + "".join(f"line {i} of {tag}\n" for i in range(rng.randint(1, 60)))
    ).encode()


@pytest.mark.parametrize("relay", ["thread", "pg2"])
def test_client_killed_mid_sync_loses_nothing(tmp_path: Path, relay: str) -> None:
    rng = random.Random(1234)
    with SyncCluster(tmp_path, relay=relay) as c:
        a = c.add_device("laptop", "human")
        b = c.add_device("server", "agent")
        v = Versions()
        for it in range(ITERATIONS):
            for i in range(20):  # so that a's round also downloads and applies
                v.write(b, f"from-b/{it}/{i}.md", _body(f"b{it}.{i}", rng))
            b.sync()
            for i in range(120):
                v.write(a, f"from-a/{it}/{i}.md", _body(f"a{it}.{i}", rng))
            for rel in rng.sample(sorted(p for p in v.by_path if p.startswith("from-a/")), 10):
                v.write(a, rel, _body(f"edit{it}-{rel}", rng))
            a.restart()  # the engine below is a separate process
            proc = subprocess.Popen(
                [sys.executable, "-m", "companion", "sync", str(a.vault)],
                env=a.env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(rng.uniform(0.3, 1.6))
            proc.kill()
            proc.wait()
            v.check_whole(a)
            latest_a = a.files()
            report = a.sync()
            assert report.converged
            b.sync()
            v.check_whole(b)
            for rel, data in latest_a.items():
                assert b.read(rel) == data, f"edit of {rel} lost after the kill"
            c.assert_converged()
        if relay == "pg2":
            assert min(c.relay.proxy.forwarded) > 10, c.relay.proxy.forwarded


@pytest.mark.parametrize("relay", ["process", "pg2"])  # pg2: both relay processes are killed
def test_relay_killed_mid_sync_loses_no_acknowledged_edit(tmp_path: Path, relay: str) -> None:
    rng = random.Random(99)
    with SyncCluster(tmp_path, relay=relay, relay_log_level="warning") as c:
        a = c.add_device("laptop", "human")
        b = c.add_device("server", "agent")
        v = Versions()
        acknowledged: dict[str, bytes] = {}
        for it in range(ITERATIONS):
            for i in range(80):
                v.write(a, f"n/{it}/{i}.md", _body(f"{it}.{i}", rng))
            held = a.files()
            outcome: list[object] = []

            def run(outcome: list[object] = outcome) -> None:
                try:
                    outcome.append(a.sync())
                except CompanionError as exc:
                    outcome.append(exc)

            t = threading.Thread(target=run)
            t.start()
            time.sleep(rng.uniform(0.0, 0.25))
            c.relay.kill()
            t.join(60)
            assert not t.is_alive()
            if not isinstance(outcome[0], Exception):
                acknowledged.update(held)  # the relay said yes before it died
            v.check_whole(a)
            c.relay.start()
            assert a.sync().converged
            acknowledged.update(a.files())
            b.sync()
            v.check_whole(b)
            for rel, data in acknowledged.items():
                assert b.read(rel) == data, f"acknowledged edit of {rel} lost"
            c.assert_converged()
        if relay == "pg2":  # the devices' requests really went to both relay processes
            assert min(c.relay.proxy.forwarded) > 10, c.relay.proxy.forwarded
