"""The tray: icons per state, menu contents, rebuilt with fresh counts every time it opens."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QUrl

from companion.gui.actions import AppActions
from companion.gui.bridge import EngineView, EngineWorker
from companion.gui.facade import IdleEngine
from companion.gui.resources import icon_path
from companion.gui.sample import write_sample_vault
from companion.gui.status import EngineSnapshot, TrayState
from companion.gui.tray import TrayController, state_icon


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    v = tmp_path / "My Vault"
    write_sample_vault(v, conflicts=1)
    return v


@pytest.fixture
def setup(qtbot, vault: Path):
    opened: list[QUrl] = []
    worker = EngineWorker(IdleEngine(vault))
    actions = AppActions(worker, open_url=lambda url: opened.append(url) or True)
    tray = TrayController(worker, actions)
    with qtbot.waitSignal(worker.view_ready, timeout=5000):
        worker.refresh()
    yield tray, worker, actions, opened
    worker.shutdown()


def test_every_state_has_an_svg_icon(qtbot) -> None:
    for state in TrayState:
        path = icon_path(f"tray-{state.value}.svg")
        assert path.is_file(), path
        text = path.read_text(encoding="utf-8")
        assert "<svg" in text and "stroke" in text
        icon = state_icon(state)
        assert not icon.isNull()
        assert not icon.pixmap(22, 22).toImage().isNull()


def test_menu_contents(setup) -> None:
    tray, worker, actions, opened = setup
    tray.rebuild_menu()
    assert tray.action_texts() == [
        "Sync not set up",
        "---",
        "Open vault folder",
        "Open in Obsidian",
        "---",
        "Sync now",
        "Pause syncing",
        "Dream now",
        "Last dream report…",
        "Conflicts (1)",
        "---",
        "Settings…",
        "Quit",
    ]
    by_text = {a.text(): a for a in tray.menu.actions()}
    assert not by_text["Sync not set up"].isEnabled()
    assert not by_text["Sync now"].isEnabled()  # no sync configured
    assert by_text["Last dream report…"].isEnabled()
    conflicts = by_text["Conflicts (1)"].menu()
    assert [a.text() for a in conflicts.actions()] == [
        "projects/Weather station (conflict laptop 2025-11-28 1400).md"
    ]
    assert "Last dream: today" in tray.icon.toolTip()


def test_menu_rebuilds_on_open_with_fresh_counts(qtbot, setup, vault: Path) -> None:
    tray, worker, actions, opened = setup
    tray.rebuild_menu()
    assert "Conflicts (1)" in tray.action_texts()
    for i in range(2):
        (vault / f"Home (conflict phone 2025-11-29 080{i}).md").write_text("x", "utf-8")
    # opening the menu rebuilds it at once and asks for a poll; while it is open, the fresh
    # answer rebuilds it again with the new count
    with qtbot.waitSignal(tray.menu_rebuilt, timeout=5000):
        tray.menu.popup(QPoint(10, 10))
    assert tray.menu.isVisible()
    qtbot.waitUntil(lambda: "Conflicts (3)" in tray.action_texts(), timeout=5000)
    assert tray.view.snapshot.conflicts == 3
    assert tray.menu.isVisible()
    tray.menu.hide()


def test_rebuilding_replaces_entries_without_piling_up(setup) -> None:
    tray, *_ = setup
    tray.rebuild_menu()
    first = tray.action_texts()
    for _ in range(3):
        tray.rebuild_menu()
    assert tray.action_texts() == first
    assert len(tray.conflicts_menu.actions()) == 1


def test_about_to_show_rebuilds_from_latest_view(qtbot, setup) -> None:
    tray, worker, *_ = setup
    tray.view = EngineView(EngineSnapshot(online=True, paused=True, conflicts=0), [], None, None)
    tray._about_to_show()
    texts = tray.action_texts()
    assert texts[0] == "Paused" and "Resume syncing" in texts
    assert "Conflicts (0)" in texts
    qtbot.waitUntil(lambda: not worker.busy("refresh"), timeout=5000)


def test_actions_open_folder_and_obsidian(setup, vault: Path) -> None:
    tray, worker, actions, opened = setup
    tray.rebuild_menu()
    by_text = {a.text(): a for a in tray.menu.actions()}
    by_text["Open vault folder"].trigger()
    by_text["Open in Obsidian"].trigger()
    assert opened[0] == QUrl.fromLocalFile(str(vault))
    assert (
        opened[1]
        .toString(QUrl.ComponentFormattingOption.FullyEncoded)
        .startswith("obsidian://open?path=%2F")
    )
    assert "My%20Vault" in opened[1].toString(QUrl.ComponentFormattingOption.FullyEncoded)


def test_last_report_and_settings_emit_requests(qtbot, setup, vault: Path) -> None:
    tray, worker, actions, opened = setup
    tray.rebuild_menu()
    by_text = {a.text(): a for a in tray.menu.actions()}
    with qtbot.waitSignal(actions.review_requested) as report:
        by_text["Last dream report…"].trigger()
    assert report.args == [vault / ".companion" / "dreams" / "2025-11-28.json"]
    with qtbot.waitSignal(actions.settings_requested):
        by_text["Settings…"].trigger()
    with qtbot.waitSignal(actions.quit_requested):
        by_text["Quit"].trigger()
