"""The Sync tab: relay, vault folder, device name, pause; an invite and a passphrase to join
with, or, for a folder already joined on this device, how it joined (read-only)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from companion.config import Config
from companion.gui import validate
from companion.gui.i18n import tr
from companion.gui.settings.form import (
    TABS,
    Binder,
    add_hint,
    add_row,
    error_label,
    folder_picker,
    mark_unavailable,
    new_form,
)
from companion.gui.settings.hooks import SettingsHooks


class SyncTab(QWidget):
    """`on_join` runs when Join (or Join again) is clicked, `on_edit` on every edit of the
    invite and the join passphrase."""

    index = TABS.index("sync")

    def __init__(
        self,
        binder: Binder,
        hooks: SettingsHooks,
        on_join: Callable[[], None],
        on_edit: Callable[..., None],
    ) -> None:
        super().__init__()
        self.hooks = hooks
        self._was_joined = False
        form = self.form = new_form(self)
        self.relay_url = QLineEdit()
        self.relay_url.setPlaceholderText("https://relay.example.org")
        binder.bind(
            form,
            tr("settings.relay_url"),
            self.relay_url,
            "sync",
            "relay_url",
            validate.http_url,
            tab=self.index,
        )
        self.vault_path = QLineEdit()
        picker = folder_picker(self.vault_path, tr("settings.vault"))
        binder.bind(
            form,
            tr("settings.vault"),
            self.vault_path,
            "vault",
            "path",
            validate.existing_folder,
            holder=picker,
            tab=self.index,
        )
        self.device_name = QLineEdit()
        self.device_name.setPlaceholderText(tr("settings.device_name_hint"))
        binder.bind(
            form,
            tr("settings.device_name"),
            self.device_name,
            "sync",
            "device_name",
            validate.device_name,
            tab=self.index,
        )
        self.paused = QCheckBox(tr("settings.paused"))
        binder.bind(form, "", self.paused, "sync", "paused", tab=self.index)

        self.invite_code = QLineEdit()
        self.invite_code.setPlaceholderText(tr("settings.invite_hint"))
        self.join_button = QPushButton(tr("settings.join"))
        self.join_button.clicked.connect(on_join)
        self.invite_box = QWidget()
        h = QHBoxLayout(self.invite_box)
        h.setContentsMargins(0, 0, 0, 0)
        h.addWidget(self.invite_code, 1)
        h.addWidget(self.join_button)
        form.addRow(tr("settings.invite"), self.invite_box)
        self.invite_code.textChanged.connect(on_edit)
        self.join_pass = QLineEdit()
        self.join_pass.setEchoMode(QLineEdit.EchoMode.Password)
        self.join_pass.setPlaceholderText(tr("settings.join_pass_hint"))
        self.join_pass.setToolTip(tr("settings.join_pass_help"))
        self.join_pass.textChanged.connect(on_edit)
        self.join_pass_error = error_label()
        add_row(form, tr("settings.join_pass"), self.join_pass, self.join_pass_error)
        self.join_pass_box = self.join_pass.parentWidget()
        # a folder that already syncs: how it joined, instead of the invite and join fields
        self.joined = QLabel()
        self.joined.setWordWrap(True)
        self.joined.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(tr("settings.joined_label"), self.joined)
        if hooks.join is None:
            mark_unavailable(self.join_button)
        add_hint(form, tr("settings.hint.sync"))

    def folder(self) -> str:
        return self.vault_path.text().strip()

    def vault(self) -> Path | None:
        """The vault folder typed, when it exists."""
        text = self.folder()
        path = Path(text).expanduser() if text else None
        return path if path is not None and path.is_dir() else None

    def show_joined(self, state: Any, rejoining: bool, config: Config) -> None:
        """A folder set up for sync on this device (`state`, from `SettingsHooks.sync_state`)
        shows the relay and device name it joined with, read-only; any other folder the
        fields to join with an invite; a joined copy whose relay token the store lost both
        (`rejoining`: "Join again")."""
        form = self.form
        joined = state is not None
        self.join_button.setText(tr("settings.rejoin") if rejoining else tr("settings.join"))
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
            if rejoining:
                text += "\n\n" + tr("settings.token_lost")
            self.joined.setText(text)
        elif self.relay_url.isReadOnly() is False and self._was_joined:
            self.relay_url.setText(str(config.raw_value("sync", "relay_url")))
            self.device_name.setText(str(config.raw_value("sync", "device_name")))
        self._was_joined = joined
        form.setRowVisible(self.joined, joined)
        form.setRowVisible(self.invite_box, not joined or rejoining)
        if self.join_pass_box is not None:
            form.setRowVisible(self.join_pass_box, not joined or rejoining)

    def update_buttons(self, rejoining: bool, busy: Callable[[str], bool]) -> None:
        """The join passphrase's message, and whether Join (or Join again) can start now."""
        join_pass_error = validate.join_passphrase(self.join_pass.text())
        self.join_pass_error.setText(join_pass_error or "")
        self.join_pass_error.setVisible(bool(join_pass_error))
        if rejoining:
            self.join_button.setEnabled(
                self.hooks.rejoin is not None
                and bool(self.invite_code.text().strip())
                and join_pass_error is None
                and not busy("rejoin")
            )
        elif self.hooks.join is not None:
            ready = (
                bool(self.invite_code.text().strip())
                and join_pass_error is None
                and validate.http_url(self.relay_url.text(), required=True) is None
                and self.vault() is not None
                and not busy("join")
            )
            self.join_button.setEnabled(ready)
