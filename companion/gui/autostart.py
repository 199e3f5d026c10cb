"""Start the tray app at login: XDG autostart (Linux), LaunchAgent (macOS), Run key (Windows).

Qt-free. Every location is injectable (`XDG_CONFIG_HOME`, the LaunchAgents folder) so tests
write only into temporary folders. A `COMPANION_HOME` in effect is carried into the entry, so
the app started at login is the same device as the one that asked for it.
"""

from __future__ import annotations

import os
import plistlib
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from companion.fileio import write_atomic
from companion.services.units import companion_command

APP_ID = "vault-companion"
LABEL = "org.vaultcompanion.companion"
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
RUN_VALUE = "VaultCompanion"


def launch_command() -> list[str]:
    """The command that starts the tray app on this installation.

    The frozen app is its own binary; otherwise the `companion` script of this same Python
    environment (never one found elsewhere on PATH, which may be another installation), else
    this Python with `-m companion`.
    """
    if getattr(sys, "frozen", False):
        return companion_command()
    folder = Path(sys.executable).parent
    if sys.platform == "win32":
        candidates = [folder / "companion.exe", folder / "Scripts" / "companion.exe"]
    else:
        candidates = [folder / "companion"]
    for script in candidates:
        if script.is_file() and os.access(script, os.X_OK):
            return [str(script)]
    return companion_command()


class Autostart(Protocol):
    def enable(self, command: Sequence[str], env: Mapping[str, str] | None = None) -> None: ...
    def disable(self) -> None: ...
    def is_enabled(self) -> bool: ...


_DESKTOP_RESERVED = re.compile(r'[\s"\'\\><~|&;$*?#()`]')


def _desktop_quote(arg: str) -> str:
    """Quote one argument for a desktop entry's Exec key (freedesktop spec)."""
    arg = arg.replace("%", "%%")
    if arg and not _DESKTOP_RESERVED.search(arg):
        return arg
    escaped = re.sub(r'(["`$\\])', r"\\\1", arg)
    return f'"{escaped}"'


def _desktop_escape(value: str) -> str:
    """Escape a string value of a desktop entry (the Exec key then escapes backslashes again)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


class XdgAutostart:
    """`$XDG_CONFIG_HOME/autostart/vault-companion.desktop`."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")) / ".config")
        self.path = Path(base).expanduser() / "autostart" / f"{APP_ID}.desktop"

    def enable(self, command: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        argv = list(command)
        if env:
            argv = ["env", *(f"{k}={v}" for k, v in env.items()), *argv]
        exec_line = " ".join(_desktop_quote(a) for a in argv)
        text = "\n".join(
            [
                "[Desktop Entry]",
                "Type=Application",
                "Name=Vault Companion",
                "Comment=Encrypted sync and nightly dream for your agent's vault",
                f"Exec={_desktop_escape(exec_line)}",
                "Icon=vault-companion",
                "Terminal=false",
                "Categories=Utility;",
                "X-GNOME-Autostart-enabled=true",
                "",
            ]
        )
        _write(self.path, text.encode("utf-8"))

    def disable(self) -> None:
        self.path.unlink(missing_ok=True)

    def is_enabled(self) -> bool:
        return self.path.is_file()


class LaunchAgent:
    """`~/Library/LaunchAgents/org.vaultcompanion.companion.plist` (RunAtLoad)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.path = (folder or Path.home() / "Library" / "LaunchAgents") / f"{LABEL}.plist"

    def enable(self, command: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        plist: dict[str, object] = {
            "Label": LABEL,
            "ProgramArguments": list(command),
            "RunAtLoad": True,
            "ProcessType": "Interactive",
        }
        if env:
            plist["EnvironmentVariables"] = dict(env)
        _write(self.path, plistlib.dumps(plist))

    def disable(self) -> None:
        self.path.unlink(missing_ok=True)

    def is_enabled(self) -> bool:
        return self.path.is_file()


def _winreg() -> Any:
    """The Windows registry module (typed Any: typeshed describes it on Windows only)."""
    import importlib

    return importlib.import_module("winreg")


class WindowsRunKey:
    """`HKCU\\...\\CurrentVersion\\Run\\VaultCompanion` (Windows only)."""

    def enable(self, command: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        import subprocess

        winreg = _winreg()
        # The Run key carries no environment: a COMPANION_HOME is not kept on Windows.
        line = subprocess.list2cmdline(list(command))
        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
            winreg.SetValueEx(key, RUN_VALUE, 0, winreg.REG_SZ, line)

    def disable(self) -> None:
        winreg = _winreg()

        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
            try:
                winreg.DeleteValue(key, RUN_VALUE)
            except FileNotFoundError:
                pass

    def is_enabled(self) -> bool:
        winreg = _winreg()

        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
            try:
                winreg.QueryValueEx(key, RUN_VALUE)
            except FileNotFoundError:
                return False
            return True


def autostart_for(
    platform: str | None = None,
    environ: Mapping[str, str] | None = None,
    launch_agents: Path | None = None,
) -> Autostart:
    platform = platform or sys.platform
    if platform.startswith("win"):
        return WindowsRunKey()
    if platform == "darwin":
        return LaunchAgent(launch_agents)
    return XdgAutostart(environ)


def set_start_at_login(enabled: bool, autostart: Autostart | None = None) -> None:
    """Create or remove this user's login entry for the tray app."""
    entry = autostart or autostart_for()
    if enabled:
        home = os.environ.get("COMPANION_HOME")
        entry.enable(launch_command(), {"COMPANION_HOME": home} if home else None)
    else:
        entry.disable()


def _write(path: Path, data: bytes) -> None:
    write_atomic(path, data, mode=0o644, make_parents=True)
