"""What a sync round reports, and the engine's view of one local change."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from companion.sync.conflicts import AGENT, KINDS
from companion.sync.filestate import FileState
from companion.sync.index import Entry
from companion.sync.remote import Outgoing, Refused, RemoteChange
from companion.sync.scanner import ChangeKind


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


@dataclass(frozen=True)
class Local:
    """A local change as the engine pushes it (a rename is split into its two halves)."""

    kind: ChangeKind  # CREATED, MODIFIED or DELETED
    path: str
    state: FileState | None = None
    is_text: bool = False
    rename_from: str | None = None  # on the new path of a rename
    rename_to: str | None = None  # on the old path of a rename


@dataclass
class Prepared:
    """A live file read for upload: its record, and what the index records once committed."""

    out: Outgoing
    state: FileState
    is_text: bool
    content: bytes | None  # kept for small text files (merge base)


@dataclass
class Outcome:
    """What carrying out a pass's apply steps did. `work`: something changed (another pass is
    needed); `back`: local changes handed back to the push plan; `quarantine`: heads whose
    content failed verification."""

    work: bool = False
    touched: set[str] = field(default_factory=set)
    back: dict[str, Local] = field(default_factory=dict)
    quarantine: dict[str, Refused] = field(default_factory=dict)


@dataclass
class Pushed:
    """What a push did: `work` (something was committed or came back), the paths to look at
    again, the heads that beat our commits and those that cannot be opened, and where the
    relay put our commits in its change feed."""

    work: bool = False
    touched: set[str] = field(default_factory=set)
    heads: dict[str, RemoteChange] = field(default_factory=dict)
    refused: dict[str, Refused] = field(default_factory=dict)
    seqs: list[int] = field(default_factory=list)  # the relay's sequence numbers of our commits


def entry_state(entry: Entry | None) -> FileState | None:
    if entry is None or entry.deleted:
        return None
    return FileState(entry.size, entry.mtime_ns, entry.inode, entry.sha256, entry.ctime_ns)


def device_kind(value: str) -> str:
    return value if value in KINDS else AGENT
