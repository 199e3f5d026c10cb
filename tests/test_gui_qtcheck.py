"""The Qt binding must keep its references to None (on Python 3.11, where None is mortal).

PySide6 6.12.0 does not: each void call (`QLabel.setText`, `processEvents`, ...) leaves None one
reference short, and the desktop app aborted with "Fatal Python error: none_dealloc" after
about a thousand main-window refreshes. The first test runs the real binding the project
installs; the others stand in for the broken build with a call that drops one reference to None
through the C API (and give the references back afterwards).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion import cli, doctor
from companion.gui import app as app_module
from companion.gui import qtcheck

pytestmark = pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="None is immortal from Python 3.12: nothing to lose"
)


class LeakyCall:
    """A void call like the broken build's: returns None and drops one reference to it."""

    def __init__(self) -> None:
        self.dropped = 0

    def __call__(self) -> None:
        ctypes.pythonapi.Py_DecRef(ctypes.py_object(None))
        self.dropped += 1

    def give_back(self) -> None:
        for _ in range(self.dropped):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(None))
        self.dropped = 0


@pytest.fixture
def leaky() -> Iterator[LeakyCall]:
    call = LeakyCall()
    try:
        yield call
    finally:
        call.give_back()


def test_the_installed_binding_keeps_its_references_to_none(qapp) -> None:
    from PySide6.QtCore import QCoreApplication, QObject
    from PySide6.QtWidgets import QLabel

    label, obj = QLabel(), QObject()
    for call in (
        lambda: label.setText("x"),
        lambda: obj.setObjectName("x"),
        QCoreApplication.processEvents,
    ):
        assert qtcheck.none_references_lost(call, times=2000) < 100
    assert qtcheck.qt_binding_problem() is None


def test_a_binding_that_loses_references_to_none_is_named(leaky: LeakyCall) -> None:
    assert qtcheck.none_references_lost(leaky, times=64) == 64
    problem = qtcheck.qt_binding_problem(leaky)
    assert problem is not None
    assert "abort within the hour" in problem and qtcheck.FIX in problem
    assert qtcheck.qt_binding_problem(lambda: None) is None  # a sound call


def test_the_desktop_app_refuses_such_a_binding_with_a_clear_error(
    leaky: LeakyCall, monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path
) -> None:
    monkeypatch.setenv("COMPANION_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(app_module, "qt_binding_problem", lambda: qtcheck.qt_binding_problem(leaky))
    with pytest.raises(SystemExit) as exit_:
        cli.main([])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: this Qt binding") and qtcheck.FIX in err
    assert not (tmp_path / "home" / "state" / "gui.lock").exists()  # stopped before starting


def test_doctor_names_the_binding(leaky: LeakyCall, monkeypatch: pytest.MonkeyPatch) -> None:
    assert doctor.check_desktop(None).status == "ok"  # type: ignore[arg-type]
    real = qtcheck.qt_binding_problem
    monkeypatch.setattr(qtcheck, "qt_binding_problem", lambda: real(leaky))
    check = doctor.check_desktop(None)  # type: ignore[arg-type]
    assert check.status == "FAIL" and check.fix == qtcheck.FIX
    assert "loses a reference to None" in check.detail
