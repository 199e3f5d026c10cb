"""The watcher on a real folder: debounced batches, echo suppression, ignores, rescans, stop."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion.sync.atomic import atomic_write
from companion.sync.ignore import IGNORE_FILE, IgnoreRules
from companion.sync.watcher import Batch, Watcher

pytestmark = pytest.mark.timeout(60)


class Recorder:
    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self.times: list[float] = []
        self.rescans = 0
        self._cond = threading.Condition()

    def on_batch(self, batch: Batch) -> None:
        with self._cond:
            self.batches.append(batch)
            self.times.append(time.monotonic())
            self._cond.notify_all()

    def on_rescan(self) -> None:
        with self._cond:
            self.rescans += 1
            self._cond.notify_all()

    def wait_for(self, pred: object, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not pred():  # type: ignore[operator]
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def paths(self) -> set[str]:
        return {p for b in self.batches for p in b.paths}

    def reset(self) -> None:
        with self._cond:
            self.batches.clear()
            self.times.clear()


def _start(vault: Path, rec: Recorder, **kw: object) -> Watcher:
    w = Watcher(vault, IgnoreRules(vault), rec.on_batch, on_rescan=rec.on_rescan, **kw)  # type: ignore[arg-type]
    w.start()
    # warm up: make sure the OS watch is in place before the test acts
    (vault / "probe.md").write_text("probe")
    assert rec.wait_for(lambda: "probe.md" in rec.paths()), "watcher did not start"
    time.sleep(0.2)
    rec.reset()
    return w


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    v = tmp_path / "vault"
    v.mkdir()
    return v


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


@pytest.fixture
def watcher(vault: Path, rec: Recorder) -> Iterator[Watcher]:
    w = _start(vault, rec, rescan_interval_s=None)
    yield w
    w.stop()


def test_a_burst_of_writes_is_one_batch(vault: Path, rec: Recorder, watcher: Watcher) -> None:
    (vault / "notes").mkdir()
    names = [f"notes/n{i}.md" for i in range(8)]
    for _ in range(3):
        for n in names:
            (vault / n).write_text(f"edit {time.time_ns()}")
    assert rec.wait_for(lambda: rec.batches)
    time.sleep(0.5)
    assert len(rec.batches) == 1, rec.batches
    assert set(names) <= rec.paths()
    assert rec.paths() <= {*names, "notes"}


def test_an_echo_registered_write_produces_no_batch(
    vault: Path, rec: Recorder, watcher: Watcher
) -> None:
    st = atomic_write(vault, "remote.md", b"from another device", None)
    watcher.expect("remote.md", st)
    time.sleep(0.6)
    assert rec.batches == []
    assert watcher.echoes_dropped >= 1
    # a real edit of the same file afterwards is reported
    (vault / "remote.md").write_text("the person edits it")
    assert rec.wait_for(lambda: "remote.md" in rec.paths())


def test_echo_of_a_delete(vault: Path, rec: Recorder, watcher: Watcher) -> None:
    os.unlink(vault / "probe.md")
    watcher.expect("probe.md", None)
    time.sleep(0.6)
    assert rec.batches == []


def test_a_stale_expectation_does_not_hide_a_real_change(
    vault: Path, rec: Recorder, watcher: Watcher
) -> None:
    st = atomic_write(vault, "n.md", b"engine wrote this", None)
    watcher.expect("n.md", st)
    (vault / "n.md").write_text("and the person changed it right after")
    assert rec.wait_for(lambda: "n.md" in rec.paths())


def test_ignored_and_temp_files_produce_nothing(
    vault: Path, rec: Recorder, watcher: Watcher
) -> None:
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "workspace.json").write_text("{}")
    (vault / ".trash").mkdir()
    (vault / ".trash" / "old.md").write_text("x")
    (vault / ".companion-tmp-abc").write_text("x")
    (vault / "x.md~").write_text("x")
    time.sleep(0.6)
    # the new (not ignored) .obsidian folder itself may be reported, nothing inside it
    assert rec.paths() <= {".obsidian"}


def test_companionignore_changes_apply_immediately(
    vault: Path, rec: Recorder, watcher: Watcher
) -> None:
    (vault / IGNORE_FILE).write_text("drafts/\n")
    assert rec.wait_for(lambda: IGNORE_FILE in rec.paths())
    rec.reset()
    (vault / "drafts").mkdir()
    (vault / "drafts" / "x.md").write_text("x")
    (vault / "kept.md").write_text("x")
    assert rec.wait_for(lambda: "kept.md" in rec.paths())
    time.sleep(0.2)
    assert not any(p.startswith("drafts") for p in rec.paths())


def test_moves_report_both_ends(vault: Path, rec: Recorder, watcher: Watcher) -> None:
    os.rename(vault / "probe.md", vault / "moved.md")
    assert rec.wait_for(lambda: {"probe.md", "moved.md"} <= rec.paths())


def test_steady_writes_are_delivered_within_max_latency(
    vault: Path, rec: Recorder, watcher: Watcher
) -> None:
    start = time.monotonic()
    while time.monotonic() - start < 1.0:
        (vault / "busy.md").write_text(str(time.time_ns()))
        time.sleep(0.03)  # never quiet for 75 ms
    assert rec.wait_for(lambda: len(rec.batches) >= 3)
    first_gap = rec.times[0] - start
    assert first_gap < 0.6  # max latency 0.3 s plus scheduling slack


def test_periodic_safety_rescan_and_clean_stop(vault: Path, rec: Recorder) -> None:
    w = _start(vault, rec, rescan_interval_s=0.2)
    assert rec.wait_for(lambda: rec.rescans >= 2, timeout=3)
    assert w.running
    w.stop()
    assert not w.running
    rec.reset()
    (vault / "after-stop.md").write_text("x")
    time.sleep(0.4)
    assert rec.batches == []
    assert not any(t.name == "companion-watch" for t in threading.enumerate())


def test_overflow_asks_for_a_full_rescan(vault: Path, rec: Recorder) -> None:
    w = _start(vault, rec, rescan_interval_s=None, max_paths=5)
    try:
        for i in range(20):
            (vault / f"f{i}.md").write_text("x")
        assert rec.wait_for(lambda: any(b.overflow for b in rec.batches))
    finally:
        w.stop()
