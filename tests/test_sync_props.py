"""Property-based (hypothesis, stateful): three devices (two people, one agent) and a real relay.

Random creates, edits (whole rewrites and single-line edits, so both conflicts and clean merges
happen), deletes, renames (case-only ones too), syncs while online or offline, and device
restarts. At the end every device comes online and syncs until quiet, then:

- **convergence**: all copies are byte-identical;
- **no lost edit**: every version a device held when it synced successfully survives in a note,
  a conflict copy, or the relay's history of some path (or, when it was merged, every line it
  introduced is in one of those).

Default: a short run (`COMPANION_SYNC_PROPS_EXAMPLES`, default 15 examples of up to 14 steps).
Set it higher (e.g. 300) for a long soak.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as stt
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from companion.relay.client import RelayClient
from companion.relay.errors import RelayUnreachable
from tests.syncharness import Device, SyncCluster

EXAMPLES = int(os.environ.get("COMPANION_SYNC_PROPS_EXAMPLES", "15"))
# Shrinking replays whole clusters many times; off by default so a failure reports in seconds.
SHRINK = os.environ.get("COMPANION_SYNC_PROPS_SHRINK") == "1"
STEPS = int(os.environ.get("COMPANION_SYNC_PROPS_STEPS", "14"))

NAMES = ["Note.md", "note.md", "plans/Alpha.md", "plans/beta.md", "journal/2024-01-01.md"]
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

    def teardown(self) -> None:
        self.cluster.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------ helpers

    def _next(self, dev: Device) -> str:
        self.counter += 1
        return f"v{self.counter}-{dev.name}"

    def _sync(self, dev: Device) -> None:
        held = dev.files()  # every version this device holds as the round starts must survive
        dev.sync(allow_mass_delete=True)
        files = dev.files()
        self.synced_versions |= set(held.values()) | set(files.values())
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

    @rule(d=stt.integers(0, 2))
    def sync_while_offline(self, d: int) -> None:
        dev = self.devs[d]
        eng = dev.engine()
        before = dev.files()
        real = eng.remote.client
        dead = RelayClient("http://127.0.0.1:9", "x" * 40, eng.device.vault_id, timeout=2)
        eng.remote.client = dead
        try:
            with contextlib.suppress(RelayUnreachable):
                dev.sync()
                raise AssertionError("a sync with the relay unreachable succeeded")
        finally:
            eng.remote.client = real
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

    def check_final(self) -> None:
        for _ in range(4):
            for dev in self.devs:
                self._sync(dev)
        files = self.cluster.assert_converged()
        eng = self.devs[0].engine()
        kept: set[bytes] = set(files.values())
        for path in self.paths_seen | set(files):
            for ch in eng.history(path):
                if not ch.deleted:
                    kept.add(eng.remote.fetch_one(ch.meta))
        kept_markers: set[str] = set()
        for data in kept:
            kept_markers |= _markers(data)
        for version in self.synced_versions:
            if version in kept:
                continue
            missing = _markers(version) - kept_markers
            assert not missing, f"lost version {version!r}: {missing} not found anywhere"


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
    phases=[Phase.explicit, Phase.reuse, Phase.generate, *([Phase.shrink] if SHRINK else [])],
)
