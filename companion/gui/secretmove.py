"""The desktop side of `companion secrets move`: ask for a name, move the secret off the GUI thread.

The engine call is `companion.secrets.move.move_secret` (atomic, every other byte of the note
kept, refuses a note whose line no longer holds a secret, never overwrites another secret of
the same name). This module only asks for the name (`ask_name`, injectable so tests skip the
dialog), runs the move on a `TaskRunner` and turns the outcome into a message for the person.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QInputDialog, QLineEdit, QMessageBox, QWidget

from companion.credentials.store import open_store, validate_name
from companion.errors import CompanionError
from companion.gui.bridge import TaskRunner
from companion.gui.i18n import tr
from companion.secrets.move import MoveResult, move_secret

if TYPE_CHECKING:
    from companion.config import Config

TASK = "move_secret"

# (parent window, "note:line", suggested name) -> the chosen name, or None when cancelled
NameAsker = Callable[[QWidget | None, str, str], str | None]


def suggest_name(kind: str, note: str) -> str:
    """A valid default name from the detector's kind and the note's stem ("github-token-deploy")."""
    words = re.sub(r"[^a-z0-9]+", "-", f"{kind} {Path(note).stem}".lower()).strip("-")
    return words[:64].rstrip("-") or "secret"


def ask_name_dialog(parent: QWidget | None, where: str, suggestion: str) -> str | None:
    """Ask for the secret's name until it is valid or the person cancels."""
    text = suggestion
    while True:
        text, ok = QInputDialog.getText(
            parent,
            tr("secretmove.title"),
            tr("secretmove.prompt", where=where),
            QLineEdit.EchoMode.Normal,
            text,
        )
        if not ok:
            return None
        try:
            return validate_name(text.strip())
        except CompanionError as exc:
            QMessageBox.warning(parent, tr("secretmove.title"), str(exc))


class SecretMover(QObject):
    """Moves one flagged secret into the configured store; `notice` reports the outcome."""

    notice = Signal(str, str)  # title, text for the person
    moved = Signal(object)  # MoveResult

    def __init__(
        self,
        config: Config,
        vault: Callable[[], Path | None],
        *,
        runner: TaskRunner | None = None,
        ask_name: NameAsker = ask_name_dialog,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.config = config
        self.vault = vault
        self.ask_name = ask_name
        self.runner = runner or TaskRunner(parent=self)
        self.runner.call_done.connect(self._done)
        self.runner.call_failed.connect(self._failed)

    def request(
        self, note: str, line: int | None, kind: str = "", parent: QWidget | None = None
    ) -> bool:
        """Ask for a name and start the move; False when nothing was started."""
        vault = self.vault()
        if vault is None:
            self.notice.emit(tr("secretmove.failed_title"), tr("engine.no_vault"))
            return False
        if not line:
            self.notice.emit(tr("secretmove.failed_title"), tr("secretmove.no_line", note=note))
            return False
        where = f"{note}:{line}"
        name = self.ask_name(parent, where, suggest_name(kind or "secret", note))
        if not name:
            return False
        config = self.config

        def job() -> MoveResult:
            return move_secret(vault, note, line, name, open_store(config), expected=None)

        if not self.runner.run(TASK, job):
            self.notice.emit(tr("secretmove.failed_title"), tr("secretmove.busy"))
            return False
        return True

    def _done(self, task: str, result: object) -> None:
        if task != TASK or not isinstance(result, MoveResult):
            return
        self.notice.emit(tr("secretmove.done_title"), tr("secretmove.done", name=result.name))
        self.moved.emit(result)

    def _failed(self, task: str, message: str) -> None:
        if task == TASK:
            self.notice.emit(tr("secretmove.failed_title"), message)
