"""The state every part of a sync round shares, declared in one place.

`SyncEngine` composes its parts (`Puller`, `Applier`, `Pusher`) around one `Core`: the vault
root, the index, the verified view of the relay, who this device is, the rules, and the few
helpers every part needs (reading a local file exactly as scanned, writing one atomically and
announcing it to the watcher, a thread pool). Nothing here decides anything: decisions are
`plan.py`'s.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from companion.sync.local.atomic import atomic_write
from companion.sync.local.chunking import CHUNK_SIZE
from companion.sync.local.filestate import FileState, NotRegularFile, open_nofollow, stat_key
from companion.sync.local.folder import check_folder
from companion.sync.local.ignore import IgnoreRules
from companion.sync.local.pathsafe import UnsafePath, fold, is_case_insensitive_fs, resolve_inside
from companion.sync.remote.vault import RemoteVault
from companion.sync.round.holds import HoldPolicy
from companion.sync.round.scanner import DEFAULT_SETTLE_NS
from companion.sync.state.device import DeviceState
from companion.sync.state.index import SyncIndex
from companion.sync.state.status import StatusStore

if TYPE_CHECKING:
    from companion.crypto import FileMeta

WRITE_THREADS = 16  # parallel local writes: fsync waits on the disk, not the CPU
VERIFY_PER_ROUND = 64  # indexed files re-hashed by each full round (the slow rotation)
VERIFY_BYTES_PER_ROUND = 4 << 20  # ... and at most this much of their content (or one file)

Clock = Callable[[], int]  # nanoseconds since the epoch, as file times are


@dataclass
class Core:
    """What a round's parts share. `on_local_write(path, state)` hears of every file the engine
    writes (the watcher's echo suppression); `on_phase(name)` is called between the steps of a
    pass ("scanned", "applied", "pushed"), for instrumentation and for tests that edit files
    in the middle of a round."""

    root: Path
    index: SyncIndex
    remote: RemoteVault
    device: DeviceState
    ignore: IgnoreRules
    status: StatusStore
    holds: HoldPolicy
    partial_dir: Path
    name: str
    kind: str
    max_file_bytes: int | None = None
    mass_delete_ratio: float = 0.5
    settle_ns: int = DEFAULT_SETTLE_NS
    chunk_size: int = CHUNK_SIZE
    verify_per_round: int = VERIFY_PER_ROUND
    verify_bytes_per_round: int = VERIFY_BYTES_PER_ROUND
    clock: Clock = time.time_ns
    stop_event: threading.Event = field(default_factory=threading.Event)
    on_local_write: Callable[[str, FileState | None], None] | None = None
    on_phase: Callable[[str], None] | None = None
    # agents' notes the hold rules read at admission (by SHA-256), taken by the apply so
    # they are not downloaded twice; replaced by every pull (`Puller.note_contents`)
    read_notes: dict[str, bytes] = field(default_factory=dict)
    case_insensitive_hint: bool | None = None
    _executor: ThreadPoolExecutor | None = None

    @property
    def case_insensitive(self) -> bool:
        if self.case_insensitive_hint is None:
            self.case_insensitive_hint = is_case_insensitive_fs(self.root)
        return self.case_insensitive_hint

    def pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="sync-write")
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def expect(self, rel: str, state: FileState | None) -> None:
        if self.on_local_write is not None:
            self.on_local_write(rel, state)

    def phase(self, name: str) -> None:
        if self.on_phase is not None:
            self.on_phase(name)

    def check_folder(self) -> None:
        """Raise `folder.VaultMissing` unless the root is this copy's vault folder (its marker;
        `folder.py`): called at the start of a round, after its scans and before the executors
        write or delete, so nothing is written into, or derived from, a folder that is not the
        vault's (an unmounted drive's mount point)."""
        check_folder(self.root, self.device.vault_id, self.device.device_id, self.index.files)

    # ------------------------------------------------------------------ local files

    def read_local(
        self, rel: str, state: FileState, folders: dict[str, Path] | None = None
    ) -> tuple[bytes, bool] | None:
        """The file's bytes and executable bit if it is still exactly `state`; else None.

        `folders` caches checked folders (`resolve_inside`) across many reads in one go: each
        folder's path is checked for symbolic links once, the file itself is opened without
        following one."""
        try:
            folder, _, name = rel.rpartition("/")
            if folders is not None and folder in folders:
                path = folders[folder] / name
            else:
                path = resolve_inside(self.root, rel)
                if folders is not None:
                    folders[folder] = path.parent
            fd = open_nofollow(path)
        except (OSError, NotRegularFile, UnsafePath):
            return None
        try:
            before = os.fstat(fd)
            parts = []
            while True:
                block = os.read(fd, 1 << 20)
                if not block:
                    break
                parts.append(block)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        data = b"".join(parts)
        if stat_key(before) != stat_key(after) or not state.same_stat(FileState.from_stat(after)):
            return None
        if state.sha256 and hashlib.sha256(data).hexdigest() != state.sha256:
            return None
        return data, bool(after.st_mode & 0o100)

    def write(
        self,
        rel: str,
        content: bytes | Path,
        expected: FileState | None,
        meta: FileMeta | None = None,
    ) -> FileState:
        """Write `rel` atomically if it is still `expected` (`ChangedSinceScan` otherwise);
        `meta` gives the remote mtime and executable bit. A `Path` is a verified download,
        moved in and removed."""
        mtime = meta.mtime_ns if meta is not None else None
        executable = meta.executable if meta is not None else None
        self.check_folder()
        if isinstance(content, Path):
            with open(content, "rb") as stream:
                state = atomic_write(
                    self.root, rel, stream, expected, mtime_ns=mtime, executable=executable
                )
            content.unlink(missing_ok=True)
        else:
            state = atomic_write(
                self.root, rel, content, expected, mtime_ns=mtime, executable=executable
            )
        self.expect(rel, state)
        return state

    def taken(self, rel: str) -> bool:
        """Whether a new file may not be created at `rel` (there is one, here or in the index)."""
        try:
            target = resolve_inside(self.root, rel)
        except UnsafePath:
            return True
        if os.path.lexists(target):
            return True
        entry = self.index.files.get(rel)
        if entry is not None and not entry.deleted:
            return True
        return self.case_insensitive and bool(self.index.files.paths_with_fold(fold(rel)))

    def executable(self, rel: str) -> bool:
        try:
            return bool(os.lstat(resolve_inside(self.root, rel)).st_mode & 0o100)
        except (OSError, UnsafePath):
            return False
