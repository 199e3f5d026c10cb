"""The settings window's flows through the sync engine: join with an invite, join again
after the store lost the relay token, change the passphrase, store a lost vault key again
(unlock), export the recovery key. Each runs its `SettingsHooks` call on the window's
`TaskRunner` (off the GUI thread) under its own name; `finished` shows what came back.
Secrets typed for a flow are cleared from their fields as it starts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QLabel, QMessageBox, QWidget

from companion.fileio import write_text_atomic
from companion.gui.bridge import TaskRunner
from companion.gui.i18n import tr
from companion.gui.settings.hooks import JoinRequest, SettingsHooks
from companion.gui.settings.keys_tab import KeysTab
from companion.gui.settings.sync_tab import SyncTab


class Flows:
    """`reread` asks the secret store again about the folder shown (after the key or the
    token was stored again)."""

    def __init__(
        self,
        hooks: SettingsHooks,
        runner: TaskRunner,
        sync: SyncTab,
        keys: KeysTab,
        status: QLabel,
        reread: Callable[[], None],
    ) -> None:
        self.hooks = hooks
        self.runner = runner
        self.sync = sync
        self.keys = keys
        self.status = status
        self.reread = reread

    def _working(self, text: str) -> None:
        self.status.setStyleSheet("")
        self.status.setText(text)

    def join(self, vault: Path | None, kind: str) -> bool:
        """Join the relay with the invite typed; False when it could not start."""
        hook = self.hooks.join
        if hook is None or vault is None:
            return False
        sync = self.sync
        request = JoinRequest(
            vault=vault,
            relay_url=sync.relay_url.text().strip(),
            invite_code=sync.invite_code.text().strip(),
            device_name=sync.device_name.text().strip(),
            kind=kind,
            passphrase=sync.join_pass.text(),
        )
        sync.join_pass.clear()
        self._working(tr("settings.joining"))
        self.runner.run("join", lambda: hook(request))
        return True

    def rejoin(self, vault: Path | None) -> bool:
        """Join a sync copy whose relay token the store lost again (`companion init
        --rejoin`); False when it could not start."""
        hook = self.hooks.rejoin
        if hook is None or vault is None or self.runner.busy("rejoin"):
            return False
        sync = self.sync
        invite, passphrase = sync.invite_code.text().strip(), sync.join_pass.text()
        sync.join_pass.clear()
        self._working(tr("settings.joining"))
        self.runner.run("rejoin", lambda: hook(vault, invite, passphrase))
        return True

    def set_passphrase(self) -> None:
        hook = self.hooks.set_passphrase
        if hook is None:
            return
        keys = self.keys
        current = keys.current_pass.text() or None
        new = keys.new_pass.text()
        self.runner.run("passphrase", lambda: hook(current, new))
        for edit in (keys.current_pass, keys.new_pass, keys.confirm_pass):
            edit.clear()

    def unlock(self) -> bool:
        """Store the vault key again from the relay's wrapped copy with the passphrase typed;
        False when it could not start."""
        hook, passphrase = self.hooks.unlock_key, self.keys.unlock_pass.text()
        if hook is None or not passphrase or self.runner.busy("unlock"):
            return False
        self.keys.unlock_pass.clear()
        self._working(tr("settings.unlocking"))
        self.runner.run("unlock", lambda: hook(passphrase))
        return True

    def export_recovery(self) -> None:
        hook = self.hooks.export_recovery_key
        if hook is not None:
            self.runner.run("recovery", hook)

    def finished(self, name: str, result: object, parent: QWidget) -> None:
        """What a flow's call returned, shown; `parent` owns the recovery key's dialog."""
        self.status.setStyleSheet("")
        if name == "join":
            self.sync.invite_code.clear()
            self.status.setText(tr("settings.joined"))
        elif name == "passphrase":
            self.status.setText(tr("settings.pass_changed"))
        elif name == "unlock":
            self.reread()  # the store is asked again: it holds the key now
            self.status.setText(tr("settings.key_restored"))
        elif name == "rejoin":
            self.sync.invite_code.clear()
            self.reread()
            self.status.setText(tr("settings.rejoined"))
        elif name == "recovery" and isinstance(result, str):
            show_recovery_key(parent, result)


def show_recovery_key(parent: QWidget, key: str) -> None:
    box = QMessageBox(parent)
    box.setWindowTitle(tr("settings.recovery_title"))
    box.setText(tr("settings.recovery_text"))
    box.setInformativeText(key)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    save = box.addButton(tr("settings.recovery_save"), QMessageBox.ButtonRole.ActionRole)
    box.addButton(QMessageBox.StandardButton.Close)
    box.exec()
    if box.clickedButton() is save:
        path, _ = QFileDialog.getSaveFileName(
            parent, tr("settings.recovery_save"), "vault-companion-recovery-key.txt"
        )
        if path:
            write_private(Path(path), key + "\n")


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (a recovery key): owner-only before the first byte,
    even when it replaces a file that others could read."""
    write_text_atomic(path, text, mode=0o600)
