"""Start at login: entries written and removed only in temporary folders."""

from __future__ import annotations

import configparser
import plistlib
import shlex
from pathlib import Path

import pytest

from companion.gui.autostart import (
    LaunchAgent,
    WindowsRunKey,
    XdgAutostart,
    autostart_for,
    set_start_at_login,
)


def test_xdg_entry_written_and_removed(tmp_path: Path) -> None:
    entry = XdgAutostart({"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "HOME": "/nonexistent"})
    assert entry.path == tmp_path / "cfg" / "autostart" / "vault-companion.desktop"
    assert not entry.is_enabled()
    entry.enable(["/opt/my apps/companion"], {"COMPANION_HOME": "/tmp/dev 1"})
    assert entry.is_enabled()
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read(entry.path, encoding="utf-8")
    desktop = parser["Desktop Entry"]
    assert desktop["Type"] == "Application" and desktop["Name"] == "Vault Companion"
    # the Exec value, unescaped once for the string type, splits back into the argv
    exec_value = desktop["Exec"].replace("\\\\", "\\")
    assert shlex.split(exec_value) == ["env", "COMPANION_HOME=/tmp/dev 1", "/opt/my apps/companion"]
    entry.disable()
    assert not entry.is_enabled()
    entry.disable()  # idempotent


def test_xdg_default_location(tmp_path: Path) -> None:
    entry = XdgAutostart({"HOME": str(tmp_path)})
    assert entry.path == tmp_path / ".config" / "autostart" / "vault-companion.desktop"


def test_percent_is_escaped_in_exec(tmp_path: Path) -> None:
    entry = XdgAutostart({"XDG_CONFIG_HOME": str(tmp_path)})
    entry.enable(["/bin/companion", "100%"])
    assert "Exec=/bin/companion 100%%" in entry.path.read_text(encoding="utf-8")


def test_launch_agent(tmp_path: Path) -> None:
    agent = LaunchAgent(tmp_path / "LaunchAgents")
    agent.enable(["/usr/local/bin/companion"], {"COMPANION_HOME": "/x"})
    data = plistlib.loads(agent.path.read_bytes())
    assert data["Label"] == "org.vaultcompanion.companion"
    assert data["ProgramArguments"] == ["/usr/local/bin/companion"]
    assert data["RunAtLoad"] is True
    assert data["EnvironmentVariables"] == {"COMPANION_HOME": "/x"}
    agent.disable()
    assert not agent.is_enabled()


def test_platform_choice(tmp_path: Path) -> None:
    assert isinstance(autostart_for("linux", {"XDG_CONFIG_HOME": str(tmp_path)}), XdgAutostart)
    assert isinstance(autostart_for("darwin", launch_agents=tmp_path), LaunchAgent)
    assert isinstance(autostart_for("win32"), WindowsRunKey)


def test_toggle_carries_companion_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = XdgAutostart({"XDG_CONFIG_HOME": str(tmp_path)})
    set_start_at_login(True, entry)
    text = entry.path.read_text(encoding="utf-8")
    assert "COMPANION_HOME=" in text  # the test's COMPANION_HOME (conftest) is kept
    assert "companion" in text
    set_start_at_login(False, entry)
    assert not entry.path.exists()


def test_launch_command_of_a_frozen_app_is_its_binary(monkeypatch, tmp_path: Path) -> None:
    import sys

    from companion.gui.autostart import launch_command

    exe = tmp_path / "Vault Companion" / "companion"
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(exe))
    assert launch_command() == [str(exe)]


def test_launch_command_uses_this_environments_script(monkeypatch, tmp_path: Path) -> None:
    import sys

    from companion.gui.autostart import launch_command

    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setattr(sys, "platform", "linux")
    assert launch_command() == [str(python), "-m", "companion"]  # no script: -m
    script = python.parent / "companion"
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    assert launch_command() == [str(script)]
