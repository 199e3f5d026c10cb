"""The rows every settings tab is made of: a field bound to a config value and checked on
every edit, its red message, a folder picker, a hint under the fields."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from companion.config import Config
from companion.gui.i18n import tr

TABS = ("sync", "keys", "schedule", "memory", "advanced")
ERROR_COLOR = "#cf222e"
ERROR_STYLE = f"color: {ERROR_COLOR};"


@dataclass
class Field:
    section: str
    name: str
    get: Callable[[], Any]
    check: Callable[[Any], str | None]
    error: QLabel
    tab: int  # index of the tab the field is on


def error_label() -> QLabel:
    label = QLabel()
    label.setStyleSheet(ERROR_STYLE)
    label.setWordWrap(True)
    label.hide()
    return label


def add_row(form: QFormLayout, label: str, widget: QWidget, error: QLabel) -> None:
    box = QWidget()
    v = QVBoxLayout(box)
    v.setContentsMargins(0, 0, 0, 0)
    v.setSpacing(2)
    v.addWidget(widget)
    v.addWidget(error)
    form.addRow(label, box)


def new_form(tab: QWidget) -> QFormLayout:
    form = QFormLayout(tab)
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form


def add_hint(form: QFormLayout, text: str) -> None:
    """A short explanation under a tab's fields."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setStyleSheet("color: #57606a; margin-top: 12px;")
    form.addRow(label)


def mark_unavailable(button: QPushButton) -> None:
    button.setEnabled(False)
    button.setToolTip(tr("settings.needs_sync"))


def folder_picker(edit: QLineEdit, title: str) -> QWidget:
    box = QWidget()
    h = QHBoxLayout(box)
    h.setContentsMargins(0, 0, 0, 0)
    h.addWidget(edit, 1)
    button = QPushButton(tr("settings.choose"))
    h.addWidget(button)

    def choose() -> None:
        folder = QFileDialog.getExistingDirectory(
            box.window(), title, edit.text() or str(Path.home())
        )
        if folder:
            edit.setText(folder)

    button.clicked.connect(choose)
    return box


class Binder:
    """Puts config fields on the tabs' forms and keeps the list the window checks and saves;
    `on_edit` runs on every edit of any of them."""

    def __init__(self, config: Config, on_edit: Callable[..., None]) -> None:
        self.config = config
        self.on_edit = on_edit
        self.fields: list[Field] = []

    def bind(
        self,
        form: QFormLayout,
        label: str,
        widget: QWidget,
        section: str,
        name: str,
        check: Callable[[Any], str | None] = lambda _v: None,
        holder: QWidget | None = None,
        *,
        tab: int,
    ) -> Field:
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
            widget.textChanged.connect(self.on_edit)
            get: Callable[[], Any] = widget.text
        elif isinstance(widget, QCheckBox):
            widget.setChecked(bool(value))
            widget.toggled.connect(self.on_edit)
            get = widget.isChecked
        elif isinstance(widget, QSpinBox):
            widget.setValue(int(value))
            widget.valueChanged.connect(self.on_edit)
            get = widget.value
        elif isinstance(widget, QComboBox):
            if widget.isEditable():
                widget.setCurrentText(str(value))
                widget.currentTextChanged.connect(self.on_edit)
                get = widget.currentText
            else:
                index = widget.findData(value)
                widget.setCurrentIndex(max(index, 0))
                widget.currentIndexChanged.connect(self.on_edit)
                get = widget.currentData
        else:  # pragma: no cover - a programming error
            raise TypeError(widget)
        error = error_label()
        add_row(form, label, holder or widget, error)
        f = Field(section, name, get, check, error, tab)
        self.fields.append(f)
        return f
