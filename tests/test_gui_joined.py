"""A laptop joined with `companion init`, as the desktop app sees it: Settings show the relay
and the device it joined as (not empty fields and a Join button), "Changes waiting" counts an
edit queued while offline, and the tray app knows the vault without being told (#13, 2 and 3).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from companion.config import load_config
from companion.gui.app import create_engine, settings_hooks
from companion.gui.settings import SettingsWindow
from companion.gui.sync_facade import SyncFacade
from tests.conftest import wait_for
from tests.desktop_world import DesktopWorld


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    with DesktopWorld(tmp_path_factory.mktemp("joined")) as w:
        yield w


def laptop_config(world: DesktopWorld):
    return load_config(world.laptop_paths())


def test_init_makes_the_joined_folder_the_devices_vault(world: DesktopWorld) -> None:
    cfg = laptop_config(world)
    assert cfg.get("vault", "path") == os.path.realpath(world.laptop_vault)
    assert isinstance(create_engine(cfg), SyncFacade)


def test_settings_show_the_relay_and_device_it_joined_as(qtbot, world: DesktopWorld) -> None:
    cfg = laptop_config(world)
    cfg.values["sync"].update(relay_url="", device_name="")  # as a device joined before the fix
    w = SettingsWindow(cfg, settings_hooks(cfg))
    qtbot.addWidget(w)
    assert world.relay is not None
    assert w.relay_url.text() == world.relay.url and w.relay_url.isReadOnly()
    assert w.device_name.text() == "laptop" and w.device_name.isReadOnly()
    assert not w.join_button.isVisibleTo(w) and not w.invite_code.isVisibleTo(w)
    assert w.joined.isVisibleTo(w)
    assert "laptop" in w.joined.text() and world.relay.url in w.joined.text()
    assert "a person" in w.joined.text()
    assert w.errors() == {}


def test_a_field_in_red_on_another_tab_is_named_and_marked(qtbot, world: DesktopWorld) -> None:
    cfg = laptop_config(world)
    w = SettingsWindow(cfg, settings_hooks(cfg))
    qtbot.addWidget(w)
    w.show_tab("schedule")
    w.hermes_home.setText("/definitely/not/here")  # on the Memory tab, not the one showing
    assert "Memory" in w.status.text()
    memory = 3
    assert w.tabs.tabText(memory).startswith("⚠") and not w.tabs.tabText(2).startswith("⚠")
    assert w.tabs.tabBar().tabTextColor(memory).name() == "#cf222e"
    w.hermes_home.setText("")
    assert w.status.text() == "" and not w.tabs.tabText(memory).startswith("⚠")


def test_changes_waiting_counts_an_edit_queued_offline(world: DesktopWorld) -> None:
    cfg = laptop_config(world)
    facade = SyncFacade(
        world.laptop_vault,
        cfg,
        engine_options={"settle_ns": 0},
        daemon_options={"rescan_interval_s": None, "poll_wait_s": 2.0},
    )
    assert world.relay is not None
    try:
        assert facade.ready(30)
        world.relay.stop()
        note = world.laptop_vault / "journal" / "offline.md"
        note.write_text("- written on the train\n", encoding="utf-8")
        wait_for(lambda: not facade.snapshot().online, 30, "the app to see the relay gone")
        wait_for(lambda: facade.snapshot().pending == 1, 30, "the queued edit to be counted")
        status = world.laptop_cli("status", str(world.laptop_vault), "--json", check=False)
        assert json.loads(status.stdout)["pending"]["upload"] == facade.snapshot().pending == 1
    finally:
        facade.close()
        world.relay.restart()
    world.laptop_cli("sync", str(world.laptop_vault))
    world.agent_cli("sync", str(world.agent_vault))
    assert (world.agent_vault / "journal" / "offline.md").is_file()


def test_status_counts_the_edit_once_back_online(world: DesktopWorld) -> None:
    path = Path(world.laptop_vault)
    status = world.laptop_cli("status", str(path), "--json")
    assert json.loads(status.stdout)["pending"]["upload"] == 0
