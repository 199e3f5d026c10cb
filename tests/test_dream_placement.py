"""Which existing note a lesson goes to, in every language the dream knows (issue 40): names
inflected or inside a German compound, and function words that are neither names nor evidence.

The texts here are written for these tests (a household vault), not taken from the generated
worlds of `bench/worlds/`."""

from __future__ import annotations

import datetime as dt

from companion.dream.topics import derive_title, topic_name
from tests.fixtures.dream import NOW
from tests.fixtures.mini import Mini

AT = NOW - dt.timedelta(hours=3)


def _note(w: Mini, title: str, lines: list[str], aliases: tuple[str, ...] = ()) -> None:
    fm = f"---\naliases: [{', '.join(aliases)}]\n---\n" if aliases else ""
    w.note(f"knowledge/{title}.md", f"{fm}# {title}\n\n" + "".join(f"- {x}\n" for x in lines))


def _placed(w: Mini, lessons: list[str]) -> dict[str, str | None]:
    for text in lessons:
        w.say("user", text, AT)
    report = w.dream(explain=True)
    return {
        e["text"]: e.get("note") for e in report.explanations if e["decision"] == "consolidated"
    }


def test_an_article_or_pronoun_opens_no_name_in_any_language():
    # German capitalises every noun: "Der Wasserfilter" is an article and a noun, no name
    assert topic_name("Der Wasserfilter muss jeden Monat getauscht werden.") is None
    assert topic_name("Il Raspberry Pi si riavvia dopo ogni blackout.") == "Raspberry Pi"
    assert topic_name("Dieser Home Assistant startet nach dem Update neu.") == "Home Assistant"
    assert derive_title("Wartung der Therme: jedes Jahr im Oktober") == "Wartung der Therme"
    assert derive_title("Wartung jedes Jahr im Oktober bei der") == "Wartung jedes Jahr im Oktober"


def test_loose_word_peels_inflection_endings_alike():
    from companion.dream.topics import loose_word

    pairs = [
        ("wärmetauschers", "wärmetauscher"),  # German genitive
        ("lavatrici", "lavatrice"),  # Italian plural
        ("torneiras", "torneira"),  # Portuguese plural
        ("chaudières", "chaudière"),  # French plural
        ("thermostats", "thermostat"),
    ]
    for a, b in pairs:
        assert loose_word(a.replace("ä", "a").replace("è", "e")) == loose_word(
            b.replace("ä", "a").replace("è", "e")
        )
    assert loose_word("redis") == "redis"  # never below five letters


def test_a_note_named_inside_a_german_compound_is_the_lessons_home(tmp_path):
    w = Mini(tmp_path)
    _note(w, "Heizung", ["Die Therme hängt im Hauswirtschaftsraum.", "Wartung im Oktober."])
    _note(w, "Fahrrad", ["Das Rad hat eine Nabenschaltung."], ("Velo",))
    _note(w, "Schalter", ["Alle Schalter im Flur sind von 2019."])
    got = _placed(
        w,
        [
            "merke: Die Heizungspumpe springt erst bei fünf Grad Außentemperatur an.",
            "merke: Fahrradschläuche mit Sclaverandventil brauchen den schwarzen Adapter.",
            "merke: Der Kippschalter über der Spüle klemmt bei Feuchtigkeit.",
        ],
    )
    assert got == {
        "Die Heizungspumpe springt erst bei fünf Grad Außentemperatur an.": (
            "knowledge/Heizung.md"
        ),
        "Fahrradschläuche mit Sclaverandventil brauchen den schwarzen Adapter.": (
            "knowledge/Fahrrad.md"
        ),
        "Der Kippschalter über der Spüle klemmt bei Feuchtigkeit.": "knowledge/Schalter.md",
    }
    # no new note named by an article and a noun
    assert not [p for p in w.files() if p.startswith("knowledge/D")]


def test_a_compound_naming_two_notes_equally_is_no_match(tmp_path):
    w = Mini(tmp_path)
    _note(w, "Garten", ["Die Beete liegen am Südzaun."])
    _note(w, "Pumpe", ["Die Pumpe steht im Schacht."])
    got = _placed(w, ["merke: Die Gartenpumpe verliert über den Winter ihren Druck."])
    assert got["Die Gartenpumpe verliert über den Winter ihren Druck."] not in (
        "knowledge/Garten.md",
        "knowledge/Pumpe.md",
    )


def test_a_note_name_in_another_inflection_is_found(tmp_path):
    w = Mini(tmp_path)
    _note(w, "Wärmetauscher", ["Baujahr 2015, Hersteller unbekannt."])
    _note(w, "Lavatrice", ["Programma eco a 40 gradi."])
    _note(w, "Torneira", ["A da cozinha é misturadora."])
    _note(w, "Chaudière", ["Entretien chaque automne."])
    got = _placed(
        w,
        [
            "merke: Die Dichtung des Wärmetauschers wird alle fünf Jahre erneuert.",
            "ricorda: le lavatrici del condominio si bloccano se lo sportello resta aperto.",
            "lembra: as torneiras do jardim precisam de ser fechadas antes da geada.",
            "retiens : les chaudières à condensation demandent un siphon propre.",
        ],
    )
    assert got == {
        "Die Dichtung des Wärmetauschers wird alle fünf Jahre erneuert.": (
            "knowledge/Wärmetauscher.md"
        ),
        "Le lavatrici del condominio si bloccano se lo sportello resta aperto.": (
            "knowledge/Lavatrice.md"
        ),
        "As torneiras do jardim precisam de ser fechadas antes da geada.": (
            "knowledge/Torneira.md"
        ),
        "Les chaudières à condensation demandent un siphon propre.": "knowledge/Chaudière.md",
    }


def test_function_words_are_no_evidence_for_a_note_in_any_language(tmp_path):
    """Two shared words place a lesson by similarity; in English "the" and "in" never count,
    and neither do "der", "die", "im" or "les", "dans": a German sentence sharing one content
    word and its articles with a note is not that note's lesson."""
    w = Mini(tmp_path)
    _note(w, "Heizung", ["Die Therme steht im Keller und ist von 2015."])
    _note(w, "Fenster", ["Die Dichtungen wurden 2021 getauscht."])
    got = _placed(
        w,
        [
            "merke: Die Wasserleitung im Keller friert bei minus zehn Grad ein.",
            "merke: Das war ein anstrengender Tag und die Kinder waren müde.",
        ],
    )
    assert set(got.values()).isdisjoint({"knowledge/Heizung.md", "knowledge/Fenster.md"}), got
