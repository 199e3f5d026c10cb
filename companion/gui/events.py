"""Things that happened in the engine that a person may need to hear about.

The engine hands these to the GUI through `EngineFacade.drain_events()`; the notification policy
(`notify_policy`) decides which become notifications. Qt-free and plain data, so the engine can
build them without depending on the GUI. Events never carry a secret value or note content.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path


@dataclass(frozen=True)
class DreamLanded:
    """A dream report appeared (from the server or from this computer)."""

    report: Path
    date: str  # YYYY-MM-DD, the night the dream covers
    ran_on: str = "server"  # server | local
    counts: dict[str, int] = field(default_factory=dict)
    review: str | None = None  # the night's review note (vault-relative), once it is here
    waiting: dict[str, int] | None = None  # what that note still waits for, by item kind


@dataclass(frozen=True)
class ReviewChanged:
    """A sync round carried review notes (a new night's note, a decision ticked or carried
    out here or on another device): an open review shows their items again."""

    paths: tuple[str, ...]


@dataclass(frozen=True)
class ConflictsCreated:
    """Conflict copies were written next to notes (absolute paths)."""

    paths: tuple[Path, ...]


@dataclass(frozen=True)
class MassDeleteTripped:
    """A sync round would delete too much of the vault and was held back for confirmation."""

    deletions: int
    total: int


@dataclass(frozen=True)
class RelayUnreachable:
    """The relay has not answered since `since` (the policy applies `notify.offline_minutes`)."""

    since: datetime


@dataclass(frozen=True)
class KeyringProblem:
    """The OS keyring refused or is missing; `message` says what, never a secret.
    `settings_tab` is where the way back is: the Keys tab stores a lost key again, the Sync
    tab joins a folder whose relay token was lost again."""

    message: str
    settings_tab: str = "keys"


@dataclass(frozen=True)
class LocalDreamRan:
    """This computer dreamed because the server's report had not arrived by the grace time
    (`offline` False) or the relay could not be reached (`offline` True)."""

    date: str
    report: Path | None = None
    counts: dict[str, int] = field(default_factory=dict)
    offline: bool = False


@dataclass(frozen=True)
class SecretFound:
    """A secret scanner flagged a note; `kind` is the detector's name, never the value."""

    note: str  # vault-relative path
    kind: str
    line: int | None = None


@dataclass(frozen=True)
class ChangesHeld:
    """Changes from agent devices to Obsidian's plugins or settings (or exec bits) were held
    for the person's approval (vault-relative paths)."""

    paths: tuple[str, ...]


@dataclass(frozen=True)
class HeldChange:
    """One change waiting for the person: what it touches, why it waits, who wrote it."""

    path: str
    reason: str
    author: str


EngineEvent = (
    DreamLanded
    | ReviewChanged
    | ChangesHeld
    | ConflictsCreated
    | MassDeleteTripped
    | RelayUnreachable
    | KeyringProblem
    | LocalDreamRan
    | SecretFound
)
