"""The demo's morning on the laptop, with real windows: the notification and the review window.

Kept in the GUI package so the demo (engine side) never imports Qt itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QLocale, QTimer
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from companion.dream.undo import NoteLocator
from companion.gui.i18n import set_language
from companion.gui.notify import Notifier
from companion.gui.review import ReviewWindow
from companion.gui.tray import app_icon

if TYPE_CHECKING:
    from companion.config import Config


def show_morning(
    config: Config,
    vault: Path,
    report: Path,
    notes: list[Any],
    echo: Callable[[str], Any],
    seconds: int,
) -> None:
    """Show `notes` and the review window on `report` for `seconds`, then return."""
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
    window = ReviewWindow(report, NoteLocator(vault, None))
    window.show()
    echo(f"The review window shown for {seconds} s on {report.name}.")
    echo("review window shown")
    QTimer.singleShot(seconds * 1000, window.close)
    QTimer.singleShot(seconds * 1000 + 100, qapp.quit)
    qapp.exec()
    notifier.close()
    if tray is not None:
        tray.hide()
    window.deleteLater()
    shown = ", ".join(sorted({backend for backend, _n in notifier.shown})) or "none"
    echo(f"Notification shown by: {shown}")
