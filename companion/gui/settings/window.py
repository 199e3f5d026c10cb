"""The settings window: the five tabs, the key-store question about the folder shown, the
checks that mark a bad field (and its tab) in red, Save, and the engine flows' buttons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QTabWidget, QVBoxLayout, QWidget

from companion.config import Config
from companion.errors import CompanionError
from companion.gui.autostart import Autostart, set_start_at_login
from companion.gui.bridge import TaskRunner
from companion.gui.i18n import tr
from companion.gui.settings.advanced_tab import AdvancedTab
from companion.gui.settings.flows import Flows
from companion.gui.settings.form import ERROR_COLOR, ERROR_STYLE, TABS, Binder
from companion.gui.settings.hooks import SettingsHooks
from companion.gui.settings.keys_tab import KeysTab
from companion.gui.settings.keystore import KeyStoreAnswer, ask_key_store
from companion.gui.settings.memory_tab import MemoryTab
from companion.gui.settings.schedule_tab import ScheduleTab
from companion.gui.settings.sync_tab import SyncTab


class SettingsWindow(QDialog):
    """Edit the configuration. `saved` fires after a successful save.

    The widgets of every tab are attributes of the window too (`relay_url`, `join_button`,
    `unlock_pass`, `dream_time`, `ignore_rules`, ...), as the app and the tests reach them.
    """

    saved = Signal()

    def __init__(
        self,
        config: Config,
        hooks: SettingsHooks | None = None,
        *,
        autostart: Autostart | None = None,
        runner: TaskRunner | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.config = config
        self.hooks = hooks or SettingsHooks()
        self.autostart = autostart
        self.runner = runner or TaskRunner(parent=self)
        self.runner.call_done.connect(self._task_done)
        self.runner.call_failed.connect(self._task_failed)
        # the secret store is asked on its own runner: a locked keyring answers only when the
        # person answers its prompt, and the window must stay usable until then
        self._store_reader = TaskRunner(parent=self)
        self._store_reader.call_done.connect(self._key_store_answered)
        self._store_reader.call_failed.connect(self._key_store_failed)
        self._asking_for: str | None = None  # the folder whose answer is awaited
        self._key_answer: KeyStoreAnswer | None = None
        self._joined_state: Any = None
        self._binder = Binder(config, self.revalidate)
        self.fields = self._binder.fields
        self._rejoining = False  # a sync copy whose relay token the store lost: "Join again"
        self.setWindowTitle(tr("settings.title"))
        self.setMinimumWidth(560)

        self.tabs = QTabWidget()
        self._tab_labels = [
            tr("settings.tab.sync"),
            tr("settings.tab.keys"),
            tr("settings.tab.schedule"),
            tr("settings.tab.memory"),
            tr("settings.tab.advanced"),
        ]
        builders = (
            self._sync_tab,
            self._keys_tab,
            self._schedule_tab,
            self._memory_tab,
            self._advanced_tab,
        )
        for build, label in zip(builders, self._tab_labels, strict=True):
            self.tabs.addTab(build(), label)

        self.status = QLabel()
        self.status.setWordWrap(True)
        self.flows = Flows(
            self.hooks, self.runner, self.sync_tab, self.keys_tab, self.status, self._show_joined
        )
        self.buttons = QDialogButtonBox()
        self.save_button = self.buttons.addButton(
            tr("settings.save"), QDialogButtonBox.ButtonRole.AcceptRole
        )
        close = self.buttons.addButton(tr("settings.close"), QDialogButtonBox.ButtonRole.RejectRole)
        self.save_button.clicked.connect(self.save)
        close.clicked.connect(self.close)

        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self.revalidate()

    # ---- the tabs ------------------------------------------------------------------------------

    def _sync_tab(self) -> QWidget:
        tab = self.sync_tab = SyncTab(self._binder, self.hooks, self._join, self._update_buttons)
        self.relay_url, self.vault_path = tab.relay_url, tab.vault_path
        self.device_name, self.paused = tab.device_name, tab.paused
        self.invite_code, self.join_button = tab.invite_code, tab.join_button
        self.join_pass, self.join_pass_error = tab.join_pass, tab.join_pass_error
        self.joined = tab.joined
        self.vault_path.textChanged.connect(self._load_ignore_rules)
        self.vault_path.textChanged.connect(self._show_joined)
        self._show_joined()
        return tab

    def _keys_tab(self) -> QWidget:
        tab = self.keys_tab = KeysTab(
            self.hooks,
            self._update_buttons,
            self._set_passphrase,
            self._unlock,
            self._export_recovery,
        )
        self.current_pass, self.new_pass = tab.current_pass, tab.new_pass
        self.confirm_pass, self.pass_error = tab.confirm_pass, tab.pass_error
        self.fingerprint, self.unlock_box = tab.fingerprint, tab.unlock_box
        self.unlock_pass, self.unlock_button = tab.unlock_pass, tab.unlock_button
        self.export_button = tab.export_button
        self._show_key_state()
        self.pass_button = tab.pass_button  # last: `_update_buttons` waits for it
        return tab

    def _schedule_tab(self) -> QWidget:
        tab = self.schedule_tab = ScheduleTab(self._binder)
        self.dream_time, self.timezone = tab.dream_time, tab.timezone
        self.window_hours, self.local_fallback = tab.window_hours, tab.local_fallback
        self.grace, self.morning_time = tab.grace, tab.morning_time
        return tab

    def _memory_tab(self) -> QWidget:
        tab = self.memory_tab = MemoryTab(self._binder)
        self.hermes_home, self.memory_limit = tab.hermes_home, tab.memory_limit
        self.user_limit, self.distiller = tab.user_limit, tab.distiller
        self.llm_url, self.llm_model = tab.llm_url, tab.llm_model
        return tab

    def _advanced_tab(self) -> QWidget:
        tab = AdvancedTab(self._binder, self.revalidate, self.hooks.open_url)
        self.language, self.start_at_login = tab.language, tab.start_at_login
        self.ignore_rules, self.ignore_error = tab.ignore_rules, tab.ignore_error
        self.open_log = tab.open_log
        self.advanced_tab = tab  # from here on the vault folder's ignore rules are shown
        self._load_ignore_rules()
        return tab

    def show_tab(self, name: str) -> None:
        if name in TABS:
            self.tabs.setCurrentIndex(TABS.index(name))

    # ---- the folder shown: how it joined, what the secret store says ---------------------------

    def _show_joined(self, *_: object) -> None:
        """A folder set up for sync on this device shows the relay and the device name it
        joined with, read-only (the engine syncs with those, not with the config's `[sync]`
        defaults); any other folder shows the fields to join with an invite. What the secret
        store says (a lost token, the key) follows when it answers."""
        hook = self.hooks.sync_state
        folder = self.vault_path.text().strip()
        self._joined_state = hook(folder) if hook is not None else None
        self._render_joined(folder)
        self._ask_key_store(folder)

    def event(self, event: QEvent) -> bool:
        """Back at the window after the store refused to answer (a locked keyring, unlocked
        meanwhile elsewhere): ask it again. An answered store is not asked on each activation:
        a locked one may show its unlock prompt every time."""
        if event.type() == QEvent.Type.WindowActivate and self._store_refused():
            self._show_joined()
        return super().event(event)

    def _store_refused(self) -> bool:
        if not hasattr(self, "vault_path") or self._asking_for is not None:  # still building
            return False
        answer = self._answer_for(self.vault_path.text().strip())
        return answer is not None and answer.key_problem is not None and not answer.key_lost

    def key_store_pending(self) -> bool:
        """Whether the window still waits for the secret store's answer about the folder."""
        return self._asking_for is not None

    def _answer_for(self, folder: str) -> KeyStoreAnswer | None:
        answer = self._key_answer
        return answer if answer is not None and answer.folder == folder else None

    def _render_joined(self, folder: str) -> None:
        state, answer = self._joined_state, self._answer_for(folder)
        joined = state is not None
        self._rejoining = joined and answer is not None and answer.token_lost
        self.sync_tab.show_joined(state, self._rejoining, self.config)
        if hasattr(self, "keys_tab"):
            self._show_key_state()

    def _show_key_state(self) -> None:
        answer = self._answer_for(self.vault_path.text().strip())
        self.keys_tab.show_key_state(answer, self._rejoining)

    def _ask_key_store(self, folder: str) -> None:
        """Ask the secret store, off the GUI thread, whether the folder lost its relay token
        and what the vault key's fingerprint is. One question at a time: an answer about a
        folder no longer typed is dropped and the store asked again about the one that is."""
        token_lost, fingerprint = self.hooks.token_lost, self.hooks.fingerprint
        ask_token = self._joined_state is not None and token_lost is not None
        if not ask_token and fingerprint is None:  # nothing to ask: answered at once
            self._asking_for = None
            self._key_answer = KeyStoreAnswer(folder, False, None, None)
            self._render_joined(folder)
            return
        self._asking_for = folder
        if self._store_reader.busy("key store"):
            return  # asked again when the running question is answered
        self._store_reader.run(
            "key store", lambda: ask_key_store(folder, ask_token, token_lost, fingerprint)
        )

    def _key_store_answered(self, _name: str, answer: object) -> None:
        assert isinstance(answer, KeyStoreAnswer)
        wanted = self._asking_for
        if wanted is not None and answer.folder != wanted:
            self._show_joined()  # typed on meanwhile: ask about the folder shown now
            return
        self._asking_for = None
        self._key_answer = answer
        self._render_joined(answer.folder)
        self._update_buttons()

    def _key_store_failed(self, _name: str, message: str) -> None:
        folder, self._asking_for = self._asking_for or "", None
        self._key_answer = KeyStoreAnswer(folder, False, None, message)
        self._render_joined(folder)
        self._update_buttons()

    # ---- checks and save -----------------------------------------------------------------------

    def _vault(self) -> Path | None:
        return self.sync_tab.vault()

    def _load_ignore_rules(self) -> None:
        if hasattr(self, "advanced_tab"):
            self.advanced_tab.load_ignore_rules(self._vault())

    def errors(self) -> dict[str, str]:
        """Current inline errors by "section.name" (empty: everything can be saved)."""
        out = {}
        for f in self.fields:
            message = f.check(f.get())
            if message:
                out[f"{f.section}.{f.name}"] = message
        if hasattr(self, "advanced_tab"):
            message = self.advanced_tab.ignore_error_text()
            if message:
                out["ignore"] = message
        return out

    def revalidate(self, *_: object) -> None:
        if not hasattr(self, "save_button"):
            return  # still building the tabs
        errors = self.errors()
        for f in self.fields:
            message = errors.get(f"{f.section}.{f.name}")
            f.error.setText(message or "")
            f.error.setVisible(bool(message))
        self.ignore_error.setText(errors.get("ignore", ""))
        self.ignore_error.setVisible("ignore" in errors)
        self.save_button.setEnabled(not errors)
        # The tabs holding a bad field are marked too, and named: the field may be on a tab
        # that is not the one showing.
        bad_tabs = sorted(
            {f.tab for f in self.fields if f"{f.section}.{f.name}" in errors}
            | ({TABS.index("advanced")} if "ignore" in errors else set())
        )
        bar = self.tabs.tabBar()
        for index, label in enumerate(self._tab_labels):
            marked = index in bad_tabs
            self.tabs.setTabText(index, f"⚠ {label}" if marked else label)
            bar.setTabTextColor(index, QColor(ERROR_COLOR) if marked else QColor())
        if errors:
            names = ", ".join(self._tab_labels[i] for i in bad_tabs)
            self.status.setText(tr("settings.fix_errors_on", tabs=names))
        else:
            self.status.setText("")
        self.status.setStyleSheet(ERROR_STYLE)
        self._update_buttons()

    def _update_buttons(self, *_: object) -> None:
        if not hasattr(self, "pass_button"):
            return
        self.keys_tab.update_buttons(self.runner.busy)
        self.sync_tab.update_buttons(self._rejoining, self.runner.busy)

    def save(self) -> bool:
        """Write every field to the config file; False (with messages) if anything is wrong."""
        self.revalidate()
        if self.errors():
            return False
        old_login = bool(self.config.settings.gui.start_at_login)
        try:
            for f in self.fields:
                value = f.get()
                if isinstance(value, str):
                    value = value.strip()
                self.config.set(f.section, f.name, value)
            self.config.save()
            self.advanced_tab.save_ignore_rules(self._vault())
            new_login = bool(self.config.settings.gui.start_at_login)
            if new_login != old_login or new_login:
                set_start_at_login(new_login, self.autostart)
        except (CompanionError, OSError) as exc:
            self.status.setStyleSheet(ERROR_STYLE)
            self.status.setText(tr("settings.save_failed", error=exc))
            return False
        self.status.setStyleSheet("")
        self.status.setText(tr("settings.saved"))
        self.saved.emit()
        return True

    # ---- engine flows, off the GUI thread (`flows`) --------------------------------------------

    def _join(self) -> None:
        if self._rejoining:
            started = self.flows.rejoin(self._vault())
        else:
            started = self.flows.join(self._vault(), str(self.config.settings.sync.kind))
        if started:
            self._update_buttons()

    def _set_passphrase(self) -> None:
        self.flows.set_passphrase()

    def _unlock(self) -> None:
        if self.flows.unlock():
            self._update_buttons()

    def _export_recovery(self) -> None:
        self.flows.export_recovery()

    def _task_done(self, name: str, result: object) -> None:
        self.flows.finished(name, result, self)
        self._update_buttons()

    def _task_failed(self, name: str, message: str) -> None:
        self.status.setStyleSheet(ERROR_STYLE)
        self.status.setText(message)
        self._update_buttons()
