"""Dream reports: one tolerant loader, diffs, and reverts (one change, the whole dream) that
never lose a person's edit. The engine's model; the desktop app imports it (#13)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from companion.dream.report import Change, DreamReport, ReportError, read_report
from companion.dream.undo import (
    BAD_SNAPSHOT,
    EDITED_SINCE,
    NO_MEMORIES,
    OUTSIDE_VAULT,
    NoteLocator,
    RevertRefused,
    note_status,
    revert_change,
    revert_dream,
)
from companion.gui.sample import BEFORE_PI, BEFORE_PROJECT, write_sample_vault


def parse_report(data, path=None) -> DreamReport:
    return DreamReport.from_dict(data, path)


def load_report(path: Path) -> DreamReport:
    return read_report(path)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    v = tmp_path / "vault"
    write_sample_vault(v)
    return v


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def report_of(vault: Path):
    return load_report(vault / ".companion" / "dreams" / "2025-11-28.json")


def test_loader_tolerates_missing_optional_fields(tmp_path: Path) -> None:
    path = tmp_path / "2025-11-02.json"
    path.write_text(
        json.dumps(
            {
                "changes": [
                    {"note": "a.md", "after": "x\n"},
                    {
                        "kind": "promoted",
                        "note": "MEMORY.md",
                        "provenance": [{"source": "s"}],
                        "extra_field_from_the_future": 1,
                    },
                    {"kind": "broken"},  # no note: skipped
                    "not a change",
                ]
            }
        ),
        encoding="utf-8",
    )
    rep = load_report(path)
    assert rep.date == "2025-11-02"
    assert [c.note for c in rep.changes] == ["a.md", "MEMORY.md"]
    assert rep.changes[0].id == "change-1" and rep.changes[0].before is None
    assert rep.changes[0].kind == "changed"
    assert rep.changes[1].provenance[0]["source"] == "s"
    assert rep.changes[1].provenance[0].get("line") is None
    counts = {k: v for k, v in rep.counts.items() if v}
    assert counts == {"changed": 1, "promoted": 1}  # computed from the changes


def test_loader_refuses_garbage_clearly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ReportError, match="cannot be read"):
        load_report(bad)
    bad.write_text('["a list"]', encoding="utf-8")
    with pytest.raises(ReportError, match="not a dream report"):
        load_report(bad)
    with pytest.raises(ReportError, match="no such file"):
        load_report(tmp_path / "2025-01-01.json")


def test_diff_lines(vault: Path) -> None:
    change = report_of(vault).change("c1")
    assert change is not None
    lines = change.diff_lines()
    assert lines[0] == "--- a/knowledge/Raspberry Pi setup.md"
    assert lines[1] == "+++ b/knowledge/Raspberry Pi setup.md"
    assert "+## Power" in lines
    assert all(not line.startswith("-") or line.startswith("---") for line in lines)


def test_revert_restores_the_exact_bytes(vault: Path) -> None:
    rep = report_of(vault)
    locator = NoteLocator(vault)
    note = vault / "knowledge" / "Raspberry Pi setup.md"
    assert note_status(rep.change("c1"), locator) == "applied"
    revert_change(rep, "c1", locator)
    assert note.read_bytes() == BEFORE_PI.encode("utf-8")
    assert sha(note.read_bytes()) == rep.change("c1").before_sha256
    assert note_status(rep.change("c1"), locator) == "reverted"
    # no temp files left next to the note
    assert sorted(p.name for p in note.parent.iterdir()) == ["Backups.md", "Raspberry Pi setup.md"]


def test_revert_refuses_when_the_person_edited_since(vault: Path) -> None:
    rep = report_of(vault)
    note = vault / "projects" / "Weather station.md"
    edited = note.read_bytes() + b"\n- my own line\n"
    note.write_bytes(edited)
    with pytest.raises(RevertRefused, match="changed after the dream") as info:
        revert_change(rep, "c2", NoteLocator(vault))
    assert info.value.reason == EDITED_SINCE and info.value.note == "projects/Weather station.md"
    assert note.read_bytes() == edited  # untouched
    assert note_status(rep.change("c2"), NoteLocator(vault)) == "edited"


def test_revert_refuses_a_deleted_note(vault: Path) -> None:
    rep = report_of(vault)
    (vault / "Home.md").unlink()
    with pytest.raises(RevertRefused):
        revert_change(rep, "c3", NoteLocator(vault))
    assert not (vault / "Home.md").exists()


def test_whole_dream_is_all_or_nothing(vault: Path) -> None:
    rep = report_of(vault)
    before = {p: p.read_bytes() for p in vault.rglob("*.md")}
    (vault / "Home.md").write_text("# Home\n\nmine now\n", encoding="utf-8")
    before[vault / "Home.md"] = (vault / "Home.md").read_bytes()
    with pytest.raises(RevertRefused, match="Nothing was restored") as info:
        revert_dream(rep, NoteLocator(vault))
    assert "Home.md" in str(info.value)
    assert [(p.reason, p.note) for p in info.value.parts] == [(EDITED_SINCE, "Home.md")]
    assert {p: p.read_bytes() for p in vault.rglob("*.md")} == before


def test_whole_dream_reverts_everything_and_skips_already_reverted(vault: Path) -> None:
    rep = report_of(vault)
    locator = NoteLocator(vault)
    revert_change(rep, "c2", locator)
    result = revert_dream(rep, locator)
    assert len(result.restored) == 3 and not result.elsewhere
    assert read_report(rep.path).undone_at  # marked: nothing of the day is left to undo
    assert (vault / "projects" / "Weather station.md").read_bytes() == BEFORE_PROJECT.encode()
    assert all(note_status(c, locator) == "reverted" for c in rep.changes)


def test_several_changes_to_one_note_are_undone_together(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    a, b, c = "one\n", "one\ntwo\n", "one\ntwo\nthree\n"
    (vault / "n.md").write_text(c, encoding="utf-8")
    rep = parse_report(
        {
            "date": "2025-11-28",
            "changes": [
                {"id": "x", "kind": "consolidated", "note": "n.md", "before": a, "after": b},
                {"id": "y", "kind": "recorded", "note": "n.md", "before": b, "after": c},
            ],
        }
    )
    with pytest.raises(RevertRefused):  # the later change must go first
        revert_change(rep, "x", NoteLocator(vault))
    revert_dream(rep, NoteLocator(vault))
    assert (vault / "n.md").read_text(encoding="utf-8") == a


def test_a_note_the_dream_created_is_removed_on_revert(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    (vault / "knowledge").mkdir(parents=True)
    (vault / "knowledge" / "New.md").write_text("new\n", encoding="utf-8")
    rep = parse_report({"changes": [{"id": "n", "note": "knowledge/New.md", "after": "new\n"}]})
    revert_change(rep, "n", NoteLocator(vault))
    assert not (vault / "knowledge" / "New.md").exists()


def test_memory_md_lives_in_the_hermes_home(tmp_path: Path) -> None:
    memories = tmp_path / "hermes" / "memories"
    memories.mkdir(parents=True)
    before, after = "a\n§\nb", "a\n§\nb\n§\nc"
    (memories / "MEMORY.md").write_text(after, encoding="utf-8")
    rep = parse_report(
        {
            "changes": [
                {
                    "id": "m",
                    "kind": "promoted",
                    "note": "MEMORY.md",
                    "before": before,
                    "after": after,
                }
            ]
        }
    )
    with pytest.raises(RevertRefused, match="not on this device") as info:
        revert_change(rep, "m", NoteLocator(tmp_path / "vault"))
    assert info.value.reason == NO_MEMORIES
    revert_change(rep, "m", NoteLocator(tmp_path / "vault", memories))
    assert (memories / "MEMORY.md").read_text(encoding="utf-8") == before


@pytest.mark.parametrize("note", ["../outside.md", "/etc/passwd", "a/../../x.md"])
def test_paths_outside_the_vault_are_refused(tmp_path: Path, note: str) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (tmp_path / "outside.md").write_text("x", encoding="utf-8")
    rep = parse_report({"changes": [{"id": "e", "note": note, "before": "", "after": "x"}]})
    with pytest.raises(RevertRefused, match="outside the vault") as info:
        revert_change(rep, "e", NoteLocator(vault))
    assert info.value.reason == OUTSIDE_VAULT
    assert (tmp_path / "outside.md").read_text(encoding="utf-8") == "x"


def test_a_snapshot_that_does_not_match_its_checksum_is_not_written(vault: Path) -> None:
    data = json.loads((vault / ".companion/dreams/2025-11-28.json").read_text(encoding="utf-8"))
    data["changes"][0]["before"] = "tampered\n"
    rep = parse_report(data)
    note = vault / "knowledge" / "Raspberry Pi setup.md"
    current = note.read_bytes()
    with pytest.raises(RevertRefused, match="checksum") as info:
        revert_change(rep, "c1", NoteLocator(vault))
    assert info.value.reason == BAD_SNAPSHOT
    assert note.read_bytes() == current


def test_memory_files_on_another_machine_are_not_called_edited(tmp_path: Path) -> None:
    change = Change("m1", "promoted", "MEMORY.md", before="a", after="a\n§\nb")
    assert note_status(change, NoteLocator(tmp_path)) == "elsewhere"
    mem = tmp_path / "memories"
    mem.mkdir()
    (mem / "MEMORY.md").write_text("a\n§\nb", encoding="utf-8")
    assert note_status(change, NoteLocator(tmp_path, mem)) == "applied"


def test_a_reverted_change_is_not_dreamt_again(vault: Path) -> None:
    """Its lessons go to the ledger's rejected list, as `companion dream --undo` does."""
    from companion.dream.ledger import Ledger

    data = json.loads((vault / ".companion/dreams/2025-11-28.json").read_text(encoding="utf-8"))
    data["changes"][0]["keys"] = ["enable i2c with raspi config"]
    rep = parse_report(data, vault / ".companion/dreams/2025-11-28.json")
    revert_change(rep, "c1", NoteLocator(vault))
    assert Ledger.load(vault).rejected_on("enable i2c with raspi config") == "2025-11-28"


def test_the_desktop_app_has_no_report_model_of_its_own() -> None:
    """One loader, one revert, one conflict-name rule: the GUI imports the engine's."""
    import importlib.util

    from companion.dream import report as engine_report
    from companion.dream import undo as engine_undo
    from companion.gui import app, facade, review
    from companion.sync.round import conflicts

    assert importlib.util.find_spec("companion.gui.report") is None
    assert review.read_report is engine_report.read_report
    assert review.revert_change is engine_undo.revert_change
    assert review.revert_dream is engine_undo.revert_dream
    assert app.NoteLocator is engine_undo.NoteLocator
    assert facade.read_report is engine_report.read_report
    assert facade.list_reports is engine_report.list_reports
    assert facade.is_conflict_copy is conflicts.is_conflict_copy
