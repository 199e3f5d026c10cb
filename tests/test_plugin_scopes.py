"""Agents with scopes, end to end on both human clients (issue 44, "beyond: agents with scopes").

A relay on loopback, the agent's server (Python, kind agent), the person's laptop (Python,
driven through `companion scopes` / `sync` / `status` / `held`) and the person's phone (the
Obsidian plugin's sync core through `node dist/cli.js`, kind human). The person grants the
server `knowledge/` only; what it writes elsewhere is held on both human clients with the
scope's reason, its widening of its own scope is held as a setting, and the person's decision
lands. The rule itself is pinned for both clients by `tests/vectors/scopes_v1.json`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.syncharness import SyncCluster
from tests.test_plugin_holds import World
from tests.test_plugin_interop import cli  # noqa: F401  (the module fixture)

OUTSIDE = "is outside Hermes's scope"
SETTINGS = "changes the companion's settings in the vault"


@pytest.fixture
def world(tmp_path: Path, cli: Path) -> Iterator[World]:  # noqa: F811
    with SyncCluster(tmp_path) as cluster:
        w = World(cluster, cli)
        try:
            yield w
        finally:
            w.server.close()


def _grant_knowledge_only(w: World) -> str:
    """The person, on the laptop: the server may write knowledge/ only. Returns its id."""
    r = w.laptop.cli("scopes", "set", str(w.laptop.vault), "server", "--write", "knowledge/",
                     "--name", "Hermes")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    server_id = w.server.engine().core.device.device_id
    doc = json.loads(w.laptop.read(".companion/scopes.json") or b"")
    assert doc["agents"] == {server_id: {"name": "Hermes", "write": ["knowledge/"]}}
    w.laptop.write("Notes/old.md", "the person's note\n")
    w.laptop.write("knowledge/moved.md", "to be moved\n")
    w.everyone_once()
    w.server.sync()
    assert w.server.read("Notes/old.md") == b"the person's note\n"
    assert w.phone.read(".companion/scopes.json") == w.laptop.read(".companion/scopes.json")
    return server_id


def test_an_agents_changes_outside_its_scope_are_held_on_both_human_clients(world: World) -> None:
    w = world
    server_id = _grant_knowledge_only(w)

    w.server.write("knowledge/z.md", "inside the scope\n")
    w.server.write("projects/x.md", "a project note\n")
    w.server.write("Notes/y.md", "a note elsewhere\n")
    w.server.delete("Notes/old.md")
    w.server.rename("knowledge/moved.md", "Notes/moved.md")
    wider = {"v": 1, "agents": {server_id: {"name": "Hermes", "write": ["/"]}}}
    w.server.write(".companion/scopes.json", json.dumps(wider))
    w.server.sync()
    want = {
        "projects/x.md": OUTSIDE,
        "Notes/y.md": OUTSIDE,
        "Notes/old.md": OUTSIDE,
        "Notes/moved.md": OUTSIDE,
        "knowledge/moved.md": "is the old name of a held rename to Notes/moved.md",
        ".companion/scopes.json": SETTINGS,
    }
    out = w.laptop_sync()
    for p in want:
        assert p in out, (p, out)
    w.phone_sync()
    assert w.laptop_held() == want
    assert w.phone_held() == want
    for dev in (w.laptop, w.phone):
        assert dev.read("knowledge/z.md") == b"inside the scope\n"
        assert dev.read("projects/x.md") is None
        assert dev.read("Notes/y.md") is None
        assert dev.read("Notes/old.md") == b"the person's note\n"
        assert dev.read("knowledge/moved.md") == b"to be moved\n"  # waits with its rename
        assert dev.read("Notes/moved.md") is None
        assert b'"write": [\n        "knowledge/"' in (dev.read(".companion/scopes.json") or b"")

    # the person approves one on the laptop, another on the phone: each lands where decided
    r = w.laptop.cli("held", "accept", str(w.laptop.vault), "projects/x.md")
    assert r.returncode == 0, r.stdout + r.stderr
    assert w.laptop.read("projects/x.md") == b"a project note\n"
    assert "projects/x.md" not in w.laptop_held()
    r = w.phone.run("held", str(w.phone.vault), "--accept", "Notes/y.md")
    assert r.returncode == 0, r.stdout + r.stderr
    assert w.phone.read("Notes/y.md") == b"a note elsewhere\n"
    assert "Notes/y.md" not in w.phone_held()

    # accepting the move on the phone takes its old path along
    r = w.phone.run("held", str(w.phone.vault), "--accept", "Notes/moved.md")
    assert r.returncode == 0, r.stdout + r.stderr
    assert w.phone.read("Notes/moved.md") == b"to be moved\n"
    assert w.phone.read("knowledge/moved.md") is None
    assert not {"Notes/moved.md", "knowledge/moved.md"} & set(w.phone_held())

    # and refuses the widening and the move (its old path along): every device ends with the
    # person's versions
    for p in (".companion/scopes.json", "Notes/moved.md"):
        r = w.laptop.cli("held", "refuse", str(w.laptop.vault), p)
        assert r.returncode == 0, r.stdout + r.stderr
    w.laptop_sync()
    assert not {"Notes/moved.md", "knowledge/moved.md"} & set(w.laptop_held())
    w.server.sync()
    assert w.server.read(".companion/scopes.json") == w.laptop.read(".companion/scopes.json")
    assert w.server.read("knowledge/moved.md") == b"to be moved\n"
    assert w.server.read("Notes/moved.md") is None


def test_no_scopes_file_no_scope_rule(world: World) -> None:
    """A vault without .companion/scopes.json keeps today's behaviour: nothing held for scope."""
    w = world
    w.server.write("Notes/y.md", "a note elsewhere\n")
    w.server.sync()
    w.laptop_sync()
    w.phone_sync()
    assert w.laptop_held() == {} and w.phone_held() == {}
    assert w.laptop.read("Notes/y.md") == w.phone.read("Notes/y.md") == b"a note elsewhere\n"


def test_scopes_are_granted_on_a_persons_device_only(world: World) -> None:
    w = world
    r = w.server.cli("scopes", "init", str(w.server.vault))
    assert r.returncode != 0
    assert "agent device" in r.stderr
    assert w.server.read(".companion/scopes.json") is None
    r = w.laptop.cli("scopes", "init", str(w.laptop.vault))
    assert r.returncode == 0, r.stderr
    r = w.laptop.cli("scopes", "show", str(w.laptop.vault), "--json")
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    server_id = w.server.engine().core.device.device_id
    assert shown["agents"][server_id] == {
        "name": "server",
        "write": ["knowledge/", "projects/", "journal/", "Home.md"],
        "no_read": [],
        "listed": False,
    }


def test_the_plugin_creating_a_vault_writes_the_default_scopes(tmp_path: Path, cli: Path) -> None:  # noqa: F811
    """The phone is the person's device that creates the vault: it writes the same default
    file as `companion init` (byte for byte), and the laptop gets it by sync."""
    from companion.sync.round.scopes import default_document, render
    from tests.test_plugin_interop import PluginDevice

    with SyncCluster(tmp_path) as cluster:
        phone = PluginDevice(cluster, cli)
        r = phone.join()
        assert "created vault" in r.stdout, r.stdout
        assert "wrote .companion/scopes.json" in r.stdout, r.stdout
        assert phone.read(".companion/scopes.json") == render(default_document())
        assert phone.sync().returncode == 0
        cluster.vault_id = r.stdout.split("created vault ", 1)[1].split()[0]
        laptop = cluster.add_device("laptop", "human")
        laptop.sync()
        assert laptop.read(".companion/scopes.json") == render(default_document())
        laptop.close()


def test_accepting_a_held_rename_on_the_laptop_takes_its_old_path_along(tmp_path: Path) -> None:
    """`companion held accept NEW` accepts the held tombstone of the old path too, as the
    plugin does: the note moves, nothing stays held."""
    with SyncCluster(tmp_path) as cluster:
        server = cluster.add_device("server", "agent")
        laptop = cluster.add_device("laptop", "human")
        try:
            r = laptop.cli("scopes", "set", str(laptop.vault), "server", "--write", "knowledge/")
            assert r.returncode == 0, r.stdout + r.stderr
            laptop.write("knowledge/moved.md", "to be moved\n")
            laptop.sync()
            server.sync()
            server.rename("knowledge/moved.md", "Notes/moved.md")
            server.sync()
            laptop.sync()
            held = {h.path: h.reason for h in laptop.engine().core.index.held.rows()}
            assert held == {
                "Notes/moved.md": "is outside server's scope",
                "knowledge/moved.md": "is the old name of a held rename to Notes/moved.md",
            }
            r = laptop.cli("held", "accept", str(laptop.vault), "Notes/moved.md")
            assert r.returncode == 0, r.stdout + r.stderr
            laptop.sync()
            assert laptop.read("Notes/moved.md") == b"to be moved\n"
            assert laptop.read("knowledge/moved.md") is None
            assert laptop.engine().core.index.held.rows() == []
        finally:
            server.close()
            laptop.close()
