"""Engine text comes from gettext catalogues a translator can edit (#14.9), and Qt's own buttons
and dialogs speak the interface's language."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from companion.dream.record import RunSummary, dreaming_lines
from companion.dream.summary import fact, render
from companion.l10n import catalog

ROOT = Path(__file__).resolve().parent.parent


def test_catalogues_are_complete_and_compiled() -> None:
    """Every translatable string of the engine has its Spanish, and the .mo matches the .po
    (`python packaging/catalogs.py` updates them)."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "catalogs.py"), "--check"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr


def test_journal_lines_and_summaries_follow_the_language() -> None:
    s = RunSummary(lessons={"knowledge/NAS.md": 2}, orphans=1)
    en = dreaming_lines(s, "en")
    es = dreaming_lines(s, "es")
    assert en[0] == "Consolidated 2 lessons into [[NAS]]."
    assert es[0] == "Se consolidaron 2 lecciones en [[NAS]]."
    assert es[1] == "1 nota huérfana en el informe."
    assert render([fact("lessons_added", n=1), fact("new_note")], "es") == (
        "1 lección añadida; nota nueva"
    )
    assert catalog("fr").gettext("Nothing changed.") == "Nothing changed."  # no catalogue


def test_qt_standard_buttons_speak_spanish(qtbot) -> None:
    from PySide6.QtWidgets import QDialogButtonBox

    from companion.gui import i18n

    i18n.set_language("es")
    try:
        box = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Cancel | QDialogButtonBox.StandardButton.Close
        )
        qtbot.addWidget(box)
        texts = {b.text().replace("&", "") for b in box.buttons()}
        assert texts == {"Cancelar", "Cerrar"}
    finally:
        i18n.set_language("en")
    box2 = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
    qtbot.addWidget(box2)
    assert box2.buttons()[0].text().replace("&", "") == "Cancel"
