"""The desktop app: `run_tray(app_ctx)` is what `companion` with no subcommand runs.

Wiring only: the engine (`create_engine`), the worker that calls it off the GUI thread, the
tray (or the main window where the desktop has no tray), notifications, and the windows.
"""

from __future__ import annotations

import signal
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import QLocale, QObject, QTimer
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from companion.config import Config
from companion.gui.actions import AppActions
from companion.gui.bridge import EngineFacade, EngineWorker, IdleEngine
from companion.gui.events import EngineEvent, RelayUnreachable
from companion.gui.i18n import current_language, set_language, tr
from companion.gui.main_window import MainWindow
from companion.gui.notify import NotificationCenter, Notifier
from companion.gui.notify_policy import (
    OPEN_CONFLICTS,
    OPEN_NOTE,
    OPEN_REVIEW,
    OPEN_SETTINGS,
    SHOW_MAIN,
    Action,
    notifications_for,
)
from companion.gui.report import NoteLocator
from companion.gui.review import ReviewWindow
from companion.gui.settings import TABS, SettingsHooks, SettingsWindow
from companion.gui.single import SingleInstance, server_name
from companion.gui.tray import TrayController, app_icon
from companion.logs import get_logger

log = get_logger("gui.app")

POLL_MS = 3000


def create_engine(config: Config) -> EngineFacade:
    """The engine for this device. Until the sync engine is wired in, `IdleEngine`."""
    vault = str(config.get("vault", "path") or "")
    engine = IdleEngine(Path(vault) if vault else None)
    engine.set_paused(bool(config.get("sync", "paused")))
    return engine


def memories_dir(config: Config) -> Path:
    from companion.memory.home import memories_dir as _memories
    from companion.memory.home import resolve_home

    return _memories(resolve_home(config_home=config.get("memory", "hermes_home") or None))


class CompanionApp(QObject):
    """Everything the running app holds; `start()` shows it."""

    def __init__(
        self,
        config: Config,
        engine: EngineFacade,
        *,
        tray_available: bool | None = None,
        hooks: SettingsHooks | None = None,
        use_desktop_notifications: bool | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.config = config
        self.hooks = hooks or SettingsHooks()
        if tray_available is None:
            tray_available = QSystemTrayIcon.isSystemTrayAvailable()
        self.tray_available = tray_available
        self.worker = EngineWorker(engine, parent=self)
        self.actions = AppActions(self.worker, config, parent=self)
        self.tray = TrayController(self.worker, self.actions, self) if tray_available else None
        self.main: MainWindow | None = None
        self.settings: SettingsWindow | None = None
        self.reviews: dict[Path, ReviewWindow] = {}
        self.notifier = Notifier(
            self.tray.icon if self.tray else None,
            use_desktop=use_desktop_notifications,
            parent=self,
        )
        self.notifications = NotificationCenter(
            self.notifier, config.paths.state_dir / "gui-notified.json", parent=self
        )
        self._offline_since: datetime | None = None

        a = self.actions
        a.settings_requested.connect(self.open_settings)
        a.review_requested.connect(self.open_review)
        a.main_requested.connect(self.show_main)
        a.quit_requested.connect(self.quit)
        a.notice.connect(self.notice)
        self.notifier.clicked.connect(self.run_action)
        self.notifier.fallback_text.connect(self._show_in_main)
        self.worker.events_ready.connect(self.on_events)
        self.worker.view_ready.connect(self._track_offline)

        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.worker.refresh)

    def start(self) -> None:
        if self.tray is not None:
            self.tray.show()
        else:
            self.show_main()
        self.worker.refresh()
        self.timer.start()
        if not self.config.get("vault", "path"):
            self.open_settings("sync")  # first run: nothing works until a vault is chosen

    # ---- windows -----------------------------------------------------------------------------

    def show_main(self) -> MainWindow:
        if self.main is None:
            self.main = MainWindow(self.worker, self.actions, tray_available=self.tray_available)
        self.main.show()
        self.main.raise_()
        self.main.activateWindow()
        return self.main

    def open_settings(self, tab: str = "") -> SettingsWindow:
        if self.settings is None:
            self.settings = SettingsWindow(self.config, self.hooks)
            self.settings.setWindowIcon(app_icon())
            self.settings.saved.connect(self._settings_saved)
        if tab:
            self.settings.show_tab(tab)
        self.settings.show()
        self.settings.raise_()
        self.settings.activateWindow()
        return self.settings

    def locator(self) -> NoteLocator | None:
        view = self.worker.last_view
        vault = view.vault if view is not None else self.worker.engine.vault_path()
        if vault is None:
            return None
        return NoteLocator(vault, memories_dir(self.config))

    def open_review(self, report: Path) -> ReviewWindow | None:
        locator = self.locator()
        if locator is None:
            self.notice(tr("error.title"), tr("engine.no_vault"))
            return None
        report = Path(report)
        window = self.reviews.get(report)
        if window is None:
            window = ReviewWindow(report, locator, open_url=self.actions.open_url)
            window.setWindowIcon(app_icon())
            window.reverted.connect(lambda _paths: self.worker.refresh())
            self.reviews[report] = window
        else:
            window.reload()
        window.show()
        window.raise_()
        window.activateWindow()
        return window

    def _settings_saved(self) -> None:
        before = current_language()
        after = set_language(self.config.get("gui", "language"), QLocale.system().name())
        self.worker.set_paused(bool(self.config.get("sync", "paused")))
        if after != before:  # windows are rebuilt so the new language shows everywhere
            if self.main is not None:
                visible = self.main.isVisible()
                self.main.deleteLater()
                self.main = None
                if visible:
                    self.show_main()
            if self.settings is not None:
                tab = TABS[self.settings.tabs.currentIndex()]
                self.settings.hide()
                self.settings.deleteLater()
                self.settings = None
                self.open_settings(tab)
            if self.tray is not None:
                self.tray.rebuild_menu()
        self.worker.refresh()

    # ---- notifications -----------------------------------------------------------------------

    def notice(self, title: str, text: str) -> None:
        """A message the person should see now (an engine call failed, ...)."""
        if self.tray is not None and self.tray.icon.isVisible():
            self.tray.icon.showMessage(title, text, QSystemTrayIcon.MessageIcon.Warning, 8000)
        self._show_in_main(title, text, force=self.tray is None)

    def _show_in_main(self, title: str, text: str, force: bool = True) -> None:
        if self.main is not None or force:
            self.show_main().show_notice(title, text)

    def on_events(self, events: list[EngineEvent]) -> None:
        now = datetime.now().astimezone()
        self.notifications.submit(notifications_for(events, self.config.values["notify"], now))

    def _track_offline(self, view: Any) -> None:
        snap = view.snapshot
        if not snap.sync_configured or snap.online or snap.paused:
            self._offline_since = None
            return
        now = datetime.now().astimezone()
        self._offline_since = self._offline_since or now
        self.on_events([RelayUnreachable(self._offline_since)])

    def run_action(self, action: Action) -> None:
        """What clicking a notification does."""
        if action.kind == OPEN_REVIEW and action.target:
            self.open_review(Path(action.target))
        elif action.kind == OPEN_CONFLICTS and action.target:
            self.actions.open_file(Path(action.target))
        elif action.kind == OPEN_NOTE and action.target:
            vault = self.actions.vault()
            if vault is not None:
                self.actions.open_in_obsidian(vault / action.target)
        elif action.kind == OPEN_SETTINGS:
            self.open_settings(action.target or "")
        elif action.kind == SHOW_MAIN:
            self.show_main()

    def handle_message(self, message: str) -> None:
        """A request from a second start ("show")."""
        if message == "show":
            self.show_main()

    def quit(self) -> None:
        self.timer.stop()
        if self.tray is not None:
            self.tray.hide()
        self.notifier.close()
        self.worker.shutdown()
        app = QApplication.instance()
        if app is not None:
            app.quit()


def _quit_on_signals(app: QApplication) -> None:
    """SIGTERM / Ctrl+C end the app cleanly (lock released, worker drained).

    Python runs signal handlers only between bytecodes, so a timer lets it in now and then.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: app.quit())
    heartbeat = QTimer(app)
    heartbeat.timeout.connect(lambda: None)
    heartbeat.start(300)


def run_tray(app_ctx: Any, argv: list[str] | None = None) -> int:
    """Start the desktop app (or wake the one already running) and return its exit status."""
    app = QApplication.instance() or QApplication(argv or sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setApplicationName("vault-companion")
    app.setApplicationDisplayName(tr("app.name"))
    app.setWindowIcon(app_icon())
    config: Config = app_ctx.config
    set_language(config.get("gui", "language"), QLocale.system().name())

    instance = SingleInstance(server_name(app_ctx.paths), app_ctx.paths.state_dir / "gui.lock")
    if not instance.acquire():
        if instance.send("show"):
            print(tr("app.already_running"))
            return 0
        print(tr("app.not_answering"), file=sys.stderr)
        return 1

    companion = CompanionApp(config, create_engine(config))
    app.setQuitOnLastWindowClosed(not companion.tray_available)
    instance.message.connect(companion.handle_message)
    companion.start()
    log.info("tray app started (tray available: %s)", companion.tray_available)
    _quit_on_signals(app)
    try:
        return int(app.exec())
    finally:
        companion.timer.stop()
        if companion.tray is not None:
            companion.tray.hide()
        companion.notifier.close()
        companion.worker.shutdown()
        instance.release()
