"""The small main window: a status summary and the tray menu's commands as buttons.

Shown on "show" (a second start, a tray click) and as the app's face where the desktop has no
system tray, in which case it says so instead of leaving the person with nothing.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from companion.gui.actions import AppActions
from companion.gui.bridge import EngineView, EngineWorker
from companion.gui.i18n import N_, format_datetime, tr
from companion.gui.status import EngineSnapshot, state_label, tray_state
from companion.gui.tray import app_icon, state_icon
from companion.textsafe import SHOWN_PATH, shown

NOTICE_STYLE = "background:#fff8c5;color:#4d2d00;padding:8px;border-radius:4px;"


class MainWindow(QMainWindow):
    def __init__(
        self,
        worker: EngineWorker,
        actions: AppActions,
        *,
        tray_available: bool = True,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.worker = worker
        self.app_actions = actions  # not `actions`: QWidget.actions() is Qt's
        self.tray_available = tray_available
        self.allow_close = False  # set when the app quits: closing then really closes
        self.setWindowTitle(tr("app.name"))
        self.setWindowIcon(app_icon())

        self.state_icon = QLabel()
        self.state_text = QLabel()
        font = self.state_text.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        font.setBold(True)
        self.state_text.setFont(font)
        self.state_text.setWordWrap(True)
        head = QHBoxLayout()
        head.addWidget(self.state_icon)
        head.addWidget(self.state_text, 1)

        self.vault = QLabel()
        self.vault.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.last_sync = QLabel()
        self.last_dream = QLabel()
        self.pending = QLabel()
        self.conflicts = QLabel()
        form = QFormLayout()
        form.addRow(tr("main.vault"), self.vault)
        form.addRow(tr("main.last_sync"), self.last_sync)
        form.addRow(tr("main.last_dream"), self.last_dream)
        form.addRow(tr("main.pending"), self.pending)
        form.addRow(tr("main.conflicts"), self.conflicts)

        self.notice = QLabel()
        self.notice.setWordWrap(True)
        self.notice.setStyleSheet(NOTICE_STYLE)
        self.notice.hide()
        self.no_tray = QLabel(tr("main.no_tray"))
        self.no_tray.setWordWrap(True)
        self.no_tray.setStyleSheet(NOTICE_STYLE)
        self.no_tray.setVisible(not tray_available)
        # the deletions the guard holds back, and the person's way to confirm them
        self.held_deletions = QLabel()
        self.held_deletions.setWordWrap(True)
        self.confirm_deletions = QPushButton(tr("main.confirm_deletions", n=2))
        self.confirm_deletions.clicked.connect(actions.confirm_deletions)
        self.deletions_box = QFrame()
        self.deletions_box.setObjectName("deletions")  # the style is the box's, not its button's
        self.deletions_box.setStyleSheet(f"#deletions {{{NOTICE_STYLE}}}")
        box = QVBoxLayout(self.deletions_box)
        box.addWidget(self.held_deletions)
        box.addWidget(self.confirm_deletions, 0, Qt.AlignmentFlag.AlignLeft)
        self.deletions_box.hide()
        # remote changes this copy cannot write, and local files the scans skip
        self.unwritable = _file_note()
        self.not_synced = _file_note()

        a = actions
        self.buttons: dict[str, QPushButton] = {}
        grid = QGridLayout()
        specs = [
            ("open_vault", tr("menu.open_vault"), a.open_vault),
            ("open_obsidian", tr("menu.open_obsidian"), lambda: a.open_in_obsidian()),
            ("sync_now", tr("menu.sync_now"), a.sync_now),
            ("pause", tr("menu.pause"), a.toggle_pause),
            ("dream_now", tr("menu.dream_now"), a.dream_now),
            ("last_report", tr("menu.last_report"), a.open_last_report),
            ("settings", tr("menu.settings"), lambda: a.open_settings()),
            ("quit", tr("menu.quit"), a.quit),
        ]
        for i, (name, text, slot) in enumerate(specs):
            button = QPushButton(text)
            button.clicked.connect(slot)
            self.buttons[name] = button
            grid.addWidget(button, i // 2, i % 2)

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.addWidget(self.no_tray)
        layout.addLayout(head)
        layout.addLayout(form)
        layout.addWidget(self.deletions_box)
        layout.addWidget(self.unwritable)
        layout.addWidget(self.not_synced)
        layout.addWidget(self.notice)
        layout.addStretch(1)
        layout.addLayout(grid)
        self.setCentralWidget(body)
        self.setMinimumWidth(460)

        worker.view_ready.connect(self.update_view)
        worker.call_started.connect(self._refresh_buttons)
        worker.call_done.connect(self._refresh_buttons)
        worker.call_failed.connect(self._refresh_buttons)
        self.update_view(worker.last_view or EngineView(EngineSnapshot()))

    def show_notice(self, title: str, text: str) -> None:
        body = html.escape(text).replace("\n", "<br>")
        self.notice.setText(f"<b>{html.escape(title)}</b><br>{body}")
        self.notice.show()

    def clear_notice(self) -> None:
        self.notice.clear()
        self.notice.hide()

    def update_view(self, view: EngineView) -> None:
        self.view = view
        snap = view.snapshot
        self.state_icon.setPixmap(state_icon(tray_state(snap)).pixmap(40, 40))
        self.state_text.setText(state_label(snap))
        self.vault.setText(str(view.vault) if view.vault else tr("main.no_vault"))
        never = tr("time.never")
        if snap.sync_configured:
            self.last_sync.setText(format_datetime(snap.last_sync) if snap.last_sync else never)
        else:
            self.last_sync.setText(tr("state.not_configured"))
        self.last_dream.setText(format_datetime(snap.last_dream) if snap.last_dream else never)
        self.pending.setText(str(snap.pending))
        self.conflicts.setText(str(len(view.conflicts) or snap.conflicts))
        if snap.held_deletions:
            self.held_deletions.setText(tr("main.held_deletions", n=snap.held_deletions))
            self.confirm_deletions.setText(tr("main.confirm_deletions", n=snap.held_deletions))
        self.deletions_box.setVisible(snap.held_deletions > 0)
        _show_files(self.unwritable, N_("main.unwritable"), snap.unwritable)
        _show_files(self.not_synced, N_("main.not_synced"), snap.not_synced)
        self._refresh_buttons()

    def _refresh_buttons(self, *_: object) -> None:
        view = getattr(self, "view", None)
        if view is None:
            return
        snap = view.snapshot
        vault_ok = view.vault is not None and view.vault.is_dir()
        b = self.buttons
        b["open_vault"].setEnabled(vault_ok)
        b["open_obsidian"].setEnabled(vault_ok)
        syncing = snap.syncing or self.worker.busy("sync_now")
        b["sync_now"].setEnabled(snap.sync_configured and not snap.paused and not syncing)
        b["sync_now"].setText(tr("menu.syncing") if syncing else tr("menu.sync_now"))
        b["pause"].setText(tr("menu.resume") if snap.paused else tr("menu.pause"))
        b["pause"].setEnabled(snap.sync_configured)
        dreaming = snap.dreaming or self.worker.busy("dream_now")
        b["dream_now"].setEnabled(vault_ok and not dreaming)
        b["dream_now"].setText(tr("menu.dreaming") if dreaming else tr("menu.dream_now"))
        b["last_report"].setEnabled(view.latest_report is not None)
        confirming = self.worker.busy("confirm_deletions")
        self.confirm_deletions.setEnabled(not syncing and not confirming and not snap.paused)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        if self.tray_available and not self.allow_close:
            event.ignore()  # the tray keeps the app; the window just hides
            self.hide()
        else:
            event.accept()
            self.app_actions.quit()


def _file_note() -> QLabel:
    """A notice naming files, as plain text: the names may come from another device (an
    agent's), and must neither format the window nor offer a link."""
    label = QLabel()
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setStyleSheet(NOTICE_STYLE)
    label.hide()
    return label


def _show_files(label: QLabel, key: str, files: tuple[tuple[str, str], ...]) -> None:
    """`key`'s text for `files` ((path, why), the first one named), or the label hidden."""
    if files:
        path, why = files[0]  # control characters escaped, long names cut
        label.setText(tr(key, n=len(files), path=shown(path, SHOWN_PATH), reason=why))
    label.setVisible(bool(files))
