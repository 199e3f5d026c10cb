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

`edit_origin` says what is known of who made a file's last edit, in the dream's terms
(`companion.dream.state`: person, here, unknown): a human device's version, or a change made on
a human device, is a person's; a change made on this agent device (pushed by it or not) is
"here"; another agent device's version is "unknown". `DreamEditors` is what the nightly dream
uses on a sync copy: whether and when a file was edited stay `MtimeEditors`' rule (every change
that is not the agent side's own write counts, the safe side), and `edit_origin` words it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from companion.paths import DevicePaths
from companion.sync.local.filestate import FileState
from companion.sync.state.files import Entry
from companion.sync.state.index import SyncIndex, SyncIndexError
from companion.sync.state.kinds import AGENT, HUMAN

UNKNOWN = "unknown"
# who made an edit, in the dream's terms (companion.dream.state.PERSON, HERE, UNKNOWN)
BY_PERSON, BY_THIS_DEVICE = "person", "here"


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
        return self.index.files.get(rel) if self.index is not None else None

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

    def edit_origin(self, path: str) -> str:
        """What is known of who made the last edit of `path` (see the module docstring)."""
        w = self.last_writer(path)
        if w.kind == HUMAN:
            return BY_PERSON
        if w.synced and w.device != self.device_name:
            return UNKNOWN  # another agent device's version
        return BY_PERSON if self.device_kind == HUMAN else BY_THIS_DEVICE


class DreamEditors(SyncEditors):
    """The dream's `EditorInfo` on a sync copy: `own`'s rule says whether and when a file was
    edited; the sync index says what is known of who did it (`edit_origin`)."""

    def last_human_edit(self, path: str) -> dt.datetime | None:
        return self.own.last_human_edit(path)


@contextlib.contextmanager
def dream_editors(
    root: str | os.PathLike[str], paths: DevicePaths, own: OwnWrites
) -> Iterator[DreamEditors | None]:
    """`DreamEditors` for the vault copy at `root`, reading its sync index beside whatever
    engine owns it; None when `root` is not a sync copy of this device."""
    from companion.sync.state.device import DeviceState, sync_index_path

    real = os.path.realpath(root)
    if not DeviceState.exists(paths, real):
        yield None
        return
    state = DeviceState.load(paths, real)
    try:
        index: SyncIndex | None = SyncIndex(sync_index_path(paths, real), readonly=True)
    except (SyncIndexError, OSError):
        index = None  # never synced yet: the local rules alone
    try:
        yield DreamEditors(
            real, own, index=index, device_kind=state.kind, device_name=state.device_name
        )
    finally:
        if index is not None:
            index.close()


@contextlib.contextmanager
def editors_for_dream(
    root: str | os.PathLike[str], paths: DevicePaths, config: Any
) -> Iterator[Any]:
    """The editor information every dream of `root` uses (`companion dream`, `--schedule`, the
    desktop app's "Dream now"): the sync index's word where `root` is a sync copy of this
    device, else the local rule for a folder only this device writes (#39.5: the desktop app
    called the agent's synced notes the person's editing)."""
    from companion.dream.state import DreamState, default_editors

    real = Path(os.path.realpath(root))
    state = DreamState.for_vault(paths.data_dir, real)
    with dream_editors(real, paths, default_editors(real, state, config)) as synced:
        yield synced or default_editors(real, state, config, here=True)
