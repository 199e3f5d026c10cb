"""Verify: the per-night lease and sync-until-quiet through a SyncHook, and `--verify`'s
line checks (moved lines, unreachable transcripts)."""

from __future__ import annotations

import json
import shutil

import pytest

from companion.config import load_config
from companion.dream.engine import DreamSyncError, run_dream
from companion.dream.verify import verify_vault
from companion.paths import device_paths
from tests.fixtures.dream import NOW, build, snapshot, write_config


class FakeSync:
    """An in-test SyncHook: a lease table shared by 'devices' and a pending-change counter."""

    leases: dict[str, str] = {}

    def __init__(self, device: str, pending: list[int] | None = None) -> None:
        self.device = device
        self.pending = list(pending or [0])
        self.rounds: list[int] = []

    def acquire_lease(self, name: str, ttl: float) -> bool:
        holder = self.leases.setdefault(name, self.device)
        return holder == self.device

    def sync_until_quiet(self, max_rounds: int) -> int:
        self.rounds.append(max_rounds)
        return self.pending.pop(0) if len(self.pending) > 1 else self.pending[0]


@pytest.fixture(autouse=True)
def _clear_leases():
    FakeSync.leases.clear()


def setup(tmp_path):
    fx = build(tmp_path / "fx")
    paths = device_paths()
    write_config(paths.config_file, fx)
    return fx, paths, load_config(paths)


def test_not_a_sync_copy(tmp_path):
    fx, paths, config = setup(tmp_path)
    rep = run_dream(fx.vault, config, NOW, paths=paths)
    assert rep.verify == {"status": "not a sync copy"}


def test_sync_settles_after_the_dream(tmp_path):
    fx, paths, config = setup(tmp_path)
    hook = FakeSync("server", pending=[0, 3, 0])
    rep = run_dream(fx.vault, config, NOW, paths=paths, sync=hook)
    assert rep.verify["status"] == "synced" and rep.verify["attempts"] == 2
    data = json.loads((fx.vault / ".companion/dreams/2026-11-28.json").read_text("utf-8"))
    assert data["verify"]["status"] == "synced"


def test_sync_that_never_settles_is_a_clear_failure(tmp_path):
    fx, paths, config = setup(tmp_path)
    hook = FakeSync("server", pending=[0, 2])
    with pytest.raises(DreamSyncError, match="2 change\\(s\\) still pending"):
        run_dream(fx.vault, config, NOW, paths=paths, sync=hook)
    data = json.loads((fx.vault / ".companion/dreams/2026-11-28.json").read_text("utf-8"))
    assert data["verify"]["status"] == "failed"  # the report still landed locally
    assert len(hook.rounds) == 1 + 3  # one sync before, three bounded attempts after


def test_second_dreamer_stands_down_on_the_lease(tmp_path):
    fx, paths, config = setup(tmp_path)
    laptop_copy = tmp_path / "laptop"
    shutil.copytree(fx.vault, laptop_copy)
    before = snapshot(laptop_copy)
    run_dream(fx.vault, config, NOW, paths=paths, sync=FakeSync("server"))
    rep = run_dream(laptop_copy, config, NOW, paths=paths, sync=FakeSync("laptop"), ran_on="local")
    assert rep.status == "skipped" and "lease" in rep.warnings[0]
    assert snapshot(laptop_copy) == before  # nothing written by the second dreamer


def test_verify_reports_moved_and_unreachable(tmp_path):
    fx, paths, config = setup(tmp_path)
    run_dream(fx.vault, config, NOW, paths=paths)
    j = fx.vault / "journal/2026-11-26.md"
    j.write_text("Three lines\nadded at\nthe top.\n" + j.read_text(encoding="utf-8"), "utf-8")
    result = verify_vault(fx.vault)
    assert result.ok and result.counts["moved"] >= 3
    shutil.rmtree(fx.claude_dir)  # a transcript not on this machine (the laptop)
    result = verify_vault(fx.vault)
    assert result.ok and result.counts["unreachable"] >= 1
