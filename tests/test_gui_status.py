"""Tray state precedence (exhaustive) and the tooltip text."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from companion.gui import i18n
from companion.gui.status import (
    PRECEDENCE,
    EngineSnapshot,
    TrayState,
    state_label,
    tooltip_text,
    tray_state,
)


def expected(
    errors: bool, online: bool, conflicts: bool, syncing: bool, dreaming: bool, paused: bool
) -> TrayState:
    """The rule, written as the list of (condition, state) in precedence order."""
    rules = [
        (errors, TrayState.ERROR),
        (not online, TrayState.OFFLINE),
        (conflicts, TrayState.CONFLICT),
        (syncing, TrayState.SYNCING),
        (dreaming, TrayState.DREAMING),
        (paused, TrayState.PAUSED),
    ]
    return next((state for cond, state in rules if cond), TrayState.SYNCED)


def test_precedence_order_is_fixed() -> None:
    assert [s.value for s in PRECEDENCE] == [
        "error",
        "offline",
        "conflict",
        "syncing",
        "dreaming",
        "paused",
        "synced",
    ]


@pytest.mark.parametrize("flags", list(itertools.product([False, True], repeat=6)))
def test_every_combination(flags: tuple[bool, ...]) -> None:
    errors, online, conflicts, syncing, dreaming, paused = flags
    snap = EngineSnapshot(
        errors=["boom"] if errors else [],
        online=online,
        conflicts=2 if conflicts else 0,
        syncing=syncing,
        dreaming=dreaming,
        paused=paused,
    )
    assert tray_state(snap) is expected(*flags)


@given(
    errors=st.lists(st.text(min_size=1, max_size=20), max_size=3),
    online=st.booleans(),
    conflicts=st.integers(min_value=0, max_value=10_000),
    syncing=st.booleans(),
    dreaming=st.booleans(),
    paused=st.booleans(),
    pending=st.integers(min_value=0, max_value=10_000),
    configured=st.booleans(),
    last=st.none() | st.datetimes(min_value=datetime(2000, 1, 1)),
)
def test_precedence_property(
    errors, online, conflicts, syncing, dreaming, paused, pending, configured, last
) -> None:
    snap = EngineSnapshot(
        errors, online, conflicts, syncing, dreaming, paused, last, last, pending, configured
    )
    state = tray_state(snap)
    assert state is expected(bool(errors), online, conflicts > 0, syncing, dreaming, paused)
    # the state never hides a more urgent condition: every higher state's condition is false
    higher = PRECEDENCE[: PRECEDENCE.index(state)]
    assert TrayState.ERROR not in higher or not errors
    # pending changes and timestamps never change the state
    assert tray_state(EngineSnapshot(errors, online, conflicts, syncing, dreaming, paused)) is state
    text = tooltip_text(snap, now=datetime(2030, 1, 1))
    assert text.splitlines()[0] == "Vault Companion"


@pytest.fixture
def english():
    i18n.set_language("en")
    yield
    i18n.set_language("en")


def test_tooltip_english(english) -> None:
    now = datetime(2025, 11, 28, 9, 30)
    snap = EngineSnapshot(
        online=True,
        last_sync=now - timedelta(minutes=5),
        last_dream=datetime(2025, 11, 28, 2, 14),
    )
    assert tooltip_text(snap, now) == (
        "Vault Companion\nUp to date\nLast sync: today 09:25\nLast dream: today 02:14"
    )
    older = EngineSnapshot(online=True, last_sync=datetime(2025, 11, 27, 23, 1), last_dream=None)
    text = tooltip_text(older, now)
    assert "Last sync: yesterday 23:01" in text and "Last dream: never" in text


def test_tooltip_spanish_and_plurals() -> None:
    i18n.set_language("es")
    try:
        now = datetime(2025, 11, 28, 9, 30)
        snap = EngineSnapshot(online=True, conflicts=1, last_sync=datetime(2025, 11, 20, 8, 0))
        text = tooltip_text(snap, now)
        assert "1 conflicto" in text and "conflictos" not in text
        assert "Última sincronización: 2025-11-20 08:00" in text
        assert "Último sueño: nunca" in text
        assert state_label(EngineSnapshot(online=True, conflicts=3)) == "3 conflictos"
    finally:
        i18n.set_language("en")


def test_not_configured_says_so(english) -> None:
    snap = EngineSnapshot(online=False, sync_configured=False)
    assert tray_state(snap) is TrayState.OFFLINE
    assert state_label(snap) == "Sync not set up"
    assert "Last sync" not in tooltip_text(snap)


def test_error_label_names_the_first_error(english) -> None:
    snap = EngineSnapshot(errors=["relay refused the token", "other"], online=True)
    assert state_label(snap) == "Error: relay refused the token"


def test_aware_datetimes_are_shown_in_local_time(english) -> None:
    value = datetime(2025, 11, 28, 1, 0).astimezone()
    text = i18n.format_datetime(value, value + timedelta(hours=1))
    assert text == "today " + value.strftime("%H:%M")


def test_engine_side_modules_import_no_qt() -> None:
    """The engine can use these types on a headless server: importing them loads no Qt."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import companion.gui.status, companion.gui.events, companion.gui.facade\n"
        "import companion.gui.notify_policy, companion.gui.autostart\n"
        "import companion.gui.validate\n"
        "qt = sorted(m for m in sys.modules if m.startswith(('PySide6', 'shiboken')))\n"
        "assert not qt, qt\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
