"""Is there a display to show windows on? Asked before Qt starts, because Qt's answer to "no"
is an abort (SIGABRT) with a page of plugin messages.

Qt-free. `display_problem` returns None when Qt may try (a platform plugin that needs no
display, a reachable local X server or Wayland socket, or anything it cannot check, such as a
remote X display), else one line saying what is missing.
"""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

# Qt platform plugins that draw without a desktop display
HEADLESS_PLATFORMS = (
    "offscreen",
    "minimal",
    "minimalegl",
    "vnc",
    "linuxfb",
    "eglfs",
    "vkkhrdisplay",
)
_LOCAL_X = re.compile(r"^(?:unix)?:(\d+)(?:\.\d+)?$")


def _x_answers(number: str) -> bool:
    path = f"/tmp/.X11-unix/X{number}"
    for address in (path, "\0" + path):  # the file, then Linux's abstract socket of the same name
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1.0)
        try:
            s.connect(address)
            return True
        except OSError:
            continue
        finally:
            s.close()
    return False


def display_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """None when there is (or may be) a display; else why not, in one line."""
    env = os.environ if environ is None else environ
    platform = env.get("QT_QPA_PLATFORM", "").split(":")[0].strip().lower()
    if platform in HEADLESS_PLATFORMS:
        return None
    if not sys.platform.startswith("linux") and environ is None:
        return None  # Windows and macOS always have their desktop
    wayland = env.get("WAYLAND_DISPLAY", "")
    display = env.get("DISPLAY", "")
    wants_wayland = platform.startswith("wayland") or (not platform and bool(wayland))
    if wants_wayland and wayland:
        runtime = env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
        sock = Path(wayland) if wayland.startswith("/") else Path(runtime) / wayland
        if sock.exists():
            return None
        if not display or platform.startswith("wayland"):  # no X11 to fall back to
            return f"no Wayland compositor answers on {wayland} ({sock} is missing)"
    if not display:
        if platform == "xcb":
            return "QT_QPA_PLATFORM is xcb but DISPLAY is not set"
        return "neither DISPLAY nor WAYLAND_DISPLAY is set"
    m = _LOCAL_X.match(display)
    if m is not None and not _x_answers(m.group(1)):
        return f"no X server answers on {display}"
    return None
