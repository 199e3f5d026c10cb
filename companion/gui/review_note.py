"""The morning review window: the items of the night's review note, a button per decision.

The same items as the note in Obsidian, the plugin and `companion review list`
(`companion.review.desk`, read off the GUI thread through the worker: it talks to the relay).
A change's before and after come from the relay's history, never from the agent's own log.
A button ticks that line in the vault's note and asks the engine for a sync round, exactly as a
tick in Obsidian would; the round carries the decision out and writes its outcome on the line.
The window reads the items again after each round that carried review notes
(`events.ReviewChanged`: a decision here, or on another device), so an item decided anywhere
shows decided, with the device that decided.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from companion.gui.bridge import EngineWorker
from companion.gui.i18n import N_, tr
from companion.gui.links import obsidian_uri
from companion.gui.notify_policy import review_counts_text
from companion.gui.review import diff_html, open_url, show_message
from companion.review import desk
from companion.review.diff import diff_lines
from companion.review.listing import Item
from companion.textsafe import shown

KIND_LABELS = {
    "change": N_("review_note.kind.change"),
    "disagreement": N_("review_note.kind.disagreement"),
    "proposal": N_("review_note.kind.proposal"),
}
DECISION_LABELS = {
    "revert": N_("review_note.do.revert"),
    "keep": N_("review_note.do.keep"),
    "take": N_("review_note.do.take"),
    "apply": N_("review_note.do.apply"),
    "drop": N_("review_note.do.drop"),
}
BATCH_LABELS = {"revert": N_("review_note.batch.revert"), "apply": N_("review_note.batch.apply")}
TICK_MESSAGES = {
    desk.TICKED: N_("review_note.ticked"),
    desk.ALREADY: N_("review_note.ticked"),
    desk.DECIDED: N_("review_note.already_decided"),
    desk.NOT_OFFERED: N_("review_note.not_offered"),
    desk.UNKNOWN: N_("review_note.unknown"),
}
COL_WHAT, COL_NOTE, COL_STATE, COL_BY, COL_DECIDE = range(5)


def state_text(item: Item) -> str:
    """What the item's line says now: waiting, ticked (and where), or its outcome."""
    if item.state == "decided":
        return item.outcome or tr("review_note.state.decided")
    if item.state == "ticked":
        if item.decided_by:
            return tr("review_note.state.ticked_on", device=item.decided_by)
        return tr("review_note.state.ticked")
    if item.state == "ignored":
        return item.outcome or tr("review_note.state.open")
    return tr("review_note.state.open")


def decided_by_text(item: Item) -> str:
    if not item.decided_by:
        return ""
    if item.decided_by_kind == "human":
        return tr("review_note.by_human", device=item.decided_by)
    return tr("review_note.by_agent", device=item.decided_by)


def can_decide(item: Item) -> bool:
    return item.state in ("open", "ignored")


class ReviewNoteWindow(QWidget):
    """The items of one review note (the newest unless told). `loaded` fires with each
    `desk.View` shown; `decided` with each `desk.Ticked` the engine answered."""

    loaded = Signal(object)
    decided = Signal(object)

    def __init__(
        self,
        worker: EngineWorker,
        vault: Callable[[], Path | None],
        *,
        open_url: Callable[[QUrl], bool] | None = None,
        confirm: Callable[[str], bool] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.worker = worker
        self.vault = vault
        self._open_url = open_url
        self._confirm = confirm or self._ask
        self.note: str | None = None
        self.view: desk.View | None = None
        self._again = False  # asked to read again while a read was under way
        self.buttons: dict[tuple[str, str], QPushButton] = {}
        self.setWindowTitle(tr("review_note.title"))
        self.resize(1100, 680)

        self.header = QLabel(tr("review_note.loading"))
        self.header.setWordWrap(True)
        font = self.header.font()
        font.setPointSizeF(font.pointSizeF() * 1.15)
        font.setBold(True)
        self.header.setFont(font)
        self.counts = QLabel()
        self.source = QLabel()
        self.source.setWordWrap(True)
        self.source.setStyleSheet("color:#57606a;")

        self.batch: dict[str, QPushButton] = {}
        batch_row = QHBoxLayout()
        for decision, key in BATCH_LABELS.items():
            button = QPushButton(tr(key))
            button.clicked.connect(lambda _=False, d=decision: self.decide_night(d))
            button.setEnabled(False)
            self.batch[decision] = button
            batch_row.addWidget(button)
        batch_row.addStretch(1)

        self.items = QTreeWidget()
        self.items.setHeaderLabels(
            [tr("review_note.col.what"), tr("review_note.col.note"), tr("review_note.col.state"),
             tr("review_note.col.by"), tr("review_note.col.decide")]
        )  # fmt: skip
        self.items.setRootIsDecorated(False)
        self.items.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.items.header()
        header.setSectionResizeMode(COL_NOTE, QHeaderView.ResizeMode.Stretch)
        for col in (COL_WHAT, COL_STATE, COL_BY, COL_DECIDE):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.items.currentItemChanged.connect(self._show_current)

        self.detail = QTextBrowser()
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.detail.setFont(mono)
        # the diff's lines keep their layout (white-space:pre); the explanations wrap
        self.detail.setLineWrapMode(QTextBrowser.LineWrapMode.WidgetWidth)

        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.items)
        splitter.addWidget(self.detail)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)

        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.hide()

        self.obsidian_button = QPushButton(tr("review_note.open_obsidian"))
        self.obsidian_button.clicked.connect(self.open_in_obsidian)
        self.obsidian_button.setEnabled(False)
        self.refresh_button = QPushButton(tr("review_note.refresh"))
        self.refresh_button.clicked.connect(self.refresh)
        bottom = QHBoxLayout()
        bottom.addWidget(self.obsidian_button)
        bottom.addStretch(1)
        bottom.addWidget(self.refresh_button)

        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(self.counts)
        layout.addWidget(self.source)
        layout.addLayout(batch_row)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.message)
        layout.addLayout(bottom)

        worker.call_done.connect(self._call_done)
        worker.call_failed.connect(self._call_failed)

    # ---- reading -----------------------------------------------------------------------------

    def show_note(self, note: str | None) -> None:
        """Show review note `note` (vault-relative; None: the newest) and read its items."""
        if note != self.note:
            self.view = None
        self.note = note
        self.refresh()

    def refresh(self) -> None:
        """Read the items again, off the GUI thread (once more after a read under way)."""
        if self.worker.busy("review"):
            self._again = True
            return
        self.refresh_button.setEnabled(False)
        if self.view is None:
            self.header.setText(tr("review_note.loading"))
        self.worker.review(self.note)

    def _call_done(self, name: str, result: object) -> None:
        if name == "review" and isinstance(result, desk.View):
            if self.note is None or result.note in (None, self.note):
                self.show_view(result)  # not a read of the note shown before show_note()
            if self._again:
                self._again = False
                self.refresh()
        elif name == "decide_review" and isinstance(result, desk.Ticked):
            self._decided(result)

    def _call_failed(self, name: str, message: str) -> None:
        if name == "review":
            self.refresh_button.setEnabled(True)
            self._say(message, error=True)
            if self._again:
                self._again = False
                self.refresh()
        elif name == "decide_review":
            self._say(message, error=True)
            self._enable_buttons()

    def show_view(self, view: desk.View) -> None:
        current = self.current_item()
        self.view = view
        if view.note is not None:
            self.note = view.note
        self.refresh_button.setEnabled(True)
        self.obsidian_button.setEnabled(view.note is not None)
        if view.note is None:
            self.header.setText(tr("review_note.none"))
            self.counts.setText("")
            self.source.setText("")
        else:
            self.header.setText(tr("review_note.header", night=view.night))
            waiting = view.open_counts
            self.counts.setText(
                tr("review_note.waiting", counts=review_counts_text(waiting))
                if waiting
                else tr("review_note.all_decided")
            )
            self.source.setText(
                tr("review_note.from_history")
                if view.attested
                else tr("review_note.note_only", problem=view.problem or tr("engine.sync_stopped"))
            )
        self.items.clear()
        self.buttons = {}
        select = None
        for item in view.items:
            if item.kind == "night":
                continue
            row = QTreeWidgetItem(
                [
                    tr(KIND_LABELS.get(item.kind, KIND_LABELS["change"])),
                    shown(item.file or "—"),
                    state_text(item),
                    decided_by_text(item),
                    "",
                ]
            )
            row.setData(0, Qt.ItemDataRole.UserRole, item.id)
            row.setToolTip(COL_NOTE, shown(item.label))
            self.items.addTopLevelItem(row)
            self.items.setItemWidget(row, COL_DECIDE, self._decision_buttons(item))
            if current is not None and item.id == current.id:
                select = row
        if select is None and self.items.topLevelItemCount():
            select = self.items.topLevelItem(0)
        if select is not None:
            self.items.setCurrentItem(select)
        else:
            self._show_current()
        self._enable_buttons()
        self.loaded.emit(view)

    def _decision_buttons(self, item: Item) -> QWidget:
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(2, 0, 2, 0)
        for decision in item.decisions:
            button = QPushButton(tr(DECISION_LABELS.get(decision, decision)))
            button.clicked.connect(
                lambda _=False, i=item.id, d=decision: self.decide(i, d)
            )  # fmt: skip
            self.buttons[(item.id, decision)] = button
            row.addWidget(button)
        return box

    def _enable_buttons(self) -> None:
        busy = self.worker.busy("decide_review")
        view = self.view
        for (item_id, _decision), button in self.buttons.items():
            item = view.item(item_id) if view is not None else None
            button.setEnabled(not busy and item is not None and can_decide(item))
        for decision, button in self.batch.items():
            button.setEnabled(not busy and view is not None and decision in view.batch)

    # ---- the selected item -------------------------------------------------------------------

    def current_item(self) -> Item | None:
        row = self.items.currentItem()
        if row is None or self.view is None:
            return None
        return self.view.item(row.data(0, Qt.ItemDataRole.UserRole))

    def select(self, item_id: str) -> None:
        for i in range(self.items.topLevelItemCount()):
            row = self.items.topLevelItem(i)
            if row is not None and row.data(0, Qt.ItemDataRole.UserRole) == item_id:
                self.items.setCurrentItem(row)
                return

    def row(self, item_id: str) -> list[str]:
        """The texts of an item's row (tests, screenshots)."""
        for i in range(self.items.topLevelItemCount()):
            row = self.items.topLevelItem(i)
            if row is not None and row.data(0, Qt.ItemDataRole.UserRole) == item_id:
                return [row.text(c) for c in range(COL_DECIDE)]
        return []

    def button(self, item_id: str, decision: str) -> QPushButton | None:
        return self.buttons.get((item_id, decision))

    def _show_current(self, *_: object) -> None:
        item = self.current_item()
        if item is None:
            nothing = self.view is not None and self.view.note is not None
            self.detail.setHtml(
                f"<p>{html.escape(tr('review_note.nothing'))}</p>" if nothing else ""
            )
            return
        parts = [f"<p><b>{html.escape(shown(item.file or item.label))}</b></p>"]
        if item.outcome:
            parts.append(f"<p><i>{html.escape(shown(item.outcome))}</i></p>")
        if item.explanation:
            rows = "".join(f"<li>{html.escape(shown(x))}</li>" for x in item.explanation)
            parts.append(f"<ul style='font-family:sans-serif'>{rows}</ul>")
        lines, more = diff_lines(item.before, item.after)
        if item.kind == "change" and item.before is None and item.after is None:
            parts.append(f"<p><i>{html.escape(tr('review_note.no_history'))}</i></p>")
        else:
            parts.append(diff_html(lines))
            if more:
                parts.append(f"<p>{html.escape(tr('review_note.more_lines', n=more))}</p>")
        self.detail.setHtml("".join(parts))

    # ---- deciding ----------------------------------------------------------------------------

    def decide(self, item_id: str, decision: str) -> bool:
        """Tick the line deciding `item_id` in the note, then one round carries it out."""
        if self.note is None or self.worker.busy("decide_review"):
            return False
        if not self.worker.decide_review(self.note, item_id, decision):
            return False
        for button in [*self.buttons.values(), *self.batch.values()]:
            button.setEnabled(False)
        for i in range(self.items.topLevelItemCount()):
            row = self.items.topLevelItem(i)
            if row is not None and row.data(0, Qt.ItemDataRole.UserRole) == item_id:
                row.setText(COL_STATE, tr("review_note.state.ticking"))
        self._say(tr("review_note.deciding"))
        return True

    def decide_night(self, decision: str) -> bool:
        """A batch line: revert the whole night (asked first) or apply every proposal."""
        view = self.view
        night = next((it for it in view.items if it.kind == "night"), None) if view else None
        if night is None:
            return False
        if decision == "revert" and not self._confirm(tr("review_note.confirm_night")):
            return False
        return self.decide(night.id, decision)

    def _decided(self, ticked: desk.Ticked) -> None:
        text = tr(TICK_MESSAGES.get(ticked.status, "review_note.unknown"))
        if ticked.waiting and ticked.status in (desk.TICKED, desk.ALREADY):
            text = tr("review_note.waiting_round", why=ticked.waiting)
        self._say(text, error=ticked.status not in (desk.TICKED, desk.ALREADY))
        self.decided.emit(ticked)
        self.refresh()

    def _say(self, text: str, *, error: bool = False) -> None:
        show_message(self.message, text, error=error)

    # ---- the note in Obsidian ----------------------------------------------------------------

    def open_in_obsidian(self) -> bool:
        vault = self.vault()
        if vault is None or self.note is None:
            return False
        return open_url(QUrl(obsidian_uri(Path(vault) / self.note)), self._open_url)

    def _ask(self, question: str) -> bool:
        answer = QMessageBox.question(self, tr("review_note.title"), question)
        return answer == QMessageBox.StandardButton.Yes
