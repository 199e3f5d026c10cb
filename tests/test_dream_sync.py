"""The dream on a sync copy: Verify syncs until quiet, the laptop receives everything, and the
per-night lease on the relay keeps a second dreamer from dreaming the same night."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from zoneinfo import ZoneInfo

from companion.demo.sample import write_hermes_state, write_sample_vault
from companion.dream import run_dream
from companion.sync.dreamhook import EngineSyncHook, dream_sync_hook
from tests.syncharness import cluster

NIGHT = dt.datetime(2026, 11, 29, 2, 0, tzinfo=ZoneInfo("Europe/Madrid"))


def test_verify_syncs_and_lease_keeps_one_dreamer(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        server = c.add_device("server", "agent")
        laptop = c.add_device("laptop", "human")
        write_sample_vault(server.vault, NIGHT.date())
        hermes = tmp_path / "hermes"
        write_hermes_state(hermes / "state.db", NIGHT)
        c.sync_all()
        c.assert_converged()

        report = run_dream(
            server.vault,
            server.config,
            NIGHT,
            paths=server.paths,
            hermes_home=hermes,
            sync=EngineSyncHook(server.engine()),
        )
        assert report.verify["status"] == "synced"
        assert report.counts["promoted"] >= 1 and report.counts["consolidated"] >= 1

        laptop.sync()
        files = c.assert_converged()
        assert ".companion/dreams/2026-11-29.json" in files

        second = run_dream(
            laptop.vault,
            laptop.config,
            NIGHT,
            paths=laptop.paths,
            hermes_home=tmp_path / "laptop-hermes",
            sync=EngineSyncHook(laptop.engine()),
        )
        assert second.status == "skipped"
        assert any("lease" in w for w in second.warnings)
        laptop.sync()
        assert c.assert_converged() == files  # the skipped dream wrote nothing


def test_dream_hook_is_none_for_a_plain_folder(tmp_path: Path) -> None:
    from companion.config import load_config
    from companion.paths import device_paths

    paths = device_paths(tmp_path / "home")
    vault = tmp_path / "vault"
    vault.mkdir()
    with dream_sync_hook(vault, paths, load_config(paths)) as hook:
        assert hook is None
