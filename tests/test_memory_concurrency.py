"""Real processes, real lock: concurrent writers lose nothing; Hermes's own flock is honoured."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from companion.memory import MemoryRefused, MemoryStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses fcntl in the helper process")

WRITER = textwrap.dedent(
    """
    import sys
    from companion.memory import MemoryStore
    home, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = MemoryStore(home, "memory", 100_000, lock_timeout=60)
    for i in range(count):
        store.add(f"worker {worker} entry {i}")
    """
)

# What Hermes Agent does: flock the sidecar, read, (think), write a temp file, rename.
HERMES_LIKE = textwrap.dedent(
    """
    import fcntl, os, sys, time
    path, hold = sys.argv[1], float(sys.argv[2])
    with open(path + ".lock", "a+", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        print("locked", flush=True)
        try:
            current = open(path, encoding="utf-8").read()
        except FileNotFoundError:
            current = ""
        time.sleep(hold)
        new = current + "\\n§\\nwritten by hermes" if current else "written by hermes"
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(new)
        os.replace(path + ".tmp", path)
        fcntl.flock(lock, fcntl.LOCK_UN)
    """
)


def test_four_processes_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(home), str(w), "25"]) for w in range(4)
    ]
    for p in procs:
        assert p.wait(timeout=120) == 0
    entries = MemoryStore(home, "memory", 100_000).read()
    expected = {f"worker {w} entry {i}" for w in range(4) for i in range(25)}
    assert len(entries) == 100 and set(entries) == expected
    # each worker's own entries stay in the order it wrote them
    for w in range(4):
        mine = [e for e in entries if e.startswith(f"worker {w} ")]
        assert mine == [f"worker {w} entry {i}" for i in range(25)]


def test_threads_of_one_process_exclude_each_other_too(tmp_path: Path) -> None:
    home = tmp_path / "hermes"

    def work(w: int) -> None:
        store = MemoryStore(home, "memory", 100_000)
        for i in range(25):
            store.add(f"thread {w} entry {i}")

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(MemoryStore(home, "memory", 100_000).read()) == 100


def _start_holder(path: Path, hold: float) -> subprocess.Popen[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HERMES_LIKE, str(path), str(hold)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_our_write_waits_for_a_hermes_writer_holding_the_lock(tmp_path: Path) -> None:
    s = MemoryStore(tmp_path / "hermes", "memory")
    s.add("already there")
    holder = _start_holder(s.path, 0.6)
    t0 = time.monotonic()
    s.add("written by the companion")  # must wait, then re-read what Hermes wrote
    waited = time.monotonic() - t0
    assert holder.wait(timeout=30) == 0
    assert waited > 0.3
    assert s.read() == ["already there", "written by hermes", "written by the companion"]


def test_lock_timeout_is_a_clear_refusal(tmp_path: Path) -> None:
    s = MemoryStore(tmp_path / "hermes", "memory", lock_timeout=0.2)
    s.add("keep")
    holder = _start_holder(s.path, 1.5)
    try:
        with pytest.raises(MemoryRefused) as exc:
            s.add("too late")
        assert exc.value.reason == "locked" and "MEMORY.md.lock" in str(exc.value)
    finally:
        holder.wait(timeout=30)
    assert "too late" not in s.read()
