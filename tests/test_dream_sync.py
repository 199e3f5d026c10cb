"""The dream on a sync copy: Verify syncs until quiet, the laptop receives everything, and the
per-night lease on the relay keeps a second dreamer from dreaming the same night."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from companion.demo.sample import write_hermes_state, write_sample_vault
from companion.dream import run_dream
from companion.sync.service.daemon import Daemon
from companion.sync.service.dreamhook import DaemonSyncHook, EngineSyncHook, dream_sync_hook
from companion.sync.service.lock import VaultLock
from companion.sync.state.device import vault_dir
from tests.conftest import wait_for
from tests.syncharness import Device, cluster

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


# -- issue 39, finding 4: the dream beside a running `companion watch` ---------------------


class _Watching:
    """A copy owned as `companion watch` owns it: the engine lock (taking requests from other
    processes) and the daemon, here on a thread so a test can hold its rounds back."""

    def __init__(self, dev: Device) -> None:
        folder = vault_dir(dev.paths, os.path.realpath(dev.vault))
        self.lock = VaultLock(folder, command="companion watch", serves_requests=True).acquire()
        self.daemon = Daemon(dev.engine(), rescan_interval_s=None)
        self.thread = threading.Thread(target=self.daemon.run, daemon=True)
        self.thread.start()
        assert self.daemon.ready.wait(15), "first round did not finish"

    def stop(self) -> None:
        self.daemon.stop()
        self.thread.join(10)
        self.lock.release()
        assert not self.thread.is_alive()


def test_the_dream_asks_an_idle_watch_for_a_round(tmp_path: Path) -> None:
    """An idle daemon runs no round on its own: the dream's hook asks it for one (as
    `companion sync` does) instead of waiting for the daemon's status to move, which took
    10 s per round asked and then reported 1 change pending (#39.4)."""
    with cluster(tmp_path / "c") as c:
        server = c.add_device("server", "agent")
        watching = _Watching(server)
        try:
            wait_for(lambda: watching.daemon.idle, 15, "an idle daemon")
            rounds = watching.daemon.rounds
            with dream_sync_hook(server.vault, server.paths, server.config) as hook:
                assert isinstance(hook, DaemonSyncHook)
                assert hook.sync_until_quiet(1) == 0
                assert hook.acquire_lease("dream-2026-11-29", 60.0)
            assert watching.daemon.rounds > rounds  # the round the hook asked for ran
        finally:
            watching.stop()


def test_a_round_before_the_dreams_writes_never_satisfies_its_verify(tmp_path: Path) -> None:
    """The daemon ran a round after the hook was made but before the dream wrote; that round
    says nothing of the dream's files. The hook's round is one asked after the writes, so when
    it returns the relay has them (#39.4)."""
    from companion.sync.service import requests
    from companion.sync.state.index import SyncIndex

    with cluster(tmp_path / "c") as c:
        server = c.add_device("server", "agent")
        laptop = c.add_device("laptop", "human")
        watching = _Watching(server)
        daemon = watching.daemon
        try:
            with dream_sync_hook(server.vault, server.paths, server.config) as hook:
                ticket = daemon.request_round()  # a round of the daemon's own, after the hook
                assert daemon.wait_round(ticket, 15) is not None
                held, answered = threading.Event(), threading.Event()

                def hold_rounds() -> None:
                    """No round runs until the hook has asked for one (or has answered)."""
                    with daemon.holding(), SyncIndex(daemon.engine.core.index.path) as index:
                        held.set()
                        wait_for(lambda: answered.is_set() or requests.pending(index), 30,
                                 "the hook's request")  # fmt: skip

                holder = threading.Thread(target=hold_rounds, daemon=True)
                holder.start()
                assert held.wait(15)
                server.write("knowledge/Dreamt.md", "# Dreamt\n\nwritten by the dream\n")
                try:
                    assert hook.sync_until_quiet(1) == 0
                    laptop.sync()  # the relay has what the dream wrote when the hook says so
                    assert (
                        laptop.read("knowledge/Dreamt.md") == b"# Dreamt\n\nwritten by the dream\n"
                    )
                finally:
                    answered.set()
                    holder.join(30)
        finally:
            watching.stop()


def _pending(dev: Device) -> dict[str, int]:
    out = dev.cli("status", str(dev.vault), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    return dict(json.loads(out.stdout)["pending"])


@pytest.mark.timeout(600)
def test_nightly_dreams_beside_watch_exit_0_and_leave_nothing_pending(tmp_path: Path) -> None:
    """The server setup of docs/server-setup.md in small: `companion watch` running as its
    unit runs it, and the dream as its unit runs it, three times: a night with material, the
    same night again (it writes nothing: the case that waited 3 min 22 s and exited 1), and
    the next night with a new lesson (#39.4)."""
    with cluster(tmp_path / "c") as c:
        server = c.add_device("server", "agent")
        write_sample_vault(server.vault, NIGHT.date())
        hermes = tmp_path / "hermes"
        write_hermes_state(hermes / "state.db", NIGHT)
        with server.paths.config_file.open("a", encoding="utf-8") as fh:
            fh.write(f'\n[memory]\nhermes_home = "{hermes.as_posix()}"\n')
        server.sync()
        server.restart()
        watch = subprocess.Popen(
            [sys.executable, "-m", "companion", "-v", "watch", str(server.vault)],
            env=server.env(),
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "watch.log", "wb"),  # noqa: SIM115 - owned by the child
        )
        try:
            status = server.paths.state_dir
            wait_for(lambda: any(status.rglob("status.json")), 30, "watch started")
            nights = [NIGHT, NIGHT, NIGHT + dt.timedelta(days=1)]
            for i, now in enumerate(nights):
                if i == 2:
                    server.write(
                        "journal/2026-11-29.md",
                        "# 2026-11-29\n\n## Learned\n- Restic prunes old snapshots weekly.\n",
                    )
                out = server.cli("-v", "dream", str(server.vault), "--now", now.isoformat())
                assert out.returncode == 0, f"night {i + 1}:\n{out.stdout}\n{out.stderr}"
                assert "sync: synced" in out.stdout, out.stdout
                assert _pending(server) == {"upload": 0, "download": 0}, f"night {i + 1}"
        finally:
            watch.terminate()
            watch.wait(20)


def test_the_dreaming_line_says_who_is_known_to_have_changed_a_note(tmp_path: Path) -> None:
    """On the server, two notes changed within the human-edit window: one the person edited
    on the laptop (synced, device kind human), one written on the server by a plain file write
    (nobody the companion can name). Both wait; only the first is the person's editing
    (#39.5)."""
    with cluster(tmp_path / "c") as c:
        server = c.add_device("server", "agent")
        laptop = c.add_device("laptop", "human")
        laptop.write("knowledge/Reading.md", "# Reading\n\nBooks for the winter.\n")
        server.write("knowledge/Builds.md", "# Builds\n\nThe nightly builds.\n")
        server.write(
            "journal/2026-11-28.md",
            "# 2026-11-28\n\n## Learned\n- [[Builds]] are kept for fourteen days on the NAS.\n"
            "- [[Reading]] goes to the e-reader every Sunday evening.\n",
        )
        c.sync_all()
        server.restart()
        hermes = tmp_path / "hermes"
        (hermes / "memories").mkdir(parents=True)
        with server.paths.config_file.open("a", encoding="utf-8") as fh:
            fh.write(f'\n[memory]\nhermes_home = "{hermes.as_posix()}"\n')
            fh.write('\n[dream]\nlanguage = "en"\n')
        out = server.cli("dream", str(server.vault), "--now", NIGHT.isoformat())
        assert out.returncode == 0, out.stdout + out.stderr
        day = (server.read("journal/2026-11-29.md") or b"").decode()
        assert "[[Builds]] changed on this server outside the dream" in day, day
        assert "until you finish editing [[Reading]]" in day, day
        assert "finish editing [[Builds]]" not in day, day


def test_the_scheduled_dream_syncs_and_verifies_like_the_unit(tmp_path: Path) -> None:
    """`companion dream --schedule` runs the same dream as the nightly unit: through the
    running watch, verified (#39: its runner called run_dream with no sync at all, so its
    report never reached the laptop until some later round and never took the lease)."""
    from companion.dream.cli import scheduled_dream
    from companion.dream.schedule import ScheduleState, nightly

    with cluster(tmp_path / "c") as c:
        server = c.add_device("server", "agent")
        laptop = c.add_device("laptop", "human")
        write_sample_vault(server.vault, dt.date.today())
        c.sync_all()
        watching = _Watching(server)
        try:
            nightly(server.vault, server.config, server.paths, scheduled_dream)
            state = ScheduleState.for_vault(server.paths, server.vault)
            assert state.last_success is not None, state.data
            reports = sorted((server.vault / ".companion" / "dreams").glob("2???-??-??.json"))
            assert reports, "the scheduled dream wrote no report"
            verify = json.loads(reports[-1].read_text(encoding="utf-8"))["verify"]
            assert verify["status"] == "synced", verify
        finally:
            watching.stop()
        laptop.sync()
        assert (laptop.vault / reports[-1].relative_to(server.vault)).exists()
