"""The installers' files: desktop entries, icons, systemd units, macOS plists, Inno Setup script.

Each is checked by the tool its platform uses where this machine has it (desktop-file-validate,
systemd-analyze, plistlib, an SVG renderer), and against the code that must agree with it
(the app's own autostart entries use the same names, so the two never start it twice).
"""

from __future__ import annotations

import importlib.util
import os
import plistlib
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from configparser import ConfigParser
from pathlib import Path

import pytest

from companion.gui import autostart

ROOT = Path(__file__).resolve().parent.parent
LINUX = ROOT / "resources" / "linux"
INSTALLERS = ROOT / "installers"
DESKTOP_FILES = [LINUX / "vault-companion.desktop", LINUX / "vault-companion-autostart.desktop"]
ICONS = [
    LINUX / "icons" / "hicolor" / "scalable" / "apps" / "vault-companion.svg",
    LINUX / "icons" / "hicolor" / "symbolic" / "apps" / "vault-companion-symbolic.svg",
]


def desktop_entry(path: Path) -> dict[str, str]:
    parser = ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(path, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- Linux desktop ---------------------------------------------------------------------------


@pytest.mark.needs("desktop-files")
@pytest.mark.parametrize("path", DESKTOP_FILES, ids=lambda p: p.name)
def test_desktop_entries_validate(path: Path) -> None:
    res = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True)
    # hints and warnings are printed too: a clean file prints nothing
    assert res.returncode == 0 and res.stdout.strip() == "", res.stdout + res.stderr


@pytest.mark.parametrize("path", DESKTOP_FILES, ids=lambda p: p.name)
def test_desktop_entries_start_the_app_with_its_icon(path: Path) -> None:
    entry = desktop_entry(path)
    assert entry["Type"] == "Application"
    assert entry["Exec"] == "companion"  # no subcommand: the tray app
    assert entry["Icon"] == "vault-companion"
    assert entry["Terminal"] == "false"
    assert "Comment[es]" in entry


def test_menu_entry_has_categories_and_autostart_entry_waits_for_the_panel() -> None:
    menu = desktop_entry(DESKTOP_FILES[0])
    assert menu["Categories"].rstrip(";").split(";") == ["Network", "FileTransfer"]
    auto = desktop_entry(DESKTOP_FILES[1])
    assert auto["X-GNOME-Autostart-enabled"] == "true"
    assert int(auto["X-GNOME-Autostart-Delay"]) > 0  # a tray icon needs the panel up first


def test_autostart_file_name_matches_the_apps_own_entry() -> None:
    # installed as ~/.config/autostart/vault-companion.desktop, the file the app's setting
    # writes: one entry, never two
    entry = autostart.XdgAutostart({"XDG_CONFIG_HOME": "/x"})
    assert entry.path.name == "vault-companion.desktop"
    script = (INSTALLERS / "linux" / "install-desktop.sh").read_text()
    assert "autostart/vault-companion.desktop" in script


@pytest.mark.parametrize("path", ICONS, ids=lambda p: p.name)
def test_icons_are_square_svgs_that_render(path: Path) -> None:
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    x, y, w, h = (float(v) for v in root.attrib["viewBox"].split())
    assert w == h and x == y == 0
    from PySide6.QtSvg import QSvgRenderer

    assert QSvgRenderer(str(path)).isValid()


def test_symbolic_icon_is_one_colour() -> None:
    text = ICONS[1].read_text()
    colours = {c.lower() for c in re.findall(r"#[0-9a-fA-F]{6}", text)}
    assert colours == {"#2e3436"}  # GNOME recolours symbolic icons from this one


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="installs into XDG folders")
def test_install_desktop_script_installs_and_removes(tmp_path: Path) -> None:
    env = dict(
        os.environ, XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "cfg")
    )
    script = INSTALLERS / "linux" / "install-desktop.sh"
    res = subprocess.run(
        ["sh", str(script), "--autostart"], capture_output=True, text=True, env=env
    )
    assert res.returncode == 0, res.stderr
    apps = tmp_path / "data" / "applications" / "vault-companion.desktop"
    icon = tmp_path / "data" / "icons" / "hicolor" / "scalable" / "apps" / "vault-companion.svg"
    auto = tmp_path / "cfg" / "autostart" / "vault-companion.desktop"
    assert apps.is_file() and icon.is_file() and auto.is_file()
    assert desktop_entry(auto)["Exec"] == "companion"
    res = subprocess.run(
        ["sh", str(script), "--uninstall"], capture_output=True, text=True, env=env
    )
    assert res.returncode == 0, res.stderr
    assert not apps.exists() and not icon.exists() and not auto.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="installs into XDG folders")
def test_install_desktop_script_points_at_a_given_binary(tmp_path: Path) -> None:
    exe = tmp_path / "opt" / "vault companion" / "companion"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    env = dict(
        os.environ, XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "cfg")
    )
    script = INSTALLERS / "linux" / "install-desktop.sh"
    res = subprocess.run(
        ["sh", str(script), "--exec", str(exe)], capture_output=True, text=True, env=env
    )
    assert res.returncode == 0, res.stderr
    installed = tmp_path / "data" / "applications" / "vault-companion.desktop"
    entry = desktop_entry(installed)
    assert entry["Exec"] == f'"{exe}"'
    assert entry["TryExec"] == str(exe)
    if shutil.which("desktop-file-validate"):
        res = subprocess.run(
            ["desktop-file-validate", str(installed)], capture_output=True, text=True
        )
        assert res.returncode == 0 and not res.stdout.strip(), res.stdout


# -- Linux server: the reference units -------------------------------------------------------


def test_reference_units_match_what_install_service_writes() -> None:
    gen = load_module(INSTALLERS / "linux" / "generate.py", "generate_units")
    for unit in gen.reference_units():
        on_disk = (INSTALLERS / "linux" / unit.name).read_text(encoding="utf-8")
        assert on_disk == unit.text, f"run: python installers/linux/generate.py ({unit.name})"


@pytest.mark.needs("systemd")
def test_reference_units_verify_for_a_pipx_install(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    fake = home / ".local" / "bin" / "companion"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    units = tmp_path / "units"
    units.mkdir()
    for f in (INSTALLERS / "linux").glob("companion-*"):
        shutil.copy(f, units / f.name)
    for inst in ("companion-watch@srv-vault.service", "companion-dream@srv-vault.service",
                 "companion-dream@srv-vault.timer"):  # fmt: skip
        template = inst.replace("@srv-vault", "@")
        (units / inst).symlink_to(units / template)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = dict(os.environ, HOME=str(home), XDG_RUNTIME_DIR=str(runtime))
    names = ["companion-relay.service", "companion-watch@srv-vault.service",
             "companion-dream@srv-vault.service", "companion-dream@srv-vault.timer"]  # fmt: skip
    res = subprocess.run(
        ["systemd-analyze", "verify", "--user", *names],
        capture_output=True,
        text=True,
        env=env,
        cwd=units,
    )
    assert res.returncode == 0 and not res.stderr.strip(), res.stderr
    fake.unlink()  # and systemd does look for the program
    res = subprocess.run(
        ["systemd-analyze", "verify", "--user", "companion-relay.service"],
        capture_output=True,
        text=True,
        env=env,
        cwd=units,
    )
    assert res.returncode != 0


# -- macOS -------------------------------------------------------------------------------------


def test_info_plist_is_a_tray_only_app() -> None:
    info = plistlib.loads((INSTALLERS / "macos" / "Info.plist").read_bytes())
    assert info["LSUIElement"] is True
    assert info["CFBundleIdentifier"] == autostart.LABEL
    assert info["CFBundlePackageType"] == "APPL"
    assert set(info["CFBundleLocalizations"]) == {"en", "es"}
    assert "CFBundleExecutable" not in info  # PyInstaller sets it to the windowless binary


def test_launch_agent_is_the_one_the_app_writes() -> None:
    path = INSTALLERS / "macos" / f"{autostart.LABEL}.plist"
    agent = plistlib.loads(path.read_bytes())
    assert agent["Label"] == autostart.LABEL
    assert agent["RunAtLoad"] is True
    assert agent["ProgramArguments"] == [
        "/Applications/Vault Companion.app/Contents/MacOS/vault-companion"
    ]
    assert agent["KeepAlive"] == {"SuccessfulExit": False}  # Quit from the menu stays quit
    spec = (ROOT / "packaging" / "vault-companion.spec").read_text()
    assert 'name="Vault Companion.app"' in spec and 'NAME = "vault-companion"' in spec


# -- Windows -----------------------------------------------------------------------------------


def test_inno_setup_packs_the_one_folder_build_and_writes_the_apps_run_key() -> None:
    iss = (INSTALLERS / "windows" / "vault-companion.iss").read_text(encoding="utf-8")
    assert '#define BuildDir "..\\..\\dist\\vault-companion"' in iss
    assert 'Source: "{#BuildDir}\\*"' in iss and "recursesubdirs" in iss
    run_key = next(line for line in iss.splitlines() if line.startswith("Root: HKCU"))
    assert f'Subkey: "{autostart.RUN_KEY}"' in run_key
    assert f'ValueName: "{autostart.RUN_VALUE}"' in run_key
    assert "uninsdeletevalue" in run_key and "Tasks: startatlogin" in run_key
    assert "PrivilegesRequired=lowest" in iss  # per-user: HKCU is this user's Run key
    assert 'Name: "startatlogin"' in iss
    assert '#define GuiExe "vault-companion.exe"' in iss


# -- the build's own files ---------------------------------------------------------------------


def test_spec_and_build_script_compile() -> None:
    compile(
        (ROOT / "packaging" / "vault-companion.spec").read_text(), "vault-companion.spec", "exec"
    )
    res = subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "build.py"), "--help"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0 and "--archive" in res.stdout
