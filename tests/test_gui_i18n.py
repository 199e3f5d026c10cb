"""Translation catalogues: same keys in both languages, every key used in code exists."""

from __future__ import annotations

import ast
import json
import re
import string
from pathlib import Path

import pytest

from companion.gui import i18n
from companion.gui.resources import translations_dir

GUI = Path(__file__).resolve().parents[1] / "companion" / "gui"


def load(lang: str) -> dict:
    return json.loads((translations_dir() / f"{lang}.json").read_text(encoding="utf-8"))


def used_keys() -> dict[str, str]:
    """Literal keys passed to tr()/N_() anywhere in companion/gui (its subpackages too), with the
    file using them."""
    keys: dict[str, str] = {}
    for path in sorted(GUI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("tr", "N_")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                keys.setdefault(node.args[0].value, path.name)
    return keys


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_both_catalogues_have_the_same_keys() -> None:
    en, es = load("en"), load("es")
    assert set(en) == set(es)
    for key in en:
        assert type(en[key]) is type(es[key]), key
        if isinstance(en[key], dict):
            assert set(en[key]) == set(es[key]) == {"one", "other"}, key


def test_placeholders_match_between_languages() -> None:
    en, es = load("en"), load("es")
    for key, value in en.items():
        pairs = (
            [(value[f], es[key][f]) for f in value]
            if isinstance(value, dict)
            else [(value, es[key])]
        )
        for a, b in pairs:
            assert fields(a) == fields(b), key


def test_every_key_used_in_code_exists_and_every_key_is_used() -> None:
    used = used_keys()
    assert len(used) > 100  # the scan really finds the calls
    catalogue = set(load("en"))
    missing = {k: f for k, f in used.items() if k not in catalogue}
    assert not missing, f"keys used in code but not in the catalogue: {missing}"
    unused = catalogue - set(used)
    assert not unused, f"catalogue keys no code uses: {sorted(unused)}"


def test_no_visible_literal_strings_bypass_tr() -> None:
    """Qt text setters get tr() output, never a bare sentence (examples like URLs are fine)."""
    pattern = re.compile(
        r"\.(setText|setWindowTitle|setToolTip|setPlaceholderText|addTab|addAction|setTitle)"
        r"\(\s*\"[A-Za-z][^\"]*\s[^\"]*\""
    )
    offenders = []
    for path in GUI.rglob("*.py"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.name}:{number}: {line.strip()}")
    assert not offenders


def test_tr_switches_language_and_formats() -> None:
    try:
        i18n.set_language("es")
        assert i18n.tr("menu.quit") == "Salir"
        assert i18n.tr("state.conflict_n", n=1) == "1 conflicto"
        assert i18n.tr("state.conflict_n", n=2) == "2 conflictos"
        i18n.set_language("en")
        assert i18n.tr("menu.quit") == "Quit"
        assert i18n.tr("no.such.key") == "no.such.key"
    finally:
        i18n.set_language("en")


@pytest.mark.parametrize(
    ("setting", "system", "want"),
    [
        ("en", "es_ES", "en"),
        ("es", "en_US", "es"),
        ("auto", "es_ES", "es"),
        ("auto", "es_MX", "es"),
        ("auto", "en_GB", "en"),
        ("auto", "de_DE", "en"),
    ],
)
def test_language_setting(setting: str, system: str, want: str) -> None:
    assert i18n.resolve_language(setting, system) == want


def test_auto_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LC_ALL", "LC_MESSAGES", "LANGUAGE", "LANG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "es_ES.UTF-8")
    assert i18n.resolve_language("auto") == "es"
    monkeypatch.setenv("LC_ALL", "en_US.UTF-8")
    assert i18n.resolve_language("auto") == "en"


# ---- Spanish: one word for "passphrase", one register, nothing cut off (#13, item 9) --------

USTED = re.compile(
    r"\b(usted(es)?|elija|únase|una\s+con|pulse|haga|indique|escriba|guarde|exporte|intente|"
    r"cierre|abra|compruebe|elimine|confirme|deshaga|espere|vuelva a intentarlo|"
    r"asegúrese|seleccione|introduzca)\b",
    re.IGNORECASE,
)


def texts(value) -> list[str]:
    return list(value.values()) if isinstance(value, dict) else [value]


def test_spanish_has_one_word_for_passphrase() -> None:
    en, es = load("en"), load("es")
    for key, value in en.items():
        for english, spanish in zip(texts(value), texts(es[key]), strict=True):
            assert "frase de paso" not in spanish.lower(), key
            if "passphrase" in english.lower():
                assert re.search(r"frases? de contraseña", spanish, re.IGNORECASE), (key, spanish)


def test_spanish_speaks_to_the_person_as_tu() -> None:
    for key, value in load("es").items():
        for spanish in texts(value):
            assert not USTED.search(spanish), (key, spanish)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_no_placeholder_is_cut_off_in_settings(qtbot, lang: str) -> None:
    """Every hint inside a settings field fits in the field at the window's own size."""
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QLineEdit

    from companion.config import load_config
    from companion.gui.settings import SettingsWindow
    from companion.paths import device_paths

    i18n.set_language(lang)
    try:
        w = SettingsWindow(load_config(device_paths()))
        qtbot.addWidget(w)
        w.show()
        for index in range(w.tabs.count()):
            w.tabs.setCurrentIndex(index)
            qtbot.waitExposed(w)
            for edit in w.tabs.widget(index).findChildren(QLineEdit):
                hint = edit.placeholderText()
                if not hint or not edit.isVisible():
                    continue
                room = edit.contentsRect().width() - edit.textMargins().left() - 8
                width = QFontMetrics(edit.font()).horizontalAdvance(hint)
                assert width <= room, (lang, w.tabs.tabText(index), hint, width, room)
    finally:
        i18n.set_language("en")
