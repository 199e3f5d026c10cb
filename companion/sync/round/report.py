"""What a sync round reports: its own module, free of the engine's imports, so a command that
only prints a report (one another process's engine ran) loads nothing else."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class ConflictInfo:
    """One conflict this device resolved: where the losing version went."""

    path: str
    copy: str
    kept: str  # device whose version stayed in the note
    moved: str  # device whose version went to the copy
    outcome: str
    message: str
    time: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Problem:
    """A remote change that cannot be applied here until something changes locally (e.g. a
    symbolic link on its way: the engine never writes through one)."""

    path: str
    reason: str


@dataclass
class RoundReport:
    """What one round did. `converged`: nothing left to pull, apply or push."""

    passes: int = 0
    converged: bool = False
    stopped: bool = False
    downloaded: list[str] = field(default_factory=list)
    deleted_local: list[str] = field(default_factory=list)
    renamed_local: list[tuple[str, str]] = field(default_factory=list)
    uploaded: list[str] = field(default_factory=list)
    deleted_remote: list[str] = field(default_factory=list)
    conflicts: list[ConflictInfo] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    kept_edits: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # newly held for the person's approval
    quarantined: list[str] = field(default_factory=list)  # newly quarantined (path or file id)
    waiting: list[str] = field(default_factory=list)  # local changes kept back by a hold
    problems: list[Problem] = field(default_factory=list)  # remote changes that cannot apply
    busy: list[str] = field(default_factory=list)  # local files still being written
    decided: list[str] = field(default_factory=list)  # held/quarantined decisions carried out
    relay_restored: bool = False  # the relay lost data (a restore): lost files were re-offered
    deferred: int = 0
    held_deletes: int = 0
    held_of: int = 0  # live files when the deletions were held
    live_files: int = 0
    pending_upload: int = 0
    pending_download: int = 0
    full_scan: bool = False  # looked at every file (else only what the watcher and relay named)
    elapsed_s: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(
            self.downloaded
            or self.deleted_local
            or self.renamed_local
            or self.uploaded
            or self.deleted_remote
            or self.conflicts
        )

    def summary(self) -> dict[str, Any]:
        """Counts and short lists, JSON-able (for status and --json output)."""
        return asdict(self)

    @classmethod
    def from_summary(cls, data: dict[str, Any]) -> RoundReport:
        """The report `summary` described (e.g. a round another process ran for us)."""
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in names}
        kw["conflicts"] = [ConflictInfo(**c) for c in kw.get("conflicts", [])]
        kw["problems"] = [Problem(**p) for p in kw.get("problems", [])]
        kw["renamed_local"] = [tuple(p) for p in kw.get("renamed_local", [])]
        return cls(**kw)
