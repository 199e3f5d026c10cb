"""The Schedule tab: when the dream runs, over how many hours, the local fallback, and when
the morning notification comes."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QCompleter, QLineEdit, QSpinBox, QWidget

from companion.gui import validate
from companion.gui.i18n import tr
from companion.gui.settings.form import TABS, Binder, add_hint, new_form


class ScheduleTab(QWidget):
    index = TABS.index("schedule")

    def __init__(self, binder: Binder) -> None:
        super().__init__()
        form = new_form(self)
        tab = self.index
        self.dream_time = QLineEdit()
        self.dream_time.setPlaceholderText("02:00")
        binder.bind(
            form,
            tr("settings.dream_time"),
            self.dream_time,
            "dream",
            "time",
            validate.hhmm,
            tab=tab,
        )
        self.timezone = QComboBox()
        self.timezone.setEditable(True)
        self.timezone.addItems(list(validate.timezones()))
        completer = QCompleter(list(validate.timezones()), self.timezone)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.timezone.setCompleter(completer)
        binder.bind(
            form,
            tr("settings.timezone"),
            self.timezone,
            "dream",
            "timezone",
            validate.timezone,
            tab=tab,
        )
        self.window_hours = QSpinBox()
        self.window_hours.setRange(1, 168)
        self.window_hours.setSuffix(" h")
        binder.bind(
            form,
            tr("settings.window"),
            self.window_hours,
            "dream",
            "window_hours",
            validate.window_hours,
            tab=tab,
        )
        self.local_fallback = QCheckBox(tr("settings.local_fallback"))
        binder.bind(form, "", self.local_fallback, "dream", "local_fallback", tab=tab)
        self.grace = QSpinBox()
        self.grace.setRange(0, 24 * 60)
        self.grace.setSuffix(" min")
        binder.bind(form, tr("settings.grace"), self.grace, "dream", "grace_minutes", tab=tab)
        self.local_fallback.toggled.connect(self.grace.setEnabled)
        self.grace.setEnabled(self.local_fallback.isChecked())
        self.morning_time = QLineEdit()
        self.morning_time.setPlaceholderText("08:00")
        binder.bind(
            form,
            tr("settings.morning_time"),
            self.morning_time,
            "notify",
            "morning_time",
            validate.hhmm,
            tab=tab,
        )
        add_hint(form, tr("settings.hint.schedule"))
