"""The review window shows what the agent wrote through its tools during the dream's window."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from companion.dream.undo import NoteLocator
from companion.gui import agent_writes, i18n
from companion.gui.review import ReviewWindow
from companion.gui.sample import write_sample_vault
from companion.mcp.writelog import AgentWrite, WriteLog, make_diff


@pytest.fixture(autouse=True)
def english():
    i18n.set_language("en")
    yield
    i18n.set_language("en")


def _record(vault: Path, when: dt.datetime, path: str, **kw) -> None:
    diff, _ = make_diff(path, None, "# New\n\nagent text\n", lambda _l: False)
    log = WriteLog(vault, "server", clock=lambda: when)
    log.record(
        AgentWrite(tool="write_note", path=path, action="created", message=f"created {path}",
                   client="claude-code 2.1", diff=diff, **kw)
    )  # fmt: skip


def test_review_lists_the_agents_writes_of_that_day(qtbot, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    report = write_sample_vault(vault)  # a report of 2025-11-28 without a window: that day
    day = dt.datetime(2025, 11, 28, 15, 30, tzinfo=dt.UTC)
    _record(vault, day, "knowledge/Solar.md", reason="learned from the session")
    _record(vault, day - dt.timedelta(days=1), "knowledge/Older.md")  # the previous review's
    window = ReviewWindow(report, NoteLocator(vault))
    qtbot.addWidget(window)
    panel = agent_writes.attach(window)
    assert panel is not None and panel.parent() is window
    assert panel.tree.topLevelItemCount() == 1
    item = panel.tree.topLevelItem(0)
    assert [item.text(i) for i in (1, 2, 3)] == ["knowledge/Solar.md", "created", "claude-code 2.1"]
    assert "One write by the agent" in panel.title.text()
    shown = panel.detail.toPlainText()
    assert "learned from the session" in shown and "+agent text" in shown
    i18n.set_language("es")
    panel.reload()
    assert panel.tree.topLevelItem(0).text(2) == "creada"


def test_a_dream_window_bounds_the_writes_and_none_says_so(qtbot, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_sample_vault(vault)
    report = vault / ".companion" / "dreams" / "2025-11-29.json"
    window = {"start": "2025-11-28T01:00:00+00:00", "end": "2025-11-29T01:00:00+00:00"}
    report.write_text(json.dumps({"date": "2025-11-29", "window": window, "changes": []}))
    _record(vault, dt.datetime(2025, 11, 28, 23, 0, tzinfo=dt.UTC), "in.md")
    _record(vault, dt.datetime(2025, 11, 29, 3, 0, tzinfo=dt.UTC), "after.md")  # next review
    assert [w.path for w in agent_writes.writes_for_report(vault, report)] == ["in.md"]
    empty = vault / ".companion" / "dreams" / "2025-11-20.json"
    empty.write_text(json.dumps({"date": "2025-11-20", "changes": []}))
    w = ReviewWindow(empty, NoteLocator(vault))
    qtbot.addWidget(w)
    panel = agent_writes.attach(w)
    assert panel is not None and panel.tree.topLevelItemCount() == 0
    assert panel.title.text() == i18n.tr("agent.none")


def test_with_no_agent_writes_the_dreams_changes_keep_the_height(qtbot, tmp_path: Path) -> None:
    """The panel's one line must not take half the window away from the dream's changes."""
    vault = tmp_path / "vault"
    write_sample_vault(vault)
    report = vault / ".companion" / "dreams" / "2025-11-20.json"
    report.write_text(json.dumps({"date": "2025-11-20", "changes": []}))
    w = ReviewWindow(report, NoteLocator(vault))
    qtbot.addWidget(w)
    panel = agent_writes.attach(w)
    assert panel is not None
    w.resize(1100, 660)
    w.show()
    qtbot.waitExposed(w)
    assert panel.height() <= panel.title.sizeHint().height() + 20, panel.height()


def test_a_write_is_described_in_the_interfaces_language(qtbot, tmp_path: Path) -> None:
    """The MCP server records an English sentence for the agent; the review words each write
    itself, so a Spanish interface shows no English (#39, item 8f)."""
    vault = tmp_path / "vault"
    report = write_sample_vault(vault)
    day = dt.datetime(2025, 11, 28, 15, 30, tzinfo=dt.UTC)
    log = WriteLog(vault, "server", clock=lambda: day)
    log.record(
        AgentWrite(tool="append_journal", path="journal/2025-11-28.md", action="journal",
                   message="added to today's journal journal/2025-11-28.md, in a new "
                   "section '## Learned'", client="claude-code 2.1")
    )  # fmt: skip
    log.record(
        AgentWrite(tool="write_note", path="knowledge/Solar (agent draft).md", action="sibling",
                   requested="knowledge/Solar.md", message="you are editing knowledge/Solar.md:"
                   " the text went to knowledge/Solar (agent draft).md", client="claude-code 2.1")
    )  # fmt: skip
    i18n.set_language("es")
    window = ReviewWindow(report, NoteLocator(vault))
    qtbot.addWidget(window)
    panel = agent_writes.attach(window)
    assert panel is not None and panel.tree.topLevelItemCount() == 2
    seen = []
    for i in range(2):
        panel.tree.setCurrentItem(panel.tree.topLevelItem(i))
        seen.append(panel.detail.toPlainText().split("\n")[0])
        seen.append(panel.tree.topLevelItem(i).toolTip(1))
    text = " ".join(seen)
    assert "journal" not in text.replace("journal/", "") and "editing" not in text, seen
    assert "diario" in seen[0] and "journal/2025-11-28.md" in seen[0]
    assert "knowledge/Solar.md" in seen[2] and "borrador" in seen[2]
    i18n.set_language("en")
    panel.reload()
    panel.tree.setCurrentItem(panel.tree.topLevelItem(0))
    assert "journal/2025-11-28.md" in panel.detail.toPlainText()
