"""What the tray shows: one state out of the engine's snapshot, and the tooltip text.

Qt-free on purpose: the precedence is a product rule (the most urgent thing wins) that is tested
exhaustively without a display, and the engine can build an `EngineSnapshot` without Qt.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

from companion.gui.i18n import N_, format_datetime, tr


class TrayState(enum.Enum):
    """Tray icon states, most urgent first (the order of `PRECEDENCE`)."""

    ERROR = "error"
    OFFLINE = "offline"
    CONFLICT = "conflict"
    SYNCING = "syncing"
    DREAMING = "dreaming"
    PAUSED = "paused"
    SYNCED = "synced"


PRECEDENCE: tuple[TrayState, ...] = tuple(TrayState)

STATE_LABELS: dict[TrayState, str] = {
    TrayState.ERROR: N_("state.error"),
    TrayState.OFFLINE: N_("state.offline"),
    TrayState.CONFLICT: N_("state.conflict"),
    TrayState.SYNCING: N_("state.syncing"),
    TrayState.DREAMING: N_("state.dreaming"),
    TrayState.PAUSED: N_("state.paused"),
    TrayState.SYNCED: N_("state.synced"),
}


@dataclass(frozen=True)
class EngineSnapshot:
    """The engine's state at one moment, as the GUI needs it (cheap to build, immutable).

    `sync_configured` is False while the vault has no relay set up (the GUI then says "sync not
    set up" instead of "offline" and never warns that the relay is unreachable).
    """

    errors: list[str] = field(default_factory=list)
    online: bool = False
    conflicts: int = 0
    syncing: bool = False
    dreaming: bool = False
    paused: bool = False
    last_sync: datetime | None = None
    last_dream: datetime | None = None
    pending: int = 0
    sync_configured: bool = True
    held_deletions: int = 0  # deletions the mass-deletion guard holds back for the person
    # remote changes this copy cannot write (a name its file system refuses): (path, reason)
    unwritable: tuple[tuple[str, str], ...] = ()
    # local files the last scans did not sync (too large, a bad name, unreadable): (path, why)
    not_synced: tuple[tuple[str, str], ...] = ()


def tray_state(snapshot: EngineSnapshot) -> TrayState:
    """The one state to show, by fixed precedence: error, offline, conflict, syncing, dreaming,
    paused, synced."""
    if snapshot.errors:
        return TrayState.ERROR
    if not snapshot.online:
        return TrayState.OFFLINE
    if snapshot.conflicts > 0:
        return TrayState.CONFLICT
    if snapshot.syncing:
        return TrayState.SYNCING
    if snapshot.dreaming:
        return TrayState.DREAMING
    if snapshot.paused:
        return TrayState.PAUSED
    return TrayState.SYNCED


def state_label(snapshot: EngineSnapshot) -> str:
    """A short line naming the state ("Synced", "Sync not set up", "2 conflicts", ...)."""
    state = tray_state(snapshot)
    if state is TrayState.OFFLINE and not snapshot.sync_configured:
        return tr("state.not_configured")
    if state is TrayState.CONFLICT:
        return tr("state.conflict_n", n=snapshot.conflicts)
    if state is TrayState.ERROR:
        return tr("state.error_first", error=snapshot.errors[0])
    if state is TrayState.SYNCING and snapshot.pending:
        return tr("state.syncing_n", n=snapshot.pending)
    return tr(STATE_LABELS[state])


def _when(value: datetime | None, now: datetime | None) -> str:
    return format_datetime(value, now) if value is not None else tr("time.never")


def tooltip_text(snapshot: EngineSnapshot, now: datetime | None = None) -> str:
    """Tooltip: product name, state, last sync and last dream, in the current language."""
    lines = [tr("app.name"), state_label(snapshot)]
    if snapshot.sync_configured:
        lines.append(tr("tooltip.last_sync", when=_when(snapshot.last_sync, now)))
    lines.append(tr("tooltip.last_dream", when=_when(snapshot.last_dream, now)))
    if snapshot.pending and tray_state(snapshot) is not TrayState.SYNCING:
        lines.append(tr("tooltip.pending", n=snapshot.pending))
    return "\n".join(lines)
