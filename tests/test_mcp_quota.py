"""Limits on an agent's writes through MCP (issue 44, finding 7): writes per minute, bytes per
day, new notes per day. Past a limit a write is refused with an error naming the limit, its
setting and when it frees up, and nothing is written. The count is the agent-write record's,
so a restarted server (or a second one on the same device) counts the same writes.

The clock is injected (`VaultContext(clock=...)`): no test waits for a minute or a day.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from companion.config import load_config
from companion.mcp import memorytool, writing
from companion.mcp.context import ToolRefused, VaultContext
from companion.mcp.writelog import AgentWrite, read_writes
from companion.paths import device_paths
from tests.mcp_helpers import call, run_session, snapshot

START = dt.datetime(2026, 12, 1, 0, 10, tzinfo=dt.UTC)
LINE = "The backup job copies the photo library to the NAS every night at two.\n"
BIG = (LINE * 1400)[:98_999] + "\n"  # 99,000 characters


class Clock:
    def __init__(self, start: dt.datetime = START) -> None:
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += dt.timedelta(**kw)


def _context(
    tmp_path: Path, companion_home: Path, mcp: str = "", clock: Clock | None = None
) -> tuple[VaultContext, Clock]:
    cfg = companion_home / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f"[mcp]\n{mcp}", encoding="utf-8")
    vault = tmp_path / "vault"
    vault.mkdir(exist_ok=True)
    clock = clock or Clock()
    paths = device_paths().ensure()
    return VaultContext(vault, paths, load_config(paths), clock=clock), clock


def _attempt(fn: Callable[[], Any]) -> str | None:
    """None when the write landed, else the refusal's message."""
    try:
        fn()
    except ToolRefused as exc:
        return exc.message
    return None


@pytest.mark.timeout(300)
def test_150_writes_of_99000_characters_stop_at_the_daily_byte_limit(
    tmp_path: Path, companion_home: Path
) -> None:
    ctx, clock = _context(tmp_path, companion_home, "bytes_per_day = 500000\n")
    assert len(BIG) == 99_000
    outcomes = []
    for i in range(150):
        rel = f"knowledge/n{i}.md"
        outcomes.append(_attempt(lambda rel=rel: writing.write_note(ctx, rel, BIG, "")))
        clock.advance(seconds=61)  # never the per-minute limit: one write a minute
    landed = [i for i, o in enumerate(outcomes) if o is None]
    assert landed == list(range(5))  # 5 x 99,000 bytes fit in 500,000; the 6th does not
    refusal = outcomes[5]
    assert refusal is not None
    assert "bytes_per_day" in refusal and "500,000 bytes" in refusal
    assert "00:00 UTC" in refusal and "Nothing was written" in refusal
    assert all(o is not None and "bytes_per_day" in o for o in outcomes[5:])
    assert sorted(p.name for p in (ctx.root / "knowledge").iterdir()) == sorted(
        f"n{i}.md" for i in range(5)
    )
    before = snapshot(ctx.root)

    # a restarted server counts the same writes (the record is the count)
    ctx2, _ = _context(tmp_path, companion_home, "bytes_per_day = 500000\n", clock)
    again = _attempt(lambda: writing.write_note(ctx2, "knowledge/again.md", BIG, ""))
    assert again is not None and "bytes_per_day" in again
    assert snapshot(ctx.root) == before

    clock.now = START + dt.timedelta(days=1)  # a new UTC day
    assert _attempt(lambda: writing.write_note(ctx2, "knowledge/next-day.md", BIG, "")) is None


def test_the_defaults_stop_150_writes_of_99000_characters(
    tmp_path: Path, companion_home: Path
) -> None:
    """The default limits, counted from the record: 101 such writes fit in 10,000,000 bytes a
    day, and the guard refuses the 102nd (the notes' own text checks are not what is tested
    here, so the writes are recorded directly)."""
    ctx, clock = _context(tmp_path, companion_home)
    landed = 0
    refusals = []
    for i in range(150):
        try:
            with ctx.quota.hold():
                ctx.quota.check(size=99_000, new=True)
                ctx.log.record(
                    AgentWrite(tool="write_note", path=f"k/n{i}.md", action="created",
                               message="", size=99_000, new=True)
                )  # fmt: skip
            landed += 1
        except ToolRefused as exc:
            refusals.append(exc.message)
        clock.advance(seconds=61)
    assert landed == 101 and len(refusals) == 49
    assert all("bytes_per_day" in r and "10,000,000" in r for r in refusals)
    assert len(read_writes(ctx.root)) == 101


def test_bytes_are_what_each_write_carries_not_the_whole_note(
    tmp_path: Path, companion_home: Path
) -> None:
    """Adding a line to a large note costs the line: appends to a long note stay cheap."""
    ctx, clock = _context(tmp_path, companion_home, "bytes_per_day = 1000\n")
    writing.write_note(ctx, "knowledge/long.md", "# Long\n\n" + "x" * 700 + "\n", "")
    for i in range(20):
        clock.advance(seconds=61)
        writing.edit_note(ctx, "knowledge/long.md", "Log", f"entry {i:02d}", "append", "")
    clock.advance(seconds=61)
    refusal = _attempt(
        lambda: writing.edit_note(ctx, "knowledge/long.md", "Log", "y" * 200, "append", "")
    )
    assert refusal is not None and "bytes_per_day" in refusal and "this write: 200" in refusal


def test_writes_per_minute(tmp_path: Path, companion_home: Path) -> None:
    ctx, clock = _context(tmp_path, companion_home)
    for i in range(30):
        writing.append_journal(ctx, "done", f"step {i}", "")
        clock.advance(seconds=1)
    refusal = _attempt(lambda: writing.append_journal(ctx, "done", "step 30", ""))
    assert refusal is not None and "writes_per_minute" in refusal and "30 writes" in refusal
    assert "in 30 s" in refusal  # the oldest of the last 30 leaves the window then
    memory = _attempt(lambda: memorytool.memory(ctx, "add", "memory", "Uses zsh.", "", None))
    assert memory is not None and "writes_per_minute" in memory
    clock.advance(seconds=31)
    assert _attempt(lambda: writing.append_journal(ctx, "done", "step 30", "")) is None


def test_the_memory_tool_answers_a_refusal_as_hermes_does(
    tmp_path: Path, companion_home: Path
) -> None:
    ctx, _clock = _context(tmp_path, companion_home, "writes_per_minute = 1\n")
    assert memorytool.memory(ctx, "add", "memory", "Uses zsh.", "", None)["success"]
    with pytest.raises(ToolRefused) as refused:
        memorytool.memory(ctx, "add", "memory", "Prefers vim.", "", None)
    assert refused.value.data is not None
    assert refused.value.data["success"] is False
    assert "writes_per_minute" in refused.value.data["error"]


def test_new_notes_per_day(tmp_path: Path, companion_home: Path) -> None:
    ctx, clock = _context(tmp_path, companion_home, "new_notes_per_day = 3\n")
    for i in range(3):
        writing.write_note(ctx, f"knowledge/n{i}.md", f"# n{i}\n", "")
        clock.advance(seconds=10)
    refusal = _attempt(lambda: writing.write_note(ctx, "knowledge/n3.md", "# n3\n", ""))
    assert refusal is not None and "new_notes_per_day" in refusal and "3 new notes" in refusal
    assert not (ctx.root / "knowledge" / "n3.md").exists()
    # an existing note may still be extended
    grown = "# n0\n\nmore\n"
    assert _attempt(lambda: writing.write_note(ctx, "knowledge/n0.md", grown, "")) is None
    edit = _attempt(lambda: writing.edit_note(ctx, "knowledge/n1.md", "More", "x", "append", ""))
    assert edit is None


def test_limit_zero_means_none(tmp_path: Path, companion_home: Path) -> None:
    ctx, _clock = _context(tmp_path, companion_home, "writes_per_minute = 0\n")
    for i in range(40):
        writing.append_journal(ctx, "done", f"step {i}", "")


@pytest.mark.timeout(180)
def test_the_refusal_reaches_the_agent_over_mcp(tmp_path: Path, companion_home: Path) -> None:
    cfg = companion_home / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("[mcp]\nnew_notes_per_day = 1\n", encoding="utf-8")
    vault = tmp_path / "vault"
    vault.mkdir()

    async def body(c: Client) -> Any:
        first = await call(c, "write_note", path="knowledge/a.md", text="# a\n")
        second = await call(c, "write_note", path="knowledge/b.md", text="# b\n")
        return first, second

    (err1, _res1), (err2, res2) = run_session(vault, body)
    assert not err1 and err2
    assert "new_notes_per_day" in res2 and "Nothing was written" in res2
    assert not (vault / "knowledge" / "b.md").exists()
