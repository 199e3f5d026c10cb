"""The desktop app: `run_tray(app_ctx)` is what `companion` with no subcommand runs.

Wiring only: the engine (`create_engine`), the worker that calls it off the GUI thread, the
tray (or the main window where the desktop has no tray), notifications, and the windows.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QLocale, QObject, QSocketNotifier, QThread, QTimer, Signal
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from companion.config import Config
from companion.dream.report import ReportError, read_report
from companion.dream.undo import NoteLocator
from companion.errors import CompanionError
from companion.gui.actions import AppActions
from companion.gui.bridge import EngineFacade, EngineWorker, IdleEngine
from companion.gui.display import display_problem
from companion.gui.dreamclock import (
    NO_RELAY,
    OFFLINE,
    Decision,
    DreamClock,
    night_of,
    utc_now,
)
from companion.gui.events import (
    DreamLanded,
    EngineEvent,
    LocalDreamRan,
    RelayUnreachable,
    ReviewChanged,
    SecretFound,
)
from companion.gui.i18n import current_language, set_language, tr
from companion.gui.notify import NotificationCenter, Notifier
from companion.gui.notify_policy import (
    MOVE_SECRET,
    OPEN_CONFLICTS,
    OPEN_NOTE,
    OPEN_REVIEW,
    OPEN_REVIEW_NOTE,
    OPEN_SETTINGS,
    SHOW_MAIN,
    Action,
    Notification,
    dream_now_finished,
    dream_now_started,
    notifications_for,
    recount_review,
)
from companion.gui.qtcheck import qt_binding_problem
from companion.gui.secretmove import NameAsker, SecretMover, ask_name_dialog
from companion.gui.single import SingleInstance, server_name
from companion.gui.tray import TrayController, app_icon
from companion.logs import get_logger
from companion.vaultpath import configured_vault

if TYPE_CHECKING:  # the windows are imported when first opened: a tray at rest needs none
    from companion.gui.main_window import MainWindow
    from companion.gui.review import ReviewWindow
    from companion.gui.review_note import ReviewNoteWindow
    from companion.gui.settings import SettingsHooks, SettingsWindow

log = get_logger("gui.app")

POLL_MS = 3000


def create_engine(config: Config) -> EngineFacade:
    """The engine for this device: `SyncFacade` (the sync daemon in this process) when the
    vault folder is a sync copy on this device, else `IdleEngine` (reports, no syncing)."""
    paused = bool(config.settings.sync.paused)
    folder = configured_vault(config)
    engine: IdleEngine | None = None
    if folder is not None and folder.is_dir():
        from companion.sync.state.device import DeviceState  # noqa: PLC0415 - light; the rest is lazy

        if DeviceState.exists(config.paths, os.path.realpath(folder)):
            from companion.gui.sync_facade import SyncFacade  # noqa: PLC0415

            engine = SyncFacade(folder, config, paused=paused)
    if engine is None:
        engine = IdleEngine(folder)
        engine.set_paused(paused)
    engine.set_problems([p.message for p in config.problems])
    return engine


def close_engine(engine: EngineFacade) -> None:
    """Stop what an engine runs (the sync daemon); engines without threads have no `close`."""
    close = getattr(engine, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # noqa: BLE001 - quitting must not fail
            log.exception("closing the engine failed")


def settings_hooks(config: Config) -> SettingsHooks:
    """The Keys and Sync tabs' engine calls (`companion.gui.keys`) for the configured vault.

    Join is always offered; the key buttons only when the vault folder is a sync copy on this
    device (the vault is read from the config when a button is pressed).
    """
    from companion.gui import keys  # noqa: PLC0415
    from companion.gui.settings import JoinRequest, SettingsHooks  # noqa: PLC0415

    paths = config.paths

    def vault() -> Path:
        return configured_vault(config) or Path()

    def join(req: JoinRequest) -> None:
        keys.join(
            paths,
            config,
            req.vault,
            req.relay_url,
            req.invite_code,
            req.device_name,
            req.kind,
            req.passphrase,
        )

    def rejoin(folder: Path, invite: str, passphrase: str) -> None:
        keys.rejoin(paths, config, folder, invite, passphrase)

    hooks = SettingsHooks(
        join=join,
        sync_state=lambda folder: keys.sync_state(paths, folder),
        token_lost=lambda folder: keys.token_lost(paths, config, folder),
        rejoin=rejoin,
    )
    if keys.is_sync_copy(paths, configured_vault(config)):
        hooks.fingerprint = lambda: keys.fingerprint(paths, config, vault())
        hooks.export_recovery_key = lambda: keys.export_recovery_key(paths, config, vault())
        hooks.set_passphrase = lambda old, new: keys.change_passphrase(
            paths, config, vault(), old, new
        )
        hooks.unlock_key = lambda passphrase: unlock_key(config, vault(), passphrase)
    return hooks


def unlock_key(config: Config, vault: Path, passphrase: str) -> str:
    """Store the vault key again from the relay's wrapped copy (`companion keys unlock`), with
    the passphrase typed in the Keys tab; returns the key's fingerprint."""
    from companion.gui import keys  # noqa: PLC0415

    typed = keys.typed_passphrase(passphrase)
    return keys.unlock_again(config.paths, config, vault, passphrase=typed).fingerprint


def memories_dir(config: Config) -> Path:
    from companion.memory.home import memories_dir as _memories
    from companion.memory.home import resolve_home

    return _memories(resolve_home(config_home=config.settings.memory.hermes_home or None))


class CompanionApp(QObject):
    """Everything the running app holds; `start()` shows it."""

    _dream_refused = Signal(str)  # from the dream clock's thread: why the local dream cannot run

    def __init__(
        self,
        config: Config,
        engine: EngineFacade,
        *,
        tray_available: bool | None = None,
        hooks: SettingsHooks | None = None,
        use_desktop_notifications: bool | None = None,
        dream_clock: bool = True,
        now: Callable[[], datetime] = utc_now,
        ask_secret_name: NameAsker = ask_name_dialog,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.config = config
        self.hooks = hooks
        if tray_available is None:
            tray_available = QSystemTrayIcon.isSystemTrayAvailable()
        self.tray_available = tray_available
        self.worker = EngineWorker(engine, parent=self)
        self.actions = AppActions(self.worker, config, parent=self)
        self.tray = TrayController(self.worker, self.actions, self) if tray_available else None
        self.main: MainWindow | None = None
        self.settings: SettingsWindow | None = None
        self.reviews: dict[Path, ReviewWindow] = {}  # dream reports with no review note
        self.review_note: ReviewNoteWindow | None = None
        self.notifier = Notifier(
            self.tray.icon if self.tray else None,
            use_desktop=use_desktop_notifications,
            parent=self,
        )
        self._now = now
        self.notifications = NotificationCenter(
            self.notifier,
            config.paths.state_dir / "gui-notified.json",
            clock=lambda: self._now().astimezone(),
            prepare=self._recount_review,
            parent=self,
        )
        self.secrets = SecretMover(
            config, self.actions.vault, ask_name=ask_secret_name, parent=self
        )
        self._offline_since: datetime | None = None
        # The local fallback dream: checked once the first engine view says whether the relay
        # answers, then at the dream and grace times and after a resume.
        self.dreamclock = DreamClock(
            config,
            config.paths.state_dir / "dream-clock.json",
            vault=lambda: self.worker.engine.vault_path(),
            relay_reachable=self._relay_reachable,
            launch=self._launch_local_dream,
            now=now,
            on_blocked=lambda decision: self._dream_refused.emit(decision.reason),
        )
        self._dream_clock_wanted = dream_clock
        self._local_dream: Decision | None = None

        a = self.actions
        a.settings_requested.connect(self.open_settings)
        a.review_requested.connect(self.open_review)
        a.main_requested.connect(self.show_main)
        a.quit_requested.connect(self.quit)
        a.notice.connect(self.notice)
        a.secret_move_requested.connect(self.move_secret)
        self._dream_refused.connect(
            lambda reason: self.notice(tr("notify.dream_refused.title"), reason)
        )
        self.secrets.notice.connect(self.notice)
        self.secrets.moved.connect(self._secret_moved)
        self.notifier.clicked.connect(self.run_action)
        self.notifier.fallback_text.connect(self._show_in_main)
        self.worker.events_ready.connect(self.on_events)
        self.worker.view_ready.connect(self._track_offline)
        self.worker.view_ready.connect(self._start_dream_clock)
        self.worker.call_started.connect(self._call_started)
        self.worker.call_done.connect(self._call_done)
        self.worker.call_failed.connect(self._call_failed)

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
        if self.config.problems:
            self._show_config_problems()
        elif not self.config.settings.vault.path:
            self.open_settings("sync")  # first run: nothing works until a vault is chosen

    def _show_config_problems(self) -> None:
        """A broken config file: logged once, and shown in the window until it is fixed (the
        defaults stand in for the refused keys meanwhile; no local dream runs)."""
        for p in self.config.problems:
            log.error("configuration problem: %s", p.message)
        body = "\n".join(p.message for p in self.config.problems)
        self.show_main().show_notice(
            tr("config.broken_title"), body + "\n" + tr("config.broken_hint")
        )

    # ---- windows -----------------------------------------------------------------------------

    def show_main(self) -> MainWindow:
        if self.main is None:
            from companion.gui.main_window import MainWindow  # noqa: PLC0415

            self.main = MainWindow(self.worker, self.actions, tray_available=self.tray_available)
        self.main.show()
        self.main.raise_()
        self.main.activateWindow()
        return self.main

    def open_settings(self, tab: str = "") -> SettingsWindow:
        if self.settings is None:
            from companion.gui.settings import SettingsWindow  # noqa: PLC0415

            hooks = self.hooks or settings_hooks(self.config)
            self.settings = SettingsWindow(self.config, hooks)
            self.settings.setWindowIcon(app_icon())
            self.settings.saved.connect(self._settings_saved)
            self.settings.runner.call_done.connect(self._settings_task_done)
            log.info("settings window opened")
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

    def open_review(self, report: Path) -> ReviewWindow | ReviewNoteWindow | None:
        """The night's review: the items of its review note when the vault has one (the
        relay's account, decided line by line as in Obsidian); else the dream report's own
        window (a vault with no relay: nothing attests the changes, no note is written)."""
        from companion.review.desk import note_for  # noqa: PLC0415

        vault = self.actions.vault()
        report = Path(report)
        note = note_for(vault, report.stem) if vault is not None and vault.is_dir() else None
        if note is not None:
            return self.open_review_note(note)
        locator = self.locator()
        if locator is None:
            self.notice(tr("error.title"), tr("engine.no_vault"))
            return None
        window = self.reviews.get(report)
        if window is None:
            from companion.gui.review import ReviewWindow  # noqa: PLC0415

            window = ReviewWindow(report, locator, open_url=self.actions.open_url)
            window.setWindowIcon(app_icon())
            window.reverted.connect(lambda _paths: self.worker.refresh())
            self.reviews[report] = window
            log.info("review window opened on %s", report)
        else:
            window.reload()
        window.show()
        window.raise_()
        window.activateWindow()
        return window

    def open_review_note(self, note: str | None = None) -> ReviewNoteWindow:
        """The review window on note `note` (vault-relative; None: the newest)."""
        if self.review_note is None:
            from companion.gui.review_note import ReviewNoteWindow  # noqa: PLC0415

            self.review_note = ReviewNoteWindow(
                self.worker, self.actions.vault, open_url=self.actions.open_url
            )
            self.review_note.setWindowIcon(app_icon())
        log.info("review window opened on %s", note or "the newest review note")
        window = self.review_note
        window.show_note(note)
        window.show()
        window.raise_()
        window.activateWindow()
        return window

    def _settings_task_done(self, name: str, _result: object) -> None:
        """After a join the folder is a sync copy: sync it, and offer the key buttons. After
        the key was stored again or the folder joined again, a new engine starts at once (the
        failed one would wait for its next start attempt)."""
        if name not in ("join", "unlock", "rejoin"):
            return
        old, self.worker.engine = self.worker.engine, create_engine(self.config)
        close_engine(old)
        if name != "join":
            self.worker.refresh()
            return
        if self.settings is not None and self.hooks is None:
            window, self.settings = self.settings, None
            window.hide()
            window.deleteLater()
            self.open_settings("keys").status.setText(tr("settings.joined"))
        self.worker.refresh()

    def _settings_saved(self) -> None:
        problems = [p.message for p in self.config.problems]
        self.worker.engine.set_problems(problems)  # cheap and thread-safe
        if not problems and self.main is not None:
            self.main.clear_notice()
        before = current_language()
        after = set_language(self.config.settings.gui.language, QLocale.system().name())
        self.worker.set_paused(bool(self.config.settings.sync.paused))
        if self.dreamclock.scheduler is not None:
            self.dreamclock.reschedule()
        if after != before:  # windows are rebuilt so the new language shows everywhere
            if self.main is not None:
                visible = self.main.isVisible()
                self.main.deleteLater()
                self.main = None
                if visible:
                    self.show_main()
            if self.settings is not None:
                from companion.gui.settings import TABS  # noqa: PLC0415

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
        log.info("notice: %s — %s", title, text.replace("\n", " / "))
        if self.tray is not None and self.tray.icon.isVisible():
            self.notifier.balloon(title, text, 8000)
        self._show_in_main(title, text, force=self.tray is None)

    def _show_in_main(self, title: str, text: str, force: bool = True) -> None:
        if self.main is not None or force:
            self.show_main().show_notice(title, text)

    def _recount_review(self, n: Notification) -> Notification:
        """A review note's notification counts what the note waits for when it is shown."""
        action, vault = n.action, self.actions.vault()
        if action is None or action.kind != OPEN_REVIEW_NOTE or not action.target or not vault:
            return n
        from companion.review.desk import open_counts  # noqa: PLC0415

        if not (vault / action.target).is_file():
            return n
        return recount_review(n, open_counts(vault, action.target))

    def on_events(self, events: list[EngineEvent]) -> None:
        for event in events:
            if isinstance(event, SecretFound) and event.line:
                self.actions.last_secret = event
            if isinstance(event, DreamLanded):  # a later run of the night: the window shows it
                window = self.reviews.get(Path(event.report))
                if window is not None and window.isVisible():
                    log.info("review window refreshed: %s was written again", event.report)
                    window.reload()
            if isinstance(event, ReviewChanged | DreamLanded):
                # a round carried review notes (a decision here or on another device, a new
                # night): the open review reads its items again
                note_window = self.review_note
                if note_window is not None and note_window.isVisible():
                    note_window.refresh()
        now = self._now().astimezone()
        notify = self.config.settings.notify
        self.notifications.submit(notifications_for(events, notify, now, self._night(now)))

    def _night(self, now: datetime) -> datetime | None:
        """The night's dream time (the last scheduled one at or before `now`), or None when
        the schedule cannot be worked out (a broken `[dream]` time or time zone)."""
        try:
            return night_of(now, self.config)
        except (CompanionError, ValueError, KeyError):  # KeyError: an unknown time zone
            return None

    def _track_offline(self, view: Any) -> None:
        snap = view.snapshot
        if not snap.sync_configured or snap.online or snap.paused:
            self._offline_since = None
            return
        now = self._now().astimezone()
        self._offline_since = self._offline_since or now
        self.on_events([RelayUnreachable(self._offline_since)])

    # ---- the local fallback dream ------------------------------------------------------------

    def _start_dream_clock(self, _view: Any) -> None:
        if self._dream_clock_wanted and self.dreamclock.scheduler is None:
            self.dreamclock.start()

    def _relay_reachable(self) -> bool | None:
        view = self.worker.last_view
        if view is None or not view.snapshot.sync_configured:
            return None
        return view.snapshot.online

    def _launch_local_dream(self, decision: Decision) -> bool:
        """Called by the dream clock (any thread): the dream runs on the worker's pool."""
        self._local_dream = decision
        if not self.worker.dream_now():  # a dream started by hand is running already
            self._local_dream = None
            return False
        return True

    def _call_started(self, name: str) -> None:
        if name == "dream_now" and self._local_dream is None:  # pressed by the person
            self.notifications.submit([dream_now_started()])
            self.worker.refresh()  # the tray shows it dreaming now, not at the next poll

    def _dream_now_done(self, result: object) -> None:
        """The end of a dream started by hand: what it did, said once (the report's own
        "dream landed" is then not shown again for the same night)."""
        if not isinstance(result, Path):
            self.notifications.submit([dream_now_finished(None, "", "local", {})])
            return
        try:
            rep = read_report(result)
        except ReportError as exc:
            log.warning("cannot read the dream's report: %s", exc)
            return
        self.notifications.mark_seen(f"dream:{rep.date}")
        done = dream_now_finished(str(result), rep.date, rep.ran_on, dict(rep.counts))
        self.notifications.submit([done])

    def _call_done(self, name: str, result: object) -> None:
        if name != "dream_now":
            return
        if self._local_dream is None:
            self._dream_now_done(result)
            return
        decision, self._local_dream = self._local_dream, None
        self.dreamclock.finished(True)
        if decision.cause == NO_RELAY or not isinstance(result, Path):
            return  # the only dreamer (its report's own notification says it) / skipped
        try:
            rep = read_report(result)
        except ReportError as exc:
            log.warning("cannot read the local dream's report: %s", exc)
            return
        event = LocalDreamRan(rep.date, result, dict(rep.counts), decision.cause == OFFLINE)
        self.on_events([event])

    def _call_failed(self, name: str, _message: str) -> None:
        if name == "dream_now" and self._local_dream is not None:
            self._local_dream = None
            self.dreamclock.finished(False)

    def move_secret(self, finding: SecretFound) -> bool:
        """Ask for a name and move the flagged secret into the keyring (or the secrets file)."""
        return self.secrets.request(finding.note, finding.line, finding.kind, self.main)

    def _secret_moved(self, result: Any) -> None:
        last = self.actions.last_secret
        if last is not None and (last.note, last.line) == (result.path, result.line):
            self.actions.last_secret = None
        self.worker.refresh()  # the note's edit syncs like any other

    def run_action(self, action: Action) -> None:
        """What clicking a notification does."""
        if action.kind == OPEN_REVIEW and action.target:
            self.open_review(Path(action.target))
        elif action.kind == OPEN_REVIEW_NOTE and action.target:
            self.open_review_note(action.target)
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
        elif action.kind == MOVE_SECRET and action.target:
            self.move_secret(SecretFound(action.target, action.detail, action.line))

    def handle_message(self, message: str) -> None:
        """A request from another process of this user (`SingleInstance.send`): "show" (a
        second start), "settings", "review" (the last dream report) or "quit" (an
        uninstaller, a session script): the same commands as the tray menu's."""
        log.info("message from another process: %s", message)
        if message == "show":
            self.show_main()
        elif message == "settings":
            self.actions.open_settings()
        elif message == "review":
            self.actions.open_last_report()
        elif message == "quit":
            self.actions.quit()

    def shutdown(self) -> None:
        """Stop timers, the dream clock, running calls (bounded) and the engine; idempotent."""
        self.timer.stop()
        # a view the worker delivers after this point must not start the clock again
        self._dream_clock_wanted = False
        self.dreamclock.stop()
        if self.tray is not None:
            self.tray.hide()
        self.notifier.close()
        self.worker.shutdown()
        close_engine(self.worker.engine)

    def quit(self) -> None:
        """Quit: every window goes at once, then the engine stops, then the event loop ends.

        `QApplication.exit`, not `quit`: Qt 6's `quit()` first asks every visible window to
        close and gives up if one refuses, and the main window refuses while there is a tray
        (closing it only hides it), so Quit left the app running whenever it was open.
        """
        log.info("quitting")
        if self.main is not None:
            self.main.allow_close = True
        for window in [self.main, self.settings, self.review_note, *self.reviews.values()]:
            if window is not None:
                window.hide()
        self.shutdown()
        app = QApplication.instance()
        # Only a running event loop is told to end: `exit` with none running would make every
        # later event loop of this thread return at once (a test's, or a second app's).
        if app is not None and QThread.currentThread().loopLevel() > 0:
            app.exit(0)


class SignalQuit:
    """SIGTERM / Ctrl+C end the app cleanly (lock released, worker drained, sync stopped).

    Python runs a signal handler only when the interpreter gets control; the C-level handler
    writes to a socket (`signal.set_wakeup_fd`) that Qt watches, so the event loop wakes for
    it at once with no polling timer. `stop` is set once a signal came (also before the event
    loop started). Keep the object alive as long as the app runs.
    """

    def __init__(self, app: QApplication) -> None:
        self.app = app
        self.stop = threading.Event()
        self._rsock, self._wsock = socket.socketpair()
        self._rsock.setblocking(False)
        self._wsock.setblocking(False)
        signal.set_wakeup_fd(self._wsock.fileno(), warn_on_full_buffer=False)
        self._notifier = QSocketNotifier(self._rsock.fileno(), QSocketNotifier.Type.Read, app)
        self._notifier.activated.connect(self._drain)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handler)

    def _handler(self, *_: object) -> None:
        self.stop.set()
        self.app.quit()

    def _drain(self) -> None:
        try:
            self._rsock.recv(64)
        except OSError:
            pass


class NoDisplay(CompanionError):
    """No display to show the app on (exit status 2, like any bad setup)."""

    exit_code = 2


class BrokenQtBinding(CompanionError):
    """The installed Qt binding would crash the app (exit status 2, like any bad setup)."""

    exit_code = 2


def run_tray(app_ctx: Any, argv: list[str] | None = None) -> int:
    """Start the desktop app (or wake the one already running) and return its exit status."""
    broken = qt_binding_problem()
    if broken is not None:
        raise BrokenQtBinding(broken)
    if QApplication.instance() is None:
        problem = display_problem()
        if problem is not None:  # Qt would abort (SIGABRT) with a page of plugin messages
            raise NoDisplay(
                f"the desktop app needs a display, and there is none here: {problem}. "
                "On a server, sync with `companion watch VAULT` instead"
            )
    app = QApplication.instance() or QApplication(argv or sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setApplicationName("vault-companion")
    app.setApplicationDisplayName(tr("app.name"))
    app.setWindowIcon(app_icon())
    # A broken file does not stop the app: it says what is wrong in its window (see start()).
    config: Config = app_ctx.lenient_config()
    set_language(config.settings.gui.language, QLocale.system().name())
    signals = SignalQuit(app)

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
    try:
        return 0 if signals.stop.is_set() else int(app.exec())
    finally:
        companion.shutdown()
        instance.release()
