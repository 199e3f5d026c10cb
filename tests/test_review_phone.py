"""Issue 41 with the phone: the Obsidian plugin's engine (`node obsidian-plugin/dist/cli.js`)
as a person's third device, next to a laptop (human, Python) and a server (agent, Python,
where the dream runs with every memory change proposed), through a real relay on loopback.

After the night the review note reaches the laptop and the phone; a revert ticked on the
phone (`dist/cli.js review decide`, then `dist/cli.js sync`) is carried out by the phone, a
proposal applied in the laptop's note by the server, and both show on all three copies with
the outcome on the line; a tick the server writes is cleared by the phone, and a note it
forges is repaired by the phone; `dist/cli.js review list --json` gives the same items as
`companion review list --json` on the laptop (the device that decided each line, a change's
before/after from the relay's history).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from companion.demo.sample import write_hermes_state, write_sample_vault
from companion.dream import run_dream
from companion.review import note as notes
from companion.review.rounds import install
from companion.sync.service.dreamhook import EngineSyncHook
from tests.syncharness import Device, SyncCluster
from tests.test_plugin_interop import PluginDevice, plugin_cli

pytestmark = pytest.mark.needs("node")

NIGHT = dt.datetime(2026, 11, 29, 2, 0, tzinfo=ZoneInfo("Europe/Madrid"))
REVIEW = "review/2026-11-29.md"
AGENT_NOTE = "knowledge/Agent scratch.md"
AGENT_TEXT = "# Agent scratch\n\nThe agent wrote this on its own.\n"


@pytest.fixture(scope="module")
def cli() -> Path:
    return plugin_cli()


class World:
    def __init__(self, c: SyncCluster, laptop: Device, server: Device, phone: PluginDevice,
                 hermes: Path) -> None:  # fmt: skip
        self.c, self.laptop, self.server, self.phone, self.hermes = c, laptop, server, phone, hermes


@pytest.fixture
def world(tmp_path: Path, cli: Path) -> Iterator[World]:
    with SyncCluster(tmp_path / "c") as c:
        laptop = c.add_device("laptop", "human")
        server = c.add_device("server", "agent")
        write_sample_vault(laptop.vault, NIGHT.date())
        hermes = tmp_path / "hermes"
        write_hermes_state(hermes / "state.db", NIGHT)
        cfg = server.paths.config_file
        cfg.write_text(
            cfg.read_text()
            + f'\n[dream]\napply = "propose-all"\n\n[memory]\nhermes_home = "{hermes}"\n'
        )
        c.sync_all()
        phone = PluginDevice(c, cli)
        phone.join()
        phone.synced()
        install(laptop.engine())
        install(server.engine())
        server.write(AGENT_NOTE, AGENT_TEXT)
        server.sync()
        run_dream(
            server.vault,
            server.config,
            NIGHT,
            paths=server.paths,
            hermes_home=hermes,
            sync=EngineSyncHook(server.engine()),
        )
        laptop.sync()
        phone.synced()
        yield World(c, laptop, server, phone, hermes)


def _text(d: Device | PluginDevice, rel: str = REVIEW) -> str:
    data = d.read(rel)
    assert data is not None, f"{rel} is not on {d.name}"
    return data.decode()


def _line(d: Device | PluginDevice, item: str, code: str) -> notes.Line:
    [ln] = [x for x in notes.parse_lines(_text(d)) if x.key == (item, code)]
    return ln


def _ids(text: str, prefix: str) -> list[str]:
    return sorted({ln.id for ln in notes.parse_lines(text) if ln.id.startswith(prefix)})


def _agent_change(text: str) -> str:
    block = text.split(f"### [[{AGENT_NOTE[:-3]}]]")[1].split("### ")[0]
    [item] = _ids(block, "c-")
    return item


def test_a_night_reviewed_on_the_phone_and_the_laptop_takes_effect_everywhere(world: World):
    laptop, server, phone = world.laptop, world.server, world.phone
    # the night's note reaches both people's devices, the same bytes
    text = _text(laptop)
    assert _text(phone) == text == _text(server)
    change = _agent_change(text)
    proposal = _ids(text, "p-")[0]
    section = text.split(f"`{proposal}/a`")[0].rsplit("```diff\n", 1)[1].split("\n```")[0]
    entry = section.splitlines()[-1][2:]

    # the phone: unknown ids and lines already decided are refused with their statuses
    r = phone.run("review", "decide", str(phone.vault), "c-0000000000", "revert")
    assert r.returncode == 2, r.stdout + r.stderr
    r = phone.run("review", "decide", str(phone.vault), change, "apply")
    assert r.returncode == 1, r.stdout + r.stderr
    # a revert ticked on the phone: carried out by the phone at its next sync
    r = phone.run("review", "decide", str(phone.vault), change, "revert")
    assert r.returncode == 0, r.stderr
    assert f"ticked {change} revert in {REVIEW}" in r.stdout
    assert _line(phone, change, "r").ticked and not _line(phone, change, "r").final
    phone.synced()
    assert phone.read(AGENT_NOTE) is None  # the agent's new note, reverted: gone
    ln = _line(phone, change, "r")
    assert ln.final and ln.outcome and re.fullmatch(r"reverted \d\d:\d\d from phone", ln.outcome)

    # an apply ticked in the laptop's note: the server (the dream's device) applies it
    laptop.sync()
    assert laptop.read(AGENT_NOTE) is None
    laptop.write(REVIEW, notes.set_ticked(_text(laptop), (proposal, "a")))
    laptop.sync()
    server.sync()
    memory = world.hermes / "memories"
    assert any(entry in p.read_text() for p in memory.glob("*.md"))
    assert server.read(AGENT_NOTE) is None

    # the next rounds: all three copies agree, the outcomes on the lines
    laptop.sync()
    phone.synced()
    final = _text(server)
    assert _text(laptop) == _text(phone) == final
    assert all(d.read(AGENT_NOTE) is None for d in (laptop, server, phone))
    assert _line(phone, change, "r").outcome == ln.outcome
    applied = _line(phone, proposal, "a")
    assert applied.final and applied.outcome and applied.outcome.endswith("ticked on laptop")
    assert _line(phone, proposal, "d").final

    # review list on the phone: who decided, and the change as the relay's history has it
    r = phone.run("review", "list", str(phone.vault), "--json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    assert listed["note"] == REVIEW
    by_id = {i["id"]: i for i in listed["items"]}
    assert set(by_id) == {ln.id for ln in notes.parse_lines(final)}
    c = by_id[change]
    assert (c["kind"], c["file"], c["state"]) == ("change", AGENT_NOTE, "decided")
    assert (c["decided_by"], c["decided_by_kind"]) == ("phone", "human")
    assert (c["before"], c["after"], c["decisions"]) == (None, AGENT_TEXT, ["revert"])
    p = by_id[proposal]
    assert (p["kind"], p["state"], p["decided_by"]) == ("proposal", "decided", "laptop")
    assert p["after"] == entry and p["decisions"] == ["apply", "drop"]
    # the same items as `companion review list --json` on the laptop (listing.py)
    from companion.review.listing import items
    from companion.review.rounds import device_for

    on_laptop = [i.to_dict() for i in items(device_for(laptop.engine()), REVIEW)]
    assert listed["items"] == on_laptop


def test_a_tick_the_server_writes_is_cleared_by_the_phone(world: World):
    laptop, server, phone = world.laptop, world.server, world.phone
    others = [x for x in _ids(_text(server), "c-") if x != _agent_change(_text(server))]
    item = (others or [_agent_change(_text(server))])[0]
    server.write(REVIEW, notes.set_ticked(_text(server), (item, "r")))
    server.sync()
    phone.synced()
    ln = _line(phone, item, "r")
    assert not ln.ticked and not ln.final
    assert ln.outcome == "⚠ a tick written by server, an agent device, was ignored"
    laptop.sync()
    server.sync()
    assert _text(laptop) == _text(server) == _text(phone)
    r = phone.run("review", "list", str(phone.vault), "--json")
    [it] = [i for i in json.loads(r.stdout)["items"] if i["id"] == item]
    assert it["state"] == "ignored" and it["decided_by"] is None


def test_a_note_the_server_forges_is_repaired_by_the_phone(world: World):
    """The phone alone checks the note against the relay's history: the agent's own change left
    out and a forged one added are put right, and the laptop and server take the repair."""
    laptop, server, phone = world.laptop, world.server, world.phone
    honest = _text(server)
    change = _agent_change(honest)
    block = honest.split(f"### [[{AGENT_NOTE[:-3]}]]")[1].split("### ")[0]
    forged = honest.replace(f"### [[{AGENT_NOTE[:-3]}]]{block}", "").replace(
        "## Changes\n",
        "## Changes\n\n### [[knowledge/Forged]]\n\n- [ ] Revert this change `c-0000000000/r`\n",
        1,
    )
    server.write(REVIEW, forged)
    server.sync()
    phone.synced()
    fixed = _text(phone)
    assert "⚠ phone rewrote this review from the relay's history" in fixed
    assert change in _ids(fixed, "c-") and "c-0000000000" not in fixed
    laptop.sync()
    server.sync()
    assert _text(laptop) == _text(server) == fixed
