"""The agent side's own-writes record: several processes record writes without losing any."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from companion.dream.state import DreamState, MtimeEditors, edited_recently


def test_two_writers_keep_each_others_writes(tmp_path: Path) -> None:
    """A dream and an MCP server each load the state, record a write and save: both stay.

    The old `save` wrote the instance's whole view back, so the second saver dropped the
    first one's write, and that note then counted as a person's edit for a day."""
    path = tmp_path / "state.json"
    dream = DreamState(path)
    mcp = DreamState(path)
    dream.record_write("knowledge/a.md", b"from the dream\n")
    mcp.record_write("knowledge/b.md", b"from the agent\n")
    dream.save()
    mcp.save()
    both = DreamState(path).own_writes
    assert set(both) == {"knowledge/a.md", "knowledge/b.md"}
    # a forgotten write is forgotten by its own recorder only
    dream.record_write("knowledge/a.md", None)
    dream.save()
    assert set(DreamState(path).own_writes) == {"knowledge/b.md"}


def test_reload_sees_what_another_process_saved(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    mine, other = DreamState(path), DreamState(path)
    other.record_write("x.md", b"x")
    other.save()
    assert "x.md" not in mine.own_writes
    mine.reload()
    assert "x.md" in mine.own_writes


def test_edited_recently_is_the_window_rule(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("person\n")
    state = DreamState(tmp_path / "s.json")
    editors = MtimeEditors(tmp_path, state)
    now = dt.datetime.now(dt.UTC)
    window = dt.timedelta(hours=24)
    assert edited_recently(editors, "n.md", now, window)
    assert not edited_recently(editors, "n.md", now + dt.timedelta(hours=25), window)
    assert not edited_recently(editors, "missing.md", now, window)
    state.record_write("n.md", b"person\n")  # what the agent side wrote is no person's edit
    assert not edited_recently(editors, "n.md", now, window)
