"""`bulkwrite.write_many`: many files at once with the guarantees of `atomic_write`."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from companion.sync.local.atomic import ChangedSinceScan
from companion.sync.local.bulkwrite import WriteJob, write_many
from companion.sync.local.filestate import FileState, current_state
from companion.sync.local.pathsafe import TEMP_PREFIX, UnsafePath
from tests.syncharness import SyncCluster


@pytest.fixture
def pool():
    with ThreadPoolExecutor(8) as p:
        yield p


def test_writes_everything_and_reports_each_state(tmp_path: Path, pool) -> None:
    jobs = [
        WriteJob(f"d{i % 3}/n{i}.md", f"note {i}\n".encode(), None, 10**18, i == 0)
        for i in range(50)
    ]
    results = write_many(tmp_path, jobs, pool)
    for job, res in zip(jobs, results, strict=True):
        assert isinstance(res, FileState)
        assert (tmp_path / job.rel).read_bytes() == job.data
        now = current_state(tmp_path / job.rel)
        assert now is not None and now.same_stat(res) and now.ctime_ns == res.ctime_ns
        assert res.mtime_ns == 10**18
    assert os.stat(tmp_path / "d0/n0.md").st_mode & 0o100  # executable requested
    assert not os.stat(tmp_path / "d1/n1.md").st_mode & 0o111
    assert not list(tmp_path.rglob(TEMP_PREFIX + "*"))


def test_a_target_that_moved_on_is_left_alone(tmp_path: Path, pool) -> None:
    (tmp_path / "taken.md").write_bytes(b"someone's new note\n")  # expected absent, is there
    (tmp_path / "edited.md").write_bytes(b"original\n")
    old = current_state(tmp_path / "edited.md", with_hash=True)
    (tmp_path / "edited.md").write_bytes(b"edited after the scan, same size!\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "outside")
    jobs = [
        WriteJob("fine.md", b"fine\n", None),
        WriteJob("taken.md", b"remote\n", None),
        WriteJob("edited.md", b"remote\n", old),
        WriteJob("link/escape.md", b"nope\n", None),
    ]
    results = write_many(tmp_path, jobs, pool)
    assert isinstance(results[0], FileState)
    assert isinstance(results[1], ChangedSinceScan) and isinstance(results[2], ChangedSinceScan)
    assert isinstance(results[3], UnsafePath)
    assert (tmp_path / "taken.md").read_bytes() == b"someone's new note\n"
    assert (tmp_path / "edited.md").read_bytes() == b"edited after the scan, same size!\n"
    assert not (tmp_path / "outside" / "escape.md").exists()
    assert not list(tmp_path.rglob(TEMP_PREFIX + "*"))


def test_engine_applies_a_large_pull_in_bulk_beside_a_conflict(tmp_path: Path) -> None:
    with SyncCluster(tmp_path / "c") as c:
        a = c.add_device("laptop", "human")
        b = c.add_device("server", "agent")
        for i in range(100):
            a.write(f"bulk/n{i:03d}.md", f"note {i}\n")
        a.sync()
        b.write("bulk/n050.md", "the agent wrote this one first\n")
        report = b.sync()
        assert len(report.downloaded) == 100  # 99 in bulk, and the person's n050 over the agent's
        assert [x.path for x in report.conflicts] == ["bulk/n050.md"]
        c.sync_all()
        files = c.assert_converged()
        assert len(files) == 101 and files["bulk/n050.md"] == b"note 50\n"
        (copy,) = [p for p in files if "conflict server" in p]
        assert files[copy] == b"the agent wrote this one first\n"
