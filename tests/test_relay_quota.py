"""The relay's daily quota per agent device (issue 44, finding 7): an agent device past its
records or bytes for the UTC day is answered 429 `quota_exceeded` with Retry-After (the next
UTC midnight), as the relay answers its other limits; a human device is never limited by it;
the vault's device list shows each agent's usage, so every device (the agent's own too) sees
it is throttled. The relay's clock is injected: nobody waits for midnight."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from companion.relay.limits import Limits
from tests.test_relay_api import Relay, assert_error, rec, sha

DAY0 = dt.datetime(2026, 12, 1, 22, 0, tzinfo=dt.UTC).timestamp()  # two hours to midnight


class Clock:
    def __init__(self) -> None:
        self.now = DAY0

    def __call__(self) -> float:
        return self.now


def _devices(relay: Relay) -> tuple[dict, dict]:
    human = relay.join("laptop", "human")
    agent = relay.join("server", "agent", vault_id=human["vault_id"])
    for d in (human, agent):
        d["h"] = {"Authorization": f"Bearer {d['token']}"}
        d["base"] = f"/v1/vaults/{d['vault_id']}"
    return human, agent


def _commit(relay: Relay, dev: dict, records: list[dict]):
    return relay.http.post(f"{dev['base']}/commit", json={"records": records}, headers=dev["h"])


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_an_agent_past_its_records_is_refused_and_a_human_never(
    tmp_path: Path, backend, clock: Clock
) -> None:
    limits = Limits(agent_records_per_day=5, agent_bytes_per_day=0)
    relay = Relay(tmp_path, limits=limits, backend=backend, clock=clock)
    try:
        human, agent = _devices(relay)
        for n in range(5):
            assert _commit(relay, agent, [rec(n)]).status_code == 200
        r = _commit(relay, agent, [rec(5)])
        body = assert_error(r, 429, "quota_exceeded")
        assert r.headers["retry-after"] == str(2 * 3600)  # the next UTC midnight
        assert "5 records" in body["message"] and "agent-records-per-day" in body["message"]
        assert body["quota"]["records"] == 5 and body["quota"]["records_limit"] == 5
        # several records at once that would go past it: refused whole
        assert _commit(relay, agent, [rec(6), rec(7)]).status_code == 429
        # the human device: far past the agent's quota, never refused by it
        for n in range(100, 160, 10):
            recs = [rec(n + i) for i in range(10)]
            assert _commit(relay, human, recs).status_code == 200
        devices = relay.http.get(f"{agent['base']}/devices", headers=human["h"]).json()
        shown = {d["name"]: d.get("quota") for d in devices["devices"]}
        assert shown["laptop"] is None
        q = shown["server"]
        assert q["records"] == 5 and q["records_limit"] == 5
        assert q["throttled_until"] == DAY0 + 2 * 3600
        clock.now += 2 * 3600  # midnight: a new day, a new quota
        assert _commit(relay, agent, [rec(5)]).status_code == 200
        devices = relay.http.get(f"{agent['base']}/devices", headers=agent["h"]).json()
        q = {d["name"]: d.get("quota") for d in devices["devices"]}["server"]
        assert q["records"] == 1 and q["throttled_until"] is None
    finally:
        relay.close()


def test_an_agent_past_its_bytes_is_refused_uploads_too(
    tmp_path: Path, backend, clock: Clock
) -> None:
    limits = Limits(agent_records_per_day=0, agent_bytes_per_day=100_000)
    relay = Relay(tmp_path, limits=limits, backend=backend, clock=clock)
    try:
        human, agent = _devices(relay)
        blob = b"x" * 99_000
        bid = "b" * 64
        put = relay.http.put(
            f"{agent['base']}/blobs/{bid}",
            content=blob,
            headers={**agent["h"], "Content-Type": "application/octet-stream",
                     "X-Content-SHA256": sha(blob)},
        )  # fmt: skip
        assert put.status_code == 201, put.text
        assert _commit(relay, agent, [rec(1, blobs=[bid], sealed=b"s" * 2000)]).status_code == 200
        # 101,000 bytes today: the next upload and the next commit are refused
        other = b"y" * 10
        r = relay.http.put(
            f"{agent['base']}/blobs/{'c' * 64}",
            content=other,
            headers={**agent["h"], "Content-Type": "application/octet-stream",
                     "X-Content-SHA256": sha(other)},
        )  # fmt: skip
        body = assert_error(r, 429, "quota_exceeded")
        assert "bytes" in body["message"] and "agent-bytes-per-day" in body["message"]
        assert int(r.headers["retry-after"]) == 2 * 3600
        assert_error(_commit(relay, agent, [rec(2)]), 429, "quota_exceeded")
        # the person's device uploads and commits as much as it likes
        big = b"z" * 500_000
        put = relay.http.put(
            f"{human['base']}/blobs/{'d' * 64}",
            content=big,
            headers={**human["h"], "Content-Type": "application/octet-stream",
                     "X-Content-SHA256": sha(big)},
        )  # fmt: skip
        assert put.status_code == 201
        assert _commit(relay, human, [rec(3, blobs=["d" * 64])]).status_code == 200
    finally:
        relay.close()


def test_health_reports_the_agent_quota(tmp_path: Path) -> None:
    relay = Relay(tmp_path, limits=Limits(agent_records_per_day=7, agent_bytes_per_day=9))
    try:
        limits = relay.http.get("/v1/health").json()["limits"]
        assert limits["agent_records_per_day"] == 7 and limits["agent_bytes_per_day"] == 9
        defaults = Limits()
        assert defaults.agent_records_per_day > 0 and defaults.agent_bytes_per_day > 0
        assert json.dumps(defaults.as_dict())
    finally:
        relay.close()


@pytest.mark.timeout(240)
def test_status_shows_the_throttled_agent_on_every_device(tmp_path: Path) -> None:
    """Through the real sync engine and relay: the agent device's sync stops at its quota
    (its writes stay queued, state `throttled`), the person's edits still reach it, and
    `companion status` says so on the agent's device and on the person's."""
    from companion.relayclient.errors import QuotaExceeded
    from tests.syncharness import SyncCluster

    limits = Limits(agent_records_per_day=2, agent_bytes_per_day=0)
    with SyncCluster(tmp_path / "c", relay_limits=limits) as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        laptop.write("Home.md", "# Home\n")
        laptop.sync()
        server.sync()
        for n in range(2):
            server.write(f"knowledge/n{n}.md", f"# n{n}\n")
        server.sync()  # its first two records today
        server.write("knowledge/n2.md", "# n2\n")
        with pytest.raises(QuotaExceeded, match="agent-records-per-day"):
            server.sync()
        laptop.write("Plan.md", "# the person's plan\n")
        for n in range(20):  # the person is never limited by the agent quota
            laptop.write(f"journal/{n}.md", f"# {n}\n")
        laptop.sync()
        with pytest.raises(QuotaExceeded):
            server.sync()
        assert server.read("Plan.md") == b"# the person's plan\n"  # pulls still land

        own = server.cli("status", str(server.vault), "--json")
        assert own.returncode == 0, own.stderr
        data = json.loads(own.stdout)
        assert data["state"] == "throttled"
        assert "agent-records-per-day" in data["last_error"]["message"]
        (agent,) = [d for d in data["agent_quotas"] if d["name"] == "server"]
        assert agent["records"] == 2 and agent["throttled_until"]
        text = server.cli("status", str(server.vault)).stdout
        assert "throttled" in text and "2 of 2 records" in text

        person = laptop.cli("status", str(laptop.vault))
        assert person.returncode == 0, person.stderr
        assert "server (agent)" in person.stdout and "throttled until" in person.stdout


def test_relay_serve_takes_the_agent_quota(tmp_path: Path) -> None:
    import httpx

    from tests.test_relay_cli import Served

    served = Served(
        tmp_path / "relay", "--agent-records-per-day", "3", "--agent-bytes-per-day", "0"
    )
    try:
        limits = httpx.get(f"http://127.0.0.1:{served.port}/v1/health").json()["limits"]
        assert limits["agent_records_per_day"] == 3 and limits["agent_bytes_per_day"] == 0
    finally:
        served.stop()
