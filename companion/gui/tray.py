"""The tray icon and its menu.

The menu is rebuilt from the latest engine view every time it is about to show (and again if
a fresher view arrives while it is open), so it is never stale; opening it also asks the
worker for a new poll.
"""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from companion.gui.actions import AppActions
from companion.gui.bridge import EngineView, EngineWorker
from companion.gui.i18n import tr
from companion.gui.resources import icon_path
from companion.gui.status import EngineSnapshot, TrayState, state_label, tooltip_text, tray_state
from companion.textsafe import shown

MAX_CONFLICTS_LISTED = 20


@cache
def state_icon(state: TrayState) -> QIcon:
    return QIcon(str(icon_path(f"tray-{state.value}.svg")))


@lru_cache(maxsize=1)
def app_icon() -> QIcon:
    return QIcon(str(icon_path("app.svg")))


class TrayController(QObject):
    """Owns the `QSystemTrayIcon`, keeps icon/tooltip current, builds the menu."""

    menu_rebuilt = Signal()

    def __init__(
        self, worker: EngineWorker, actions: AppActions, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.worker = worker
        self.actions = actions
        self.view = worker.last_view or EngineView(EngineSnapshot())
        self.icon = QSystemTrayIcon(self)
        self.menu = QMenu()
        self.conflicts_menu = QMenu()
        self.held_menu = QMenu()
        self.menu.aboutToShow.connect(self._about_to_show)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._activated)
        worker.view_ready.connect(self.update_view)
        worker.call_started.connect(self._busy_changed)
        worker.call_done.connect(self._busy_changed)
        worker.call_failed.connect(self._busy_changed)
        self._apply_view()
        self.rebuild_menu()

    def show(self) -> None:
        self.icon.show()

    def hide(self) -> None:
        self.icon.hide()

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (
            QSystemTrayIcon.ActivationReason.Trigger,
            QSystemTrayIcon.ActivationReason.DoubleClick,
        ):
            self.actions.show_main()

    def _about_to_show(self) -> None:
        self.rebuild_menu()
        self.worker.refresh()

    def _busy_changed(self, *_: object) -> None:
        if self.menu.isVisible():
            self.rebuild_menu()

    def update_view(self, view: EngineView) -> None:
        self.view = view
        self._apply_view()
        if self.menu.isVisible():
            self.rebuild_menu()

    def _apply_view(self) -> None:
        state = tray_state(self.view.snapshot)
        self.icon.setIcon(state_icon(state))
        self.icon.setToolTip(tooltip_text(self.view.snapshot))

    def _add(self, menu: QMenu, text: str, slot, enabled: bool = True) -> QAction:  # noqa: ANN001
        action = menu.addAction(text)
        action.triggered.connect(slot)
        action.setEnabled(enabled)
        return action

    def rebuild_menu(self) -> None:
        """Rebuild the whole menu from `self.view` (cheap: a dozen actions)."""
        menu, view, a = self.menu, self.view, self.actions
        snap = view.snapshot
        vault_ok = view.vault is not None and view.vault.is_dir()
        # New entries go in before the old ones leave: Qt hides a visible menu that becomes
        # empty, and this also runs while the menu is open.
        keep = (self.conflicts_menu.menuAction(), self.held_menu.menuAction())
        old = [act for act in menu.actions() if act not in keep]

        status = menu.addAction(state_label(snap))
        status.setIcon(state_icon(tray_state(snap)))
        status.setEnabled(False)
        menu.addSeparator()

        self._add(menu, tr("menu.open_vault"), a.open_vault, vault_ok)
        self._add(menu, tr("menu.open_obsidian"), lambda: a.open_in_obsidian(), vault_ok)
        menu.addSeparator()

        syncing = snap.syncing or self.worker.busy("sync_now")
        can_sync = snap.sync_configured and not snap.paused and not syncing
        self._add(
            menu, tr("menu.syncing") if syncing else tr("menu.sync_now"), a.sync_now, can_sync
        )
        pause_text = tr("menu.resume") if snap.paused else tr("menu.pause")
        self._add(menu, pause_text, a.toggle_pause, snap.sync_configured)
        dreaming = snap.dreaming or self.worker.busy("dream_now")
        dream_text = tr("menu.dreaming") if dreaming else tr("menu.dream_now")
        self._add(menu, dream_text, a.dream_now, vault_ok and not dreaming)
        self._add(menu, tr("menu.last_report"), a.open_last_report, view.latest_report is not None)
        if a.last_secret is not None:
            self._add(menu, tr("menu.move_secret"), a.move_last_secret)

        conflicts = self.conflicts_menu
        old_sub = list(conflicts.actions())
        conflicts.setTitle(tr("menu.conflicts", n=len(view.conflicts)))
        conflicts.setEnabled(bool(view.conflicts))
        menu.addMenu(conflicts)
        for path in view.conflicts[:MAX_CONFLICTS_LISTED]:
            label = _relative(path, view.vault)
            self._add(conflicts, label, lambda _=False, p=path: a.open_file(p))
        if len(view.conflicts) > MAX_CONFLICTS_LISTED:
            more = len(view.conflicts) - MAX_CONFLICTS_LISTED
            self._add(conflicts, tr("menu.more", n=more), a.open_vault)
        for act in old_sub:
            conflicts.removeAction(act)
            act.deleteLater()
        self._held_entries(menu)
        menu.addSeparator()

        self._add(menu, tr("menu.settings"), lambda: a.open_settings())
        self._add(menu, tr("menu.quit"), a.quit)
        for act in old:
            menu.removeAction(act)
            act.deleteLater()
        self.menu_rebuilt.emit()

    def _held_entries(self, menu: QMenu) -> None:
        """ "Held for your approval (n)": each held change with Accept / Refuse, then all."""
        held, a = self.view.held, self.actions
        sub = self.held_menu
        old_sub = list(sub.actions())
        sub.setTitle(tr("menu.held", n=len(held)))
        sub.menuAction().setVisible(bool(held))
        menu.addMenu(sub)
        deciding = self.worker.busy("decide_held")
        for item in held[:MAX_CONFLICTS_LISTED]:
            one = sub.addMenu(shown(f"{item.path} ({item.author or '?'})"))
            one.setToolTip(item.reason)
            self._add(
                one,
                tr("menu.held_accept"),
                lambda _=False, p=item.path: a.decide_held([p], "accept"),
                not deciding,
            )
            self._add(
                one,
                tr("menu.held_refuse"),
                lambda _=False, p=item.path: a.decide_held([p], "refuse"),
                not deciding,
            )
        if held:
            sub.addSeparator()
            self._add(
                sub,
                tr("menu.held_accept_all"),
                lambda _=False: a.decide_held(None, "accept"),
                not deciding,
            )
            self._add(sub, tr("menu.held_refuse_all"),
                      lambda _=False: a.decide_held(None, "refuse"), not deciding)  # fmt: skip
        for act in old_sub:
            sub.removeAction(act)
            act.deleteLater()

    def action_texts(self) -> list[str]:
        """Visible entries of the menu, for tests and screenshots ("---" for separators)."""
        return [
            "---" if act.isSeparator() else act.text()
            for act in self.menu.actions()
            if act.isVisible()
        ]


def _relative(path: Path, vault: Path | None) -> str:
    if vault is not None:
        try:
            return path.relative_to(vault).as_posix()
        except ValueError:
            pass
    return str(path)
