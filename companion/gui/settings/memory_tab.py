"""The Memory tab: the Hermes home, the memory budgets, and the distiller (rules, or a model
at an OpenAI-compatible endpoint)."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QLineEdit, QSpinBox, QWidget

from companion.gui import validate
from companion.gui.i18n import tr
from companion.gui.settings.form import TABS, Binder, add_hint, folder_picker, new_form


class MemoryTab(QWidget):
    index = TABS.index("memory")

    def __init__(self, binder: Binder) -> None:
        super().__init__()
        form = new_form(self)
        tab = self.index
        self.hermes_home = QLineEdit()
        self.hermes_home.setPlaceholderText(tr("settings.hermes_home_hint"))
        picker = folder_picker(self.hermes_home, tr("settings.hermes_home"))
        binder.bind(
            form,
            tr("settings.hermes_home"),
            self.hermes_home,
            "memory",
            "hermes_home",
            validate.existing_folder,
            holder=picker,
            tab=tab,
        )
        self.memory_limit = QSpinBox()
        self.memory_limit.setRange(1, 100_000)
        self.memory_limit.setSuffix(tr("settings.chars_suffix"))
        binder.bind(
            form,
            tr("settings.memory_limit"),
            self.memory_limit,
            "memory",
            "memory_char_limit",
            tab=tab,
        )
        self.user_limit = QSpinBox()
        self.user_limit.setRange(1, 100_000)
        self.user_limit.setSuffix(tr("settings.chars_suffix"))
        binder.bind(
            form, tr("settings.user_limit"), self.user_limit, "memory", "user_char_limit", tab=tab
        )
        self.distiller = QComboBox()
        self.distiller.addItem(tr("settings.distiller_rules"), "rules")
        self.distiller.addItem(tr("settings.distiller_llm"), "llm")
        binder.bind(form, tr("settings.distiller"), self.distiller, "dream", "distiller", tab=tab)
        self.llm_url = QLineEdit()
        self.llm_url.setPlaceholderText("http://127.0.0.1:11434/v1")
        binder.bind(
            form,
            tr("settings.llm_url"),
            self.llm_url,
            "llm",
            "base_url",
            lambda v: validate.http_url(v, required=self.uses_llm()),
            tab=tab,
        )
        self.llm_model = QLineEdit()
        self.llm_model.setPlaceholderText("llama3.1:8b")
        binder.bind(
            form,
            tr("settings.llm_model"),
            self.llm_model,
            "llm",
            "model",
            lambda v: tr("invalid.required") if self.uses_llm() and not v.strip() else None,
            tab=tab,
        )
        add_hint(form, tr("settings.hint.memory"))

    def uses_llm(self) -> bool:
        return self.distiller.currentData() == "llm"
