"""The Advanced tab: language, start at login, the vault's `.companionignore` (read from and
written to the vault folder the Sync tab names), and the log."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QCheckBox, QComboBox, QPlainTextEdit, QPushButton, QWidget

from companion.config import Config
from companion.fileio import KEEP, write_text_atomic
from companion.gui import validate
from companion.gui.i18n import tr
from companion.gui.settings.form import TABS, Binder, add_row, error_label, new_form
from companion.logs import get_logger

log = get_logger("gui.settings")

IGNORE_FILE = ".companionignore"


class AdvancedTab(QWidget):
    """`on_edit` runs on every edit of the ignore rules; `open_url` opens the log (None: the
    desktop's handler)."""

    index = TABS.index("advanced")

    def __init__(
        self,
        binder: Binder,
        on_edit: Callable[..., None],
        open_url: Callable[[QUrl], bool] | None,
    ) -> None:
        super().__init__()
        self.config = binder.config
        self.open_url = open_url
        self._ignore_loaded_from: Path | None = None
        self._ignore_original = ""
        form = new_form(self)
        tab = self.index
        self.language = QComboBox()
        self.language.addItem(tr("settings.language_auto"), "auto")
        self.language.addItem("English", "en")
        self.language.addItem("Español", "es")
        binder.bind(form, tr("settings.language"), self.language, "gui", "language", tab=tab)
        self.start_at_login = QCheckBox(tr("settings.start_at_login"))
        binder.bind(form, "", self.start_at_login, "gui", "start_at_login", tab=tab)
        self.ignore_rules = QPlainTextEdit()
        self.ignore_rules.setPlaceholderText(tr("settings.ignore_hint"))
        self.ignore_rules.setMinimumHeight(120)
        self.ignore_rules.textChanged.connect(on_edit)
        self.ignore_error = error_label()
        add_row(form, tr("settings.ignore"), self.ignore_rules, self.ignore_error)
        self.open_log = QPushButton(tr("settings.open_log"))
        self.open_log.clicked.connect(self._open_log)
        form.addRow("", self.open_log)

    def ignore_error_text(self) -> str | None:
        """Why the ignore rules typed cannot be saved (None: they can)."""
        return validate.ignore_rules(self.ignore_rules.toPlainText())

    def load_ignore_rules(self, vault: Path | None) -> None:
        """The rules of this vault folder (none: the field is disabled); not read again for
        the folder they were read from."""
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

    def save_ignore_rules(self, vault: Path | None) -> None:
        text = self.ignore_rules.toPlainText()
        if vault is None or text == self._ignore_original:
            return
        if text and not text.endswith("\n"):
            text += "\n"
        # the temp file's name is one the watcher and the ignore rules skip (fileio.TEMP_PREFIX)
        write_text_atomic(vault / IGNORE_FILE, text, mode=KEEP)
        self._ignore_original = text

    def _open_log(self) -> None:
        config: Config = self.config
        log_file = config.paths.log_file
        target = log_file if log_file.exists() else config.paths.log_dir
        opener = self.open_url
        if opener is None:
            from PySide6.QtGui import QDesktopServices

            opener = QDesktopServices.openUrl
        opener(QUrl.fromLocalFile(str(target)))
