"""The app wiring: no-tray fallback, "show", notification clicks, a GUI that never blocks."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from companion.config import load_config
from companion.errors import CompanionError
from companion.gui import i18n
from companion.gui.app import CompanionApp, create_engine
from companion.gui.bridge import EngineWorker
from companion.gui.facade import IdleEngine
from companion.gui.notify_policy import OPEN_REVIEW, Action
from companion.gui.sample import write_sample_vault
from companion.gui.status import EngineSnapshot
from companion.paths import device_paths


@pytest.fixture
def config(tmp_path: Path):
    vault = tmp_path / "vault"
    write_sample_vault(vault)
    cfg = load_config(device_paths())
    cfg.set("vault", "path", str(vault))
    cfg.set("notify", "morning_time", "00:00")  # never deferred, whatever the time of day
    cfg.set("dream", "local_fallback", False)  # no dream of its own unless a test asks
    cfg.save()
    return cfg


def make_app(qtbot, config, *, tray: bool) -> CompanionApp:
    app = CompanionApp(
        config,
        create_engine(config),
        tray_available=tray,
        use_desktop_notifications=False,
        dream_clock=False,
    )
    app.start()
    qtbot.waitUntil(lambda: app.worker.last_view is not None, timeout=5000)
    return app


def close(app: CompanionApp) -> None:
    app.timer.stop()
    app.worker.shutdown()
    for w in [app.main, app.settings, *app.reviews.values()]:
        if w is not None:
            w.hide()
            w.deleteLater()
    if app.tray is not None:
        app.tray.hide()


def test_without_a_tray_the_main_window_says_so(qtbot, config) -> None:
    app = make_app(qtbot, config, tray=False)
    try:
        assert app.tray is None
        assert app.main is not None and app.main.isVisible()
        assert not app.main.no_tray.isHidden()
        assert "no system tray" in app.main.no_tray.text()
        assert app.main.state_text.text() == "Sync not set up"
        # the dream notification has nowhere else to go: it shows in the window
        qtbot.waitUntil(
            lambda: "Dream of 2025-11-28: 1 consolidated" in app.main.notice.text(), timeout=5000
        )
    finally:
        close(app)


def test_show_message_opens_the_main_window(qtbot, config) -> None:
    app = make_app(qtbot, config, tray=True)
    try:
        assert app.main is None
        app.handle_message("show")
        assert app.main is not None and app.main.isVisible()
        assert app.main.no_tray.isHidden()
        assert app.main.buttons["last_report"].isEnabled()
    finally:
        close(app)


def test_first_run_opens_settings(qtbot) -> None:
    cfg = load_config(device_paths())
    app = make_app(qtbot, cfg, tray=True)
    try:
        assert app.settings is not None and app.settings.isVisible()
        assert app.tray.view.snapshot.errors  # no vault: the error state, with the reason
    finally:
        close(app)


def test_clicking_the_dream_notification_opens_the_review(qtbot, config) -> None:
    app = make_app(qtbot, config, tray=True)
    try:
        qtbot.waitUntil(lambda: bool(app.notifier.shown), timeout=5000)
        backend, note = app.notifier.shown[0]
        assert note.title == (
            "Dream of 2025-11-28: 1 consolidated, 1 corrected, 1 index update, 1 recorded"
        )
        assert note.action.kind == OPEN_REVIEW
        app.notifier.clicked.emit(note.action)
        window = app.reviews[Path(note.action.target)]
        assert window.isVisible() and window.changes.topLevelItemCount() == 4
        # the same notification is not shown again after a restart
        again = make_app(qtbot, config, tray=True)
        qtbot.wait(200)
        assert again.notifier.shown == []
        close(again)
    finally:
        close(app)


def test_run_action_opens_settings_tab(qtbot, config) -> None:
    app = make_app(qtbot, config, tray=True)
    try:
        app.run_action(Action("open_settings", "keys"))
        assert app.settings.tabs.currentIndex() == 1
    finally:
        close(app)


class SlowEngine(IdleEngine):
    """A real IdleEngine whose sync blocks until released (a slow relay)."""

    def __init__(self, vault: Path) -> None:
        super().__init__(vault)
        self.release = threading.Event()
        self.started = threading.Event()

    def snapshot(self) -> EngineSnapshot:
        snap = super().snapshot()
        return EngineSnapshot(online=True, sync_configured=True, last_dream=snap.last_dream)

    def sync_now(self) -> None:
        self.started.set()
        if not self.release.wait(10):
            raise CompanionError("never released")
        raise CompanionError("relay said no")


def test_engine_calls_never_block_the_gui(qtbot, config, tmp_path: Path) -> None:
    engine = SlowEngine(Path(config.get("vault", "path")))
    worker = EngineWorker(engine)
    assert worker.sync_now() is True  # returned while the engine is still held back
    assert not engine.release.is_set()
    assert engine.started.wait(5)
    assert worker.busy("sync_now")
    assert worker.sync_now() is False  # a second click does not start a second sync
    with qtbot.waitSignal(worker.call_failed, timeout=5000) as failed:
        engine.release.set()
    assert failed.args == ["sync_now", "relay said no"]
    qtbot.waitUntil(lambda: not worker.busy("sync_now"), timeout=5000)
    worker.shutdown()


class GatedEngine(IdleEngine):
    """A real IdleEngine whose first poll waits until the test lets it go (a slow poll)."""

    def __init__(self, vault: Path) -> None:
        super().__init__(vault)
        self.gate = threading.Event()
        self.polls = 0

    def snapshot(self) -> EngineSnapshot:
        self.polls += 1
        if self.polls == 1 and not self.gate.wait(10):
            raise CompanionError("never released")
        return EngineSnapshot(sync_configured=True, online=True, pending=self.polls)


def test_a_call_that_ends_during_a_poll_is_followed_by_another_poll(qtbot, config) -> None:
    """Every call is followed by a poll, so the tray shows its effect at once. A call that
    ended while a poll was in flight had its poll dropped: the tray kept the state that poll
    read (still "Dreaming…") until the timer's next poll, 3 s later."""
    engine = GatedEngine(Path(config.get("vault", "path")))
    worker = EngineWorker(engine)
    views: list[EngineSnapshot] = []
    worker.view_ready.connect(lambda v: views.append(v.snapshot))
    try:
        assert worker.refresh()  # in flight, held in its snapshot
        with qtbot.waitSignal(worker.call_failed, timeout=5000):
            worker.sync_now()  # IdleEngine: sync is not set up; the call ends at once
        assert not worker.refresh()  # the timer's poll is skipped, as before
        engine.gate.set()
        qtbot.waitUntil(lambda: len(views) == 2, timeout=5000)
        assert [v.pending for v in views] == [1, 2]  # the second read after the call ended
        assert engine.polls == 2  # and no more than one more: the timer's skip added none
    finally:
        engine.gate.set()
        worker.shutdown()


def test_failed_calls_become_notices(qtbot, config) -> None:
    app = make_app(qtbot, config, tray=False)
    try:
        app.actions.sync_now()  # IdleEngine: sync is not set up
        qtbot.waitUntil(lambda: "Sync failed" in app.main.notice.text(), timeout=5000)
        assert "not set up" in app.main.notice.text()
    finally:
        close(app)


def test_pause_is_remembered(qtbot, config) -> None:
    app = make_app(qtbot, config, tray=True)
    try:
        app.actions.set_paused(True)
        qtbot.waitUntil(lambda: app.worker.last_view.snapshot.paused, timeout=5000)
        assert load_config(device_paths()).get("sync", "paused") is True
        assert create_engine(load_config(device_paths())).snapshot().paused is True
    finally:
        close(app)


def test_companion_runs_once_and_quits_cleanly_on_sigterm(qtbot, config) -> None:
    """`companion` (a real process) owns the instance lock until it is told to stop."""
    import signal
    import subprocess
    import sys

    from companion.gui.single import SingleInstance, server_name

    paths = device_paths()
    probe = SingleInstance(server_name(paths), paths.state_dir / "gui.lock")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        qtbot.waitUntil(lambda: probe.send("ping", timeout_ms=200), timeout=30_000)
        assert probe.acquire() is False  # the running app holds the lock
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert probe.acquire() is True  # released on the way out
    probe.release()


def test_switching_language_rebuilds_the_windows(qtbot, config) -> None:
    app = make_app(qtbot, config, tray=True)
    try:
        app.show_main()
        settings = app.open_settings("advanced")
        settings.language.setCurrentIndex(settings.language.findData("es"))
        assert settings.save()
        assert app.settings is not settings
        assert app.settings.windowTitle() == "Ajustes de Vault Companion"
        assert app.settings.tabs.currentIndex() == 4  # same tab, new language
        assert app.main.buttons["quit"].text() == "Salir"
        assert "Salir" in app.tray.action_texts()
    finally:
        i18n.set_language("en")
        close(app)


def test_local_fallback_dreams_once_off_the_gui_thread(qtbot, config) -> None:
    """No relay for this vault: at start, past the dream time, the app dreams here, once."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from companion.dream.report import report_path

    config.set("dream", "local_fallback", True)
    config.set("dream", "time", "00:00")
    config.save()
    now = datetime.now(UTC)
    today = now.astimezone(ZoneInfo(config.get("dream", "timezone"))).date().isoformat()
    vault = Path(config.get("vault", "path"))
    app = CompanionApp(
        config,
        create_engine(config),
        tray_available=True,
        use_desktop_notifications=False,
        now=lambda: now,
    )
    app.start()
    try:
        qtbot.waitUntil(lambda: app.dreamclock.last_local_run is not None, timeout=20_000)
        assert report_path(vault, today).is_file()
        assert app.dreamclock.scheduler is not None and app.dreamclock.scheduler.running
        qtbot.waitUntil(
            lambda: any(n.key == f"dream:{today}" for _, n in app.notifier.shown), timeout=5000
        )
        assert not app.dreamclock.check("resume").run  # the night is done
        assert not app.worker.busy("dream_now")
    finally:
        app.dreamclock.stop()
        close(app)


def test_dream_now_says_when_it_starts_and_when_it_ends(qtbot, config, app_log) -> None:
    """ "Dream now" gives feedback at once and when the dream lands (#13, item 7), and every
    notification is in the log at INFO with its title and body."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    app = make_app(qtbot, config, tray=True)
    try:
        app.actions.dream_now()
        qtbot.waitUntil(
            lambda: any("Dreaming" in n.title for _, n in app.notifier.shown), timeout=5000
        )
        app.tray.rebuild_menu()
        assert "Dreaming…" in app.tray.action_texts()
        today = datetime.now(UTC).astimezone(ZoneInfo(config.get("dream", "timezone")))
        date = today.date().isoformat()
        qtbot.waitUntil(lambda: any(date in n.title for _, n in app.notifier.shown), timeout=60_000)
        done = next(n for _, n in app.notifier.shown if date in n.title)
        assert done.action is not None and done.action.kind == OPEN_REVIEW
        assert "recorded" in done.title  # the counts: at least the journal line
        qtbot.waitUntil(lambda: not app.worker.busy("dream_now"), timeout=5000)

        def dream_now_offered() -> bool:  # shown by the poll that follows the call
            app.tray.rebuild_menu()
            return "Dream now" in app.tray.action_texts()

        qtbot.waitUntil(dream_now_offered, timeout=5000)
        shown = [r.getMessage() for r in app_log.records if r.levelname == "INFO"]
        for _, n in app.notifier.shown:
            line = f"notification: {n.title} — {n.body}".replace("\n", " / ")
            assert line in shown, (line, shown)
    finally:
        close(app)


def test_a_closed_app_never_starts_its_dream_clock_again(qtbot, config) -> None:
    """A view the worker was still computing arrives after the app shut down: it must not
    start the dream clock again. It did: each such app left an APScheduler thread behind,
    whose tick hit a shut-down executor at interpreter exit ("Error submitting job …
    cannot schedule new futures after shutdown" after the suite's summary)."""
    app = CompanionApp(
        config,
        create_engine(config),
        tray_available=False,
        use_desktop_notifications=False,
    )
    app.start()
    try:
        qtbot.waitUntil(lambda: app.dreamclock.scheduler is not None, timeout=5000)
        view = app.worker.last_view
        assert view is not None
    finally:
        close(app)
        app.shutdown()
    assert app.dreamclock.scheduler is None
    with qtbot.waitSignal(app.worker.view_ready, timeout=5000):
        app.worker.view_ready.emit(view)  # the late view, as the worker thread delivers it
    assert app.dreamclock.scheduler is None
    assert not any(t.name == "APScheduler" and t.is_alive() for t in threading.enumerate())


# ---- #39 finding 6: when the dream is told, and the review that follows it ------------------


def night_config(config, morning: str = "08:00"):
    """The nightly dream at 02:00 UTC, told at `morning` (the clocks below are in UTC)."""
    config.set("dream", "time", "02:00")
    config.set("dream", "timezone", "UTC")
    config.set("notify", "morning_time", morning)
    config.save()
    return config


def clocked_app(qtbot, config, now: datetime, engine=None) -> CompanionApp:
    app = CompanionApp(
        config,
        engine or create_engine(config),
        tray_available=True,
        use_desktop_notifications=False,
        dream_clock=False,
        now=lambda: now,
    )
    app.start()
    qtbot.waitUntil(lambda: app.worker.last_view is not None, timeout=5000)
    return app


def test_a_dream_tried_in_the_evening_is_told_when_it_lands(qtbot, config) -> None:
    """Set up in the evening, a dream run to try it (00:40, before tonight's 02:00 dream): it
    was held until the 08:00 morning time, so the person saw nothing."""
    evening = datetime(2025, 11, 29, 0, 40, tzinfo=UTC)
    app = clocked_app(qtbot, night_config(config), evening)
    try:
        qtbot.waitUntil(lambda: bool(app.notifier.shown), timeout=5000)
        (_backend, note), *_ = app.notifier.shown
        assert note.key == "dream:2025-11-28" and note.not_before is None
        assert app.notifications.pending == []
    finally:
        close(app)


class DreamingEngine(IdleEngine):
    """ "Dream now" writes the report of 2025-11-29 (what `companion dream` would)."""

    def dream_now(self) -> Path | None:
        vault = self.vault_path()
        assert vault is not None
        source = vault / ".companion" / "dreams" / "2025-11-28.json"
        data = json.loads(source.read_text(encoding="utf-8"))
        data["date"] = "2025-11-29"
        target = source.with_name("2025-11-29.json")
        target.write_text(json.dumps(data), encoding="utf-8")
        return target


def test_dream_now_is_told_when_it_lands_even_in_the_night(qtbot, config) -> None:
    """ "Dream now" at 02:40, when the night's own report would wait for the morning: the
    person asked, so the end is told when the dream lands, once, and nothing waits."""
    night = datetime(2025, 11, 29, 2, 40, tzinfo=UTC)
    cfg = night_config(config)
    app = clocked_app(qtbot, cfg, night, DreamingEngine(Path(cfg.get("vault", "path"))))
    try:
        app.actions.dream_now()
        qtbot.waitUntil(
            lambda: any("2025-11-29" in n.title for _, n in app.notifier.shown), timeout=5000
        )
        done = [n for _, n in app.notifier.shown if "2025-11-29" in n.title]
        assert len(done) == 1 and done[0].action == Action(
            OPEN_REVIEW, str(Path(cfg.get("vault", "path")) / ".companion/dreams/2025-11-29.json")
        )
        app.worker.refresh()  # the poll that sees the new report: nothing more to tell
        qtbot.waitUntil(lambda: not app.worker.busy("refresh"), timeout=5000)
        assert [n.key for n in app.notifications.pending if "2025-11-29" in n.key] == []
    finally:
        close(app)


def test_the_open_review_refreshes_when_a_later_run_of_the_night_lands(qtbot, config) -> None:
    """The review of 2025-11-28 is open; a later run of the same night rewrites that report
    (one change more): the window shows it without being closed and opened again."""
    app = make_app(qtbot, config, tray=True)
    try:
        report = Path(config.get("vault", "path")) / ".companion" / "dreams" / "2025-11-28.json"
        window = app.open_review(report)
        assert window is not None and window.changes.topLevelItemCount() == 4
        data = json.loads(report.read_text(encoding="utf-8"))
        extra = dict(data["changes"][0], id="c9", kind="recorded", why="a later run")
        data["changes"].append(extra)
        report.write_text(json.dumps(data), encoding="utf-8")
        app.worker.refresh()
        qtbot.waitUntil(lambda: window.changes.topLevelItemCount() == 5, timeout=5000)
        assert window.isVisible()
        assert len(app.notifier.shown) == 1  # the night is told once, not again per run
    finally:
        close(app)


def test_a_notice_balloon_click_does_not_replay_the_last_notification(qtbot, config) -> None:
    """The tray has one balloon: after a notice replaced the dream's, a click on it must not
    open the dream's review (the click ran the last notification's action)."""
    from companion.gui.notify_policy import Notification

    app = make_app(qtbot, config, tray=True)
    try:
        app.tray.icon.show()
        report = Path(config.get("vault", "path")) / ".companion" / "dreams" / "2025-11-28.json"
        app.notifier.show(Notification("k", "Dream", "b", Action(OPEN_REVIEW, str(report))))
        assert app.notifier.shown[-1][0] == "tray"
        app.notice("Sync failed", "The relay did not answer.")
        app.tray.icon.messageClicked.emit()
        assert app.reviews == {}
        app.notifier.show(Notification("k2", "Dream", "b", Action(OPEN_REVIEW, str(report))))
        app.tray.icon.messageClicked.emit()  # the dream's own balloon still opens it
        assert report in app.reviews and app.reviews[report].isVisible()
    finally:
        close(app)
