"""The MCP server beside `companion watch`: agent writes reach the person's device, with their
record, and the person's synced edits are known as the person's (device kind human)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from companion.mcp.writelog import read_writes
from tests.conftest import wait_for
from tests.mcp_helpers import call, run_session
from tests.syncharness import SyncCluster


@pytest.mark.timeout(240)
def test_agent_writes_sync_to_the_person_and_person_edits_win(tmp_path: Path) -> None:
    with SyncCluster(tmp_path / "c") as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        laptop.write("projects/Plan.md", "# Plan\n\nthe person's plan\n")
        laptop.sync()
        watch = subprocess.Popen(
            [sys.executable, "-m", "companion", "watch", str(server.vault)],
            env=server.env(),
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "watch.log", "wb"),  # noqa: SIM115 - owned by the child
        )
        try:
            wait_for(lambda: server.read("projects/Plan.md") is not None, 60, "first pull")
            env = {"COMPANION_HOME": str(server.home)}
            timings: dict[str, float] = {}

            async def body(c: Client) -> dict[str, Any]:
                out: dict[str, Any] = {}
                out["read"] = await call(c, "read_note", path="projects/Plan.md")
                out["recent"] = await call(c, "recent_changes", since="1h")
                out["write"] = await call(
                    c, "write_note", path="knowledge/Learned.md",
                    text="# Learned\n\nthe agent wrote this\n", reason="a lesson",
                )  # fmt: skip
                t0 = time.monotonic()

                def arrived() -> bool:
                    laptop.sync()
                    want = b"# Learned\n\nthe agent wrote this\n"
                    return laptop.read("knowledge/Learned.md") == want

                await anyio.to_thread.run_sync(lambda: wait_for(arrived, 60, "agent write"))
                timings["reach"] = time.monotonic() - t0
                out["plan"] = await call(
                    c, "write_note", path="projects/Plan.md", text="# Plan\n\nthe agent's plan\n"
                )
                return out

            out = run_session(server.vault, body, env=env)
            err, note = out["read"]
            assert not err and note["last_edit"]["by"] == "person"
            assert note["last_edit"]["device"] == "laptop" and note["last_edit"]["person_editing"]
            plan = next(x for x in out["recent"][1]["changes"] if x["path"] == "projects/Plan.md")
            assert (plan["by"], plan["device"]) == ("person", "laptop")
            assert out["write"][1]["action"] == "created"
            # the person's synced note is not rewritten on the server either
            err, res = out["plan"]
            assert not err and res["action"] == "sibling"
            assert server.read("projects/Plan.md") == b"# Plan\n\nthe person's plan\n"

            def record_arrived() -> bool:
                laptop.sync()
                return (
                    len(read_writes(laptop.vault)) == 2
                    and laptop.read("projects/Plan (agent).md") == b"# Plan\n\nthe agent's plan\n"
                )

            wait_for(record_arrived, 60, "the write record on the laptop")
            writes = read_writes(laptop.vault)
            assert [w.path for w in writes] == ["knowledge/Learned.md", "projects/Plan (agent).md"]
            assert writes[0].reason == "a lesson" and writes[0].device == "server"
            print(f"agent write reached the laptop in {timings['reach']:.2f} s")
        finally:
            watch.terminate()
            watch.wait(20)
