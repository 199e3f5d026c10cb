"""Refuse a Qt binding that would crash the desktop app within the hour.

PySide6 6.12.0 returns None from its void methods (`QLabel.setText`, `processEvents`, ...)
without taking a reference to it. From Python 3.12 on None is immortal and that is harmless. On
Python 3.11 every such call leaves None one reference short. The tray app makes thousands of
these calls an hour (a main-window refresh makes 18), so None's count reaches zero and the
process aborts with "Fatal Python error: none_dealloc", sync and all. `pyproject.toml` keeps
that build off Python 3.11; this check catches it when it arrives some other way (a system
package, a hand-made venv), before the app starts, and `companion doctor` reports it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

PROBE_CALLS = 256  # enough that a real loss stands far above other threads' noise
FIX = 'pip install "PySide6-Essentials<6.12" (or Python 3.12 or newer)'


def binding_version() -> str:
    """The installed PySide6's version (ImportError when it is not installed)."""
    from PySide6 import __version__  # noqa: PLC0415

    return str(__version__)


def none_references_lost(call: Callable[[], object], times: int = PROBE_CALLS) -> int:
    """How many references to None `times` calls of `call` lose (0 for a sound binding)."""
    before = sys.getrefcount(None)
    for _ in range(times):
        call()
    return before - sys.getrefcount(None)


def qt_binding_problem(call: Callable[[], object] | None = None) -> str | None:
    """Why the installed Qt binding would crash the app, or None when it is sound.

    `call` is one void method call of the binding; by default `QObject.setObjectName`, which
    needs no display and no QApplication."""
    if sys.version_info >= (3, 12):
        return None  # None is immortal: a missing reference cannot free it
    version = binding_version()
    if call is None:
        from PySide6.QtCore import QObject  # noqa: PLC0415

        probe = QObject()
        call = lambda: probe.setObjectName("probe")  # noqa: E731
    lost = none_references_lost(call)
    if lost < PROBE_CALLS // 2:
        return None
    return (
        f"this Qt binding (PySide6 {version}) loses a reference to None on each call that "
        f"returns nothing ({lost} in {PROBE_CALLS} calls); on Python "
        f"{sys.version_info.major}.{sys.version_info.minor} the desktop app would abort "
        f"within the hour. Install one without the bug: {FIX}"
    )
