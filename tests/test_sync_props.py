"""Property-based (hypothesis, stateful): three devices (two people, one agent) and a real relay.

Random creates, edits (whole rewrites and single-line edits, so both conflicts and clean merges
happen), deletes, renames (case-only ones too), syncs while online or offline, device restarts,
and **edits made during a round**: between the scan and the apply, between the apply and the
push, after the push (the engine's phase hook), as an editor saving while sync runs would.

After **every step**:

- no engine temp file is left in any vault;
- every index tells the truth: a file whose stat matches its index entry holds that entry's
  content (a lying index is how an edit hides, or is overwritten);
- **no lost edit so far**: every version a device held when one of its rounds ended survives
  in a note of some device, a conflict copy, or the relay's history of some path (or, when it
  was merged, every line it introduced is in one of those).

At the end every device comes online and syncs until quiet, then all copies must be
byte-identical (**convergence**) and the no-lost-edit check runs once more.

Default: a short run (`COMPANION_SYNC_PROPS_EXAMPLES`, default 15 examples of up to 14 steps),
shrinking a failure to a minimal sequence (`COMPANION_SYNC_PROPS_SHRINK=0` turns that off).
Set the examples higher (e.g. 300) for a long soak.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as stt
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from companion.relayclient.client import RelayClient
from companion.relayclient.errors import RelayUnreachable
from companion.sync.local.filestate import NotRegularFile, current_state, hash_file
from tests.syncharness import Device, SyncCluster

EXAMPLES = int(os.environ.get("COMPANION_SYNC_PROPS_EXAMPLES", "15"))
# Shrinking replays whole clusters many times; a failure takes minutes to report, minimal.
SHRINK = os.environ.get("COMPANION_SYNC_PROPS_SHRINK", "1") != "0"
STEPS = int(os.environ.get("COMPANION_SYNC_PROPS_STEPS", "14"))
# a long soak (and shrinking a failure) takes longer than the suite's default timeout
pytestmark = pytest.mark.timeout(max(300, EXAMPLES * STEPS * 3))

NAMES = ["Note.md", "note.md", "plans/Alpha.md", "plans/beta.md", "journal/2024-01-01.md"]
PHASES = ["scanned", "applied", "pushed"]  # the engine's phase hook, between a pass's steps
DEVICES = [("laptop", "human"), ("desktop", "human"), ("server", "agent")]


def _markers(data: bytes) -> set[str]:
    return {line for line in data.decode("utf-8", "replace").splitlines() if line.startswith("v")}


class SyncMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="sync-props-"))
        self.cluster = SyncCluster(self.tmp)
        self.devs: list[Device] = [self.cluster.add_device(n, k) for n, k in DEVICES]
        self.counter = 0
        self.synced_versions: set[bytes] = set()
        self.paths_seen: set[str] = set()
        self.history_cache: dict[str, bytes] = {}  # content by sha256

    def teardown(self) -> None:
        self.cluster.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------ helpers

    def _next(self, dev: Device) -> str:
        self.counter += 1
        return f"v{self.counter}-{dev.name}"

    def _sync(self, dev: Device, replaced: str | None = None) -> None:
        """A round; every version this device holds as it starts and as it ends must survive,
        except at `replaced`, the note the person overwrites during the round: its version at
        the start was theirs to replace, and the one at the end the round may not have seen
        (saved after its last scan: the next round's)."""
        held = dev.files()
        dev.sync(allow_mass_delete=True)
        files = dev.files()
        self.synced_versions |= {v for p, v in held.items() if p != replaced}
        self.synced_versions |= {v for p, v in files.items() if p != replaced}
        self.paths_seen |= set(held) | set(files)

    # ------------------------------------------------------------------ rules

    @initialize()
    def start(self) -> None:
        self.devs[0].write("Home.md", "v0-home\nline a\nline b\nline c\n")
        for d in self.devs:
            self._sync(d)

    @rule(d=stt.integers(0, 2), name=stt.sampled_from(NAMES))
    def write_new_content(self, d: int, name: str) -> None:
        dev = self.devs[d]
        dev.write(name, f"{self._next(dev)}\n")

    @rule(d=stt.integers(0, 2), name=stt.sampled_from([*NAMES, "Home.md"]), line=stt.integers(0, 5))
    def edit_one_line(self, d: int, name: str, line: int) -> None:
        dev = self.devs[d]
        old = dev.read(name)
        if old is None:
            return
        lines = old.decode().splitlines()
        marker = self._next(dev)
        if line < len(lines):
            lines[line] = marker
        else:
            lines.append(marker)
        dev.write(name, "\n".join(lines) + "\n")

    @rule(d=stt.integers(0, 2), name=stt.sampled_from([*NAMES, "Home.md"]))
    def delete(self, d: int, name: str) -> None:
        dev = self.devs[d]
        if dev.read(name) is not None:
            dev.delete(name)

    @rule(d=stt.integers(0, 2), src=stt.sampled_from(NAMES), dst=stt.sampled_from(NAMES))
    def rename(self, d: int, src: str, dst: str) -> None:
        dev = self.devs[d]
        if src != dst and dev.read(src) is not None and dev.read(dst) is None:
            dev.rename(src, dst)

    @rule(d=stt.integers(0, 2))
    def sync(self, d: int) -> None:
        self._sync(self.devs[d])

    @rule(
        d=stt.integers(0, 2),
        phase=stt.sampled_from(PHASES),
        name=stt.sampled_from([*NAMES, "Home.md"]),
        line=stt.integers(0, 5),
    )
    def sync_with_an_edit_during_the_round(self, d: int, phase: str, name: str, line: int) -> None:
        """An editor saves while the round runs: the engine must not overwrite the save, nor
        push a torn or stale version, nor lose it later."""
        dev = self.devs[d]
        core = dev.engine().core
        done = False

        def hook(now: str) -> None:
            nonlocal done
            if now == phase and not done:
                done = True
                self.edit_one_line(d, name, line)

        core.on_phase = hook
        try:
            self._sync(dev, replaced=name)
        finally:
            core.on_phase = None

    @rule(d=stt.integers(0, 2))
    def sync_while_offline(self, d: int) -> None:
        dev = self.devs[d]
        eng = dev.engine()
        before = dev.files()
        real = eng.core.remote.client
        dead = RelayClient("http://127.0.0.1:9", "x" * 40, eng.core.device.vault_id, timeout=2)
        eng.core.remote.client = dead
        try:
            with contextlib.suppress(RelayUnreachable):
                dev.sync()
                raise AssertionError("a sync with the relay unreachable succeeded")
        finally:
            eng.core.remote.client = real
            dead.close()
        assert dev.files() == before  # nothing touched while offline

    @rule(d=stt.integers(0, 2))
    def restart(self, d: int) -> None:
        self.devs[d].restart()

    # ------------------------------------------------------------------ invariants

    @invariant()
    @precondition(lambda self: hasattr(self, "devs"))
    def no_temp_files_left(self) -> None:
        for dev in self.devs:
            assert dev.temp_files() == []

    @invariant()
    @precondition(lambda self: hasattr(self, "devs"))
    def every_index_tells_the_truth(self) -> None:
        for dev in self.devs:
            for entry in dev.engine().core.index.files.iter_entries():
                try:
                    now = current_state(dev.path(entry.path))
                except NotRegularFile:
                    continue
                if now is None or entry.mtime_ns == 0:
                    continue  # gone, or recorded as "to be re-read"
                if (now.mtime_ns, now.size, now.inode) != (entry.mtime_ns, entry.size,
                                                             entry.inode):  # fmt: skip
                    continue
                if entry.ctime_ns and now.ctime_ns != entry.ctime_ns:
                    continue
                digest = hash_file(dev.path(entry.path)).state.sha256
                assert digest == entry.sha256, f"{dev.name}'s index lies about {entry.path}"

    @invariant()
    @precondition(lambda self: hasattr(self, "devs"))
    def no_edit_lost_so_far(self) -> None:
        self.check_no_lost_version()

    def check_no_lost_version(self) -> None:
        kept: set[bytes] = set()
        for dev in self.devs:
            kept |= set(dev.files().values())
        eng = self.devs[0].engine()
        for path in sorted(self.paths_seen | {p for d in self.devs for p in d.files()}):
            for ch in eng.history(path):
                if ch.deleted:
                    continue
                data = self.history_cache.get(ch.meta.sha256)
                if data is None:
                    data = eng.core.remote.fetch_one(ch.meta)
                    self.history_cache[ch.meta.sha256] = data
                kept.add(data)
        kept_markers: set[str] = set()
        for data in kept:
            kept_markers |= _markers(data)
        for version in self.synced_versions:
            if version in kept:
                continue
            missing = _markers(version) - kept_markers
            assert not missing, f"lost version {version!r}: {missing} not found anywhere"

    def check_final(self) -> None:
        for _ in range(4):
            for dev in self.devs:
                self._sync(dev)
        self.cluster.assert_converged()
        self.check_no_lost_version()


class _Machine(SyncMachine):
    def teardown(self) -> None:
        try:
            self.check_final()
        finally:
            super().teardown()


TestSyncProperties = _Machine.TestCase
TestSyncProperties.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
    print_blob=True,  # a failure prints the @reproduce_failure line that replays it
    phases=[Phase.explicit, Phase.reuse, Phase.generate, *([Phase.shrink] if SHRINK else [])],
)
