"""The demo's morning on the laptop, with real windows: the notification and the review window.

The review window is the morning review (the items of the night's review note, read with the
relay's history through the laptop's sync engine) when the laptop has the note; else the dream
report's own window. Kept in the GUI package so the demo (engine side) never imports Qt itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QLocale, QTimer
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

from companion.dream.undo import NoteLocator
from companion.gui.bridge import EngineWorker
from companion.gui.facade import IdleEngine
from companion.gui.i18n import set_language
from companion.gui.notify import Notifier
from companion.gui.review import ReviewWindow
from companion.gui.tray import app_icon
from companion.review import desk

if TYPE_CHECKING:
    from companion.config import Config


class _LaptopReview(IdleEngine):
    """The laptop's copy as the review window needs it: the note's items with the relay's
    history, through the demo's sync engine (idle while the window shows)."""

    def __init__(self, vault: Path, engine: Any) -> None:
        super().__init__(vault)
        self.engine = engine

    def review(self, note: str | None) -> desk.View:
        from companion.review.rounds import device_for  # noqa: PLC0415

        assert self._vault is not None
        dev = device_for(self.engine) if self.engine is not None else None
        return desk.read(self._vault, note, dev)


def _review_window(
    vault: Path, report: Path, engine: Any
) -> tuple[QWidget, EngineWorker | None, str]:
    note = desk.note_for(vault, report.stem)
    if note is None:
        return ReviewWindow(report, NoteLocator(vault, None)), None, report.name
    from companion.gui.review_note import ReviewNoteWindow  # noqa: PLC0415

    worker = EngineWorker(_LaptopReview(vault, engine))
    window = ReviewNoteWindow(worker, lambda: vault)
    window.show_note(note)
    return window, worker, note


def show_morning(
    config: Config,
    vault: Path,
    report: Path,
    notes: list[Any],
    echo: Callable[[str], Any],
    seconds: int,
    engine: Any = None,
) -> None:
    """Show `notes` and the review window on `report`'s night for `seconds`, then return.
    `engine`: the laptop's sync engine (the review reads the relay's history through it)."""
    qapp = QApplication.instance() or QApplication(["companion-demo"])
    set_language(str(config.settings.gui.language), QLocale.system().name())
    tray = None
    if QSystemTrayIcon.isSystemTrayAvailable():  # a balloon when the desktop has no daemon
        tray = QSystemTrayIcon(app_icon())
        tray.show()
    notifier = Notifier(tray)
    notifier.fallback_text.connect(
        lambda title, _body: echo(f"  (no notification service here: {title!r})")
    )
    for n in notes:
        notifier.show(n)
    window, worker, shown_on = _review_window(vault, report, engine)
    window.show()
    echo(f"The review window shown for {seconds} s on {shown_on}.")
    echo("review window shown")
    QTimer.singleShot(seconds * 1000, window.close)
    QTimer.singleShot(seconds * 1000 + 100, qapp.quit)
    qapp.exec()
    notifier.close()
    if worker is not None:
        worker.shutdown()
    if tray is not None:
        tray.hide()
    window.deleteLater()
    shown = ", ".join(sorted({backend for backend, _n in notifier.shown})) or "none"
    echo(f"Notification shown by: {shown}")
