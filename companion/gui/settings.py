"""The settings window: five tabs, every field checked as it is typed.

A field with a bad value shows a red message under it and Save stays disabled until it is
fixed. Save writes the config through `Config.set` + `Config.save` (secrets never go there:
passphrase and recovery key go to the callables in `SettingsHooks`, which the sync engine
provides; until it does, those buttons are disabled and say why).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, Qt, QUrl, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QCompleter,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from companion.config import Config
from companion.errors import CompanionError
from companion.fileio import KEEP, write_text_atomic
from companion.gui import validate
from companion.gui.autostart import Autostart, set_start_at_login
from companion.gui.bridge import TaskRunner
from companion.gui.i18n import tr
from companion.logs import get_logger
from companion.sync.state.device import SecretMissing

log = get_logger("gui.settings")

IGNORE_FILE = ".companionignore"
TABS = ("sync", "keys", "schedule", "memory", "advanced")
ERROR_COLOR = "#cf222e"
ERROR_STYLE = f"color: {ERROR_COLOR};"


@dataclass(frozen=True)
class JoinRequest:
    vault: Path
    relay_url: str
    invite_code: str
    device_name: str
    kind: str
    # Empty: the engine asks the passphrase file / secret store. Never shown in a repr.
    passphrase: str = field(default="", repr=False)


@dataclass
class SettingsHooks:
    """What only the sync engine can do. None = not available yet (the button says so)."""

    join: Callable[[JoinRequest], None] | None = None
    set_passphrase: Callable[[str | None, str], None] | None = None  # (current, new)
    fingerprint: Callable[[], str | None] | None = None
    export_recovery_key: Callable[[], str] | None = None
    # the store lost this copy's vault key: open the relay's wrapped key with the passphrase
    # and store it again (`companion keys unlock`); returns the key's fingerprint
    unlock_key: Callable[[str], str] | None = None
    open_url: Callable[[QUrl], bool] | None = None
    # how a folder joined its relay on this device (`keys.sync_state`): an object with
    # relay_url, device_name, kind and vault_id, or None when it is not a sync copy here
    sync_state: Callable[[str], Any] | None = None
    # whether the store lost a sync copy's relay token (`keys.token_lost`), and joining it
    # again with an invite and the passphrase (`keys.rejoin`, as `companion init --rejoin`)
    token_lost: Callable[[str], bool] | None = None
    rejoin: Callable[[Path, str, str], None] | None = None


@dataclass(frozen=True)
class _KeyStoreAnswer:
    """What the secret store said, read on a pool thread, and for which folder."""

    folder: str
    token_lost: bool
    fingerprint: str | None
    key_problem: str | None  # why the vault key cannot be read (a message for a person)
    key_lost: bool = False  # the store lacks the key or holds a damaged one (not: is locked)


@dataclass
class _Field:
    section: str
    name: str
    get: Callable[[], Any]
    check: Callable[[Any], str | None]
    error: QLabel
    tab: int  # index of the tab the field is on


class SettingsWindow(QDialog):
    """Edit the configuration. `saved` fires after a successful save."""

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
        self._key_answer: _KeyStoreAnswer | None = None
        self._joined_state: Any = None
        self.fields: list[_Field] = []
        self._ignore_loaded_from: Path | None = None
        self._rejoining = False  # a sync copy whose relay token the store lost: "Join again"
        self._ignore_original = ""
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
        for index, (build, label) in enumerate(zip(builders, self._tab_labels, strict=True)):
            self._building_tab = index
            self.tabs.addTab(build(), label)

        self.status = QLabel()
        self.status.setWordWrap(True)
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

    # ---- building blocks -------------------------------------------------------------------

    def show_tab(self, name: str) -> None:
        if name in TABS:
            self.tabs.setCurrentIndex(TABS.index(name))

    def _error_label(self) -> QLabel:
        label = QLabel()
        label.setStyleSheet(ERROR_STYLE)
        label.setWordWrap(True)
        label.hide()
        return label

    def _row(self, form: QFormLayout, label: str, widget: QWidget, error: QLabel) -> None:
        box = QWidget()
        v = QVBoxLayout(box)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(2)
        v.addWidget(widget)
        v.addWidget(error)
        form.addRow(label, box)

    def _bind(
        self,
        form: QFormLayout,
        label: str,
        widget: QWidget,
        section: str,
        name: str,
        check: Callable[[Any], str | None] = lambda _v: None,
        holder: QWidget | None = None,
    ) -> _Field:
        """Put `widget` on the form, load its value from the config, check it on every edit.

        A value the config file holds but the schema refused is shown as written, so the field
        is marked in red where the person can fix it.
        """
        value = self.config.get(section, name)
        raw = self.config.raw_value(section, name)
        if isinstance(widget, QLineEdit | QComboBox) and isinstance(raw, str):
            value = raw
        if isinstance(widget, QLineEdit):
            widget.setText(str(value))
            widget.textChanged.connect(self.revalidate)
            get: Callable[[], Any] = widget.text
        elif isinstance(widget, QCheckBox):
            widget.setChecked(bool(value))
            widget.toggled.connect(self.revalidate)
            get = widget.isChecked
        elif isinstance(widget, QSpinBox):
            widget.setValue(int(value))
            widget.valueChanged.connect(self.revalidate)
            get = widget.value
        elif isinstance(widget, QComboBox):
            if widget.isEditable():
                widget.setCurrentText(str(value))
                widget.currentTextChanged.connect(self.revalidate)
                get = widget.currentText
            else:
                index = widget.findData(value)
                widget.setCurrentIndex(max(index, 0))
                widget.currentIndexChanged.connect(self.revalidate)
                get = widget.currentData
        else:  # pragma: no cover - a programming error
            raise TypeError(widget)
        error = self._error_label()
        self._row(form, label, holder or widget, error)
        f = _Field(section, name, get, check, error, self._building_tab)
        self.fields.append(f)
        return f

    def _folder_picker(self, edit: QLineEdit, title: str) -> QWidget:
        box = QWidget()
        h = QHBoxLayout(box)
        h.setContentsMargins(0, 0, 0, 0)
        h.addWidget(edit, 1)
        button = QPushButton(tr("settings.choose"))
        h.addWidget(button)

        def choose() -> None:
            folder = QFileDialog.getExistingDirectory(self, title, edit.text() or str(Path.home()))
            if folder:
                edit.setText(folder)

        button.clicked.connect(choose)
        return box

    @staticmethod
    def _form(tab: QWidget) -> QFormLayout:
        form = QFormLayout(tab)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        return form

    @staticmethod
    def _hint(form: QFormLayout, text: str) -> None:
        """A short explanation under a tab's fields."""
        label = QLabel(text)
        label.setWordWrap(True)
        label.setStyleSheet("color: #57606a; margin-top: 12px;")
        form.addRow(label)

    def _unavailable(self, button: QPushButton) -> None:
        button.setEnabled(False)
        button.setToolTip(tr("settings.needs_sync"))

    # ---- tabs --------------------------------------------------------------------------------

    def _sync_tab(self) -> QWidget:
        tab = QWidget()
        form = self._form(tab)
        self.relay_url = QLineEdit()
        self.relay_url.setPlaceholderText("https://relay.example.org")
        self._bind(
            form, tr("settings.relay_url"), self.relay_url, "sync", "relay_url", validate.http_url
        )
        self.vault_path = QLineEdit()
        picker = self._folder_picker(self.vault_path, tr("settings.vault"))
        self._bind(
            form,
            tr("settings.vault"),
            self.vault_path,
            "vault",
            "path",
            validate.existing_folder,
            holder=picker,
        )
        self.vault_path.textChanged.connect(self._load_ignore_rules)
        self.device_name = QLineEdit()
        self.device_name.setPlaceholderText(tr("settings.device_name_hint"))
        self._bind(
            form,
            tr("settings.device_name"),
            self.device_name,
            "sync",
            "device_name",
            validate.device_name,
        )
        self.paused = QCheckBox(tr("settings.paused"))
        self._bind(form, "", self.paused, "sync", "paused")

        self.invite_code = QLineEdit()
        self.invite_code.setPlaceholderText(tr("settings.invite_hint"))
        self.join_button = QPushButton(tr("settings.join"))
        self.join_button.clicked.connect(self._join)
        self._invite_box = QWidget()
        h = QHBoxLayout(self._invite_box)
        h.setContentsMargins(0, 0, 0, 0)
        h.addWidget(self.invite_code, 1)
        h.addWidget(self.join_button)
        form.addRow(tr("settings.invite"), self._invite_box)
        self.invite_code.textChanged.connect(self._update_buttons)
        self.join_pass = QLineEdit()
        self.join_pass.setEchoMode(QLineEdit.EchoMode.Password)
        self.join_pass.setPlaceholderText(tr("settings.join_pass_hint"))
        self.join_pass.setToolTip(tr("settings.join_pass_help"))
        self.join_pass.textChanged.connect(self._update_buttons)
        self.join_pass_error = self._error_label()
        self._row(form, tr("settings.join_pass"), self.join_pass, self.join_pass_error)
        self._join_pass_box = self.join_pass.parentWidget()
        # a folder that already syncs: how it joined, instead of the invite and join fields
        self.joined = QLabel()
        self.joined.setWordWrap(True)
        self.joined.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(tr("settings.joined_label"), self.joined)
        self._sync_form = form
        if self.hooks.join is None:
            self._unavailable(self.join_button)
        self._hint(form, tr("settings.hint.sync"))
        self.vault_path.textChanged.connect(self._show_joined)
        self._show_joined()
        return tab

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

    def _answer_for(self, folder: str) -> _KeyStoreAnswer | None:
        answer = self._key_answer
        return answer if answer is not None and answer.folder == folder else None

    def _render_joined(self, folder: str) -> None:
        state, answer = self._joined_state, self._answer_for(folder)
        form = self._sync_form
        joined = state is not None
        self._rejoining = joined and answer is not None and answer.token_lost
        self.join_button.setText(tr("settings.rejoin") if self._rejoining else tr("settings.join"))
        for edit in (self.relay_url, self.device_name):
            edit.setReadOnly(joined)
            edit.setToolTip(tr("settings.joined_field") if joined else "")
        if state is not None:
            self.relay_url.setText(str(state.relay_url))
            self.device_name.setText(str(state.device_name))
            kind = {"human": tr("settings.kind.human"), "agent": tr("settings.kind.agent")}.get(
                str(state.kind), ""
            )
            text = tr(
                "settings.joined_as",
                device=state.device_name,
                kind=kind or state.kind,
                relay=state.relay_url,
                vault=state.vault_id,
            )
            if self._rejoining:
                text += "\n\n" + tr("settings.token_lost")
            self.joined.setText(text)
        elif self.relay_url.isReadOnly() is False and getattr(self, "_was_joined", False):
            self.relay_url.setText(str(self.config.raw_value("sync", "relay_url")))
            self.device_name.setText(str(self.config.raw_value("sync", "device_name")))
        self._was_joined = joined
        form.setRowVisible(self.joined, joined)
        form.setRowVisible(self._invite_box, not joined or self._rejoining)
        if self._join_pass_box is not None:
            form.setRowVisible(self._join_pass_box, not joined or self._rejoining)
        if hasattr(self, "unlock_box"):
            self._show_key_state()

    def _ask_key_store(self, folder: str) -> None:
        """Ask the secret store, off the GUI thread, whether the folder lost its relay token
        and what the vault key's fingerprint is. One question at a time: an answer about a
        folder no longer typed is dropped and the store asked again about the one that is."""
        token_lost, fingerprint = self.hooks.token_lost, self.hooks.fingerprint
        ask_token = self._joined_state is not None and token_lost is not None
        if not ask_token and fingerprint is None:  # nothing to ask: answered at once
            self._asking_for = None
            self._key_answer = _KeyStoreAnswer(folder, False, None, None)
            self._render_joined(folder)
            return
        self._asking_for = folder
        if self._store_reader.busy("key store"):
            return  # asked again when the running question is answered

        def read() -> _KeyStoreAnswer:
            lost = ask_token and token_lost is not None and token_lost(folder)
            shown, problem, key_lost = None, None, False
            if fingerprint is not None:
                try:
                    shown = fingerprint()
                except SecretMissing as exc:  # the passphrase can store it again
                    problem, key_lost = str(exc), True
                except CompanionError as exc:  # a locked or missing keyring: not the key
                    problem = str(exc)
            return _KeyStoreAnswer(folder, lost, shown, problem, key_lost)

        self._store_reader.run("key store", read)

    def _key_store_answered(self, _name: str, answer: object) -> None:
        assert isinstance(answer, _KeyStoreAnswer)
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
        self._key_answer = _KeyStoreAnswer(folder, False, None, message)
        self._render_joined(folder)
        self._update_buttons()

    def _keys_tab(self) -> QWidget:
        tab = QWidget()
        form = self._keys_form = self._form(tab)
        note = QLabel(tr("settings.keys_note"))
        note.setWordWrap(True)
        form.addRow(note)
        self.current_pass = QLineEdit()
        self.new_pass = QLineEdit()
        self.confirm_pass = QLineEdit()
        for edit in (self.current_pass, self.new_pass, self.confirm_pass):
            edit.setEchoMode(QLineEdit.EchoMode.Password)
            edit.textChanged.connect(self._update_buttons)
        form.addRow(tr("settings.pass_current"), self.current_pass)
        form.addRow(tr("settings.pass_new"), self.new_pass)
        self.pass_error = self._error_label()
        self._row(form, tr("settings.pass_confirm"), self.confirm_pass, self.pass_error)
        self.pass_button = QPushButton(tr("settings.pass_set"))
        self.pass_button.clicked.connect(self._set_passphrase)
        form.addRow("", self.pass_button)

        self.fingerprint = QLabel()
        self.fingerprint.setWordWrap(True)
        self.fingerprint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(tr("settings.fingerprint"), self.fingerprint)
        form.addRow("", self._unlock_box())
        self._show_key_state()
        self.export_button = QPushButton(tr("settings.export_recovery"))
        self.export_button.clicked.connect(self._export_recovery)
        form.addRow("", self.export_button)
        if self.hooks.export_recovery_key is None:
            self._unavailable(self.export_button)
        self._hint(form, tr("settings.hint.keys"))
        return tab

    def _show_key_state(self) -> None:
        """The key's fingerprint, or why it cannot be read; the box that stores a lost key
        again, unless the relay token is lost too (then the Sync tab's "Join again" is the way
        back, and brings the key with it)."""
        answer = self._answer_for(self.vault_path.text().strip())
        if answer is None:
            self.fingerprint.setText(tr("settings.key_asking"))
            self._keys_form.setRowVisible(self.unlock_box, False)
            return
        fingerprint, key_lost = answer.key_problem or answer.fingerprint, answer.key_lost
        if key_lost and self._rejoining:
            fingerprint = f"{fingerprint}\n\n{tr('settings.key_after_rejoin')}"
        self.fingerprint.setText(fingerprint or tr("settings.no_key"))
        offer = key_lost and self.hooks.unlock_key is not None and not self._rejoining
        self._keys_form.setRowVisible(self.unlock_box, offer)

    def _unlock_box(self) -> QWidget:
        """Shown when this device cannot read its vault key: type the passphrase to store it
        again from the relay's wrapped copy."""
        self.unlock_box = QWidget()
        v = QVBoxLayout(self.unlock_box)
        v.setContentsMargins(0, 0, 0, 0)
        note = QLabel(tr("settings.unlock_note"))
        note.setWordWrap(True)
        v.addWidget(note)
        row = QHBoxLayout()
        self.unlock_pass = QLineEdit()
        self.unlock_pass.setEchoMode(QLineEdit.EchoMode.Password)
        self.unlock_pass.setPlaceholderText(tr("settings.unlock_pass"))
        self.unlock_pass.textChanged.connect(self._update_buttons)
        self.unlock_pass.returnPressed.connect(self._unlock)
        self.unlock_button = QPushButton(tr("settings.unlock_button"))
        self.unlock_button.clicked.connect(self._unlock)
        row.addWidget(self.unlock_pass, 1)
        row.addWidget(self.unlock_button)
        v.addLayout(row)
        return self.unlock_box

    def _schedule_tab(self) -> QWidget:
        tab = QWidget()
        form = self._form(tab)
        self.dream_time = QLineEdit()
        self.dream_time.setPlaceholderText("02:00")
        self._bind(form, tr("settings.dream_time"), self.dream_time, "dream", "time", validate.hhmm)
        self.timezone = QComboBox()
        self.timezone.setEditable(True)
        self.timezone.addItems(list(validate.timezones()))
        completer = QCompleter(list(validate.timezones()), self.timezone)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.timezone.setCompleter(completer)
        self._bind(
            form, tr("settings.timezone"), self.timezone, "dream", "timezone", validate.timezone
        )
        self.window_hours = QSpinBox()
        self.window_hours.setRange(1, 168)
        self.window_hours.setSuffix(" h")
        self._bind(
            form,
            tr("settings.window"),
            self.window_hours,
            "dream",
            "window_hours",
            validate.window_hours,
        )
        self.local_fallback = QCheckBox(tr("settings.local_fallback"))
        self._bind(form, "", self.local_fallback, "dream", "local_fallback")
        self.grace = QSpinBox()
        self.grace.setRange(0, 24 * 60)
        self.grace.setSuffix(" min")
        self._bind(form, tr("settings.grace"), self.grace, "dream", "grace_minutes")
        self.local_fallback.toggled.connect(self.grace.setEnabled)
        self.grace.setEnabled(self.local_fallback.isChecked())
        self.morning_time = QLineEdit()
        self.morning_time.setPlaceholderText("08:00")
        self._bind(
            form,
            tr("settings.morning_time"),
            self.morning_time,
            "notify",
            "morning_time",
            validate.hhmm,
        )
        self._hint(form, tr("settings.hint.schedule"))
        return tab

    def _memory_tab(self) -> QWidget:
        tab = QWidget()
        form = self._form(tab)
        self.hermes_home = QLineEdit()
        self.hermes_home.setPlaceholderText(tr("settings.hermes_home_hint"))
        picker = self._folder_picker(self.hermes_home, tr("settings.hermes_home"))
        self._bind(
            form,
            tr("settings.hermes_home"),
            self.hermes_home,
            "memory",
            "hermes_home",
            validate.existing_folder,
            holder=picker,
        )
        self.memory_limit = QSpinBox()
        self.memory_limit.setRange(1, 100_000)
        self.memory_limit.setSuffix(tr("settings.chars_suffix"))
        self._bind(
            form, tr("settings.memory_limit"), self.memory_limit, "memory", "memory_char_limit"
        )
        self.user_limit = QSpinBox()
        self.user_limit.setRange(1, 100_000)
        self.user_limit.setSuffix(tr("settings.chars_suffix"))
        self._bind(form, tr("settings.user_limit"), self.user_limit, "memory", "user_char_limit")
        self.distiller = QComboBox()
        self.distiller.addItem(tr("settings.distiller_rules"), "rules")
        self.distiller.addItem(tr("settings.distiller_llm"), "llm")
        self._bind(form, tr("settings.distiller"), self.distiller, "dream", "distiller")
        self.llm_url = QLineEdit()
        self.llm_url.setPlaceholderText("http://127.0.0.1:11434/v1")
        self._bind(
            form,
            tr("settings.llm_url"),
            self.llm_url,
            "llm",
            "base_url",
            lambda v: validate.http_url(v, required=self._uses_llm()),
        )
        self.llm_model = QLineEdit()
        self.llm_model.setPlaceholderText("llama3.1:8b")
        self._bind(
            form,
            tr("settings.llm_model"),
            self.llm_model,
            "llm",
            "model",
            lambda v: tr("invalid.required") if self._uses_llm() and not v.strip() else None,
        )
        self._hint(form, tr("settings.hint.memory"))
        return tab

    def _advanced_tab(self) -> QWidget:
        tab = QWidget()
        form = self._form(tab)
        self.language = QComboBox()
        self.language.addItem(tr("settings.language_auto"), "auto")
        self.language.addItem("English", "en")
        self.language.addItem("Español", "es")
        self._bind(form, tr("settings.language"), self.language, "gui", "language")
        self.start_at_login = QCheckBox(tr("settings.start_at_login"))
        self._bind(form, "", self.start_at_login, "gui", "start_at_login")
        self.ignore_rules = QPlainTextEdit()
        self.ignore_rules.setPlaceholderText(tr("settings.ignore_hint"))
        self.ignore_rules.setMinimumHeight(120)
        self.ignore_rules.textChanged.connect(self.revalidate)
        self.ignore_error = self._error_label()
        self._row(form, tr("settings.ignore"), self.ignore_rules, self.ignore_error)
        self.open_log = QPushButton(tr("settings.open_log"))
        self.open_log.clicked.connect(self._open_log)
        form.addRow("", self.open_log)
        self._load_ignore_rules()
        return tab

    # ---- behaviour ---------------------------------------------------------------------------

    def _uses_llm(self) -> bool:
        return (
            getattr(self, "distiller", None) is not None and self.distiller.currentData() == "llm"
        )

    def _vault(self) -> Path | None:
        text = self.vault_path.text().strip()
        path = Path(text).expanduser() if text else None
        return path if path is not None and path.is_dir() else None

    def _load_ignore_rules(self) -> None:
        if not hasattr(self, "ignore_rules"):
            return
        vault = self._vault()
        if vault == self._ignore_loaded_from:
            return
        text = ""
        if vault is not None:
            try:
                text = (vault / IGNORE_FILE).read_text(encoding="utf-8")
            except FileNotFoundError:
                text = ""
            except (OSError, UnicodeDecodeError) as exc:
                log.warning("cannot read %s: %s", vault / IGNORE_FILE, exc)
        self._ignore_loaded_from = vault
        self._ignore_original = text
        self.ignore_rules.setPlainText(text)
        self.ignore_rules.setEnabled(vault is not None)

    def errors(self) -> dict[str, str]:
        """Current inline errors by "section.name" (empty: everything can be saved)."""
        out = {}
        for f in self.fields:
            message = f.check(f.get())
            if message:
                out[f"{f.section}.{f.name}"] = message
        if hasattr(self, "ignore_rules"):
            message = validate.ignore_rules(self.ignore_rules.toPlainText())
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
        pass_error = validate.passphrase(self.new_pass.text(), self.confirm_pass.text())
        self.pass_error.setText(pass_error or "")
        self.pass_error.setVisible(bool(pass_error))
        if self.hooks.set_passphrase is None:
            self._unavailable(self.pass_button)
        else:
            self.pass_button.setEnabled(bool(self.new_pass.text()) and pass_error is None)
        self.unlock_button.setEnabled(
            self.hooks.unlock_key is not None
            and bool(self.unlock_pass.text())
            and not self.runner.busy("unlock")
        )
        join_pass_error = validate.join_passphrase(self.join_pass.text())
        self.join_pass_error.setText(join_pass_error or "")
        self.join_pass_error.setVisible(bool(join_pass_error))
        if self._rejoining:
            self.join_button.setEnabled(
                self.hooks.rejoin is not None
                and bool(self.invite_code.text().strip())
                and join_pass_error is None
                and not self.runner.busy("rejoin")
            )
        elif self.hooks.join is not None:
            ready = (
                bool(self.invite_code.text().strip())
                and join_pass_error is None
                and validate.http_url(self.relay_url.text(), required=True) is None
                and self._vault() is not None
                and not self.runner.busy("join")
            )
            self.join_button.setEnabled(ready)

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
            self._save_ignore_rules()
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

    def _save_ignore_rules(self) -> None:
        vault = self._vault()
        text = self.ignore_rules.toPlainText()
        if vault is None or text == self._ignore_original:
            return
        if text and not text.endswith("\n"):
            text += "\n"
        # the temp file's name is one the watcher and the ignore rules skip (fileio.TEMP_PREFIX)
        write_text_atomic(vault / IGNORE_FILE, text, mode=KEEP)
        self._ignore_original = text

    def _open_log(self) -> None:
        log_file = self.config.paths.log_file
        target = log_file if log_file.exists() else self.config.paths.log_dir
        opener = self.hooks.open_url
        if opener is None:
            from PySide6.QtGui import QDesktopServices

            opener = QDesktopServices.openUrl
        opener(QUrl.fromLocalFile(str(target)))

    # ---- engine hooks, off the GUI thread ---------------------------------------------------

    def _join(self) -> None:
        if self._rejoining:
            self._rejoin()
            return
        hook, vault = self.hooks.join, self._vault()
        if hook is None or vault is None:
            return
        request = JoinRequest(
            vault=vault,
            relay_url=self.relay_url.text().strip(),
            invite_code=self.invite_code.text().strip(),
            device_name=self.device_name.text().strip(),
            kind=str(self.config.settings.sync.kind),
            passphrase=self.join_pass.text(),
        )
        self.join_pass.clear()
        self.status.setStyleSheet("")
        self.status.setText(tr("settings.joining"))
        self.runner.run("join", lambda: hook(request))
        self._update_buttons()

    def _rejoin(self) -> None:
        hook, vault = self.hooks.rejoin, self._vault()
        if hook is None or vault is None or self.runner.busy("rejoin"):
            return
        invite, passphrase = self.invite_code.text().strip(), self.join_pass.text()
        self.join_pass.clear()
        self.status.setStyleSheet("")
        self.status.setText(tr("settings.joining"))
        self.runner.run("rejoin", lambda: hook(vault, invite, passphrase))
        self._update_buttons()

    def _set_passphrase(self) -> None:
        hook = self.hooks.set_passphrase
        if hook is None:
            return
        current = self.current_pass.text() or None
        new = self.new_pass.text()
        self.runner.run("passphrase", lambda: hook(current, new))
        for edit in (self.current_pass, self.new_pass, self.confirm_pass):
            edit.clear()

    def _unlock(self) -> None:
        hook, passphrase = self.hooks.unlock_key, self.unlock_pass.text()
        if hook is None or not passphrase or self.runner.busy("unlock"):
            return
        self.unlock_pass.clear()
        self.status.setStyleSheet("")
        self.status.setText(tr("settings.unlocking"))
        self.runner.run("unlock", lambda: hook(passphrase))
        self._update_buttons()

    def _export_recovery(self) -> None:
        hook = self.hooks.export_recovery_key
        if hook is not None:
            self.runner.run("recovery", hook)

    def _task_done(self, name: str, result: object) -> None:
        self.status.setStyleSheet("")
        if name == "join":
            self.invite_code.clear()
            self.status.setText(tr("settings.joined"))
        elif name == "passphrase":
            self.status.setText(tr("settings.pass_changed"))
        elif name == "unlock":
            self._show_joined()  # the store is asked again: it holds the key now
            self.status.setText(tr("settings.key_restored"))
        elif name == "rejoin":
            self.invite_code.clear()
            self._show_joined()
            self.status.setText(tr("settings.rejoined"))
        elif name == "recovery" and isinstance(result, str):
            self._show_recovery_key(result)
        self._update_buttons()

    def _task_failed(self, name: str, message: str) -> None:
        self.status.setStyleSheet(ERROR_STYLE)
        self.status.setText(message)
        self._update_buttons()

    def _show_recovery_key(self, key: str) -> None:
        box = QMessageBox(self)
        box.setWindowTitle(tr("settings.recovery_title"))
        box.setText(tr("settings.recovery_text"))
        box.setInformativeText(key)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        save = box.addButton(tr("settings.recovery_save"), QMessageBox.ButtonRole.ActionRole)
        box.addButton(QMessageBox.StandardButton.Close)
        box.exec()
        if box.clickedButton() is save:
            path, _ = QFileDialog.getSaveFileName(
                self, tr("settings.recovery_save"), "vault-companion-recovery-key.txt"
            )
            if path:
                write_private(Path(path), key + "\n")


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (a recovery key): owner-only before the first byte,
    even when it replaces a file that others could read."""
    write_text_atomic(path, text, mode=0o600)
