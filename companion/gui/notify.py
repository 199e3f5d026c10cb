"""Showing notifications: the desktop's own (desktop-notifier) or the tray balloon.

`NotificationCenter` takes the policy's `Notification`s, shows each once (keys remembered in
the state folder across restarts), holds back deferred ones (the morning dream note) until
their time, and turns a click into the notification's `Action`.

`Notifier` sends through `desktop-notifier` (freedesktop D-Bus on Linux, Notification Center
on macOS, toasts on Windows) on a private asyncio loop thread, and falls back to
`QSystemTrayIcon.showMessage` when that backend is missing, refuses (a session bus with no
notification service), or does not confirm in time; with no tray either, the text goes to the
main window (`fallback_text`). The fall back is said in one log line, with the reason, and
desktop notifications are not tried again until the app restarts (desktop-notifier's own
warning with its traceback is kept out of the log). Clicking the notification, or the balloon
that stands in for it, runs its `Action`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QSystemTrayIcon

from companion.fileio import write_text_atomic
from companion.gui.i18n import tr
from companion.gui.notify_policy import Action, Notification
from companion.gui.resources import icon_path
from companion.logs import get_logger

log = get_logger("gui.notify")

DISPATCH_TIMEOUT_MS = 3000
BALLOON_MS = 10_000
REMEMBERED_KEYS = 500


def desktop_backend_available(environ: dict[str, str] | None = None) -> bool:
    """Whether desktop-notifier can reach the desktop here (on Linux: a session bus)."""
    try:
        import desktop_notifier  # noqa: F401
    except ImportError:
        return False
    if not sys.platform.startswith("linux"):
        return True
    env = os.environ if environ is None else environ
    if env.get("DBUS_SESSION_BUS_ADDRESS"):
        return True
    runtime = env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    return Path(runtime, "bus").exists()


class _SendFailures(logging.Filter):
    """desktop-notifier catches a failed send and logs it as a warning with the traceback
    ("Notification failed"); this filter keeps that record out of the log and hands the error
    to the `Notifier` (per thread: each Notifier sends from its own loop thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            self.local.error = record.exc_info[1]
            return False
        return True

    def take(self) -> BaseException | None:
        error = getattr(self.local, "error", None)
        self.local.error = None
        return error


_SEND_FAILURES = _SendFailures()
_BACKEND_LOGGER = "desktop_notifier.backends.base"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class _AsyncLoop:
    """An asyncio loop on a daemon thread, for desktop-notifier's coroutines."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="notify", daemon=True)
        self.thread.start()

    def submit(self, coro: Any) -> None:
        asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


class Notifier(QObject):
    """Shows one notification, by the best means available. `clicked` carries its Action."""

    clicked = Signal(object)  # Action
    fallback_text = Signal(str, str)  # title, body: no tray, no desktop notifications
    _dispatched = Signal(str)  # notification key, from the asyncio thread
    _failed = Signal(str, str)  # notification key, why: the backend refused it (asyncio thread)
    _desktop_clicked = Signal(str)
    _button_pressed = Signal(object)  # Action of a notification's button, from the asyncio thread

    def __init__(
        self,
        tray: QSystemTrayIcon | None,
        *,
        use_desktop: bool | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.tray = tray
        self.use_desktop = desktop_backend_available() if use_desktop is None else use_desktop
        self._actions: dict[str, Action | None] = {}
        self._waiting: dict[str, Notification] = {}
        self._balloon_action: Action | None = None
        self._loop: _AsyncLoop | None = None
        self._desktop: Any = None
        self.shown: list[tuple[str, Notification]] = []  # (backend, notification), newest last
        self._dispatched.connect(self._on_dispatched)
        self._failed.connect(self._on_failed)
        self._desktop_clicked.connect(self._on_desktop_clicked)
        self._button_pressed.connect(self.clicked.emit)
        if tray is not None:
            tray.messageClicked.connect(self._on_balloon_clicked)

    def show(self, n: Notification) -> None:
        # What was shown, for the person and for support (never a secret: events carry none).
        log.info("notification: %s — %s", n.title, n.body.replace("\n", " / "))
        self._actions[n.key] = n.action
        if self.use_desktop and self._send_desktop(n):
            self._waiting[n.key] = n
            QTimer.singleShot(DISPATCH_TIMEOUT_MS, lambda key=n.key: self._not_dispatched(key))
            return
        self._show_fallback(n)

    def _send_desktop(self, n: Notification) -> bool:
        try:
            if self._desktop is None:
                from desktop_notifier import DesktopNotifier, Icon

                backend_log = logging.getLogger(_BACKEND_LOGGER)
                if _SEND_FAILURES not in backend_log.filters:
                    backend_log.addFilter(_SEND_FAILURES)
                self._desktop = DesktopNotifier(
                    app_name=tr("app.name"), app_icon=Icon(path=icon_path("app.svg"))
                )
                self._loop = _AsyncLoop()
            from desktop_notifier import Button, Urgency

            key = n.key

            def pressed(action: Action) -> Callable[[], None]:
                return lambda: self._button_pressed.emit(action)

            buttons = [
                Button(title=label, on_pressed=pressed(action)) for label, action in n.buttons
            ]
            assert self._loop is not None
            self._loop.submit(
                self._deliver(
                    key,
                    title=n.title,
                    message=n.body,
                    urgency=Urgency.Critical if n.urgent else Urgency.Normal,
                    buttons=buttons,
                    on_dispatched=lambda: self._dispatched.emit(key),
                    on_clicked=lambda: self._desktop_clicked.emit(key),
                )
            )
            return True
        except Exception as exc:  # any backend trouble: fall back, never lose the message
            log.warning("desktop notifications unavailable: %s", exc)
            self.use_desktop = False
            return False

    async def _deliver(self, key: str, **kwargs: Any) -> None:
        """On the loop thread: send, and say at once when the backend refused it."""
        _SEND_FAILURES.take()
        try:
            await self._desktop.send(**kwargs)
        except Exception as exc:  # noqa: BLE001 - any backend trouble: the tray instead
            self._failed.emit(key, _one_line(exc))
            return
        error = _SEND_FAILURES.take()
        if error is not None:
            self._failed.emit(key, _one_line(error))

    def _on_failed(self, key: str, why: str) -> None:
        n = self._waiting.pop(key, None)
        if n is None:
            return
        if self.use_desktop:  # said once: the next ones go straight to the tray
            log.warning("desktop notifications unavailable (%s); the app shows them itself", why)
        self.use_desktop = False
        self._show_fallback(n)

    def _on_dispatched(self, key: str) -> None:
        n = self._waiting.pop(key, None)
        if n is not None:
            self.shown.append(("desktop", n))

    def _not_dispatched(self, key: str) -> None:
        n = self._waiting.pop(key, None)
        if n is not None:  # the desktop never confirmed: show it ourselves, stop trying
            log.info("desktop notification not confirmed; using the tray instead")
            self.use_desktop = False
            self._show_fallback(n)

    def _on_desktop_clicked(self, key: str) -> None:
        action = self._actions.get(key)
        if action is not None:
            self.clicked.emit(action)

    def _show_fallback(self, n: Notification) -> None:
        if self.tray is not None and self.tray.isVisible() and self.tray.supportsMessages():
            self._balloon_action = n.action
            icon = (
                QSystemTrayIcon.MessageIcon.Warning
                if n.urgent
                else QSystemTrayIcon.MessageIcon.Information
            )
            self.tray.showMessage(n.title, n.body, icon, BALLOON_MS)
            self.shown.append(("tray", n))
        else:
            self.fallback_text.emit(n.title, n.body)
            self.shown.append(("window", n))

    def balloon(self, title: str, text: str, ms: int) -> None:
        """A notice in the tray balloon (a warning, nothing to open): the balloon it replaces
        no longer answers a click with its notification's action."""
        if self.tray is not None:
            self._balloon_action = None
            self.tray.showMessage(title, text, QSystemTrayIcon.MessageIcon.Warning, ms)

    def _on_balloon_clicked(self) -> None:
        if self._balloon_action is not None:
            self.clicked.emit(self._balloon_action)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.stop()


class NotificationCenter(QObject):
    """Shows each notification once, at its time; remembers shown keys in `state_file`."""

    def __init__(
        self,
        notifier: Notifier,
        state_file: Path | None,
        *,
        clock: Callable[[], datetime] | None = None,
        prepare: Callable[[Notification], Notification] | None = None,
        parent: QObject | None = None,
    ) -> None:
        """`prepare` brings a notification up to date the moment it is shown (the review
        note's counts, for one held until the morning)."""
        super().__init__(parent)
        self.notifier = notifier
        self.state_file = state_file
        self.clock = clock or (lambda: datetime.now().astimezone())
        self.prepare = prepare
        self.pending: list[Notification] = []
        self.seen: list[str] = self._load()
        self.timer = QTimer(self)
        self.timer.setInterval(30_000)
        self.timer.timeout.connect(self.flush)
        self.timer.start()

    def _load(self) -> list[str]:
        if self.state_file is None:
            return []
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [str(k) for k in data.get("shown", [])] if isinstance(data, dict) else []

    def _save(self) -> None:
        if self.state_file is None:
            return
        try:
            text = json.dumps({"shown": self.seen[-REMEMBERED_KEYS:]})
            write_text_atomic(self.state_file, text, make_parents=True)
        except OSError as exc:
            log.warning("cannot remember shown notifications: %s", exc)

    def mark_seen(self, key: str) -> None:
        """Never show `key` (already said another way: the end of a dream started by hand)."""
        if key not in self.seen:
            self.seen.append(key)
            self._save()
        self.pending = [n for n in self.pending if n.key != key]

    def submit(self, notifications: list[Notification]) -> None:
        known = set(self.seen) | {p.key for p in self.pending}
        for n in notifications:
            if n.key not in known:
                self.pending.append(n)
                known.add(n.key)
        self.flush()

    def flush(self) -> None:
        """Show every pending notification whose time has come."""
        now = self.clock()
        due = [n for n in self.pending if n.not_before is None or n.not_before <= now]
        if not due:
            return
        self.pending = [n for n in self.pending if n not in due]
        for n in due:
            self.seen.append(n.key)
            if self.prepare is not None:
                try:
                    n = self.prepare(n)
                except Exception:  # noqa: BLE001 - told as it was, never lost
                    log.exception("cannot bring a notification up to date")
            self.notifier.show(n)
        self._save()
