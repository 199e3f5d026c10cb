"""The Keys tab: change the passphrase, the vault key's fingerprint (or why it cannot be
read, and the box that stores a lost key again), export the recovery key."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from companion.gui import validate
from companion.gui.i18n import tr
from companion.gui.settings.form import (
    TABS,
    add_hint,
    add_row,
    error_label,
    mark_unavailable,
    new_form,
)
from companion.gui.settings.hooks import SettingsHooks
from companion.gui.settings.keystore import KeyStoreAnswer


class KeysTab(QWidget):
    """`on_edit` runs on every edit of a passphrase field; the buttons call `on_set_passphrase`,
    `on_unlock` (also Enter in the unlock box) and `on_export`."""

    index = TABS.index("keys")

    def __init__(
        self,
        hooks: SettingsHooks,
        on_edit: Callable[..., None],
        on_set_passphrase: Callable[[], None],
        on_unlock: Callable[[], None],
        on_export: Callable[[], None],
    ) -> None:
        super().__init__()
        self.hooks = hooks
        form = self.form = new_form(self)
        note = QLabel(tr("settings.keys_note"))
        note.setWordWrap(True)
        form.addRow(note)
        self.current_pass = QLineEdit()
        self.new_pass = QLineEdit()
        self.confirm_pass = QLineEdit()
        for edit in (self.current_pass, self.new_pass, self.confirm_pass):
            edit.setEchoMode(QLineEdit.EchoMode.Password)
            edit.textChanged.connect(on_edit)
        form.addRow(tr("settings.pass_current"), self.current_pass)
        form.addRow(tr("settings.pass_new"), self.new_pass)
        self.pass_error = error_label()
        add_row(form, tr("settings.pass_confirm"), self.confirm_pass, self.pass_error)
        self.pass_button = QPushButton(tr("settings.pass_set"))
        self.pass_button.clicked.connect(on_set_passphrase)
        form.addRow("", self.pass_button)

        self.fingerprint = QLabel()
        self.fingerprint.setWordWrap(True)
        self.fingerprint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(tr("settings.fingerprint"), self.fingerprint)
        form.addRow("", self._unlock_box(on_edit, on_unlock))
        self.export_button = QPushButton(tr("settings.export_recovery"))
        self.export_button.clicked.connect(on_export)
        form.addRow("", self.export_button)
        if hooks.export_recovery_key is None:
            mark_unavailable(self.export_button)
        add_hint(form, tr("settings.hint.keys"))

    def _unlock_box(self, on_edit: Callable[..., None], on_unlock: Callable[[], None]) -> QWidget:
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
        self.unlock_pass.textChanged.connect(on_edit)
        self.unlock_pass.returnPressed.connect(on_unlock)
        self.unlock_button = QPushButton(tr("settings.unlock_button"))
        self.unlock_button.clicked.connect(on_unlock)
        row.addWidget(self.unlock_pass, 1)
        row.addWidget(self.unlock_button)
        v.addLayout(row)
        return self.unlock_box

    def show_key_state(self, answer: KeyStoreAnswer | None, rejoining: bool) -> None:
        """The key's fingerprint, or why it cannot be read; the box that stores a lost key
        again, unless the relay token is lost too (then the Sync tab's "Join again" is the way
        back, and brings the key with it)."""
        if answer is None:
            self.fingerprint.setText(tr("settings.key_asking"))
            self.form.setRowVisible(self.unlock_box, False)
            return
        fingerprint, key_lost = answer.key_problem or answer.fingerprint, answer.key_lost
        if key_lost and rejoining:
            fingerprint = f"{fingerprint}\n\n{tr('settings.key_after_rejoin')}"
        self.fingerprint.setText(fingerprint or tr("settings.no_key"))
        offer = key_lost and self.hooks.unlock_key is not None and not rejoining
        self.form.setRowVisible(self.unlock_box, offer)

    def update_buttons(self, busy: Callable[[str], bool]) -> None:
        """The new passphrase's message; whether Set and Unlock can start now."""
        pass_error = validate.passphrase(self.new_pass.text(), self.confirm_pass.text())
        self.pass_error.setText(pass_error or "")
        self.pass_error.setVisible(bool(pass_error))
        if self.hooks.set_passphrase is None:
            mark_unavailable(self.pass_button)
        else:
            self.pass_button.setEnabled(bool(self.new_pass.text()) and pass_error is None)
        self.unlock_button.setEnabled(
            self.hooks.unlock_key is not None
            and bool(self.unlock_pass.text())
            and not busy("unlock")
        )
