"""The dream review window: list, provenance, coloured diff, revert and its refusal."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QUrl

from companion.dream.undo import NoteLocator
from companion.gui.review import ReviewWindow, diff_html
from companion.gui.sample import BEFORE_PI, BEFORE_PROJECT, write_sample_vault


@pytest.fixture
def window(qtbot, tmp_path: Path):
    vault = tmp_path / "vault"
    report = write_sample_vault(vault)
    opened: list[QUrl] = []
    w = ReviewWindow(
        report,
        NoteLocator(vault),
        open_url=lambda u: opened.append(u) or True,
        confirm=lambda _q: True,
    )
    qtbot.addWidget(w)
    return w, vault, opened


def rows(w: ReviewWindow) -> list[list[str]]:
    out = []
    for i in range(w.changes.topLevelItemCount()):
        item = w.changes.topLevelItem(i)
        out.append([item.text(c) for c in range(3)])
    return out


def test_lists_changes_with_kind_and_state(window) -> None:
    w, vault, _ = window
    assert w.header.text() == "Dream of 2025-11-28, ran on the server"
    assert w.counts.text() == "1 consolidated, 1 corrected, 1 index update, 1 recorded"
    assert rows(w) == [
        ["knowledge/Raspberry Pi setup.md", "Consolidated", "as dreamed"],
        ["projects/Weather station.md", "Corrected", "as dreamed"],
        ["Home.md", "Index", "as dreamed"],
        ["journal/2025-11-28.md", "Journal", "as dreamed"],
    ]


def test_shows_provenance_and_coloured_diff(window) -> None:
    w, _, _ = window
    w.select_change("c1")
    assert "journal/2025-11-27.md:9" in w.provenance.text()
    assert "hermes:state.db #m-4812" in w.provenance.text()
    assert "Enable I2C with raspi-config" in w.provenance.text()
    text = w.diff.toPlainText()
    assert "+## Power" in text and "--- a/knowledge/Raspberry Pi setup.md" in text
    html = diff_html(w.current_change().diff_lines())
    assert "background:#dafbe1" in html  # added lines green
    assert "background:#ddf4ff" in html  # hunk headers blue
    w.select_change("c2")
    assert "background:#ffebe9" in diff_html(w.current_change().diff_lines())  # removed: red


def test_revert_this_change(window) -> None:
    w, vault, _ = window
    w.select_change("c1")
    assert w.revert_button.isEnabled()
    assert w.revert_current() is True
    note = vault / "knowledge" / "Raspberry Pi setup.md"
    assert note.read_bytes() == BEFORE_PI.encode("utf-8")
    assert rows(w)[0][2] == "reverted"
    assert not w.revert_button.isEnabled()  # nothing left to revert for this change
    assert "Reverted knowledge/Raspberry Pi setup.md" in w.message.text()


def test_revert_refused_when_edited_since(window) -> None:
    w, vault, _ = window
    note = vault / "projects" / "Weather station.md"
    note.write_text(note.read_text(encoding="utf-8") + "my edit\n", encoding="utf-8")
    w.reload()
    w.select_change("c2")
    assert rows(w)[1][2] == "edited since"
    assert not w.revert_button.isEnabled()
    assert w.revert_current() is False  # even when forced, the file is left alone
    assert note.read_text(encoding="utf-8").endswith("my edit\n")
    assert "changed after the dream" in w.message.text()
    assert w.revert_all() is False
    assert "Nothing was reverted" in w.message.text()


def test_revert_whole_dream(window) -> None:
    w, vault, _ = window
    assert w.revert_all() is True
    assert (vault / "projects" / "Weather station.md").read_bytes() == BEFORE_PROJECT.encode()
    assert [r[2] for r in rows(w)] == ["reverted"] * 4
    assert "Reverted 4 notes" in w.message.text()


def test_whole_dream_asks_first(qtbot, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    report = write_sample_vault(vault)
    w = ReviewWindow(report, NoteLocator(vault), confirm=lambda _q: False)
    qtbot.addWidget(w)
    assert w.revert_all() is False
    assert [r[2] for r in rows(w)] == ["as dreamed"] * 4


def test_open_in_obsidian(window) -> None:
    w, vault, opened = window
    w.select_change("c3")
    w.obsidian_button.click()
    assert opened[0].scheme() == "obsidian"
    assert "Home.md" in opened[0].toString()


def test_unreadable_report_says_so(qtbot, tmp_path: Path) -> None:
    bad = tmp_path / "2025-11-28.json"
    bad.write_text("{oops", encoding="utf-8")
    w = ReviewWindow(bad, NoteLocator(tmp_path))
    qtbot.addWidget(w)
    assert w.header.text() == "This dream report cannot be read"
    assert "Cannot read the dream report" in w.message.text()
    assert not w.revert_all_button.isEnabled()
