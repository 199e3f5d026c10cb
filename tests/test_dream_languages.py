"""The dream reads and writes the vault's own language, and never mixes in another (issue 40,
finding 8): French, German, Portuguese and Italian vaults besides English and Spanish."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from companion.dream import markers, read
from companion.dream.markers import match_marker
from companion.dream.quality import transient_reason
from companion.dream.record import detect_language
from companion.l10n import LOCALE_DIR, catalog
from companion.secrets.detect import contains_secret
from companion.vault import journal as journal_mod
from companion.vault.journal import section_key
from tests.corpus_languages import SENTENCES
from tests.fixtures.mini import Mini, journal

SECRET = "Tr0ub4dour&3xK"
PIN = "4821"


# --- detection -------------------------------------------------------------------------------


def test_each_language_is_told_from_the_others_without_a_confusion() -> None:
    from companion.dream import langdetect

    assert set(SENTENCES) == set(langdetect.LANGUAGES)
    confusions = []
    for lang, sentences in SENTENCES.items():
        assert len(sentences) >= 20, lang
        for s in sentences:
            got = langdetect.detect(s)
            if got != lang:
                confusions.append((lang, got, s))
    assert confusions == []


def test_a_french_journal_is_french_not_spanish_and_the_setting_wins() -> None:
    days = [journal("2026-11-27", {"Appris": [s]}) for s in SENTENCES["fr"][:3]]
    assert detect_language(days) == "fr"
    # words alone, no section heading
    assert detect_language(["# 2026-11-27\n\n" + "\n".join(SENTENCES["fr"][3:8])]) == "fr"
    # Portuguese shares "Aprendido" with Spanish: the words decide
    pt = [journal("2026-11-27", {"Aprendido": SENTENCES["pt"][:2]})]
    es = [journal("2026-11-27", {"Aprendido": SENTENCES["es"][:2]})]
    assert detect_language(pt) == "pt" and detect_language(es) == "es"
    assert detect_language(days, configured="de") == "de"
    assert detect_language(days, configured="nl") == "en"  # no catalogue: English


# --- vocabulary tables ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("rappelle-toi : la sauvegarde se lance chaque nuit.", "knowledge"),
        ("- toujours\u00a0: vérifier l'onduleur avant la mise à jour.", "always"),
        ("**Merke:** das Backup läuft jede Nacht.", "knowledge"),
        ("immer: die USV prüfen.", "always"),
        ("lembra: a cópia corre todas as noites.", "knowledge"),
        ("sempre: verificar a UPS.", "always"),
        ("ricorda: il backup parte ogni notte.", "knowledge"),
        ("Deciso: [[Blog]] passa al server economico.", "decision"),
        ("Stand: [[Blog]] läuft auf dem neuen Server.", "status"),
    ],
)
def test_markers_in_every_language(line: str, kind: str) -> None:
    found = match_marker(line)
    assert found is not None and found.kind == kind, line


def test_every_language_has_each_marker_kind_and_section() -> None:
    for lang in SENTENCES:
        assert set(markers.BY_LANGUAGE[lang]) == {"knowledge", "always", "decision", "status"}, lang
        for key in ("done", "decided", "learned"):
            assert section_key(journal_mod.SECTIONS[lang][key][0]) == key, (lang, key)
    for heading in ("Appris", "Gelernt", "Aprendido", "Imparato", "Erledigt", "Décidé"):
        assert section_key(heading) is not None, heading


@pytest.mark.parametrize(
    "text",
    [
        "Demain à 9 h j'appelle le plombier pour la chaudière.",
        "Ce soir je passe chercher le colis à la poste.",
        "Morgen früh muss ich das Paket bei der Post abholen.",
        "Amanhã tenho de levar a bicicleta ao mecânico.",
        "Domani devo portare la bici dal meccanico.",
        "Stasera chiamo l'idraulico per la caldaia.",
    ],
)
def test_relative_days_in_every_language_are_not_lessons(text: str) -> None:
    assert transient_reason(text) is not None, text


def test_what_today_taught_is_still_a_lesson() -> None:
    for text in (
        "Aujourd'hui j'ai appris que le NAS redémarre seul après une coupure.",
        "Heute habe ich gelernt, dass das NAS nach einem Stromausfall neu startet.",
        "Hier ist die Konfiguration des Servers dokumentiert.",  # German "here"
    ):
        assert transient_reason(text) is None, text


# --- secrets in prose --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"Mon mot de passe du routeur est {SECRET}.",
        f"le mot de passe : {SECRET}",
        f"Le code PIN de la carte SIM est {PIN}.",
        f"Das Passwort ist {SECRET}.",
        f"Das Kennwort lautet: {SECRET}",
        f"Die PIN lautet {PIN}.",
        f"A senha é {SECRET}.",
        f"O código PIN é {PIN}.",
        f"La password è {SECRET}.",
        f"Il codice PIN è {PIN}.",
    ],
)
def test_credentials_in_prose_are_secrets(text: str) -> None:
    assert contains_secret(text), text


@pytest.mark.parametrize(
    "text",
    [
        "Le mot de passe est dans le coffre, pas dans le journal.",
        "Das Passwort ist im Passwortmanager gespeichert.",
        "A senha é trocada todos os meses.",
        "La password è cambiata ogni mese.",
        "Le code PIN est changé chaque mois.",
    ],
)
def test_prose_about_a_password_without_one_is_no_secret(text: str) -> None:
    assert not contains_secret(text), text


# --- not understood ----------------------------------------------------------------------------


def test_a_heading_or_prefix_not_understood_is_named() -> None:
    text = "# 2026-11-27\n\n## Apris\n- Une leçon.\n\nrapelle-toi : une chose.\nNote: rien.\n"
    warned = read.not_understood("journal/2026-11-27.md", text)
    assert len(warned) == 2, warned
    assert "'Apris'" in warned[0] and "'Appris'" in warned[0]
    assert "'rapelle-toi:'" in warned[1]


# --- whole dreams ------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


def _catalogue_words(lang: str) -> set[str]:
    """Every word the catalogue of `lang` writes (its translations, not its English ids)."""
    from babel.messages.pofile import read_po

    with open(LOCALE_DIR / lang / "LC_MESSAGES" / "companion.po", "rb") as fh:
        cat = read_po(fh, locale=lang)
    words: set[str] = set()
    for m in cat:
        if not m.id:
            continue
        strings = m.string if isinstance(m.string, tuple) else (m.string,)
        for s in strings:
            words |= {w.casefold() for w in _WORD.findall(re.sub(r"\{[^}]*\}", " ", s))}
    return words


def _dream_lines(w: Mini) -> list[str]:
    text = w.read("journal/2026-11-28.md")
    body = text.split("<!-- dream:begin log -->", 1)[1].split("<!-- dream:end log -->", 1)[0]
    return [ln for ln in body.split("\n") if ln.strip()]


def _assert_only(lang: str, w: Mini) -> None:
    """The dream's lines in today's journal are all words of `lang`'s catalogue."""
    words = _catalogue_words(lang)
    lines = _dream_lines(w)
    assert lines[0] == "## " + catalog(lang).gettext("Dreaming"), lines
    for line in lines:
        shown = re.sub(r"<!--.*?-->", " ", line)
        shown = re.sub(r"\[\[[^\]]*\]\]|\b(?:MEMORY|USER)\.md\b", " ", shown)  # names
        stray = {x for x in _WORD.findall(shown) if x.casefold() not in words}
        assert not stray, (line, stray)


def _assert_secret_nowhere(w: Mini, rep: object, secret: str, source: str) -> None:
    for path in w.vault.rglob("*"):
        if path.is_file() and path.relative_to(w.vault).as_posix() != source:
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path
    for target in ("memory", "user"):
        if w.memory(target).exists():
            assert secret not in w.memory(target).read_text(encoding="utf-8")
    explained = json.dumps(rep.to_dict(explain=True), ensure_ascii=False)  # type: ignore[attr-defined]
    assert secret not in explained


def _notes_text(w: Mini) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8")
        for p in w.vault.rglob("*.md")
        if not p.relative_to(w.vault).as_posix().startswith("journal/")
    )


def test_a_french_vault_dreams_in_french(tmp_path: Path) -> None:
    w = Mini(tmp_path)
    w.note("Home.md", "# Accueil\n")
    w.note(
        "journal/2026-11-27.md",
        journal(
            "2026-11-27",
            {
                "Fait": ["Remplacé le disque du NAS par un modèle plus silencieux."],
                "Appris": [
                    "Le NAS redémarre tout seul après une coupure si l'option du BIOS est activée.",
                    "Demain matin je dois rapporter le colis à la poste.",
                ],
            },
        )
        + "\nrappelle-toi : la sauvegarde du serveur se lance chaque nuit à trois heures.\n"
        "toujours : vérifier la batterie de l'onduleur avant de mettre à jour le NAS.\n"
        "rappelle-toi : demain à neuf heures j'appelle le plombier pour la chaudière.\n"
        f"rappelle-toi : mon mot de passe du routeur est {SECRET}.\n"
        f"rappelle-toi : le code PIN de la carte SIM du routeur est {PIN}.\n",
    )
    rep = w.dream(explain=True)
    notes = _notes_text(w)
    assert "redémarre tout seul" in notes and "sauvegarde du serveur" in notes  # lessons land
    assert "onduleur" in w.memory().read_text(encoding="utf-8")  # `toujours :` is promoted
    assert "plombier" not in notes and "colis" not in notes  # reminders are not notes
    _assert_only("fr", w)
    home = w.read("Home.md")
    assert "## Index (tenu par le rêve)" in home and "Índice" not in home
    for secret in (SECRET, PIN):
        _assert_secret_nowhere(w, rep, secret, "journal/2026-11-27.md")
    assert not [x for x in rep.warnings if "not understood" in x], rep.warnings


SMALL = {
    "de": (
        "Gelernt",
        "merke",
        "Das NAS startet nach einem Stromausfall von selbst neu, wenn die Option aktiv ist.",
        "Morgen früh muss ich das Paket bei der Post abholen.",
        f"Das Kennwort des Routers lautet {SECRET}.",
        "Paket",
    ),
    "pt": (
        "Aprendido",
        "lembra",
        "O NAS reinicia sozinho depois de uma falta de luz se a opção estiver ativada.",
        "Amanhã de manhã tenho de levar a encomenda aos correios.",
        f"A senha do router é {SECRET}.",
        "encomenda",
    ),
    "it": (
        "Imparato",
        "ricorda",
        "Il NAS si riavvia da solo dopo un blackout se l'opzione del BIOS è attiva.",
        "Domani mattina devo riportare il pacco alla posta.",
        f"La password del router è {SECRET}.",
        "pacco",
    ),
}


@pytest.mark.parametrize("lang", sorted(SMALL))
def test_a_german_portuguese_or_italian_vault_dreams_in_its_language(
    tmp_path: Path, lang: str
) -> None:
    section, marker, lesson, reminder, secret_line, reminder_word = SMALL[lang]
    w = Mini(tmp_path)
    w.note("Home.md", "# Home\n")
    w.note(
        "journal/2026-11-27.md",
        journal("2026-11-27", {section: [lesson, reminder]})
        + f"\n{marker}: {secret_line}\n{marker}: {reminder}\n",
    )
    rep = w.dream(explain=True)
    notes = _notes_text(w)
    assert lesson.split(" ")[1] in notes and lesson[:30] in notes, notes
    assert reminder_word not in notes
    _assert_only(lang, w)
    _assert_secret_nowhere(w, rep, SECRET, "journal/2026-11-27.md")


def test_the_report_names_a_section_it_did_not_understand(tmp_path: Path) -> None:
    w = Mini(tmp_path)
    w.note(
        "journal/2026-11-27.md",
        journal("2026-11-27", {"Apris": ["Le NAS redémarre seul après une coupure de courant."]}),
    )
    rep = w.dream()
    assert any("'Apris'" in x and "'Appris'" in x for x in rep.warnings), rep.warnings
