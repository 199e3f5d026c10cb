"""Recording what a round did in the index: the last synced revision of each path.

After applying a remote change the index holds that revision as the last synced one. `state`
is the local file when it holds exactly that content; None when it differs (a merge, a local
win, a file not written here): the index then keeps the revision's hash with an empty stat, so
the next scan reports a local change and pushes it on top, like any edit.
"""

from __future__ import annotations

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
