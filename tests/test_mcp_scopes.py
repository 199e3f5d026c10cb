"""The MCP server keeps its agent to the person's scopes (issue 44, agents with scopes).

A real relay on loopback, the person's laptop (Python, kind human) granting the server's agent
`knowledge/` only and keeping `private/` from it, and `companion mcp` on the server's copy
(kind agent) driven by the MCP SDK's client over stdio: a write outside the scope lands as a
proposal that the laptop holds; `private/` is neither read, listed, searched nor written. On
a person's device the same write is refused (nothing would hold it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.mcp_helpers import call, run_session, write_old
from tests.syncharness import SyncCluster


@pytest.mark.timeout(240)
def test_an_agents_mcp_writes_outside_its_scope_are_proposals_and_no_read_is_kept(
    tmp_path: Path,
) -> None:
    with SyncCluster(tmp_path / "c") as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        try:
            r = laptop.cli("scopes", "set", str(laptop.vault), "server", "--write",
                           "knowledge/", "--no-read", "private/", "--name", "Hermes")  # fmt: skip
            assert r.returncode == 0, r.stdout + r.stderr
            laptop.write("private/diary.md", "# Diary\n\nthe person's secret plans\n")
            laptop.write("knowledge/SQLite.md", "# SQLite\n\nsee [[diary]] plans\n")
            laptop.sync()
            server.sync()
            assert server.read(".companion/scopes.json") is not None
            env = {"COMPANION_HOME": str(server.home)}

            async def body(c: Client) -> dict[str, Any]:
                out: dict[str, Any] = {}
                out["in"] = await call(c, "write_note", path="knowledge/Redis.md",
                                       text="# Redis\n\nlearned\n")  # fmt: skip
                out["out"] = await call(c, "write_note", path="projects/x.md",
                                        text="# X\n\nproposed\n")  # fmt: skip
                out["journal"] = await call(c, "append_journal", section="Learned", text="x")
                out["read"] = await call(c, "read_note", path="private/diary.md")
                out["write_private"] = await call(c, "write_note", path="private/diary.md",
                                                  text="overwritten\n")  # fmt: skip
                out["list"] = await call(c, "list_notes", folder="")
                out["list_private"] = await call(c, "list_notes", folder="private")
                out["search"] = await call(c, "search_notes", query="plans")
                out["recent"] = await call(c, "recent_changes", since="1h")
                out["links"] = await call(c, "read_note", path="knowledge/SQLite.md")
                return out

            out = run_session(server.vault, body, env=env)
        finally:
            server.close()

        err, res = out["in"]
        assert not err and res["action"] == "created" and "proposed" not in res
        err, res = out["out"]
        assert not err and res["proposed"] is True, res
        assert "is outside Hermes's scope" in res["message"]
        assert "may write knowledge/" in res["message"]
        err, res = out["journal"]  # journal/ is outside knowledge/: a proposal too
        assert not err and res["proposed"] is True, res
        for key in ("read", "write_private", "list_private"):
            err, res = out[key]
            assert err, (key, res)
            assert "Hermes may not read (no_read in .companion/scopes.json" in res, (key, res)
        assert server.read("private/diary.md") == b"# Diary\n\nthe person's secret plans\n"
        err, res = out["list"]
        assert not err and "private" not in json.dumps(res), res
        err, res = out["search"]
        assert not err and [h["path"] for h in res["results"]] == ["knowledge/SQLite.md"], res
        err, res = out["recent"]
        assert not err and "private/" not in json.dumps(res), res

        # the proposal travels, and the person's laptop holds it; the scoped write lands
        server.sync()
        laptop.sync()
        assert laptop.read("knowledge/Redis.md") == b"# Redis\n\nlearned\n"
        assert laptop.read("projects/x.md") is None
        r = laptop.cli("status", str(laptop.vault), "--json", "--offline")
        held = {h["path"]: h["reason"] for h in json.loads(r.stdout)["held"]}
        assert held["projects/x.md"] == "is outside Hermes's scope", held


def test_on_a_persons_device_a_write_outside_the_scope_is_refused(tmp_path: Path) -> None:
    v = tmp_path / "vault"
    write_old(v, "Home.md", "# Home\n")
    scopes = {"v": 1, "default": {"write": ["knowledge"]}}
    write_old(v, ".companion/scopes.json", json.dumps(scopes))

    async def body(c: Client) -> dict[str, Any]:
        return {
            "in": await call(c, "write_note", path="knowledge/a.md", text="# A\n"),
            "out": await call(c, "write_note", path="Notes/b.md", text="# B\n"),
        }

    out = run_session(v, body, env={"COMPANION_HOME": str(tmp_path / "home")})
    assert out["in"][0] is False
    err, res = out["out"]
    assert err and "is outside" in res and "may write knowledge" in res, res
    assert not (v / "Notes" / "b.md").exists()


def test_a_servers_own_mcp_scope_limits_it_further(tmp_path: Path) -> None:
    """Two agents on one device, each with its own server: `--agent claude` applies the file's
    `mcp.claude` too. Outside it but inside the device's scope a write is refused (nothing
    would hold it); its no_read adds to the device's; without --agent only the device's
    scope applies."""
    v = tmp_path / "vault"
    write_old(v, "Home.md", "# Home\n")
    write_old(v, "private/plans.md", "# Plans\n\nthe person's plans\n")
    scopes = {
        "v": 1,
        "default": {"write": ["knowledge/", "projects/"]},
        "mcp": {"claude": {"write": ["knowledge/"], "no_read": ["private/"]}},
    }
    write_old(v, ".companion/scopes.json", json.dumps(scopes))

    async def body(c: Client) -> dict[str, Any]:
        return {
            "in": await call(c, "write_note", path="knowledge/a.md", text="# A\n"),
            "out": await call(c, "write_note", path="projects/b.md", text="# B\n"),
            "read": await call(c, "read_note", path="private/plans.md"),
            "search": await call(c, "search_notes", query="plans"),
        }

    env = {"COMPANION_HOME": str(tmp_path / "home")}
    out = run_session(v, body, args=("--agent", "claude"), env=env)
    assert out["in"][0] is False
    err, res = out["out"]
    assert err and "outside claude's scope (mcp.claude in .companion/scopes.json" in res, res
    assert not (v / "projects" / "b.md").exists()
    err, res = out["read"]
    assert err and "mcp.claude.no_read" in res, res
    assert out["search"][1]["results"] == [], out["search"]
    out = run_session(v, body, env=env)  # no --agent: the device's scope alone
    assert out["out"][0] is False and (v / "projects" / "b.md").exists()
    assert out["read"][0] is False
