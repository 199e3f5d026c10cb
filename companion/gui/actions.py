"""The commands the tray menu and the main window share (one implementation for both)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QUrl, Signal
from PySide6.QtGui import QDesktopServices

from companion.config import Config
from companion.errors import CompanionError
from companion.gui.bridge import EngineWorker
from companion.gui.events import SecretFound
from companion.gui.i18n import tr
from companion.gui.links import obsidian_uri
from companion.logs import get_logger

log = get_logger("gui.actions")

UrlOpener = Callable[[QUrl], bool]


class AppActions(QObject):
    """Menu and button commands. Windows are opened by whoever listens to the *_requested
    signals (the app); engine calls go through the worker; failures become `notice`."""

    notice = Signal(str, str)  # title, text for the person
    settings_requested = Signal(str)  # tab name ("" = first)
    review_requested = Signal(object)  # Path of a dream report
    main_requested = Signal()
    secret_move_requested = Signal(object)  # SecretFound: ask for a name, move it to the store
    quit_requested = Signal()

    def __init__(
        self,
        worker: EngineWorker,
        config: Config | None = None,
        open_url: UrlOpener | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.worker = worker
        self.config = config
        self._open_url = open_url or QDesktopServices.openUrl
        # the newest secret finding that can be moved (has a line): the tray offers "Move secret…"
        self.last_secret: SecretFound | None = None
        worker.call_failed.connect(self._failed)

    def _failed(self, name: str, message: str) -> None:
        titles = {
            "sync_now": tr("error.sync_title"),
            "dream_now": tr("error.dream_title"),
            "decide_held": tr("error.sync_title"),
        }
        self.notice.emit(titles.get(name, tr("error.title")), message)

    def open_url(self, url: QUrl) -> bool:
        if not self._open_url(url):
            self.notice.emit(tr("error.title"), tr("error.cannot_open", url=url.toString()))
            return False
        return True

    def vault(self) -> Path | None:
        view = self.worker.last_view
        return view.vault if view is not None else self.worker.engine.vault_path()

    def open_vault(self) -> None:
        vault = self.vault()
        if vault is not None:
            self.open_url(QUrl.fromLocalFile(str(vault)))

    def open_in_obsidian(self, path: Path | None = None) -> None:
        target = path or self.vault()
        if target is not None:
            self.open_url(QUrl(obsidian_uri(target)))

    def open_file(self, path: Path) -> None:
        self.open_url(QUrl.fromLocalFile(str(path)))

    def decide_held(self, paths: list[str] | None, decision: str) -> None:
        """Accept or refuse held agent changes (`paths` None: all), then sync."""
        self.worker.decide_held(paths, decision)

    def sync_now(self) -> None:
        self.worker.sync_now()

    def confirm_deletions(self) -> None:
        """Delete on every device what the mass-deletion guard held back (the person's "yes,
        I meant it"), in one round."""
        self.worker.confirm_deletions()

    def dream_now(self) -> None:
        self.worker.dream_now()

    def toggle_pause(self) -> None:
        view = self.worker.last_view
        paused = not (view is not None and view.snapshot.paused)
        self.set_paused(paused)

    def set_paused(self, paused: bool) -> None:
        self.worker.set_paused(paused)
        if self.config is not None:  # remembered across restarts
            try:
                self.config.set("sync", "paused", paused)
                self.config.save()
            except (CompanionError, OSError) as exc:
                log.warning("could not save sync.paused: %s", exc)

    def open_last_report(self) -> None:
        view = self.worker.last_view
        report = view.latest_report if view is not None else None
        if report is None:
            report = self.worker.engine.latest_dream_report()
        if report is not None:
            self.review_requested.emit(report)

    def move_last_secret(self) -> None:
        if self.last_secret is not None:
            self.secret_move_requested.emit(self.last_secret)

    def open_settings(self, tab: str = "") -> None:
        self.settings_requested.emit(tab)

    def show_main(self) -> None:
        self.main_requested.emit()

    def quit(self) -> None:
        self.quit_requested.emit()
