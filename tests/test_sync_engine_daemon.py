"""`companion watch`: near-real-time propagation, echo suppression, reconnect, clean shutdown."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from companion.sync.round.guard import MassDeleteRefused
from companion.sync.service.daemon import Backoff, Daemon
from tests.conftest import wait_for
from tests.relayproxy import RelayProxy
from tests.syncharness import Device, SyncCluster


class Running:
    """A device's daemon on a background thread."""

    def __init__(self, dev: Device, engine=None, **kw) -> None:
        self.daemon = Daemon(engine or dev.engine(), rescan_interval_s=None, **kw)
        self.thread = threading.Thread(target=self.daemon.run, daemon=True)
        self.thread.start()
        assert self.daemon.ready.wait(15), "first round did not finish"

    def stop(self) -> None:
        self.daemon.stop()
        self.thread.join(10)
        assert not self.thread.is_alive()


@pytest.fixture
def cluster(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        yield c


def test_changes_propagate_both_ways_without_echo(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    ra, rb = Running(a), Running(b)
    try:
        a.write("journal/today.md", "# Done\n- started\n")
        wait_for(lambda: b.read("journal/today.md") == b"# Done\n- started\n", what="a -> b")
        b.write("knowledge/new.md", "agent learned this\n")
        wait_for(lambda: a.read("knowledge/new.md") == b"agent learned this\n", what="b -> a")
        for i in range(5):
            a.write("journal/today.md", f"# Done\n- started\n- step {i}\n")
        final = b"# Done\n- started\n- step 4\n"
        wait_for(lambda: b.read("journal/today.md") == final, what="burst")
        # a barrier on b: once its sentinel reaches a, b's watcher has handled every event of
        # the writes it applied before (in order), so an echo would have been committed
        b.write("sentinel.md", "after the burst\n")
        wait_for(lambda: a.read("sentinel.md") is not None, what="b's sentinel")
        heads = {
            p: ch.rev
            for p in ("journal/today.md", "knowledge/new.md")
            for ch in a.engine().core.remote.history(p)[:1]
        }
        assert heads["knowledge/new.md"] == 1  # a applied it and did not push it back
        hist = a.engine().core.remote.history("journal/today.md")
        assert all(ch.meta.device_name == "laptop" for ch in hist)  # b never re-committed
        assert rb.daemon.engine.core.status.read().state == "synced"
    finally:
        ra.stop()
        rb.stop()
    cluster.assert_converged()


def test_an_idle_daemon_runs_no_rounds_and_one_per_request(cluster: SyncCluster) -> None:
    """Reading the wake file (which the daemon does whenever it waits) is not a request.

    The daemon watches its engine folder for the wake file; inotify reports a read as "opened"
    and "closed_no_write". Taking those for a request made each look at the file start a round,
    whose wait looked at the file again: an idle `companion watch` ran a round every ~10 ms and
    used most of a core."""
    from companion.sync.service import requests
    from companion.sync.service.wake import nudge
    from companion.sync.state.device import vault_dir
    from companion.sync.state.index import SyncIndex

    dev = cluster.add_device("laptop", "human")
    dev.write("notes/a.md", "one\n")
    nudge(vault_dir(dev.paths, os.path.realpath(dev.vault)))  # an earlier command left it
    running = Running(dev)
    rounds: list[object] = []
    running.daemon.on_round_done(rounds.append)
    try:
        window = threading.Event()
        window.wait(1.0)  # an observation window, not a synchronisation: nothing may happen
        assert rounds == [], f"{len(rounds)} rounds while idle"
        assert running.daemon.idle
        with SyncIndex(running.daemon.engine.core.index.path) as index:  # as another process does
            rid = requests.ask(index, running.daemon.engine_folder, requests.ROUND)
            outcome = requests.wait(index, rid, timeout=15)
        assert outcome.code == 0
        window.wait(1.0)
        assert len(rounds) == 1, f"{len(rounds)} rounds for one request"
    finally:
        running.stop()


def _ask_round(running: Running, **args: object) -> dict:
    """Ask the daemon for a round as `companion sync` does from another process; its report."""
    from companion.sync.service import requests
    from companion.sync.state.index import SyncIndex

    with SyncIndex(running.daemon.engine.core.index.path) as index:
        rid = requests.ask(index, running.daemon.engine_folder, requests.ROUND, **args)
        outcome = requests.wait(index, rid, timeout=15)
    assert outcome.code == 0, outcome.message
    assert outcome.report is not None
    return outcome.report


def test_this_devices_own_commit_wakes_no_second_round(cluster: SyncCluster) -> None:
    """The long-poll waiting during a round comes back with that round's own commit. The round
    has stepped the cursor over it by then, so it is no reason for another round: waking for
    it made every local edit cost two rounds, the second finding nothing."""
    dev = cluster.add_device("laptop", "human")
    engine = dev.engine()
    polls: list[int] = []  # the cursor each long-poll started from
    real_poll = engine.core.remote.first_change_after

    def poll(since: int, wait: float) -> int | None:  # a spy that calls through
        polls.append(since)
        return real_poll(since, wait)

    engine.core.remote.first_change_after = poll  # type: ignore[method-assign]
    running = Running(dev, engine, quiet_s=60.0, max_latency_s=120.0)  # no batch of its own
    rounds: list[object] = []
    running.daemon.on_round_done(rounds.append)
    try:
        wait_for(lambda: len(polls) >= 1, what="the long-poll after the first round")
        dev.write("notes/new.md", "one edit\n")
        assert _ask_round(running)["uploaded"] == ["notes/new.md"]
        wait_for(lambda: len(polls) >= 2, what="the long-poll after the upload")
        assert polls[1] > polls[0]  # from past the device's own commit
        assert running.daemon.idle, "a round is due for the device's own commit"
        assert len(rounds) == 1, f"{len(rounds)} rounds for one edit"
    finally:
        running.stop()


def test_a_round_asked_of_a_watch_scans_what_its_watcher_noted(cluster: SyncCluster) -> None:
    """The watcher has noted every change made before the ask (its barrier), so the round
    looks only at those; `rescan` looks at every file. The watcher never cuts a batch by
    itself here: the edit can only reach the relay through the asked round."""
    dev = cluster.add_device("laptop", "human")
    dev.write("notes/old.md", "old\n")
    running = Running(dev, quiet_s=60.0, max_latency_s=120.0)
    try:
        dev.write("notes/new.md", "written just before the command\n")
        report = _ask_round(running)
        assert report["full_scan"] is False
        assert report["uploaded"] == ["notes/new.md"]
        report = _ask_round(running, rescan=True)
        assert report["full_scan"] is True and report["uploaded"] == []
    finally:
        running.stop()


def test_on_a_network_share_an_asked_round_scans_everything(
    cluster: SyncCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No network share can be mounted here: the mount-table check is replaced (the one
    stand-in in this file), as it answers for an NFS or SMB vault."""
    monkeypatch.setattr("companion.sync.local.watcher.reports_every_change", lambda folder: False)
    dev = cluster.add_device("laptop", "human")
    running = Running(dev, quiet_s=60.0, max_latency_s=120.0)
    try:
        dev.write("notes/new.md", "x\n")
        report = _ask_round(running)
        assert report["full_scan"] is True and report["uploaded"] == ["notes/new.md"]
    finally:
        running.stop()


def test_new_ignore_rules_let_in_files_no_watcher_reported(cluster: SyncCluster) -> None:
    """The watcher skips ignored paths, so when a rule goes, the round its batch starts must
    look at every file: a draft written while ignored is uploaded then, not at the next
    periodic rescan (none runs in this test)."""
    dev = cluster.add_device("laptop", "human")
    dev.write(".companionignore", "drafts/\n")
    dev.write("drafts/d.md", "written while ignored\n")
    running = Running(dev)
    try:
        index = running.daemon.engine.core.index
        assert index.files.get("drafts/d.md") is None
        dev.write(".companionignore", "# nothing ignored now\n")
        wait_for(lambda: index.files.get("drafts/d.md") is not None, timeout=15, what="the draft")
    finally:
        running.stop()


def test_a_vault_folder_replaced_under_a_running_daemon_syncs_again(
    cluster: SyncCluster,
) -> None:
    """The drive holding the vault was unmounted and mounted again (here: the folder moved
    away and a copy put in its place). The watcher kept watching the old folder, so the
    daemon saw no edit made in the new one; with no periodic rescan (none runs in this
    test; ten minutes by default) they never went out. It also names the folder while it is
    gone, and never mistakes it for a deleted vault."""
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    a.write("Home.md", "# Home\n")
    a.write("knowledge/fact.md", "a fact\n")
    a.sync()
    b.sync()
    ra, rb = Running(a), Running(b)
    try:
        away = a.vault.with_name("laptop-unmounted")
        a.vault.rename(away)
        status = ra.daemon.engine.core.status
        wait_for(
            lambda: any("missing" in e.message for e in status.read().errors[-1:]),
            timeout=15,
            what="the missing folder in the status",
        )
        shutil.copytree(away, a.vault)  # mounted again: the same notes, another folder
        a.write("Home.md", "# Home\nedited after the drive came back\n")
        wait_for(
            lambda: b.read("Home.md") == b"# Home\nedited after the drive came back\n",
            timeout=20,
            what="the edit made in the folder put back",
        )
        assert sorted(b.files()) == ["Home.md", "knowledge/fact.md"]
    finally:
        ra.stop()
        rb.stop()


def test_a_round_asked_with_the_persons_confirmation_deletes_what_the_guard_held(
    cluster: SyncCluster,
) -> None:
    """The desktop app's "Delete them on every device": one round asked with
    `allow_mass_delete` deletes what the guard held back; the rounds after it guard again."""
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    for i in range(3):
        a.write(f"n{i}.md", f"note {i}\n")
    a.sync()
    b.sync()
    running = Running(a)
    daemon = running.daemon
    try:
        for i in range(3):
            a.delete(f"n{i}.md")
        held = daemon.wait_round(daemon.request_round(), 15)
        assert held is not None and isinstance(held.error, MassDeleteRefused)
        done = daemon.wait_round(daemon.request_round(allow_mass_delete=True), 15)
        assert done is not None and done.error is None and done.report is not None
        assert sorted(done.report.deleted_remote) == ["n0.md", "n1.md", "n2.md"]
        b.sync()
        assert b.files() == {}
        a.write("again.md", "a new note\n")
        wait_for(lambda: (b.sync(), b.read("again.md"))[1] is not None, what="the new note")
        a.delete("again.md")  # every file again: the confirmation was for one round only
        again = daemon.wait_round(daemon.request_round(), 15)
        assert again is not None and isinstance(again.error, MassDeleteRefused)
    finally:
        running.stop()


def test_daemon_reconnects_and_sends_queued_edits(tmp_path: Path) -> None:
    with SyncCluster(tmp_path, relay="process") as c:
        a = c.add_device("laptop", "human")
        b = c.add_device("server", "agent")
        a.write("a.md", "before\n")
        a.sync()
        c.relay.stop()
        run = Daemon(a.engine(), rescan_interval_s=None, max_backoff_s=0.5)
        t = threading.Thread(target=run.run, daemon=True)
        t.start()
        try:
            assert run.ready.wait(15)
            assert run.online is False
            a.write("a.md", "written while the relay was down\n")
            c.relay.restart()
            wait_for(lambda: run.online is True and run.rounds > 0, 20, "reconnect")
            wait_for(
                lambda: (
                    a.engine().core.status.read().pending.upload == 0
                    and a.engine().core.status.read().state == "synced"
                ),
                10,
                "queued edit pushed",
            )
        finally:
            run.stop()
            t.join(10)
        b.sync()
        assert b.read("a.md") == b"written while the relay was down\n"


def test_watch_command_stops_cleanly_on_sigterm(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion", "watch", str(a.vault)],
        env=a.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        status = a.paths.state_dir
        wait_for(lambda: any(status.rglob("status.json")), 20, "daemon started")
        a.write("from-daemon.md", "pushed by watch\n")

        def arrived() -> bool:
            b.sync()
            return b.read("from-daemon.md") == b"pushed by watch\n"

        wait_for(arrived, 20, "daemon pushed the note")
        from companion.sync.commands.statusview import collect_status

        info = collect_status(a.paths, a.config, a.vault)  # lock-free while the daemon runs
        assert info["daemon"]["pid"] == proc.pid and "watch" in info["daemon"]["command"]
        assert info["state"] == "synced" and info["online"] is True
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0, proc.stderr.read().decode() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # the lock went with it: a one-off sync works at once
    a.write("after.md", "x\n")
    assert a.sync().uploaded == ["after.md"]


def test_watch_keeps_running_through_a_stretch_of_429s(cluster: SyncCluster) -> None:
    """A rate-limiting proxy (or relay) answers 429 for a while: `companion watch` waits out
    each Retry-After, keeps the edits made meanwhile, and syncs them once it is let through."""
    with RelayProxy(cluster.relay.url) as proxy:
        a = cluster.add_device("server", "agent", relay_url=proxy.url)
        b = cluster.add_device("laptop", "human")
        proc = subprocess.Popen(
            [sys.executable, "-m", "companion", "-v", "watch", str(a.vault)],
            env=a.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            wait_for(lambda: any(a.paths.state_dir.rglob("status.json")), 20, "daemon started")
            proxy.refuse(429, retry_after=1)
            start = proxy.refused
            a.write("written-while-limited.md", "kept and sent later\n")  # forces a round
            wait_for(lambda: proxy.refused >= start + 4, 30, "several refused attempts")
            assert proc.poll() is None, "watch exited on a 429"
            proxy.allow()

            def arrived() -> bool:
                b.sync()
                return b.read("written-while-limited.md") == b"kept and sent later\n"

            wait_for(arrived, 30, "the edit made while limited reached the other device")
            b.write("from-laptop.md", "hello server\n")
            b.sync()
            wait_for(lambda: a.read("from-laptop.md") == b"hello server\n", 30, "b -> a")
            assert proc.poll() is None
            proc.send_signal(signal.SIGTERM)
            err = proc.communicate(timeout=15)[1].decode()
            assert proc.returncode == 0, err
            assert "429" in err and "Traceback" not in err
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_backoff_grows_to_its_cap_and_resets() -> None:
    b = Backoff(first=0.5, maximum=8)
    delays = [b.next_delay() for _ in range(8)]
    assert 0.25 <= delays[0] <= 0.5
    assert all(d <= 8 for d in delays) and delays[-1] >= 4
    b.reset()
    assert b.next_delay() <= 0.5


def test_a_busy_relay_is_retried_after_what_it_asked() -> None:
    from companion.relayclient.errors import RelayBusy, RelayUnreachable

    b = Backoff(first=0.5, maximum=8)
    busy = RelayBusy("slow down", retry_after=30, status=429)
    assert all(30 <= b.delay_for(busy) <= 31 for _ in range(5))  # not capped, not doubled
    assert b.delay_for(RelayUnreachable("down")) <= 8
