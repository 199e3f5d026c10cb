"""The watcher on a real folder: debounced batches, echo suppression, ignores, files being
written, rescans, stop.

No sleep decides anything here: "nothing was reported" is checked against a barrier (a
sentinel file written after the operation: events arrive in order, so once the sentinel's
batch is delivered, every earlier event was handled), and the debounce timing is tested on
`Debounce` with explicit times, or on a watcher whose clock the test moves.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from companion.sync.local.atomic import atomic_write
from companion.sync.local.ignore import IGNORE_FILE, IgnoreRules
from companion.sync.local.watcher import COOKIE_PREFIX, Batch, Debounce, Watcher
from tests.conftest import wait_for

pytestmark = pytest.mark.timeout(60)
_serial = itertools.count()


class Clock:
    """A clock the test moves (the watcher's debounce decides by it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self.rescans = 0
        self._cond = threading.Condition()

    def on_batch(self, batch: Batch) -> None:
        with self._cond:
            self.batches.append(batch)
            self._cond.notify_all()

    def on_rescan(self) -> None:
        with self._cond:
            self.rescans += 1
            self._cond.notify_all()

    def wait_for(self, pred: object, timeout: float = 10.0) -> bool:
        import time

        deadline = time.monotonic() + timeout
        with self._cond:
            while not pred():  # type: ignore[operator]
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def paths(self) -> set[str]:
        with self._cond:
            return {p for b in self.batches for p in b.paths}

    def reset(self) -> None:
        with self._cond:
            self.batches.clear()


def barrier(
    vault: Path, rec: Recorder, w: Watcher | None = None, clock: Clock | None = None
) -> set[str]:
    """Write a sentinel and wait for the batch that carries it; returns every path reported
    up to then, the sentinel excluded. With a test clock, it is moved once the sentinel is
    noted."""
    name = f"barrier-{next(_serial)}.md"
    (vault / name).write_text("barrier")
    if w is not None and clock is not None:
        wait_for(lambda: name in w.pending_paths(), what="the barrier noted")
        clock.now += 1.0
    assert rec.wait_for(lambda: name in rec.paths()), "the barrier never arrived"
    return {p for p in rec.paths() if not p.startswith("barrier-")}


def _start(vault: Path, rec: Recorder, **kw: object) -> Watcher:
    w = Watcher(vault, IgnoreRules(vault), rec.on_batch, on_rescan=rec.on_rescan, **kw)  # type: ignore[arg-type]
    w.start()
    # the OS watch is in place once a write is reported
    clock = kw.get("clock")
    barrier(vault, rec, w, clock if isinstance(clock, Clock) else None)
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


# ------------------------------------------------------------------ the debounce rule


def test_a_burst_is_one_batch_cut_after_the_quiet_period() -> None:
    d = Debounce(quiet_s=0.075, max_latency_s=0.3)
    assert not d.due(0.0) and d.deadline() is None
    for i in range(6):  # a save burst: an event every 10 ms
        d.note(i * 0.01)
        assert not d.due(i * 0.01)
    assert not d.due(0.05 + 0.074)
    assert d.due(0.05 + 0.075)
    d.reset()
    assert not d.pending and not d.due(10.0)


def test_steady_writes_are_cut_at_the_latest_after_max_latency() -> None:
    d = Debounce(quiet_s=0.075, max_latency_s=0.3)
    t = 0.0
    while not d.due(t):  # never quiet for 75 ms: an event every 30 ms
        d.note(t)
        t = round(t + 0.03, 3)
    assert t == pytest.approx(0.3)
    assert d.deadline() == pytest.approx(0.3)


def test_the_watcher_cuts_by_its_clock(vault: Path, rec: Recorder) -> None:
    clock = Clock()
    w = _start(vault, rec, rescan_interval_s=None, clock=clock)
    try:
        for i in range(8):
            (vault / f"n{i}.md").write_text("x")
        names = {f"n{i}.md" for i in range(8)}
        wait_for(lambda: names <= w.pending_paths(), what="all eight noted")
        assert rec.batches == []  # the clock has not moved: still waiting for quiet
        clock.now += 1.0
        assert rec.wait_for(lambda: rec.batches)
        (batch,) = rec.batches  # one batch (late events of the start-up barrier may join it)
        assert names <= batch.paths and not {p for p in batch.paths - names
                                             if not p.startswith("barrier-")}  # fmt: skip
    finally:
        w.stop()


# ------------------------------------------------------------------ echo suppression


def test_an_echo_registered_write_produces_no_batch(vault: Path, rec: Recorder) -> None:
    clock = Clock()
    w = _start(vault, rec, rescan_interval_s=None, clock=clock)
    try:
        st = atomic_write(vault, "remote.md", b"from another device", None)
        w.expect("remote.md", st)
        (vault / "sentinel.md").write_text("after")
        wait_for(lambda: "sentinel.md" in w.pending_paths(), what="the sentinel noted")
        clock.now += 1.0  # now the batch is cut, with remote.md's events in it
        assert rec.wait_for(lambda: "sentinel.md" in rec.paths())
        assert "remote.md" not in rec.paths()
        assert w.echoes_dropped >= 1
        # a real edit of the same file afterwards is reported
        (vault / "remote.md").write_text("the person edits it")
        wait_for(lambda: "remote.md" in w.pending_paths(), what="the edit noted")
        clock.now += 1.0
        assert rec.wait_for(lambda: "remote.md" in rec.paths())
    finally:
        w.stop()


def test_echo_of_a_delete(vault: Path, rec: Recorder) -> None:
    (vault / "gone.md").write_text("x")
    clock = Clock()
    w = _start(vault, rec, rescan_interval_s=None, clock=clock)
    try:
        os.unlink(vault / "gone.md")
        w.expect("gone.md", None)
        (vault / "sentinel.md").write_text("after")
        wait_for(lambda: "sentinel.md" in w.pending_paths(), what="the sentinel noted")
        clock.now += 1.0
        assert rec.wait_for(lambda: "sentinel.md" in rec.paths())
        assert "gone.md" not in rec.paths()
    finally:
        w.stop()


def test_a_stale_expectation_does_not_hide_a_real_change(
    vault: Path, rec: Recorder, watcher: Watcher
) -> None:
    st = atomic_write(vault, "n.md", b"engine wrote this", None)
    watcher.expect("n.md", st)
    (vault / "n.md").write_text("and the person changed it right after")
    assert rec.wait_for(lambda: "n.md" in rec.paths())


# ------------------------------------------------------------------ what is reported


def test_ignored_and_temp_files_produce_nothing(
    vault: Path, rec: Recorder, watcher: Watcher
) -> None:
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "workspace.json").write_text("{}")
    (vault / ".trash").mkdir()
    (vault / ".trash" / "old.md").write_text("x")
    (vault / ".companion-tmp-abc").write_text("x")
    (vault / "x.md~").write_text("x")
    (vault / "video.mp4.crdownload").write_text("x")
    # the new (not ignored) .obsidian folder itself may be reported, nothing inside it
    assert barrier(vault, rec) <= {".obsidian"}


def test_companionignore_changes_apply_immediately(
    vault: Path, rec: Recorder, watcher: Watcher
) -> None:
    (vault / IGNORE_FILE).write_text("drafts/\n")
    assert rec.wait_for(lambda: IGNORE_FILE in rec.paths())
    rec.reset()
    (vault / "drafts").mkdir()
    (vault / "drafts" / "x.md").write_text("x")
    (vault / "kept.md").write_text("x")
    seen = barrier(vault, rec)
    assert "kept.md" in seen and not any(p.startswith("drafts") for p in seen)


def test_moves_report_both_ends(vault: Path, rec: Recorder, watcher: Watcher) -> None:
    (vault / "a.md").write_text("x")
    os.rename(vault / "a.md", vault / "moved.md")
    assert rec.wait_for(lambda: {"a.md", "moved.md"} <= rec.paths())


def test_a_file_open_for_writing_is_busy_until_closed(
    vault: Path, rec: Recorder, watcher: Watcher
) -> None:
    with open(vault / "big.bin", "wb") as out:
        out.write(b"x" * 1000)
        out.flush()
        wait_for(lambda: "big.bin" in watcher.busy_paths(), what="busy while open")
    wait_for(lambda: "big.bin" not in watcher.busy_paths(), what="not busy once closed")
    # moved in whole (a browser's rename of its finished download): never busy
    (vault / "done.pdf.part").write_bytes(b"pdf")
    os.rename(vault / "done.pdf.part", vault / "done.pdf")
    assert "done.pdf" in barrier(vault, rec)
    assert "done.pdf" not in watcher.busy_paths()


def test_a_busy_file_without_events_expires(vault: Path, rec: Recorder) -> None:
    clock = Clock()
    w = _start(vault, rec, rescan_interval_s=None, clock=clock, busy_expiry_s=30)
    try:
        out = open(vault / "log.txt", "wb")  # noqa: SIM115 - kept open on purpose
        try:
            out.write(b"line\n")
            out.flush()
            wait_for(lambda: "log.txt" in w.busy_paths(), what="busy")
            clock.now += 29
            assert "log.txt" in w.busy_paths()
            clock.now += 2  # a writer that keeps the file open without writing: written
            assert "log.txt" not in w.busy_paths()
        finally:
            out.close()
    finally:
        w.stop()


# ------------------------------------------------------------------ rescans and stopping


def test_periodic_safety_rescan_and_clean_stop(vault: Path, rec: Recorder) -> None:
    w = _start(vault, rec, rescan_interval_s=0.2)
    assert rec.wait_for(lambda: rec.rescans >= 2, timeout=10)
    assert w.running
    w.stop()
    assert not w.running
    # nothing is left that could report anything
    assert not any(t.name == "companion-watch" for t in threading.enumerate())
    assert w._observer is None


def test_overflow_asks_for_a_full_rescan(vault: Path, rec: Recorder) -> None:
    w = _start(vault, rec, rescan_interval_s=None, max_paths=5)
    try:
        for i in range(20):
            (vault / f"f{i}.md").write_text("x")
        assert rec.wait_for(lambda: any(b.overflow for b in rec.batches))
    finally:
        w.stop()


# ------------------------------------------------------------------ the barrier


def test_a_barrier_shows_every_earlier_change_noted(vault: Path, rec: Recorder) -> None:
    """After `barrier()`, `take_pending()` holds every change made before it, even one that
    watchdog holds back (a move out of the vault waits 0.5 s for a partner), and the cookie
    is gone. The test clock never moves, so no batch is cut meanwhile."""
    clock = Clock()
    (vault / "leaving.md").write_text("x")
    w = _start(vault, rec, rescan_interval_s=None, clock=clock)
    try:
        (vault / "a.md").write_text("a")
        os.rename(vault / "leaving.md", vault.parent / "outside.md")  # an unpaired move
        (vault / "sub").mkdir()
        (vault / "sub" / "c.md").write_text("c")
        assert w.barrier()
        noted = w.take_pending()
        assert noted is not None
        assert {"a.md", "leaving.md"} <= noted and noted & {"sub", "sub/c.md"}
        assert rec.batches == []  # taken, not delivered
        assert w.take_pending() == frozenset()
        assert [p.name for p in vault.iterdir() if p.name.startswith(COOKIE_PREFIX)] == []
    finally:
        w.stop()
    assert not w.barrier()  # a stopped watcher vouches for nothing


def test_after_an_overflow_the_barrier_asks_for_a_full_scan(vault: Path, rec: Recorder) -> None:
    w = _start(vault, rec, rescan_interval_s=None, clock=Clock(), max_paths=3)
    try:
        for i in range(6):
            (vault / f"f{i}.md").write_text("x")
        assert w.barrier()
        assert w.take_pending() is None
    finally:
        w.stop()


def test_a_watcher_vouches_only_for_the_folder_it_watches(vault: Path, rec: Recorder) -> None:
    w = _start(vault, rec, rescan_interval_s=None, root_check_s=None)
    try:
        assert w.sees_every_change  # this machine's temporary folder is on a local disk
        os.rename(vault, vault.parent / "moved-away")
        vault.mkdir()  # a new folder at the same place: the OS watch is on the old one
        assert not w.sees_every_change
    finally:
        w.stop()


def test_a_vault_folder_replaced_under_the_watcher_is_watched_again(
    vault: Path, rec: Recorder
) -> None:
    """A drive unmounted and mounted again, a folder moved away and copied back: the OS kept
    watching the old folder (its inode), so every later edit at the vault's path went unseen
    until the safety rescan, ten minutes on."""
    w = _start(vault, rec, rescan_interval_s=None, root_check_s=0.05)
    try:
        away = vault.with_name("away")
        vault.rename(away)
        assert rec.wait_for(lambda: any(b.overflow for b in rec.batches)), (
            "the folder's going was never reported"
        )
        rec.reset()
        vault.mkdir()  # mounted again: another folder at the same path
        assert rec.wait_for(lambda: any(b.overflow for b in rec.batches)), (
            "the new folder was never scanned"
        )
        rec.reset()
        (away / "ghost.md").write_text("in the old folder, not the vault any more")
        (vault / "new.md").write_text("an edit in the folder at the vault's path")
        assert barrier(vault, rec) == {"new.md"}
        assert w.sees_every_change  # it vouches for the new folder again
    finally:
        w.stop()


def test_a_watcher_whose_folder_stays_put_reports_no_replacement(
    vault: Path, rec: Recorder
) -> None:
    w = _start(vault, rec, rescan_interval_s=None, root_check_s=0.01)
    try:
        (vault / "a.md").write_text("a")
        assert barrier(vault, rec) == {"a.md"}
        assert not any(b.overflow for b in rec.batches)  # many checks, nothing replaced
    finally:
        w.stop()
