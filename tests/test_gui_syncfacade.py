"""SyncFacade: the desktop app's engine for a sync copy, against a real relay on 127.0.0.1."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before pytest-qt's session QApplication

from pathlib import Path

import pytest

from companion.config import load_config
from companion.dream.report import load_report
from companion.errors import CompanionError
from companion.gui.app import CompanionApp, create_engine
from companion.gui.events import ConflictsCreated, MassDeleteTripped, SecretFound
from companion.gui.facade import EngineFacade, IdleEngine
from companion.gui.status import TrayState, tray_state
from companion.gui.sync_facade import SyncFacade
from companion.sync.service.lock import VaultLock
from companion.sync.state.device import vault_dir
from tests.conftest import wait_for
from tests.syncharness import Device, SyncCluster

FAST = {"rescan_interval_s": None, "poll_wait_s": 2.0}


@pytest.fixture
def cluster(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        yield c


def facade(dev: Device, *, paused: bool = False) -> SyncFacade:
    f = SyncFacade(
        dev.vault,
        dev.config,
        paused=paused,
        engine_options={"settle_ns": 0},
        daemon_options=FAST,
    )
    if not paused:
        assert f.ready(15), "the first round did not finish"
    return f


def test_synced_after_a_round(cluster: SyncCluster) -> None:
    laptop = cluster.add_device("laptop", "human")
    server = cluster.add_device("server", "agent")
    f = facade(laptop)
    try:
        assert isinstance(f, EngineFacade)
        server.write("knowledge/git.md", "# Git\nrebase often\n")
        server.sync()
        f.sync_now()
        assert laptop.read("knowledge/git.md") == b"# Git\nrebase often\n"
        # quiet: once the writes it applied have passed its watcher (a barrier: the note it
        # writes next reaches the server), nothing is due, so no round starts on its own
        laptop.write("barrier.md", "x\n")
        wait_for(lambda: server.sync() and server.read("barrier.md") is not None, what="barrier")
        daemon = f._daemon
        assert daemon is not None
        wait_for(lambda: daemon.idle, what="the daemon idle: nothing queued, no retry")
        snap = f.snapshot()
        assert snap.sync_configured and snap.online and not snap.syncing
        assert snap.errors == [] and snap.pending == 0 and snap.conflicts == 0
        assert snap.last_sync is not None and tray_state(snap) is TrayState.SYNCED
        # a note saved here goes out on its own (the watcher), no "sync now" needed
        laptop.write("journal/today.md", "- wrote this\n")
        wait_for(lambda: server.sync() and server.read("journal/today.md") is not None)
    finally:
        f.close()


def test_conflicts_are_counted_and_told(cluster: SyncCluster) -> None:
    laptop = cluster.add_device("laptop", "human")
    server = cluster.add_device("server", "agent")
    laptop.write("projects/plan.md", "status: draft\n")
    laptop.sync()
    server.sync()
    f = facade(laptop, paused=True)
    try:
        assert f.drain_events() == []
        server.write("projects/plan.md", "status: agent says done\n")
        server.sync()
        laptop.write("projects/plan.md", "status: human says blocked\n")
        f.set_paused(False)
        assert f.ready(15)
        f.sync_now()
        # human precedence: the person's words stay in the note, the agent's go to a copy
        assert laptop.read("projects/plan.md") == b"status: human says blocked\n"
        snap = f.snapshot()
        assert snap.conflicts == 1 and tray_state(snap) is TrayState.CONFLICT
        copy = f.conflicts()[0]
        assert copy.name.startswith("plan (conflict server ")
        assert copy.read_bytes() == b"status: agent says done\n"
        events = f.drain_events()
        assert ConflictsCreated((copy,)) in events
        assert f.drain_events() == []  # told once
    finally:
        f.close()


def test_mass_delete_is_held_and_told(cluster: SyncCluster) -> None:
    laptop = cluster.add_device("laptop", "human")
    for i in range(12):
        laptop.write(f"notes/n{i}.md", f"note {i}\n")
    laptop.sync()
    f = facade(laptop, paused=True)
    try:
        for i in range(11):
            laptop.delete(f"notes/n{i}.md")
        f.set_paused(False)
        assert f.ready(15)
        with pytest.raises(CompanionError, match="^11 deleted files are held back$"):
            f.sync_now()  # in the app's words: the main window explains and offers the "yes"
        assert MassDeleteTripped(11, 12) in f.drain_events()
        snap = f.snapshot()
        assert tray_state(snap) is TrayState.ERROR and snap.errors[0] == (
            "11 deleted files are held back"
        )
        assert snap.held_deletions == 11
    finally:
        f.close()


def test_a_vault_folder_that_is_not_the_vaults_is_the_trays_error(
    cluster: SyncCluster,
) -> None:
    """An unmounted drive (its bare mount point at the vault's path): the tray's state is an
    error saying the vault folder is missing, tooltip included; nothing is written into the
    folder; once the vault's folder is back it syncs, and the error is gone."""
    from companion.gui.status import tooltip_text

    laptop = cluster.add_device("laptop", "human")
    phone = cluster.add_device("phone", "human")
    laptop.write("Home.md", "# Home\n")
    laptop.sync()
    f = facade(laptop)
    away = laptop.vault.with_name("laptop-away")
    try:
        laptop.vault.rename(away)
        laptop.vault.mkdir()
        phone.write("phone.md", "from the phone\n")
        phone.sync()
        with pytest.raises(CompanionError, match="Vault folder missing"):
            f.sync_now()
        snap = f.snapshot()
        assert tray_state(snap) is TrayState.ERROR
        assert any(e.startswith("Vault folder missing:") for e in snap.errors), snap.errors
        assert "Vault folder missing" in tooltip_text(snap)
        assert os.listdir(laptop.vault) == []
        laptop.vault.rmdir()
        away.rename(laptop.vault)
        f.sync_now()
        assert laptop.read("phone.md") == b"from the phone\n"
        assert f.snapshot().errors == []
    finally:
        f.close()


def test_a_secret_carried_by_a_round_is_told(cluster: SyncCluster) -> None:
    laptop = cluster.add_device("laptop", "human")
    server = cluster.add_device("server", "agent")
    f = facade(laptop)
    try:
        server.write("knowledge/aws.md", "# AWS\nkey AKIAIOSFODNN7EXAMPLF for the backups\n")
        server.write("knowledge/plain.md", "nothing to see\n")
        server.sync()
        f.sync_now()
        found = [e for e in f.drain_events() if isinstance(e, SecretFound)]
        assert [(e.note, e.line) for e in found] == [("knowledge/aws.md", 2)]
        assert "AKIA" not in repr(found)  # the kind of secret, never its value
    finally:
        f.close()


def test_offline_then_local_dream(cluster: SyncCluster) -> None:
    laptop = cluster.add_device("laptop", "human")
    f = facade(laptop)
    try:
        cluster.relay.close()
        with pytest.raises(CompanionError, match="cannot be reached"):
            f.sync_now()
        snap = f.snapshot()
        assert not snap.online and snap.errors == [] and tray_state(snap) is TrayState.OFFLINE
        report = f.dream_now()  # offline: dreams here anyway; sync reconciles afterwards
        assert report is not None and report.is_file()
        rep = load_report(laptop.vault, report.stem)
        assert rep.ran_on == "local" and rep.verify["status"] == "failed"
        assert not f.snapshot().dreaming
    finally:
        f.close()


def test_another_process_syncing_is_watched_then_taken_over(cluster: SyncCluster) -> None:
    laptop = cluster.add_device("laptop", "human")
    other = VaultLock(vault_dir(laptop.paths, os.path.realpath(laptop.vault)), command="watch")
    other.acquire()
    f = SyncFacade(laptop.vault, laptop.config, daemon_options=FAST)
    f.TAKEOVER_RETRY_S = 0.05
    try:
        with pytest.raises(CompanionError, match=r"Another companion .*watch"):
            f.sync_now()
        snap = f.snapshot()
        assert snap.errors == [] and not snap.syncing
        other.release()
        wait_for(lambda: f.snapshot() and f._daemon is not None, what="the next poll takes over")
        assert f.ready(15)
        f.sync_now()
    finally:
        f.close()
        other.release()


def test_engine_choice_and_pause_persist(qtbot, cluster: SyncCluster, monkeypatch) -> None:
    laptop = cluster.add_device("laptop", "human")
    monkeypatch.setenv("COMPANION_HOME", str(laptop.home))
    config = load_config(laptop.paths)
    assert isinstance(create_engine(config), IdleEngine)  # no vault chosen yet
    config.set("vault", "path", str(laptop.vault))
    config.set("dream", "local_fallback", False)
    config.save()
    engine = create_engine(config)
    assert isinstance(engine, SyncFacade)
    app = CompanionApp(config, engine, tray_available=True, use_desktop_notifications=False)
    app.start()
    try:
        assert engine.ready(15)
        qtbot.waitUntil(lambda: app.worker.last_view is not None, timeout=5000)
        app.actions.set_paused(True)
        qtbot.waitUntil(lambda: app.worker.last_view.snapshot.paused, timeout=5000)
        assert engine._daemon is None  # paused: no threads, no network
    finally:
        app.shutdown()
    assert load_config(laptop.paths).get("sync", "paused") is True
    again = create_engine(load_config(laptop.paths))
    try:
        assert isinstance(again, SyncFacade) and again.snapshot().paused
        assert again._daemon is None
    finally:
        again.close()


def test_no_server_report_by_grace_dreams_here_and_syncs(
    qtbot, cluster: SyncCluster, monkeypatch
) -> None:
    """The server has not dreamed by the grace time: the app dreams here, says so, and the
    report reaches the other copies."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    laptop = cluster.add_device("laptop", "human")
    server = cluster.add_device("server", "agent")
    monkeypatch.setenv("COMPANION_HOME", str(laptop.home))
    config = load_config(laptop.paths)
    config.set("vault", "path", str(laptop.vault))
    config.set("dream", "time", "00:00")
    config.set("dream", "grace_minutes", 0)
    config.set("notify", "morning_time", "00:00")
    config.save()
    now = datetime.now(UTC)
    today = now.astimezone(ZoneInfo(config.get("dream", "timezone"))).date().isoformat()
    engine = create_engine(config)
    app = CompanionApp(
        config, engine, tray_available=True, use_desktop_notifications=False, now=lambda: now
    )
    app.start()
    try:
        qtbot.waitUntil(lambda: app.dreamclock.last_local_run is not None, timeout=30_000)
        qtbot.waitUntil(lambda: bool(app.notifier.shown), timeout=5000)
        note = app.notifier.shown[0][1]
        assert note.key == f"dream:{today}"
        assert note.title.startswith(f"Dream of {today} on this computer: ")
        assert "by the grace time" in note.body
        wait_for(
            lambda: (
                server.sync() is not None
                and server.read(f".companion/dreams/{today}.json") is not None
            ),
            what="the local report on the server's copy",
        )
        assert load_report(server.vault, today).ran_on == "local"
    finally:
        app.shutdown()


def test_a_missing_vault_key_is_an_error_and_a_keyring_event(cluster: SyncCluster) -> None:
    from companion.credentials.store import FileStore
    from companion.gui.events import KeyringProblem
    from companion.sync.state.device import DeviceState

    laptop = cluster.add_device("laptop", "human")
    state = DeviceState.load(laptop.paths, os.path.realpath(laptop.vault))
    assert FileStore(laptop.paths.secrets_file).delete(state.key_name)
    f = SyncFacade(laptop.vault, laptop.config, daemon_options=FAST)
    try:
        snap = f.snapshot()  # the first poll tries to start, off the GUI thread
        assert tray_state(snap) is TrayState.ERROR and "vault key" in snap.errors[0]
        (event,) = f.drain_events()
        assert isinstance(event, KeyringProblem) and "vault key" in event.message
        assert f._daemon is None
        f.snapshot()
        assert f.drain_events() == []  # not retried at every poll
        with pytest.raises(CompanionError, match="vault key"):
            f.sync_now()
    finally:
        f.close()


def test_a_lost_relay_token_sends_the_person_to_the_sync_tab(cluster: SyncCluster) -> None:
    """A wiped keyring loses the relay token (and the key): the way back is "Join again" on
    the Sync tab, so the notification opens that tab; a lost key alone opens the Keys tab."""
    from datetime import UTC, datetime

    from companion.config import NotifySettings
    from companion.credentials.store import FileStore
    from companion.gui.events import KeyringProblem
    from companion.gui.notify_policy import OPEN_SETTINGS, Action, notifications_for
    from companion.sync.state.device import DeviceState

    laptop = cluster.add_device("laptop", "human")
    state = DeviceState.load(laptop.paths, os.path.realpath(laptop.vault))
    store = FileStore(laptop.paths.secrets_file)
    assert store.delete(state.key_name) and store.delete(state.token_name)
    f = SyncFacade(laptop.vault, laptop.config, daemon_options=FAST)
    try:
        snap = f.snapshot()
        assert tray_state(snap) is TrayState.ERROR and "relay token" in snap.errors[0]
        (event,) = f.drain_events()
        assert isinstance(event, KeyringProblem) and event.settings_tab == "sync"
        (note,) = notifications_for([event], NotifySettings(), datetime.now(UTC))
        assert note.action == Action(OPEN_SETTINGS, "sync")
    finally:
        f.close()
    assert KeyringProblem("locked").settings_tab == "keys"


def test_companion_sync_goes_through_the_desktop_app(cluster: SyncCluster) -> None:
    """The desktop app owns the copy: `companion sync` in a terminal is run by its engine (the
    command prints that round's report) instead of failing with exit 4."""
    laptop = cluster.add_device("laptop", "human")
    server = cluster.add_device("server", "agent")
    laptop.sync()
    laptop.restart()
    f = facade(laptop)
    try:
        server.write("knowledge/git.md", "# Git\nrebase often\n")
        server.sync()
        out = laptop.cli("sync", str(laptop.vault))
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("synced: ") and "does it; waiting" in out.stderr
        assert laptop.read("knowledge/git.md") == b"# Git\nrebase often\n"
    finally:
        f.close()


def test_dream_now_does_not_call_the_agents_synced_note_the_persons_editing(
    cluster: SyncCluster,
) -> None:
    """ "Dream now" on the laptop reads the sync index as `companion dream` does: a note the
    agent wrote on the server and that reached the laptop by sync is the agent's, not "you
    are editing" (#39.5; the desktop app took every recent change on a person's device for the
    person's)."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    server = cluster.add_device("server", "agent")
    laptop = cluster.add_device("laptop", "human")
    config = load_config(laptop.paths)
    config.set("dream", "language", "en")
    config.save()
    today = datetime.now(UTC).astimezone(ZoneInfo(config.get("dream", "timezone"))).date()
    server.write("knowledge/Builds.md", "# Builds\n\nThe nightly builds.\n")
    laptop.write(
        f"journal/{today.isoformat()}.md",
        f"# {today.isoformat()}\n\n## Learned\n"
        "- [[Builds]] are kept for fourteen days on the NAS.\n",
    )
    cluster.sync_all()
    f = SyncFacade(
        laptop.vault,
        load_config(laptop.paths),
        engine_options={"settle_ns": 0},
        daemon_options=FAST,
    )
    try:
        assert f.ready(15), "the first round did not finish"
        report = f.dream_now()
        assert report is not None
        rep = load_report(laptop.vault, report.stem)
        day = (laptop.vault / "journal" / f"{today.isoformat()}.md").read_text(encoding="utf-8")
        assert "finish editing [[Builds]]" not in day, day
        reasons = [s.reason for s in rep.skipped if "Builds" in s.reason]
        assert reasons and not any("by a person" in r for r in reasons), reasons
    finally:
        f.close()


def test_a_running_watch_carries_out_what_the_app_asks(cluster: SyncCluster) -> None:
    """`companion watch` owns the copy: the app's "Sync now", its held decisions and the rounds
    of its "Dream now" are rows in the job queue that `watch` serves (issue 43), each returning
    when that round is done; before, they failed with "another companion is syncing", and the
    dream went unsynced ("not a sync copy")."""
    from tests.test_sync_edges import _stop, _watch

    laptop = cluster.add_device("laptop", "human")
    server = cluster.add_device("server", "agent")
    server.write(".obsidian/hotkeys.json", '{"app:reload": []}\n')
    server.sync()
    laptop.sync()
    laptop.restart()
    proc = _watch(laptop)
    f = SyncFacade(laptop.vault, laptop.config, daemon_options=FAST)
    try:
        assert [h.path for h in f.held_changes()] == [".obsidian/hotkeys.json"]
        f.decide_held([".obsidian/hotkeys.json"], "accept")
        assert f._daemon is None  # watch did it, this process did not take over
        assert laptop.read(".obsidian/hotkeys.json") == b'{"app:reload": []}\n'
        assert f.held_changes() == []
        server.write("knowledge/git.md", "# Git\nrebase often\n")
        server.sync()
        f.sync_now()
        assert laptop.read("knowledge/git.md") == b"# Git\nrebase often\n"
        assert f.snapshot().errors == []
        report = f.dream_now()  # Verify's rounds are asked of watch too ("not a sync copy")
        assert report is not None and f._daemon is None
        assert load_report(laptop.vault, report.stem).verify["status"] == "synced"
        server.sync()
        assert server.read(f".companion/dreams/{report.stem}.json") is not None
    finally:
        f.close()
        _stop(proc)
