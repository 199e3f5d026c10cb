"""The person's roster on the phone (docs/trust.md, issue 44 finding 9), end to end: a relay
on loopback, the person's laptop and the agent's server (Python, `companion trust ...`), and
the person's phone (the Obsidian plugin's sync core through `node dist/cli.js`, `trust-*`).

The person starts the roster on the laptop, types the laptop's fingerprint into the phone
(`trust-accept`) and vouches from the laptop for the phone (human) and the server (agent),
each by the fingerprint read on that device. Then the relay and the agent collude: the relay's
database relabels the server's device as `human` and the server seals its records as `human`.
Version 1's two witnesses both lie, yet the server's Obsidian plugin is held on the phone and
on the laptop, because the kind comes from the person's signatures. And the
phone signs what it seals, so the anchored laptop counts its records as the person's (an
unsigned record would count as an agent's there).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion.sync.state.device import DeviceState
from tests.syncharness import Device, SyncCluster
from tests.test_plugin_interop import PluginDevice, cli  # noqa: F401  (the module fixture)

EVIL = ".obsidian/plugins/evil/main.js"
EVIL_JS = "module.exports = class extends require('obsidian').Plugin { onload(){} };\n"
CONFIG = "changes Obsidian's plugins, themes or settings"


def device_id(dev: Device) -> str:
    return DeviceState.load(dev.paths, dev.vault).device_id


def relabel(cluster: SyncCluster, dev_id: str, kind: str) -> None:
    """The hostile relay: its database now says the device was invited as `kind`."""
    db = sqlite3.connect(cluster.relay.data_dir / "relay.db")
    with db:
        n = db.execute("UPDATE devices SET kind = ? WHERE device_id = ?", (kind, dev_id)).rowcount
    db.close()
    assert n == 1


def claim_kind(dev: Device, kind: str) -> None:
    """The hostile agent: its own state says it is `kind`, so it seals its records so."""
    state = DeviceState.load(dev.paths, dev.vault)
    state.kind = kind
    state.save(dev.paths)
    dev.restart()


class World:
    def __init__(self, cluster: SyncCluster, cli_js: Path) -> None:
        self.cluster = cluster
        self.server = cluster.add_device("server", "agent")
        self.laptop = cluster.add_device("laptop", "human")
        self.phone = PluginDevice(cluster, cli_js)
        self.phone.join()
        self.laptop.write("notes/plan.md", "# Plan\n")
        self.everyone_once()

    def laptop_cli(self, *args: str) -> str:
        r = self.laptop.cli(*args)
        assert r.returncode == 0, (args, r.stdout + r.stderr)
        return r.stdout

    def laptop_sync(self) -> str:
        return self.laptop_cli("sync", str(self.laptop.vault))

    def phone_sync(self) -> str:
        return self.phone.synced()

    def phone_run(self, *args: str) -> str:
        r = self.phone.run(*args)
        assert r.returncode == 0, (args, r.stdout + r.stderr)
        return r.stdout

    def everyone_once(self) -> None:
        self.server.sync()
        self.laptop_sync()
        self.phone_sync()

    def fingerprint(self, dev: Device) -> str:
        r = dev.cli("trust", "show", str(dev.vault), "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        fp = json.loads(r.stdout)["fingerprint"]
        assert fp, r.stdout
        return str(fp)

    def phone_trust(self) -> dict:
        return json.loads(self.phone_run("trust-show", str(self.phone.vault), "--json"))

    def phone_id(self) -> str:
        return str(self.phone.status()["device"]["deviceId"])

    def laptop_held(self) -> dict[str, str]:
        out = self.laptop_cli("status", str(self.laptop.vault), "--json", "--offline")
        return {h["path"]: h["reason"] for h in json.loads(out)["held"]}

    def phone_held(self) -> dict[str, str]:
        return {h["path"]: h["reason"] for h in self.phone.status()["held"]}

    def set_up_roster(self) -> None:
        """What the person does, once: start on the laptop, accept it on the phone, vouch."""
        self.laptop_cli("trust", "init", str(self.laptop.vault))
        self.laptop_sync()
        self.everyone_once()  # every device's announcement reaches every other one
        self.laptop_sync()
        assert self.phone_trust()["anchored"] is False
        self.phone_run("trust-accept", str(self.phone.vault), self.fingerprint(self.laptop))
        phone_fp = self.phone_trust()["fingerprint"]
        self.laptop_cli(
            "trust", "vouch", str(self.laptop.vault), self.phone_id(), "--kind", "human", phone_fp
        )
        self.laptop_cli(
            "trust", "vouch", str(self.laptop.vault), device_id(self.server), "--kind", "agent",
            self.fingerprint(self.server),
        )  # fmt: skip
        self.laptop_sync()
        self.phone_sync()
        self.server.sync()

    def collude(self) -> None:
        """Relay and agent lie together; the agent ships an Obsidian plugin."""
        relabel(self.cluster, device_id(self.server), "human")
        claim_kind(self.server, "human")
        self.server.write(EVIL, EVIL_JS)
        self.server.write("notes/ok.md", "an ordinary note\n")
        self.server.sync()


@pytest.fixture
def world(tmp_path: Path, cli: Path) -> Iterator[World]:  # noqa: F811
    with SyncCluster(tmp_path) as cluster:
        w = World(cluster, cli)
        try:
            yield w
        finally:
            w.server.close()


def test_a_relabelled_agent_sealing_as_human_is_held_on_the_phone(world: World) -> None:
    w = world
    w.set_up_roster()
    shown = w.phone_trust()
    assert shown["anchored"] is True
    kinds = {t["device_id"]: t["kind"] for t in shown["trusted"]}
    assert kinds == {
        device_id(w.laptop): "human",
        w.phone_id(): "human",
        device_id(w.server): "agent",
    }
    laptop_fp = w.fingerprint(w.laptop)
    out = w.phone_run("status", str(w.phone.vault), "--offline")
    assert f"device keys: anchored on laptop ({laptop_fp})" in out, out
    keys = w.phone.status()["device_keys"]
    assert (keys["anchored"], keys["anchor"]["fingerprint"], keys["unvouched"]) == (
        True,
        laptop_fp,
        0,
    )

    w.collude()
    out = w.phone_sync()
    assert f"held: {EVIL}" in out, out
    assert w.phone_held() == {EVIL: CONFIG}
    assert w.phone.read(EVIL) is None
    assert w.phone.read("notes/ok.md") == b"an ordinary note\n"  # the rest still syncs
    w.laptop_sync()
    assert w.laptop_held() == {EVIL: CONFIG}
    assert w.laptop.read(EVIL) is None


def test_without_the_roster_the_same_collusion_lands_on_the_phone(world: World) -> None:
    """Version 1's rule, the control: both witnesses say human, so the plugin is applied."""
    w = world
    w.collude()
    w.phone_sync()
    assert w.phone_held() == {}
    assert w.phone.read(EVIL) == EVIL_JS.encode()
    assert "device keys: not set up" in w.phone_run("status", str(w.phone.vault), "--offline")


def test_the_phone_signs_its_records_and_the_laptop_counts_them_human(world: World) -> None:
    """On the anchored laptop an unsigned record counts as an agent's whatever the relay says;
    the phone's records are signed, so its Obsidian setting is applied unheld there and its
    revision counts as the person's."""
    w = world
    w.set_up_roster()
    w.phone.write(".obsidian/appearance.json", '{"theme": "obsidian"}\n')
    w.phone.write("notes/plan.md", "# Plan\nfrom the phone\n")
    w.phone_sync()
    w.laptop_sync()
    assert w.laptop_held() == {}
    assert w.laptop.read(".obsidian/appearance.json") == b'{"theme": "obsidian"}\n'
    out = w.laptop_cli("history", str(w.laptop.vault), "notes/plan.md", "--json")
    rows = [r for r in json.loads(out) if r.get("device") == "phone"]
    assert rows and all(r["kind"] == "human" and not r.get("refused") for r in rows), out


def test_trust_commands_refuse_bad_input_with_a_sentence(world: World) -> None:
    w = world
    vault = str(w.phone.vault)
    fp = "AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA"
    r = w.phone.run("trust-accept", vault, "NOT-A-FINGERPRINT")
    assert r.returncode == 2 and "is not a fingerprint" in r.stderr, r.stderr
    r = w.phone.run("trust-accept", vault, fp)
    assert r.returncode == 2 and "no device of this vault announces" in r.stderr, r.stderr
    r = w.phone.run("trust-vouch", vault, "server", "--kind", "agent", fp)
    assert r.returncode == 2 and "not set up" in r.stderr, r.stderr
    r = w.phone.run("trust-vouch", vault, "server", "--kind", "boss", fp)
    assert r.returncode == 2 and "human, agent or revoked" in r.stderr, r.stderr
    r = w.phone.run("trust-vouch", vault, "server")
    assert r.returncode == 2, r.stderr
    # a damaged anchor stops sync, naming where it is, rather than fall back to version 1
    (device_json,) = (w.phone.home / "data" / "obsidian-cli").glob("*/device.json")
    dev = json.loads(device_json.read_text())
    device_json.write_text(json.dumps({**dev, "trustAnchor": {"deviceId": "x", "key": "AAAA"}}))
    r = w.phone.sync()
    assert r.returncode == 1, r.stdout + r.stderr
    assert "trust anchor" in r.stderr and "device.json) is damaged" in r.stderr, r.stderr
    device_json.write_text(json.dumps(dev))
    # no secret in any of it
    home = w.phone.home / "config" / "node-secrets.json"
    seed = json.loads(home.read_text())
    signing = [v for k, v in seed.items() if k.startswith("signing-key-")]
    assert len(signing) == 1
    for f in w.phone.vault.rglob("*"):
        if f.is_file():
            assert signing[0].encode() not in f.read_bytes(), f
