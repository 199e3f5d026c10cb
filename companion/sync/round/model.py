"""The engine's view of one local change and of what a pass did (the round's report is in
`report.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from companion.relayclient.client import SeqMark
from companion.sync.local.filestate import FileState
from companion.sync.remote.vault import Outgoing, Refused, RemoteChange
from companion.sync.round.conflicts import AGENT, KINDS
from companion.sync.round.scanner import ChangeKind
from companion.sync.state.files import Entry


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
    marks: dict[int, SeqMark] = field(default_factory=dict)  # seq -> our record there


def entry_state(entry: Entry | None) -> FileState | None:
    if entry is None or entry.deleted:
        return None
    return FileState(entry.size, entry.mtime_ns, entry.inode, entry.sha256, entry.ctime_ns)


def device_kind(value: str) -> str:
    return value if value in KINDS else AGENT
