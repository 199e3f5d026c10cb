"""Issue 16, item 7: a note a person is editing is never written to (its lines wait for the
next dream), undo takes back only the dream's own lines, and files undo restored are not taken
for a person's edits."""

from __future__ import annotations

import datetime as dt

import pytest

from companion.cli import main
from companion.dream import blocks
from companion.dream.undo import undo_dream
from tests.fixtures.dream import NOW
from tests.fixtures.mini import Mini, journal

NOTE = "# Copias\n\n- Las copias van al NAS.\n- El NAS se apaga cuando"


def test_a_note_being_edited_is_not_written_and_its_lines_wait(tmp_path):
    w = Mini(tmp_path)
    w.note("knowledge/Copias.md", NOTE, edited=NOW - dt.timedelta(minutes=20))
    w.say(
        "user",
        "remember: las Copias con restic necesitan una política de purga.",
        NOW - dt.timedelta(hours=5),
    )
    rep = w.dream()
    assert w.read("knowledge/Copias.md") == NOTE  # not a byte changed
    waiting = [s for s in rep.skipped if s.code == "being_edited"]
    assert waiting and waiting[0].text.startswith("Las Copias con restic")
    assert "[[Copias]]" in w.read("journal/2026-11-28.md")
    # the next night, the note has been left alone: the waiting line lands
    rep2 = w.dream(now=NOW + dt.timedelta(days=1))
    lines = [dl.text for dl in blocks.dream_lines(w.read("knowledge/Copias.md"))]
    assert lines == ["- Las Copias con restic necesitan una política de purga."], rep2.skipped
    assert w.read("knowledge/Copias.md").startswith(NOTE)


def test_undo_keeps_what_the_person_wrote_in_the_dreams_journal(tmp_path):
    w = Mini(tmp_path)
    w.note(
        "journal/2026-11-27.md",
        journal("2026-11-27", {"Learned": ["The NAS sleeps from 01:30 to save power."]}),
    )
    w.dream()
    day = w.vault / "journal/2026-11-28.md"
    typed = "\n## Done\n- Replaced the NAS fan.\n"
    day.write_text(day.read_text(encoding="utf-8") + typed, encoding="utf-8")
    res = undo_dream(w.vault, "2026-11-28", w.hermes / "memories")
    text = day.read_text(encoding="utf-8")
    assert "Replaced the NAS fan." in text and "dream:" not in text
    assert "journal/2026-11-28.md" in res.restored
    assert not (w.vault / "knowledge/The NAS sleeps from 01.30 to save power.md").exists()


def test_files_undo_restored_are_not_a_persons_edit(tmp_path):
    w = Mini(tmp_path)
    w.note("Home.md", "# Home\n")
    w.note("knowledge/Restic.md", "# Restic\n\nBackups of the photos.\n")
    w.dream()
    assert "[[Restic]]" in w.read("Home.md")
    undo_dream(w.vault, "2026-11-28", w.hermes / "memories")
    assert "[[Restic]]" not in w.read("Home.md")
    rep = w.dream(now=NOW + dt.timedelta(days=1))
    assert "[[Restic]]" in w.read("Home.md"), rep.warnings


def test_the_first_dream_after_vault_init_keeps_home_md(tmp_path, capsys):
    """`companion vault init` wrote Home.md from its template: that is this device's own
    command, not a person's edit, so the first dream keeps Home.md's index at once instead of
    leaving it alone for `human_edit_window_hours` (#39.5)."""
    w = Mini(tmp_path)
    with pytest.raises(SystemExit) as ei:
        main(["vault", "init", str(w.vault)])
    assert not ei.value.code, capsys.readouterr()
    w.note("knowledge/Restic.md", "# Restic\n\nBackups of the photos.\n")
    rep = w.dream()
    assert "[[Restic]]" in w.read("Home.md"), rep.warnings
    assert not any("Home.md" in x for x in rep.warnings), rep.warnings


def test_a_change_nobody_can_name_is_not_called_the_persons_editing(tmp_path):
    """On the agent's device a note written by a plain file write still waits (the safe
    side), but the Dreaming line says only what is known (#39.5)."""
    w = Mini(tmp_path)
    w.extra = {"sync": {"kind": "agent"}}
    w.note("knowledge/Copias.md", NOTE, edited=NOW - dt.timedelta(minutes=20))
    w.say(
        "user",
        "remember: las Copias con restic necesitan una política de purga.",
        NOW - dt.timedelta(hours=5),
    )
    rep = w.dream(dream_config={"language": "en"})
    assert w.read("knowledge/Copias.md") == NOTE  # it still waits
    assert [s.code for s in rep.skipped] == ["being_edited"]
    day = w.read("journal/2026-11-28.md")
    assert "finish editing" not in day
    assert "1 line waits: [[Copias]] changed outside the dream" in day
