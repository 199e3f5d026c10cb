"""The dream review window: every change of one dream, its provenance and diff, and revert.

A thin layer over the engine: the report model is `companion.dream.report`, the reverts are
`companion.dream.undo` (the same code as `companion dream --undo`). A revert is refused, with
the reason shown in the window in the interface's language, when the note was edited after
the dream; nothing is ever overwritten silently.
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

from companion.dream.report import Change, DreamReport, ReportError, describe_ref, read_report
from companion.dream.summary import change_text
from companion.dream.undo import (
    DREAM_REFUSED,
    NoteLocator,
    RevertRefused,
    note_status,
    revert_change,
    revert_dream,
)
from companion.gui.i18n import N_, current_language, tr
from companion.gui.links import obsidian_uri
from companion.gui.notify_policy import dream_counts_text

KIND_LABELS = {
    "consolidated": N_("kind.consolidated"),
    "corrected": N_("kind.corrected"),
    "promoted": N_("kind.promoted"),
    "represented": N_("kind.represented"),
    "recorded": N_("kind.recorded"),
}
STATUS_LABELS = {
    "applied": N_("review.status.applied"),
    "reverted": N_("review.status.reverted"),
    "edited": N_("review.status.edited"),
    "elsewhere": N_("review.status.elsewhere"),
}
RAN_ON_LABELS = {"server": N_("review.ran_on.server"), "local": N_("review.ran_on.local")}

_DIFF_STYLE = {
    "+": "background:#dafbe1;color:#116329;",
    "-": "background:#ffebe9;color:#82071e;",
    "@": "background:#ddf4ff;color:#0550ae;",
    "h": "color:#57606a;font-weight:bold;",
    " ": "color:#1f2328;",
}


REFUSAL_KEYS = {
    "edited_since": N_("revert.edited_since"),
    "outside_vault": N_("revert.outside_vault"),
    "bad_snapshot": N_("revert.bad_snapshot"),
    "no_snapshot": N_("revert.no_snapshot"),
    "no_memories": N_("revert.no_memories"),
    "unknown_change": N_("revert.unknown_change"),
}


def show_message(label: QLabel, text: str, *, error: bool = False) -> None:
    """One line of outcome under a review window's list: green, or red for a refusal."""
    label.setText(text)
    label.setStyleSheet(
        "color:#82071e;background:#ffebe9;padding:6px;border-radius:4px;"
        if error
        else "color:#116329;background:#dafbe1;padding:6px;border-radius:4px;"
    )
    label.show()


def open_url(url: QUrl, opener: Callable[[QUrl], object] | None = None) -> bool:
    """Open `url` with `opener` (tests) or the desktop's handler (Obsidian for obsidian://)."""
    if opener is None:
        from PySide6.QtGui import QDesktopServices

        opener = QDesktopServices.openUrl
    return bool(opener(url))


def kind_label(kind: str) -> str:
    key = KIND_LABELS.get(kind)
    return tr(key) if key else kind


def refusal_text(exc: RevertRefused) -> str:
    """The engine's refusal in the interface's language (its English text if unknown)."""
    if exc.reason == DREAM_REFUSED:
        return tr("revert.dream_refused", reasons="\n".join(refusal_text(p) for p in exc.parts))
    key = REFUSAL_KEYS.get(exc.reason)
    return tr(key, note=exc.note, id=exc.note) if key else str(exc)


def report_error_text(exc: ReportError) -> str:
    if exc.detail.startswith("not a dream report"):
        return tr("report.not_object", path=exc.path)
    return tr("report.unreadable", path=exc.path, error=exc.detail)


def diff_html(lines: list[str]) -> str:
    """The unified diff as coloured HTML (one <div> per line, monospace)."""
    if not lines:
        return f"<p style='color:#57606a'>{html.escape(tr('review.no_diff'))}</p>"
    out = []
    for line in lines:
        if line.startswith(("---", "+++")):
            style = _DIFF_STYLE["h"]
        else:
            style = _DIFF_STYLE.get(line[:1], _DIFF_STYLE[" "])
        out.append(f"<div style='{style}white-space:pre'>{html.escape(line) or '&nbsp;'}</div>")
    return "".join(out)


class ReviewWindow(QWidget):
    """Review one dream report. `reverted` fires with the paths written by a revert."""

    reverted = Signal(list)

    def __init__(
        self,
        report_path: Path,
        locator: NoteLocator,
        *,
        open_url: Callable[[QUrl], bool] | None = None,
        confirm: Callable[[str], bool] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.locator = locator
        self.report_path = Path(report_path)
        self._open_url = open_url
        self._confirm = confirm or self._ask
        self.report: DreamReport | None = None
        self.setWindowTitle(tr("review.title"))
        self.resize(1000, 640)

        self.header = QLabel()
        self.header.setWordWrap(True)
        font = self.header.font()
        font.setPointSizeF(font.pointSizeF() * 1.15)
        font.setBold(True)
        self.header.setFont(font)
        self.counts = QLabel()

        self.changes = QTreeWidget()
        self.changes.setHeaderLabels(
            [tr("review.col.note"), tr("review.col.kind"), tr("review.col.status")]
        )
        self.changes.setRootIsDecorated(False)
        self.changes.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.changes.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.changes.currentItemChanged.connect(self._show_current)

        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.provenance = QLabel()
        self.provenance.setWordWrap(True)
        self.provenance.setTextFormat(Qt.TextFormat.RichText)
        self.provenance.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.diff = QTextBrowser()
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.diff.setFont(mono)
        self.diff.setLineWrapMode(QTextBrowser.LineWrapMode.NoWrap)

        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.hide()

        self.revert_button = QPushButton(tr("review.revert_change"))
        self.revert_all_button = QPushButton(tr("review.revert_dream"))
        self.obsidian_button = QPushButton(tr("review.open_obsidian"))
        self.revert_button.clicked.connect(self.revert_current)
        self.revert_all_button.clicked.connect(self.revert_all)
        self.obsidian_button.clicked.connect(self.open_current)

        detail = QWidget()
        dv = QVBoxLayout(detail)
        dv.setContentsMargins(0, 0, 0, 0)
        dv.addWidget(self.summary)
        prov_title = QLabel(tr("review.provenance"))
        prov_title.setStyleSheet("font-weight:bold;")
        dv.addWidget(prov_title)
        dv.addWidget(self.provenance)
        diff_title = QLabel(tr("review.diff"))
        diff_title.setStyleSheet("font-weight:bold;")
        dv.addWidget(diff_title)
        dv.addWidget(self.diff, 1)

        splitter = QSplitter()
        splitter.addWidget(self.changes)
        splitter.addWidget(detail)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        splitter.setSizes([380, 620])

        buttons = QHBoxLayout()
        buttons.addWidget(self.obsidian_button)
        buttons.addStretch(1)
        buttons.addWidget(self.revert_button)
        buttons.addWidget(self.revert_all_button)

        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(self.counts)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.message)
        layout.addLayout(buttons)
        self.reload()

    # ---- content -----------------------------------------------------------------------------

    def reload(self) -> None:
        """(Re)read the report and the notes' current state."""
        current = self.current_change()
        try:
            self.report = read_report(self.report_path)
        except ReportError as exc:
            self.report = None
            self.header.setText(tr("review.unreadable"))
            self._say(report_error_text(exc), error=True)
            self.changes.clear()
            self._update_buttons()
            return
        rep = self.report
        ran_on = RAN_ON_LABELS.get(rep.ran_on)
        self.header.setText(
            tr("review.header", date=rep.date, ran_on=tr(ran_on) if ran_on else rep.ran_on)
        )
        self.counts.setText(dream_counts_text(rep.counts))
        self.changes.clear()
        select = None
        for change in rep.changes:
            status = note_status(change, self.locator)
            item = QTreeWidgetItem(
                [change.note, kind_label(change.kind), tr(STATUS_LABELS[status])]
            )
            item.setData(0, Qt.ItemDataRole.UserRole, change.id)
            item.setToolTip(0, change_text(change, current_language()) or change.note)
            self.changes.addTopLevelItem(item)
            if current is not None and change.id == current.id:
                select = item
        if select is None and self.changes.topLevelItemCount():
            select = self.changes.topLevelItem(0)
        if select is not None:
            self.changes.setCurrentItem(select)
        else:
            self._show_current()

    def current_change(self) -> Change | None:
        item = self.changes.currentItem()
        if item is None or self.report is None:
            return None
        return self.report.change(item.data(0, Qt.ItemDataRole.UserRole))

    def select_change(self, change_id: str) -> None:
        for i in range(self.changes.topLevelItemCount()):
            item = self.changes.topLevelItem(i)
            if item is not None and item.data(0, Qt.ItemDataRole.UserRole) == change_id:
                self.changes.setCurrentItem(item)
                return

    def _show_current(self, *_: object) -> None:
        change = self.current_change()
        if change is None:
            self.summary.setText(tr("review.no_changes") if self.report else "")
            self.provenance.setText("")
            self.diff.setHtml("")
        else:
            self.summary.setText(change_text(change, current_language()) or kind_label(change.kind))
            items = []
            for p in change.provenance:
                text = str(p.get("quote") or "")
                quote = f" — “{html.escape(text)}”" if text else ""
                items.append(f"<li><code>{html.escape(describe_ref(p))}</code>{quote}</li>")
            self.provenance.setText(
                f"<ul style='margin:0'>{''.join(items)}</ul>"
                if items
                else f"<i>{html.escape(tr('review.no_provenance'))}</i>"
            )
            self.diff.setHtml(diff_html(change.diff_lines()))
        self._update_buttons()

    def _update_buttons(self) -> None:
        change = self.current_change()
        status = note_status(change, self.locator) if change else None
        self.revert_button.setEnabled(status == "applied")
        self.obsidian_button.setEnabled(change is not None)
        self.revert_all_button.setEnabled(bool(self.report and self.report.changes))

    def _say(self, text: str, *, error: bool = False) -> None:
        show_message(self.message, text, error=error)

    # ---- actions -----------------------------------------------------------------------------

    def revert_current(self) -> bool:
        change = self.current_change()
        if change is None or self.report is None:
            return False
        try:
            revert_change(self.report, change.id, self.locator)
        except RevertRefused as exc:
            self._say(refusal_text(exc), error=True)
            self.reload()
            return False
        except OSError as exc:
            self._say(tr("revert.io_error", note=change.note, error=exc), error=True)
            return False
        self._say(tr("review.reverted_one", note=change.note))
        self.reload()
        self.reverted.emit([change.note])
        return True

    def revert_all(self) -> bool:
        if self.report is None or not self._confirm(tr("review.confirm_dream")):
            return False
        try:
            result = revert_dream(self.report, self.locator)
        except RevertRefused as exc:
            self._say(refusal_text(exc), error=True)
            self.reload()
            return False
        except OSError as exc:
            self._say(tr("revert.io_error", note="", error=exc), error=True)
            return False
        done = [*result.restored, *result.removed]
        text = tr("review.reverted_all", n=len(done))
        if result.elsewhere:
            text += "\n" + tr("review.reverted_elsewhere", notes=", ".join(result.elsewhere))
        self._say(text)
        self.reload()
        self.reverted.emit(done)
        return True

    def open_current(self) -> None:
        change = self.current_change()
        if change is None:
            return
        try:
            path = self.locator.resolve(change.note)
        except RevertRefused as exc:
            self._say(str(exc), error=True)
            return
        url = (
            QUrl(obsidian_uri(path))
            if path.is_relative_to(self.locator.vault)
            else (QUrl.fromLocalFile(str(path)))
        )
        open_url(url, self._open_url)

    def _ask(self, question: str) -> bool:
        answer = QMessageBox.question(self, tr("review.title"), question)
        return answer == QMessageBox.StandardButton.Yes
