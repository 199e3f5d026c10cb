"""Issue 16, items 2 and 3: filler and reminders with relative dates are not knowledge, and
only durable facts reach the injected memory (recurrence alone is not durability); the
person's own preferences go to USER.md, not to a knowledge note."""

from __future__ import annotations

import datetime as dt

import pytest

from companion.dream.quality import transient_reason
from tests.fixtures.dream import NOW
from tests.fixtures.mini import Mini, journal

JUNK_ES = [
    "Hoy ha sido un día largo.",
    "Mañana a las 18:00 tengo dentista.",
    "Hoy trabajo desde casa.",
]
JUNK_EN = [
    "Today was a long day.",
    "Tomorrow at 6pm I have the dentist.",
    "Tonight I am working from the café.",
]


@pytest.mark.parametrize("text", [*JUNK_ES, *JUNK_EN, "Ha sido un día largo y cansado."])
def test_filler_and_reminders_are_transient(text):
    assert transient_reason(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "El NAS se apaga a las 01:30 para ahorrar energía.",
        "Today I learned that SQLite WAL mode fails on NFS shares.",
        "Ahora las copias de seguridad se hacen a las 04:30.",
        "The backup job runs every night at 03:00.",
        "Los lectores prefieren entradas cortas con una foto del montaje.",
    ],
)
def test_durable_statements_pass(text):
    assert transient_reason(text) is None


def test_junk_gets_no_note_and_no_index_entry(tmp_path):
    w = Mini(tmp_path)
    w.note("Home.md", "# Home\n")
    w.note("journal/2026-11-27.md", journal("2026-11-27", {"Aprendido": JUNK_ES}))
    w.note("journal/2026-11-26.md", journal("2026-11-26", {"Learned": JUNK_EN}))
    before = w.files()
    rep = w.dream()
    assert w.new_notes(before) == {"journal/2026-11-28.md"}
    assert "dentista" not in w.read("Home.md") and "dentist" not in w.read("Home.md")
    codes = {s.text: s.code for s in rep.skipped}
    assert all(codes.get(t) == "transient" for t in [*JUNK_ES, *JUNK_EN]), codes


def test_said_three_times_is_not_promoted(tmp_path):
    """Recurrence alone is not durability: a transient state repeated in three sessions never
    reaches MEMORY.md, and a lesson repeated three times in one day is not promoted either."""
    w = Mini(tmp_path)
    for i, s in enumerate(("s1", "s2", "s3")):
        at = NOW - dt.timedelta(hours=10 - i)
        w.say("user", "recuerda: hoy trabajo desde casa.", at, session=s)
        w.say("assistant", "remember: the vault is also kept in git.", at, session=s)
    w.dream()
    assert w.entries("memory") == []


def test_a_lesson_true_on_three_days_is_promoted(tmp_path):
    w = Mini(tmp_path)
    for days in (2, 1, 0):
        at = NOW - dt.timedelta(days=days, hours=3)
        w.say("assistant", "remember: the vault is also kept in git.", at, session=f"d{days}")
        # only the agent said it: by default a proposal (issue 40); applied here
        w.dream(now=at + dt.timedelta(hours=2), dream_config={"apply": "auto"})
    assert w.entries("memory") == ["The vault is also kept in git."]


def test_the_persons_preference_goes_to_user_md(tmp_path):
    w = Mini(tmp_path)
    w.say("user", "recuerda: prefiero que me llames Lu", NOW - dt.timedelta(hours=5))
    w.say("user", "remember: I prefer metric units in every answer.", NOW - dt.timedelta(hours=4))
    before = w.files()
    rep = w.dream()
    assert w.entries("user") == [
        "El usuario prefiere que le llames Lu",  # Hermes's third person (issue 40)
        "The user prefers metric units in every answer.",
    ]
    assert not [p for p in w.new_notes(before) if p.startswith("knowledge/")]
    assert not [c for c in rep.run_changes if c.kind == "consolidated"]
