"""Issue 16, items 1 and 5: lessons extend the existing topic note (short names, no dilution
by the source journal day), and the dream never writes a line the note already says
(contained in a longer line, or paraphrased)."""

from __future__ import annotations

import datetime as dt

from companion.dream import blocks
from tests.fixtures.dream import NOW
from tests.fixtures.mini import Mini, journal

NAS = """---
tags: [infra]
date: 2026-10-01
---
# NAS Synology

El NAS es un Synology DS220+ en el armario del pasillo.

- El disco USB externo guarda la segunda copia de las fotos.
- DSM se actualiza solo los domingos.
"""


def _dream_lines(text: str) -> list[str]:
    return [dl.text for dl in blocks.dream_lines(text) if dl.kind == "content"]


def test_lesson_lands_in_the_existing_note_despite_its_own_journal_day(tmp_path):
    """The journal day holding the lesson is in the full-text index too: its words must not
    count as "known" and dilute the match with the topic note."""
    w = Mini(tmp_path)
    w.note("knowledge/NAS Synology.md", NAS)
    w.note("knowledge/Docker.md", "# Docker\n\nContenedores y redes bridge.\n")
    w.note(
        "journal/2026-11-27.md",
        journal(
            "2026-11-27",
            {
                "Hecho": ["Revisé la hibernación del armario y cambié el cable."],
                "Aprendido": ["El disco USB del NAS se desmonta cuando entra en hibernación."],
            },
        ),
    )
    before = w.files()
    rep = w.dream(explain=True)
    assert w.new_notes(before) - {"Home.md"} == {"journal/2026-11-28.md"}, rep.explanations
    assert any("se desmonta" in ln for ln in _dream_lines(w.read("knowledge/NAS Synology.md")))


def test_a_short_name_written_as_the_note_names_it_is_a_topic(tmp_path):
    """A note called `NAS` (three letters) is named by "NAS" in the text; a lower-case
    three-letter word never matches a title by accident."""
    w = Mini(tmp_path)
    w.note("knowledge/NAS.md", "# NAS\n\nEl Synology del pasillo.\n")
    w.note("knowledge/Use.md", "# Use\n\nA note about nothing.\n")
    w.note(
        "journal/2026-11-27.md",
        journal(
            "2026-11-27",
            {
                "Aprendido": [
                    "El NAS se apaga a las 01:30 para ahorrar energía.",
                    "We use restic snapshots for the photo archive every week.",
                ]
            },
        ),
    )
    rep = w.dream(explain=True)
    by_text = {e["text"]: e for e in rep.explanations}
    nas = by_text["El NAS se apaga a las 01:30 para ahorrar energía."]
    assert nas["note"] == "knowledge/NAS.md" and "title" in nas["why"]
    other = by_text["We use restic snapshots for the photo archive every week."]
    assert other["note"] != "knowledge/Use.md"


def test_a_line_contained_in_a_longer_line_is_a_duplicate(tmp_path):
    w = Mini(tmp_path)
    w.note(
        "knowledge/Restic.md",
        "# Restic\n\n- Restic necesita --limit-upload en la subida de casa o las videollamadas "
        "se cortan, sobre todo por la tarde cuando hay partido y los niños ven vídeos.\n",
    )
    w.note(
        "journal/2026-11-27.md",
        journal(
            "2026-11-27",
            {
                "Aprendido": [
                    "Restic necesita --limit-upload en la subida de casa o las videollamadas "
                    "se cortan."
                ]
            },
        ),
    )
    rep = w.dream(explain=True)
    assert not _dream_lines(w.read("knowledge/Restic.md"))
    assert [e["decision"] for e in rep.explanations] == ["duplicate"]


def test_a_paraphrased_decision_is_written_once(tmp_path):
    w = Mini(tmp_path)
    w.note("projects/Blog.md", "# Blog\n\nEl blog de la estación.\n")
    w.note(
        "journal/2026-11-27.md",
        journal("2026-11-27", {"Decidido": ["[[Blog]]: publicar los martes por la mañana."]}),
    )
    w.say(
        "user",
        "decidido: [[Blog]] las entradas se publican los martes por la mañana.",
        NOW - dt.timedelta(hours=8),
    )
    w.dream()
    lines = _dream_lines(w.read("projects/Blog.md"))
    assert len(lines) == 1, lines


def test_a_paraphrase_with_another_number_is_not_a_duplicate(tmp_path):
    """Same words, another value: a different statement (flagged elsewhere), never merged."""
    w = Mini(tmp_path)
    w.note(
        "journal/2026-11-27.md",
        journal(
            "2026-11-27",
            {
                "Learned": [
                    "The backup job on the NAS starts at 03:00 every night.",
                    "The backup job on the NAS starts at 04:30 every night.",
                ]
            },
        ),
    )
    w.dream()
    made = [p for p in w.files() if p.startswith("knowledge/")]
    text = "\n".join(w.read(p) for p in made)
    assert "03:00" in text and "04:30" in text


def test_words_match_across_their_forms(tmp_path):
    """ "network" finds the note that says "networks": topic words are compared by stem."""
    w = Mini(tmp_path)
    w.note(
        "knowledge/Docker networking.md",
        "# Docker networking\n\nBridge networks, published ports and DNS between containers.\n",
    )
    w.note("knowledge/Photos.md", "# Photos\n\nThe family photo archive on the NAS.\n")
    w.note(
        "journal/2026-11-27.md",
        journal(
            "2026-11-27",
            {"Learned": ["Containers on a user-defined network resolve each other by name."]},
        ),
    )
    rep = w.dream(explain=True)
    (e,) = rep.explanations
    assert e["note"] == "knowledge/Docker networking.md" and "similarity" in e["why"]


def test_a_short_alias_capitalised_mid_sentence_names_its_note(tmp_path):
    w = Mini(tmp_path)
    w.note("knowledge/Raspberry Pi.md", "---\naliases: [Pi]\n---\n# Raspberry Pi\n\nThe station.\n")
    w.note(
        "journal/2026-11-27.md",
        journal(
            "2026-11-27",
            {
                "Learned": [
                    "The Pi loses time without network; chrony fixes it.",
                    "Pi charts are a poor way to show the weather over a week.",
                ]
            },
        ),
    )
    rep = w.dream(explain=True)
    by_text = {e["text"]: e for e in rep.explanations}
    assert by_text["The Pi loses time without network; chrony fixes it."]["note"] == (
        "knowledge/Raspberry Pi.md"
    )
    other = by_text["Pi charts are a poor way to show the weather over a week."]
    assert other["note"] != "knowledge/Raspberry Pi.md"
