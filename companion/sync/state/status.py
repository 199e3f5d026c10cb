"""The engine's last known state, `status.json`: a typed, versioned contract between processes.

The engine that owns a copy (`companion sync`, `watch`, the desktop app) writes it atomically
after every round (and when a round starts or fails); `companion status` and the desktop app
(while another process syncs the copy) read it without taking the engine lock, so `status`
answers instantly while a daemon runs. Conflicts and errors are short rolling lists (newest
last).

Everything goes through `Status` and its entries (frozen dataclasses); no code outside this
module touches the JSON. The file carries `"version": 1` (`STATUS_VERSION`). The schema is
docs/sync.md §1, "status.json":

- a file without `version` (written before it existed) has the same shape and reads as 1;
- a key this version does not know is ignored (a newer writer may add optional keys without
  a new version); a missing key, or a value of the wrong type, reads as its default;
- a newer `version` means a shape this code cannot read: `read` raises `StatusVersionError`,
  which says so (update the companion), and a writer starts the file afresh in its own
  version (the file is a cache of the latest round, rebuilt by the next one);
- a missing or corrupt file reads as `Status()` ("never synced").
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from companion.errors import CompanionError
from companion.fileio import write_text_atomic
from companion.logs import get_logger

log = get_logger("sync.status")

STATUS_VERSION = 1  # bumped only for a change old readers would misread (never for a new key)
MAX_CONFLICTS = 50
MAX_ERRORS = 20

# state values, in the order the tray shows them
SYNCED = "synced"
SYNCING = "syncing"
OFFLINE = "offline"
ERROR = "error"
CONFLICT = "conflict"
PENDING = "pending"
NEVER = "never_synced"
THROTTLED = "throttled"  # an agent device past its daily quota on the relay (relay/quota.py)
VAULT_MISSING = "vault_missing"  # the vault folder is not there or not the vault's (folder.py)


class StatusVersionError(CompanionError):
    """The status file was written by a newer companion, in a shape this one cannot read."""


# ------------------------------------------------------------------ lenient field readers


def _str(v: object, default: str = "") -> str:
    return v if isinstance(v, str) else default


def _int(v: object, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _num(v: object) -> float | None:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return v  # an int stays an int: the file reads back identically
    return None


def _dicts(v: object) -> list[Mapping[str, Any]]:
    return [d for d in v if isinstance(d, Mapping)] if isinstance(v, list) else []


# ------------------------------------------------------------------ the entries


@dataclass(frozen=True)
class Pending:
    """What waited when the last round ended: local changes to push, remote ones to apply."""

    upload: int = 0
    download: int = 0

    @classmethod
    def from_json(cls, d: object) -> Pending:
        if not isinstance(d, Mapping):
            return cls()
        return cls(_int(d.get("upload")), _int(d.get("download")))


@dataclass(frozen=True)
class ErrorEntry:
    """One error a round met. Kinds: offline, quota, auth, tamper, mass_delete, quarantine,
    relay_restored, vault_missing, error."""

    time: float | None
    kind: str
    message: str

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ErrorEntry:
        return cls(_num(d.get("time")), _str(d.get("kind")), _str(d.get("message")))


@dataclass(frozen=True)
class ConflictEntry:
    """One conflict a round resolved (`round.report.ConflictInfo`): where the losing version
    went. `time` is None for a copy this device only found (`round.views.conflict_views`)."""

    path: str
    copy: str
    kept: str  # device whose version stayed in the note
    moved: str  # device whose version went to the copy
    outcome: str
    message: str
    time: float | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ConflictEntry:
        return cls(
            _str(d.get("path")), _str(d.get("copy")), _str(d.get("kept")),
            _str(d.get("moved")), _str(d.get("outcome")), _str(d.get("message")),
            _num(d.get("time")),
        )  # fmt: skip


@dataclass(frozen=True)
class HeldEntry:
    """A remote change held for the person's approval (`round.views.held_view`)."""

    path: str
    rev: int
    reason: str
    author: str
    since: float | None
    decision: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> HeldEntry:
        return cls(
            _str(d.get("path")), _int(d.get("rev")), _str(d.get("reason")),
            _str(d.get("author")), _num(d.get("since")), _str(d.get("decision")),
        )  # fmt: skip


@dataclass(frozen=True)
class QuarantinedEntry:
    """A file whose newest record cannot be opened (`round.views.quarantine_view`); `path` is
    "" when this device does not know the file."""

    path: str
    file_id: str
    rev: int
    reason: str
    author: str
    since: float | None
    decision: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> QuarantinedEntry:
        return cls(
            _str(d.get("path")), _str(d.get("file_id")), _int(d.get("rev")),
            _str(d.get("reason")), _str(d.get("author")), _num(d.get("since")),
            _str(d.get("decision")),
        )  # fmt: skip


@dataclass(frozen=True)
class ProblemEntry:
    """A remote change that cannot apply here (`round.views.problem_views`)."""

    path: str
    reason: str

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ProblemEntry:
        return cls(_str(d.get("path")), _str(d.get("reason")))


@dataclass(frozen=True)
class NotSyncedEntry:
    """A local file the scans leave out (`round.scanner.NOT_SYNCED_REASONS`), and why."""

    path: str
    reason: str
    detail: str

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> NotSyncedEntry:
        return cls(_str(d.get("path")), _str(d.get("reason")), _str(d.get("detail")))


# ------------------------------------------------------------------ the file


@dataclass(frozen=True)
class Status:
    """The whole file. `last_round` is the last round's `RoundReport.summary()` (its schema is
    `RoundReport`'s; `RoundReport.from_summary` reads it back), `None` before the first."""

    state: str = NEVER
    online: bool | None = None
    last_sync: float | None = None  # when a round last converged (time.time())
    last_attempt: float | None = None  # when the latest round started
    last_round: Mapping[str, Any] | None = None
    pending: Pending = field(default_factory=Pending)
    conflicts: tuple[ConflictEntry, ...] = ()
    errors: tuple[ErrorEntry, ...] = ()
    held: tuple[HeldEntry, ...] = ()
    quarantined: tuple[QuarantinedEntry, ...] = ()
    problems: tuple[ProblemEntry, ...] = ()
    not_synced: tuple[NotSyncedEntry, ...] = ()  # the first NOT_SYNCED_SHOWN, by path
    not_synced_count: int = 0  # all of them
    version: int = STATUS_VERSION

    @property
    def last_error(self) -> ErrorEntry | None:
        """The newest error if it belongs to the latest round (recorded at or after that round
        started), else None: an old "cannot reach the relay" is history once a later round got
        through, and stays only in the rolling `errors`."""
        if not self.errors:
            return None
        last = self.errors[-1]
        if (
            self.last_attempt is not None
            and last.time is not None
            and last.time < self.last_attempt
        ):
            return None
        return last

    @property
    def not_synced_total(self) -> int:
        """How many files the scans leave out (a file without the count: those listed)."""
        return self.not_synced_count or len(self.not_synced)

    def to_json(self) -> dict[str, Any]:
        """The file's JSON object (lists where the fields hold tuples)."""
        out = dict(vars(self))  # not `asdict`: its deep copy doubled the cost of an update
        for key, value in out.items():
            if isinstance(value, tuple):
                out[key] = [dict(vars(entry)) for entry in value]
        out["pending"] = dict(vars(self.pending))
        out["last_round"] = dict(self.last_round) if self.last_round is not None else None
        return out

    @classmethod
    def from_json(cls, data: object) -> Status:
        """Parse a loaded file (see the module docstring for what is tolerated)."""
        if not isinstance(data, Mapping):
            return cls()
        version = data.get("version", 1)  # unversioned: today's shape, version 1
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            version = 1
        if version > STATUS_VERSION:
            raise StatusVersionError(
                f"the sync status was written by a newer companion (status version {version}; "
                f"this one reads up to {STATUS_VERSION}): update the companion, or let a round "
                "of this one write it again"
            )
        online = data.get("online")
        last_round = data.get("last_round")
        return cls(
            state=_str(data.get("state"), NEVER) or NEVER,
            online=online if isinstance(online, bool) else None,
            last_sync=_num(data.get("last_sync")),
            last_attempt=_num(data.get("last_attempt")),
            last_round=dict(last_round) if isinstance(last_round, Mapping) else None,
            pending=Pending.from_json(data.get("pending")),
            conflicts=tuple(ConflictEntry.from_json(d) for d in _dicts(data.get("conflicts"))),
            errors=tuple(ErrorEntry.from_json(d) for d in _dicts(data.get("errors"))),
            held=tuple(HeldEntry.from_json(d) for d in _dicts(data.get("held"))),
            quarantined=tuple(
                QuarantinedEntry.from_json(d) for d in _dicts(data.get("quarantined"))
            ),
            problems=tuple(ProblemEntry.from_json(d) for d in _dicts(data.get("problems"))),
            not_synced=tuple(NotSyncedEntry.from_json(d) for d in _dicts(data.get("not_synced"))),
            not_synced_count=_int(data.get("not_synced_count")),
            version=STATUS_VERSION,
        )


class StatusStore:
    """Read-modify-write of one status file (thread-safe within a process)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def read(self) -> Status:
        """The saved status; `Status()` when there is none or it cannot be parsed. Raises
        `StatusVersionError` for a file a newer companion wrote."""
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return Status()
        return Status.from_json(loaded)

    def _current(self) -> Status:
        """What a writer starts from: a newer companion's file is replaced, not misread."""
        try:
            return self.read()
        except StatusVersionError as exc:
            log.warning("%s; writing it afresh", exc)
            return Status()

    def update(self, change: Callable[[Status], Status]) -> Status:
        """Write `change(saved)` (e.g. `lambda s: dataclasses.replace(s, state=SYNCED)`)."""
        with self._lock:
            data = change(self._current())
            self._write(data)
            return data

    def add_conflicts(self, items: Iterable[ConflictEntry]) -> None:
        new = tuple(items)
        if not new:
            return
        with self._lock:
            data = self._current()
            self._write(replace(data, conflicts=(data.conflicts + new)[-MAX_CONFLICTS:]))

    def add_error(self, kind: str, message: str) -> None:
        with self._lock:
            data = self._current()
            entry = ErrorEntry(time.time(), kind, message)
            self._write(replace(data, errors=(data.errors + (entry,))[-MAX_ERRORS:]))

    def _write(self, data: Status) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = json.dumps(data.to_json(), indent=2, sort_keys=True)
        write_text_atomic(self.path, text, durable=False)  # rebuilt by the next round if lost
