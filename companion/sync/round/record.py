"""Recording what a round did in the index: the last synced revision of each path. The one
home of the index's file rows written by a round, in three cases:

- `record_synced`: a remote change applied here. `state` is the local file when it holds
  exactly that content; None when it differs (a merge, a local win, a file not written here):
  the index then keeps the revision's hash with an empty stat, so the next scan reports a local
  change and pushes it on top, like any edit;
- `record_committed`: this device's own commits, as the relay numbered them;
- `take_over`: a revision this device's version goes on top of (a person's decision, a
  restored relay): an empty stat, so the next scan commits the file (or its absence).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from companion.sync.local.filestate import FileState, is_text
from companion.sync.remote.vault import RemoteChange
from companion.sync.round.core import Core
from companion.sync.state.files import Entry


@dataclass(frozen=True)
class Synced:
    """`change` is now the last synced revision of `path`; `row_id` its inbox row (done)."""

    path: str
    change: RemoteChange
    state: FileState | None
    content: bytes | None  # the revision's content, when known (the next merge base)
    row_id: int | None = None
    text: bool | None = None  # known text-ness when `content` is not given


def base_of(content: bytes | None) -> bytes | None:
    """The merge base a synced content leaves: itself when it is text."""
    return content if content is not None and is_text(content) else None


def record_synced(
    core: Core,
    items: Iterable[Synced],
    *,
    keep_bases: bool = False,
    packed: Mapping[str, bytes] | None = None,
) -> None:
    """Record many files in one transaction (entries, merge bases, inbox rows done). With
    `keep_bases`, merge bases are left as they are (a rename moved them); `packed` holds
    bases already compressed (`index.pack_bases` of `base_of` each content)."""
    entries = []
    bases: list[tuple[str, bytes | None]] = []
    done = []
    for it in items:
        ch, meta = it.change, it.change.meta
        if it.row_id is not None:
            done.append(it.row_id)
        if meta.deleted:
            entries.append(
                Entry(
                    it.path, "", 0, 0, 0, rev=ch.rev, file_id=ch.file_id, deleted=True,
                    device=ch.author_name, device_kind=ch.author_kind,
                )
            )  # fmt: skip
            bases.append((it.path, None))
            continue
        base = base_of(it.content)
        text = base is not None
        if it.text is not None and it.content is None:
            text = it.text
        state = it.state if it.state is not None else FileState(meta.size, 0, 0, meta.sha256)
        entries.append(
            Entry(
                it.path, meta.sha256, meta.size, state.mtime_ns, state.inode, rev=ch.rev,
                file_id=ch.file_id, is_text=text, device=ch.author_name,
                device_kind=ch.author_kind, ctime_ns=state.ctime_ns,
            )
        )  # fmt: skip
        bases.append((it.path, base))
    index = core.index
    with index.transaction():
        index.files.put_many(entries)
        if not keep_bases:
            index.bases.set_many(bases, mapper=core.pool().map, packed=packed)
        index.inbox.done(done)


@dataclass(frozen=True)
class Committed:
    """One of this device's commits: `state` is the file committed (None: a tombstone), `base`
    its content kept as the next merge base."""

    path: str
    rev: int
    file_id: str
    state: FileState | None
    is_text: bool = False
    base: bytes | None = None


def record_committed(
    core: Core, items: Iterable[Committed], *, packed: Mapping[str, bytes] | None = None
) -> None:
    """Record this device's commits in one transaction (entries and merge bases); `packed`
    holds bases already compressed (`pack_bases`)."""
    entries: list[Entry] = []
    bases: list[tuple[str, bytes | None]] = []
    for c in items:
        s = c.state
        if s is None:
            entries.append(
                Entry(
                    c.path, "", 0, 0, 0, rev=c.rev, file_id=c.file_id, deleted=True,
                    device=core.name, device_kind=core.kind,
                )
            )  # fmt: skip
            bases.append((c.path, None))
            continue
        entries.append(
            Entry(
                c.path, s.sha256, s.size, s.mtime_ns, s.inode, rev=c.rev, file_id=c.file_id,
                is_text=c.is_text, device=core.name, device_kind=core.kind, ctime_ns=s.ctime_ns,
            )
        )  # fmt: skip
        bases.append((c.path, c.base))
    with core.index.transaction():
        core.index.files.put_many(entries)
        core.index.bases.set_many(bases, mapper=core.pool().map, packed=packed)


def take_over(core: Core, path: str, file_id: str, rev: int, sha256: str, deleted: bool) -> None:
    """Make `rev` the last synced revision of `path` with an empty stat, so the next scan sees
    this device's file (or its absence) as a change and commits it on top of `rev`."""
    old = core.index.files.get(path)
    core.index.files.put(
        Entry(
            path, sha256 if not deleted else "", -1 if not deleted else 0, 0, 0, rev=rev,
            file_id=file_id, is_text=old.is_text if old else False, deleted=deleted,
            updated_ns=time.time_ns(),
        )
    )  # fmt: skip
