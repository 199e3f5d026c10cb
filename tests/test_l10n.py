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
    assert catalog("nl").gettext("Nothing changed.") == "Nothing changed."  # no catalogue
    assert dreaming_lines(s, "fr")[0] == "2 leçons consolidées dans [[NAS]]."
    assert dreaming_lines(s, "de")[0] == "2 Lektionen in [[NAS]] zusammengeführt."
    assert dreaming_lines(s, "pt")[0] == "2 lições consolidadas em [[NAS]]."
    assert dreaming_lines(s, "it")[0] == "2 lezioni consolidate in [[NAS]]."


def test_every_language_has_a_catalogue_that_keeps_the_fields() -> None:
    """Each language the dream writes has its catalogue (#40.8), the build script knows it,
    and every translation keeps the `{fields}` of its English, so formatting never fails."""
    import importlib.util
    import re

    from babel.messages.pofile import read_po

    from companion.l10n import LANGUAGES, LOCALE_DIR
    from companion.vault.journal import DREAMING_NAMES

    spec = importlib.util.spec_from_file_location("catalogs", ROOT / "packaging" / "catalogs.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert set(build.LANGUAGES) == set(LANGUAGES) - {"en"}
    field = re.compile(r"\{(\w+)")
    for lang in build.LANGUAGES:
        with open(LOCALE_DIR / lang / "LC_MESSAGES" / "companion.po", "rb") as fh:
            cat = read_po(fh, locale=lang)
        for m in cat:
            if not m.id:
                continue
            ids = m.id if isinstance(m.id, tuple) else (m.id,)
            strings = m.string if isinstance(m.string, tuple) else (m.string,)
            want = set(field.findall(" ".join(ids))) - {"n"}
            for s in strings:
                assert want <= set(field.findall(s)), (lang, m.id, s)
        # the dream's own section is recognised as such when read back
        assert catalog(lang).gettext("Dreaming") in DREAMING_NAMES, lang


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
