"""What every tool of one MCP server shares: the vault, its index and graph, and its rules.

The full-text index and the link graph are the vault's own (`companion.vault.index`), kept
fresh without walking the vault on every call: a watcher (`companion.sync.local.watcher`) marks the
index stale when a file changes, the server's own writes mark it stale directly, and the next
query brings it up to date (reading only what changed). Without a watcher (inotify limit, a
network drive) the index is refreshed when it is older than `REFRESH_S`. The first update runs
in the background at start, so the server answers `initialize` at once.

Who edited a note last comes from `companion.sync.state.editors` (the sync index's device kinds, and
the agent side's own writes); "recently" is `companion.dream.state.edited_recently` with the
window `[vault] human_edit_window_hours`, the same rule the dream obeys.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from companion.config import Config
from companion.dream.state import DreamState, MtimeEditors, edited_recently
from companion.logs import get_logger
from companion.mcp.writelog import WriteLog
from companion.paths import DevicePaths
from companion.sync.local.ignore import IgnoreRules
from companion.sync.state.editors import SyncEditors
from companion.vault.vault import Vault

if TYPE_CHECKING:
    from companion.sync.local.watcher import Watcher
    from companion.sync.state.index import SyncIndex
    from companion.vault.graph import LinkGraph
    from companion.vault.index import VaultIndex

log = get_logger("mcp")

REFRESH_S = 2.0  # without a watcher: the longest a query trusts the index
START_WAIT_S = 120.0  # how long a query waits for the first index build
START_DELAY_S = 1.0  # the first build starts at the first query, or this long after start


class ToolRefused(Exception):
    """A tool call refused with a one-line reason; nothing was changed. `data` (JSON-able)
    goes into the error result beside the message (e.g. the memory's current entries)."""

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


@dataclass(frozen=True)
class Limits:
    """What one tool call may send: bounded so a runaway agent cannot fill the vault."""

    text_chars: int = 100_000  # text of one write
    note_bytes: int = 2_000_000  # a note a write would produce
    path_chars: int = 400
    reason_chars: int = 500
    query_chars: int = 500


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class VaultContext:
    """One vault as the MCP server sees it. Thread-safe: tools run on worker threads."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        paths: DevicePaths,
        config: Config,
        *,
        read_only: bool = False,
        hermes_home: Path | None = None,
        clock: Callable[[], dt.datetime] = _utcnow,
        limits: Limits | None = None,
        scope_name: str | None = None,
    ) -> None:
        self.vault = Vault.from_config(root, config)
        self.root = Path(os.path.realpath(self.vault.root))
        self.paths = paths
        self.config = config
        self.read_only = read_only
        self.hermes_home = hermes_home
        self.clock = clock
        self.limits = limits or Limits()
        self.ignore = IgnoreRules(self.root, config.settings.sync.ignore or ())
        self.human_window = dt.timedelta(hours=float(config.settings.vault.human_edit_window_hours))
        self.device_id: str | None = None  # this copy's sync device (its scope's key)
        self.scope_name = scope_name  # `--agent NAME`: the scopes file's `mcp.NAME` applies too
        self.device_name, self.device_kind, synced = self._device()
        self.state = DreamState.for_vault(paths.data_dir, self.root)
        self._sync_index: SyncIndex | None = None
        self._sync_index_tried = 0.0
        self._sync_expected = synced
        self.editors = SyncEditors(
            self.root,
            MtimeEditors(self.root, self.state),
            device_kind=self.device_kind,
            device_name=self.device_name,
        )
        self.log = WriteLog(self.root, self.device_name, clock=clock)
        from companion.mcp.quota import Quota, QuotaGuard

        mcp = config.settings.mcp
        self.quota = QuotaGuard(
            Quota(mcp.writes_per_minute, mcp.bytes_per_day, mcp.new_notes_per_day),
            lambda day: self.root / self.log.rel_for(day),
            clock,
        )
        self.client = ""  # "name version" of the connected client, set by the server
        self._lock = threading.RLock()
        self._ready = threading.Event()
        self._wanted = threading.Event()
        self._start_error: BaseException | None = None
        self._index: VaultIndex | None = None
        self._dirty = True
        self._updated_at = 0.0
        self._graph: LinkGraph | None = None
        self._watcher: Watcher | None = None
        self._secret_gate: Any = None

    # --- identity -------------------------------------------------------------------------

    def _device(self) -> tuple[str, str, bool]:
        """(name, kind, has sync state) of this copy: `companion init`'s record, else config."""
        with contextlib.suppress(Exception):
            from companion.sync.state.device import DeviceState

            if DeviceState.exists(self.paths, self.root):
                st = DeviceState.load(self.paths, self.root)
                self.device_id = st.device_id
                return st.device_name, st.kind, True
        name = self.config.settings.sync.device_name or socket.gethostname() or "device"
        return name, self.config.settings.sync.kind or "human", False

    def sync_index(self) -> SyncIndex | None:
        """The copy's sync index, read-only (None while this copy has never synced)."""
        if self._sync_index is None and time.monotonic() - self._sync_index_tried > 5:
            self._sync_index_tried = time.monotonic()
            from companion.sync.state.index import SyncIndex, SyncIndexError, index_path

            with contextlib.suppress(SyncIndexError, OSError):
                self._sync_index = SyncIndex(
                    index_path(self.paths.data_dir, self.root), readonly=True
                )
                self.editors.index = self._sync_index
        return self._sync_index

    # --- the index --------------------------------------------------------------------------

    def start(self) -> None:
        """Build or refresh the index and start the watcher, in the background: as soon as a
        query needs the index, or `START_DELAY_S` after start (so the client's handshake is
        answered first, not after a busy walk of the vault)."""
        threading.Thread(target=self._first_update, name="companion-mcp-index", daemon=True).start()

    def _first_update(self) -> None:
        self._wanted.wait(START_DELAY_S)
        self._start_watcher()  # first: a change during the build marks the index stale
        try:
            from companion.vault.index import VaultIndex

            # no lock: queries wait for `_ready` (perhaps holding the lock) before they touch it
            index = VaultIndex(self.vault, self.paths.data_dir)
            self._dirty = False
            index.update()
            self._updated_at = time.monotonic()
            self._index = index
        except BaseException as exc:  # reported to the first query that needs the index
            self._start_error = exc
            log.warning("the vault index cannot be built: %s", exc)
        finally:
            self._ready.set()

    def _start_watcher(self) -> None:
        try:
            from companion.sync.local.watcher import Watcher

            self._watcher = Watcher(
                self.root, self.ignore, lambda _batch: self.mark_dirty(), rescan_interval_s=None
            ).start()
        except Exception as exc:  # inotify limits, odd file systems: fall back to polling
            log.info(
                "no file watcher for %s (%s): the index refreshes every %g s",
                self.root,
                exc,
                REFRESH_S,
            )
            self._watcher = None

    def mark_dirty(self) -> None:
        self._dirty = True

    def _update_locked(self) -> None:
        assert self._index is not None
        stats = self._index.update()
        self._updated_at = time.monotonic()
        if stats.parsed or stats.removed or self._graph is None:
            self._graph = None

    def index(self) -> VaultIndex:
        """The index, brought up to date if anything changed since the last query."""
        self._wanted.set()
        if not self._ready.wait(START_WAIT_S):
            raise ToolRefused("the vault index is still being built; try again in a moment")
        if self._start_error is not None or self._index is None:
            raise ToolRefused(f"the vault index cannot be built: {self._start_error}")
        with self._lock:
            stale = self._dirty or (
                self._watcher is None and time.monotonic() - self._updated_at > REFRESH_S
            )
            if stale:
                self._dirty = False
                self._update_locked()
            return self._index

    def graph(self) -> LinkGraph:
        with self._lock:
            index = self.index()
            if self._graph is None:
                self._graph = index.graph()
            return self._graph

    @contextlib.contextmanager
    def locked(self) -> Any:
        with self._lock:
            yield

    # --- rules ------------------------------------------------------------------------------

    def now(self) -> dt.datetime:
        return self.clock()

    def edited_recently(self, rel: str) -> bool:
        """A person edited `rel` within the human-edit window (the dream's rule)."""
        self.sync_index()
        self.state.reload()
        return edited_recently(self.editors, rel, self.now(), self.human_window)

    def secret_in(self, text: str) -> tuple[int, str] | None:
        """(line, kind) of the first credential in `text`, or None. Never the value itself."""
        from companion.secrets.detect import compile_allowlist, iter_findings

        if self._secret_gate is None:
            self._secret_gate = compile_allowlist(
                list(self.config.settings.secrets.allowlist or ())
            )
        finding = next(iter_findings(text, allowlist=self._secret_gate), None)
        if finding is not None:
            return finding.line, finding.kind
        from companion.logs import MASK, redact

        for n, line in enumerate(text.split("\n"), 1):  # the log redactor's shapes too
            if MASK in redact(line) and MASK not in line:
                return n, "credential"
        return None

    def has_secret(self, line: str) -> bool:
        return self.secret_in(line) is not None

    def record_own_write(self, rel: str, data: bytes | None) -> None:
        """Remember what the agent wrote, so it never counts as a person's edit."""
        self.state.record_write(rel, data)
        try:
            self.state.save()
        except OSError as exc:
            log.warning("cannot save the record of own writes: %s", exc)
        self.mark_dirty()

    def close(self) -> None:
        if self._watcher is not None:
            with contextlib.suppress(Exception):
                self._watcher.stop()
        with self._lock:
            if self._index is not None:
                self._index.close()
            if self._sync_index is not None:
                self._sync_index.close()
