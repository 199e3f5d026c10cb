"""What the agent wrote through its MCP tools, shown in the dream review window.

The record is the vault's `.companion/agent/` log (`companion.mcp.writelog`), synced from the
server like the dream reports. A review shows the writes made during its dream's window (from
the previous dream to this one), so every write appears in exactly one morning review; a
report without a window shows its calendar day. Each write lists when, which note, what was
done, which agent, the agent's stated reason and the diff (lines holding a secret are never in
the record). Each write is worded in the interface's language from its action and paths
(the record's English `message` is what the agent was told). `attach(window)` adds the panel
to a `ReviewWindow` without changing that class.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from companion.gui.i18n import N_, format_datetime, tr
from companion.mcp.writelog import AgentWrite, parse_time, read_writes


def report_window(report_path: Path) -> tuple[dt.datetime, dt.datetime]:
    """The [start, end) of agent writes a dream report's review shows."""
    data: object = None
    try:
        data = json.loads(Path(report_path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        data = None
    window = data.get("window") if isinstance(data, dict) else None
    if isinstance(window, dict):
        start, end = parse_time(str(window.get("start"))), parse_time(str(window.get("end")))
        if start is not None and end is not None and start < end:
            return start, end
    try:
        day = dt.date.fromisoformat(Path(report_path).stem)
    except ValueError:
        day = dt.datetime.now(dt.UTC).date()
    start = dt.datetime.combine(day, dt.time(), dt.UTC)
    return start, start + dt.timedelta(days=1)


def writes_for_report(vault: Path, report_path: Path) -> list[AgentWrite]:
    start, end = report_window(report_path)
    return read_writes(vault, start, end)


ACTION_LABELS = {
    "created": N_("agent.action.created"),
    "replaced": N_("agent.action.replaced"),
    "section_replaced": N_("agent.action.section_replaced"),
    "section_appended": N_("agent.action.section_appended"),
    "section_added": N_("agent.action.section_added"),
    "appended": N_("agent.action.appended"),
    "sibling": N_("agent.action.sibling"),
    "journal": N_("agent.action.journal"),
    "memory_add": N_("agent.action.memory_add"),
    "memory_replace": N_("agent.action.memory_replace"),
    "memory_remove": N_("agent.action.memory_remove"),
    "memory_batch": N_("agent.action.memory_batch"),
}


def action_label(action: str) -> str:
    key = ACTION_LABELS.get(action)
    return tr(key) if key else action


def describe(w: AgentWrite) -> str:
    """One write in the interface's language: what was done to which note (and the note the
    agent asked for, when its text went beside it). The record's `message` is the English
    sentence the MCP server answered the agent, so it is not shown to the person."""
    line = tr("agent.detail", what=action_label(w.action), note=w.path)
    if w.requested and w.requested != w.path:
        line += " " + tr("agent.requested", requested=w.requested)
    return line


class AgentWritesPanel(QWidget):
    """The list of agent writes of one review, with the selected write's reason and diff."""

    def __init__(self, vault: Path, report_path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.vault = Path(vault)
        self.report_path = Path(report_path)
        self.writes: list[AgentWrite] = []
        self.title = QLabel()
        self.title.setStyleSheet("font-weight:bold;")
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(
            [tr("agent.col.time"), tr("agent.col.note"), tr("agent.col.action"),
             tr("agent.col.client")]
        )  # fmt: skip
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.header().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.tree.currentItemChanged.connect(self._show_current)
        self.detail = QTextBrowser()
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.detail.setFont(mono)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 6, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.detail, 1)
        self.reload()

    def reload(self) -> None:
        self.writes = writes_for_report(self.vault, self.report_path)
        n = len(self.writes)
        self.title.setText(
            f"{tr('agent.title')} — {tr('agent.count', n=n)}" if n else tr("agent.none")
        )
        self.tree.clear()
        for i, w in enumerate(self.writes):
            when = w.when
            shown = format_datetime(when) if when is not None else w.time
            item = QTreeWidgetItem([shown, w.path, action_label(w.action), w.client or w.device])
            item.setData(0, Qt.ItemDataRole.UserRole, i)
            item.setToolTip(1, describe(w))
            self.tree.addTopLevelItem(item)
        self.tree.setVisible(bool(n))
        self.detail.setVisible(bool(n))
        # with nothing to list, one line: the dream's changes above keep the window's height
        grow = QSizePolicy.Policy.Expanding if n else QSizePolicy.Policy.Maximum
        self.setSizePolicy(QSizePolicy.Policy.Preferred, grow)
        last = self.tree.topLevelItem(n - 1) if n else None
        if last is not None:
            self.tree.setCurrentItem(last)
        else:
            self.detail.setHtml("")

    def current(self) -> AgentWrite | None:
        item = self.tree.currentItem()
        if item is None:
            return None
        return self.writes[int(item.data(0, Qt.ItemDataRole.UserRole))]

    def _show_current(self, *_: object) -> None:
        from companion.gui.review import diff_html

        w = self.current()
        if w is None:
            self.detail.setHtml("")
            return
        head = f"<p>{html.escape(describe(w))}</p>"
        if w.reason:
            head += f"<p><i>{html.escape(tr('agent.reason', reason=w.reason))}</i></p>"
        self.detail.setHtml(head + diff_html(w.diff.split("\n") if w.diff else []))


def attach(window: QWidget) -> AgentWritesPanel | None:
    """Add the agent's writes to a `ReviewWindow` (below its changes); None without a vault."""
    locator = getattr(window, "locator", None)
    report_path = getattr(window, "report_path", None)
    layout = window.layout()
    if locator is None or report_path is None or layout is None:
        return None
    panel = AgentWritesPanel(locator.vault, report_path, window)
    assert isinstance(layout, QVBoxLayout)
    layout.insertWidget(max(0, layout.count() - 2), panel, 1)  # above the message and buttons
    reverted = getattr(window, "reverted", None)
    if reverted is not None:
        reverted.connect(lambda _paths: panel.reload())
    return panel
