"""Held agent changes in the desktop app (#12.2): the notification, the tray's "Held for your
approval" submenu, and accept/refuse carried out by the app's own engine, against a real relay
on loopback (Qt offscreen)."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest

from companion.config import NotifySettings
from companion.gui.actions import AppActions
from companion.gui.bridge import EngineWorker
from companion.gui.events import ChangesHeld
from companion.gui.notify_policy import SHOW_MAIN, notifications_for
from companion.gui.sync_facade import SyncFacade
from companion.gui.tray import TrayController
from tests.conftest import wait_for
from tests.syncharness import SyncCluster

EVIL = b"module.exports = class {};\n"


@pytest.fixture
def world(tmp_path: Path, qtbot):
    with SyncCluster(tmp_path) as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        facade = SyncFacade(
            laptop.vault, laptop.config, engine_options={"settle_ns": 0},
            daemon_options={"rescan_interval_s": None, "poll_wait_s": 2.0},
        )  # fmt: skip
        assert facade.ready(15)
        worker = EngineWorker(facade)
        actions = AppActions(worker, open_url=lambda _url: True)
        tray = TrayController(worker, actions)
        try:
            yield cluster, laptop, server, facade, worker, tray
        finally:
            worker.shutdown()
            facade.close()


def _refresh(qtbot, worker: EngineWorker) -> None:
    with qtbot.waitSignal(worker.view_ready, timeout=10000):
        worker.refresh()


def test_held_changes_in_the_tray_accept_and_refuse(qtbot, world) -> None:
    cluster, laptop, server, facade, worker, tray = world
    server.write(".obsidian/plugins/evil/main.js", EVIL)
    server.write(".obsidian/app.json", '{"x": 1}\n')
    server.sync()
    facade.sync_now()
    assert laptop.read(".obsidian/plugins/evil/main.js") is None
    events = facade.drain_events()
    held = [e for e in events if isinstance(e, ChangesHeld)]
    assert held and set(held[0].paths) == {".obsidian/app.json", ".obsidian/plugins/evil/main.js"}
    (note,) = [
        n
        for n in notifications_for(held, NotifySettings(), datetime.now())
        if n.key.startswith("held:")
    ]
    assert note.title == "2 agent changes are held for your approval"
    assert note.action is not None and note.action.kind == SHOW_MAIN
    _refresh(qtbot, worker)
    tray.rebuild_menu()
    sub = tray.held_menu
    assert sub.title() == "Held for your approval (2)" and sub.menuAction().isVisible()
    entries = [a.text() for a in sub.actions()]
    assert entries[:2] == [".obsidian/app.json (server)", ".obsidian/plugins/evil/main.js (server)"]
    assert entries[-2:] == ["Accept all", "Refuse all (keep mine)"]
    # accept the settings file from its submenu, refuse the plugin
    app_menu = sub.actions()[0].menu()
    accept = [a for a in app_menu.actions() if a.text() == "Accept"][0]
    with qtbot.waitSignal(worker.call_done, timeout=20000):
        accept.trigger()
    assert laptop.read(".obsidian/app.json") == b'{"x": 1}\n'
    _refresh(qtbot, worker)
    tray.rebuild_menu()
    plugin_menu = tray.held_menu.actions()[0].menu()
    refuse = [a for a in plugin_menu.actions() if a.text() == "Refuse (keep mine)"][0]
    with qtbot.waitSignal(worker.call_done, timeout=20000):
        refuse.trigger()
    server.sync()
    wait_for(lambda: server.read(".obsidian/plugins/evil/main.js") is None, what="refusal")
    _refresh(qtbot, worker)
    tray.rebuild_menu()
    assert not tray.held_menu.menuAction().isVisible()
    assert facade.held_changes() == []


def test_held_deletions_are_confirmed_from_the_main_window(qtbot, world) -> None:
    """The notification says a mass deletion is held and opens the main window: there the
    person reads how many files and why, and can delete them on every device in one click
    (before, the app promised a confirmation it did not offer: only the command line could)."""
    from companion.errors import CompanionError
    from companion.gui.main_window import MainWindow

    cluster, laptop, server, facade, worker, tray = world
    for i in range(3):
        laptop.write(f"n{i}.md", f"note {i}\n")

    def uploaded() -> bool:  # a note just written waits for its quiet period first
        facade.sync_now()
        server.sync()
        return len(server.files()) == 3

    wait_for(uploaded, timeout=20, what="the three notes on the server")
    window = MainWindow(worker, AppActions(worker, open_url=lambda _url: True))
    qtbot.addWidget(window)
    _refresh(qtbot, worker)
    assert not window.deletions_box.isVisibleTo(window)
    for i in range(3):  # an emptied folder, as an unmounted drive leaves it
        laptop.delete(f"n{i}.md")
    with pytest.raises(CompanionError, match="^3 deleted files are held back$"):
        facade.sync_now()
    assert facade.snapshot().held_deletions == 3
    _refresh(qtbot, worker)
    assert window.deletions_box.isVisibleTo(window)
    assert window.held_deletions.text().startswith("3 files deleted in this vault are held back")
    assert window.state_text.text() == "Error: 3 deleted files are held back"

    def enabled() -> bool:  # disabled while a round runs: the watcher's own, after the deletes
        _refresh(qtbot, worker)
        return window.confirm_deletions.isEnabled()

    wait_for(enabled, 20, "the button, once no round runs")
    assert window.held_deletions.text().startswith("3 files deleted in this vault are held back")
    assert window.confirm_deletions.text() == "Delete them on every device"
    server.sync()
    assert len(server.files()) == 3  # nothing deleted elsewhere yet
    with qtbot.waitSignal(worker.call_done, timeout=20000):
        window.confirm_deletions.click()
    server.sync()
    assert server.files() == {}
    _refresh(qtbot, worker)
    assert facade.snapshot().held_deletions == 0
    assert not window.deletions_box.isVisibleTo(window)


def test_a_note_this_device_cannot_write_is_explained_in_the_main_window(
    qtbot, world, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's note named as Windows forbids waits on the person's Windows device: the main
    window says which, why and what to do, as plain text (the name is the agent's: it must not
    format the window or offer a link), and the box goes once the note is renamed. Windows
    cannot run here: `pathsafe.WINDOWS_NAMES` gives the laptop Windows's rule."""
    from PySide6.QtCore import Qt

    from companion.gui.main_window import MainWindow
    from companion.sync.local import pathsafe

    cluster, laptop, server, facade, worker, tray = world
    window = MainWindow(worker, AppActions(worker, open_url=lambda _url: True))
    qtbot.addWidget(window)

    def sync_on_windows() -> None:
        with monkeypatch.context() as m:
            m.setattr(pathsafe, "WINDOWS_NAMES", True)
            facade.sync_now()
            _refresh(qtbot, worker)

    server.write("<b>Urgent<b> open me?.md", "from the agent\n")
    server.write("ok.md", "fine\n")
    server.sync()
    sync_on_windows()
    assert laptop.read("ok.md") == b"fine\n"
    assert facade.snapshot().unwritable[0][0] == "<b>Urgent<b> open me?.md"
    assert window.unwritable.isVisibleTo(window)
    assert window.unwritable.textFormat() == Qt.TextFormat.PlainText
    text = window.unwritable.text()
    assert text.startswith("A file from your other devices cannot be written here: <b>Urgent<b>")
    assert "contains '<'" in text and "Rename it on the device that made it" in text
    server.rename("<b>Urgent<b> open me?.md", "Urgent.md")
    server.sync()
    sync_on_windows()
    assert laptop.read("Urgent.md") == b"from the agent\n"
    assert not window.unwritable.isVisibleTo(window)


def test_a_local_file_the_scan_skips_is_named_in_the_main_window(qtbot, world) -> None:
    """The tray said synced while a file of the vault went nowhere (a warning in the log was
    all). The main window names it and why; once fixed, the box goes."""
    from companion.gui.main_window import MainWindow

    cluster, laptop, server, facade, worker, tray = world
    window = MainWindow(worker, AppActions(worker, open_url=lambda _url: True))
    qtbot.addWidget(window)
    laptop.write("bad\x07name.md", "a bell in the name\n")
    os.symlink("/etc", laptop.path("etc-link"))  # left out on purpose: no box for it
    facade.sync_now()
    _refresh(qtbot, worker)
    assert facade.snapshot().not_synced == (
        ("bad\x07name.md", "its name contains a backslash or a control character"),
    )
    assert window.not_synced.isVisibleTo(window)
    assert window.not_synced.text().startswith("A file in this vault is not synced: bad")
    assert "Your other devices do not have it." in window.not_synced.text()
    assert "bad\\x07name.md" in window.not_synced.text()  # shown escaped, not rung
    os.rename(laptop.path("bad\x07name.md"), laptop.path("good name.md"))

    def fixed() -> bool:
        facade.sync_now()
        _refresh(qtbot, worker)
        return not window.not_synced.isVisibleTo(window)

    wait_for(fixed, timeout=20, what="the box gone after the rename")
    server.sync()
    assert server.read("good name.md") == b"a bell in the name\n"
