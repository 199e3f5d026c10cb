"""Who last wrote each file of a vault copy: the sync index's device kinds, then the local disk.

The sync index records, per path, the device whose version this copy last synced (with its
kind, fixed by that device's invite) and the file's stat identity as of that sync. So:

- the file still matches its index entry: the last writer is that entry's device. A human
  device's version is a person's edit, made no later than when this copy recorded it.
- the file changed here since the last sync (or the index does not know it): if it holds
  exactly what the companion wrote for the agent (the own-writes record of
  `companion.dream.state`), the agent wrote it; otherwise this device's kind decides. On a
  human device that is the person; on an agent device it is "unknown" (a shell, an editor over
  ssh), which every writer treats as a person's edit: the safe side.

`SyncEditors` implements the dream's `EditorInfo`, so `edited_recently` applies the same rule
to every writer. Without a sync index (a copy that never synced) only the local rules apply.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from companion.sync.conflicts import AGENT, HUMAN
from companion.sync.filestate import FileState
from companion.sync.index import Entry, SyncIndex

UNKNOWN = "unknown"


class OwnWrites(Protocol):
    """What `companion.dream.state.MtimeEditors` answers: None for the agent side's own write."""

    def last_human_edit(self, path: str) -> dt.datetime | None: ...


@dataclass(frozen=True)
class LastWriter:
    """`kind` is human, agent or unknown; `when` is UTC (None when not known)."""

    kind: str
    device: str = ""
    when: dt.datetime | None = None
    synced: bool = False  # the local file is the version this copy synced last
    deleted: bool = False

    @property
    def by_person(self) -> bool:
        """A person's edit, or one that must be treated as such (unknown)."""
        return self.kind != AGENT


def _state(entry: Entry) -> FileState:
    return FileState(entry.size, entry.mtime_ns, entry.inode, entry.sha256, entry.ctime_ns)


def _utc_ns(ns: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC)


class SyncEditors:
    """`last_writer(path)` and the dream's `last_human_edit(path)` for one vault copy."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        own: OwnWrites,
        *,
        index: SyncIndex | None = None,
        device_kind: str = HUMAN,
        device_name: str = "",
    ) -> None:
        self.root = Path(root)
        self.own = own
        self.index = index
        self.device_kind = device_kind
        self.device_name = device_name

    def _entry(self, rel: str) -> Entry | None:
        return self.index.get(rel) if self.index is not None else None

    def last_writer(self, rel: str) -> LastWriter:
        entry = self._entry(rel)
        try:
            st = os.lstat(self.root / rel)
        except OSError:
            if entry is not None and entry.deleted:
                when = _utc_ns(entry.updated_ns) if entry.updated_ns else None
                kind = entry.device_kind or UNKNOWN
                return LastWriter(kind, entry.device, when, synced=True, deleted=True)
            return LastWriter(UNKNOWN)
        mtime = _utc_ns(st.st_mtime_ns)
        synced = entry is not None and not entry.deleted
        if entry is not None and synced and FileState.from_stat(st).same_stat(_state(entry)):
            when = _utc_ns(entry.updated_ns) if entry.updated_ns else mtime
            return LastWriter(entry.device_kind or UNKNOWN, entry.device, when, synced=True)
        if self.own.last_human_edit(rel) is None:
            return LastWriter(AGENT, self.device_name, mtime)
        kind = HUMAN if self.device_kind == HUMAN else UNKNOWN
        return LastWriter(kind, self.device_name, mtime)

    def last_human_edit(self, path: str) -> dt.datetime | None:
        w = self.last_writer(path)
        return w.when if w.by_person and not w.deleted else None
