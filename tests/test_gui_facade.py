"""IdleEngine: the engine for a vault with no sync configured yet."""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import unquote

import pytest

from companion.config import NotifySettings
from companion.errors import CompanionError
from companion.gui.events import ConflictsCreated, DreamLanded
from companion.gui.facade import ConflictScanner, EngineFacade, IdleEngine, is_conflict_copy
from companion.gui.links import obsidian_uri
from companion.gui.sample import write_sample_vault
from companion.gui.status import TrayState, tray_state


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("Note (conflict laptop 2025-11-28 1403).md", True),
        ("Weather station (conflict my pc 2025-01-02 0000).md", True),
        ("img (conflict server 2025-11-28 1403).png", True),
        ("Note (conflict laptop 2025-11-28).md", False),
        ("Note (conflicted 2025-11-28 1403).md", False),
        ("Note.md", False),
        ("Makefile (conflict laptop 2025-11-28 1403)", True),  # no extension
        ("Note (conflict laptop 2025-11-28 1403 2).md", True),  # the second that minute
        ("Note (conflict laptop 2025-11-28 1403) draft.md", False),
        ("(conflict laptop 2025-11-28 1403).md", False),
    ],
)
def test_conflict_copy_names(name: str, want: bool) -> None:
    assert is_conflict_copy(name) is want


def test_idle_engine_is_an_engine_facade(tmp_path: Path) -> None:
    assert isinstance(IdleEngine(tmp_path), EngineFacade)


def test_snapshot_reports_and_conflicts(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    report = write_sample_vault(vault, conflicts=2)
    hidden = vault / ".trash" / "Old (conflict a 2025-11-28 1403).md"
    hidden.parent.mkdir()
    hidden.write_text("x", encoding="utf-8")
    engine = IdleEngine(vault)
    snap = engine.snapshot()
    assert snap.online is False and snap.sync_configured is False and not snap.errors
    assert snap.conflicts == 2
    assert snap.last_dream is not None
    assert tray_state(snap) is TrayState.OFFLINE
    assert engine.latest_dream_report() == report
    assert [p.name for p in engine.conflicts()] == [
        "Weather station (conflict laptop 2025-11-27 1401).md",
        "Weather station (conflict laptop 2025-11-28 1400).md",
    ]
    with pytest.raises(CompanionError, match="not set up"):
        engine.sync_now()
    engine.set_paused(True)
    assert engine.snapshot().paused is True


def test_latest_report_is_the_newest_date(tmp_path: Path) -> None:
    folder = tmp_path / ".companion" / "dreams"
    folder.mkdir(parents=True)
    for name in ("2025-11-27.json", "2025-11-28.json", "2025-10-30.json"):
        (folder / name).write_text("{}", encoding="utf-8")
    assert IdleEngine(tmp_path).latest_dream_report() == folder / "2025-11-28.json"


def test_the_ledger_is_not_a_dream_report(tmp_path: Path) -> None:
    """Every dream writes ledger.json beside the reports: it sorts after the dates, and was
    taken for the newest report ("Dream of ledger landed", #13 item 1)."""
    vault = tmp_path / "vault"
    report = write_sample_vault(vault)
    (report.parent / "ledger.json").write_text('{"version": 1, "seen": {}}', encoding="utf-8")
    engine = IdleEngine(vault)
    assert engine.latest_dream_report() == report
    events = engine.drain_events()
    assert [e.date for e in events if isinstance(e, DreamLanded)] == ["2025-11-28"]
    from datetime import datetime

    from companion.gui import i18n
    from companion.gui.notify_policy import notifications_for

    for lang, title in (("en", "Dream of 2025-11-28: 1 consolidated"), ("es", "del 2025-11-28")):
        i18n.set_language(lang)
        try:
            (note,) = notifications_for(
                events[:1], NotifySettings(morning_time="00:00"), datetime.now()
            )
        finally:
            i18n.set_language("en")
        assert title in note.title and "ledger" not in note.title + note.body
        assert note.title.endswith(("1 recorded", "1 anotada"))


def test_no_vault_is_an_error_state(tmp_path: Path) -> None:
    assert tray_state(IdleEngine(None).snapshot()) is TrayState.ERROR
    missing = IdleEngine(tmp_path / "gone").snapshot()
    assert "not there" in missing.errors[0]
    assert IdleEngine(None).drain_events() == []
    with pytest.raises(CompanionError):
        IdleEngine(None).dream_now()


def test_events_new_reports_and_conflicts_once(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    report = write_sample_vault(vault, conflicts=1)
    old = report.with_name("2025-11-01.json")
    old.write_text('{"date": "2025-11-01"}', encoding="utf-8")
    stale = time.time() - 3 * 86400
    os.utime(old, (stale, stale))
    engine = IdleEngine(vault)
    first = engine.drain_events()
    # the fresh report counts (the app started after it landed); the old one and the
    # conflict copies that were already there do not
    assert first == [DreamLanded(report, "2025-11-28", "server", first[0].counts)]
    assert first[0].counts["consolidated"] == 1
    assert engine.drain_events() == []
    copy = vault / "Home (conflict phone 2025-11-29 0800).md"
    copy.write_text("x", encoding="utf-8")
    new_report = report.with_name("2025-11-29.json")
    new_report.write_text('{"date": "2025-11-29", "ran_on": "local", "changes": []}', "utf-8")
    events = engine.drain_events()
    landed = [e for e in events if isinstance(e, DreamLanded)]
    assert [(e.report, e.date, e.ran_on) for e in landed] == [(new_report, "2025-11-29", "local")]
    assert not any(landed[0].counts.get(k) for k in ("consolidated", "promoted", "recorded"))
    assert ConflictsCreated((copy,)) in events
    assert engine.drain_events() == []


def test_obsidian_uri_is_percent_encoded(tmp_path: Path) -> None:
    note = tmp_path / "my vault" / "Café & notes #1.md"
    uri = obsidian_uri(note)
    assert uri.startswith("obsidian://open?path=")
    encoded = uri.split("=", 1)[1]
    assert " " not in encoded and "&" not in encoded and "#" not in encoded and "/" not in encoded
    assert unquote(encoded) == str(note)


def test_conflict_names_match_the_sync_engines() -> None:
    from datetime import datetime

    from companion.sync.round.conflicts import conflict_copy_name

    when = datetime(2025, 11, 28, 14, 3)
    taken = {"notes/a (conflict my laptop 2025-11-28 1403).md"}
    for path in ("notes/a.md", "Makefile", "notes/x.tar.gz"):
        assert is_conflict_copy(Path(conflict_copy_name(path, "my laptop", when)).name)
    second = conflict_copy_name("notes/a.md", "my laptop", when, taken.__contains__)
    assert second.endswith(" 2).md") and is_conflict_copy(Path(second).name)


def test_conflicts_are_walked_only_when_a_folder_changed(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "a" / "b").mkdir(parents=True)
    (vault / "a" / "b" / "n.md").write_text("x", encoding="utf-8")
    scanner = ConflictScanner(vault)
    assert scanner.scan() == [] and scanner.walks == 1
    for _ in range(5):
        assert scanner.scan() == []
    assert scanner.walks == 1  # nothing changed: folders stat'ed, not listed
    (vault / "a" / "b" / "n.md").write_text("edited", encoding="utf-8")
    scanner.scan()
    assert scanner.walks == 1  # an edit inside a file is not a new name
    copy = vault / "a" / "b" / "n (conflict phone 2025-11-29 0800).md"
    copy.write_text("x", encoding="utf-8")
    assert scanner.scan() == [copy] and scanner.walks == 2
    (vault / "a" / "c").mkdir()
    other = vault / "a" / "c" / "m (conflict phone 2025-11-29 0801).md"
    other.write_text("x", encoding="utf-8")
    assert scanner.scan() == [copy, other]
    copy.unlink()
    assert scanner.scan() == [other]


def test_a_report_is_told_with_its_nights_review_note(tmp_path: Path) -> None:
    """On a sync copy the night's review note follows the report: the report's event waits for
    it (bounded), then carries the note and what it still waits for (the morning
    notification's counts); with no note by then, the report is told alone."""
    from companion.review import note as notes
    from tests.test_review import _review

    class SyncCopy(IdleEngine):
        REVIEW_WAIT_S = 3600.0

    vault = tmp_path / "vault"
    report = write_sample_vault(vault, conflicts=0)
    engine = SyncCopy(vault)
    assert engine.drain_events() == []  # the note has not arrived: the report waits
    (vault / "review").mkdir()
    (vault / "review" / "2025-11-28.md").write_text(notes.render(_review()), encoding="utf-8")
    [landed] = [e for e in engine.drain_events() if isinstance(e, DreamLanded)]
    assert landed.report == report
    assert landed.review == "review/2025-11-28.md"
    assert landed.waiting == {"change": 3, "disagreement": 1, "proposal": 1}
    assert engine.drain_events() == []

    alone = write_sample_vault(tmp_path / "other", conflicts=0)
    [told] = IdleEngine(tmp_path / "other").drain_events()  # no wait: told at once, alone
    assert told == DreamLanded(alone, "2025-11-28", "server", told.counts)
    assert told.review is None


def test_a_review_note_written_by_another_process_is_told(tmp_path: Path) -> None:
    """A copy another process syncs (a `companion watch` service): a review note it writes
    (a decision carried out, a new night) is told, so an open review reads its items again."""
    from companion.gui.events import ReviewChanged

    vault = tmp_path / "vault"
    write_sample_vault(vault, conflicts=0)
    (vault / "review").mkdir()
    note = vault / "review" / "2025-11-28.md"
    note.write_text("- [ ] Revert this change `c-0123456789/r`\n", encoding="utf-8")
    engine = IdleEngine(vault)
    assert not any(isinstance(e, ReviewChanged) for e in engine.drain_events())
    assert engine.drain_events() == []
    note.write_text("- [x] Revert this change `c-0123456789/r` — reverted 08:14 from phone\n")
    assert engine.drain_events() == [ReviewChanged(("review/2025-11-28.md",))]
    assert engine.drain_events() == []
