"""The local fallback dream: the pure rule, and the clock that asks it (the clock is moved)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from companion.config import Config, load_config
from companion.gui.dreamclock import (
    LATE,
    NO_RELAY,
    OFFLINE,
    Decision,
    DreamClock,
    fallback_decision,
)
from companion.paths import device_paths

MADRID = ZoneInfo("Europe/Madrid")


def at(day: int, hour: int, minute: int = 0) -> dt.datetime:
    """A time in Madrid on 2025-11-`day` (dream at 02:00, grace 120 min: due at 04:00)."""
    return dt.datetime(2025, 11, day, hour, minute, tzinfo=MADRID)


@pytest.fixture
def config() -> Config:
    cfg = load_config(device_paths())
    cfg.set("dream", "time", "02:00")
    cfg.set("dream", "timezone", "Europe/Madrid")
    cfg.set("dream", "grace_minutes", 120)
    return cfg


def decide(config: Config, now: dt.datetime, **kw) -> Decision:
    args = {"last_local_run": None, "server_report_present": False, "relay_reachable": True}
    args.update(kw)
    return fallback_decision(now, config=config, **args)


# ---- the rule ----------------------------------------------------------------------------------


def test_waits_for_the_server_until_the_grace_time(config: Config) -> None:
    assert not decide(config, at(28, 1, 59)).run  # before the dream time
    waiting = decide(config, at(28, 3, 59))
    assert not waiting.run and "04:00" in waiting.reason
    due = decide(config, at(28, 4, 0))
    assert due.run and due.night == dt.date(2025, 11, 28) and due.cause == LATE


def test_the_servers_report_means_no_local_dream(config: Config) -> None:
    for now in (at(28, 4, 0), at(28, 9), at(28, 23, 59)):
        d = decide(config, now, server_report_present=True)
        assert not d.run and "report" in d.reason


def test_relay_unreachable_dreams_at_once(config: Config) -> None:
    d = decide(config, at(28, 2, 5), relay_reachable=False)
    assert d.run and d.cause == OFFLINE and "unreachable" in d.reason
    # ... but not before the night's dream time
    assert not decide(config, at(28, 1, 0), relay_reachable=False).run


def test_no_relay_at_all_dreams_at_the_dream_time(config: Config) -> None:
    d = decide(config, at(28, 2, 0), relay_reachable=None)
    assert d.run and d.cause == NO_RELAY


def test_already_dreamt_here_tonight(config: Config) -> None:
    assert not decide(config, at(28, 9), last_local_run=at(28, 4, 1)).run
    # a local run of the previous night does not count for this one
    assert decide(config, at(28, 9), last_local_run=at(27, 4, 1)).run


def test_fallback_off(config: Config) -> None:
    config.set("dream", "local_fallback", False)
    d = decide(config, at(28, 9), relay_reachable=False)
    assert not d.run and "local_fallback" in d.reason


def test_yesterdays_night_is_left_to_todays_dream(config: Config) -> None:
    # 01:00: the last dream time was yesterday's; its report would carry today's date
    assert not decide(config, at(28, 1, 0), relay_reachable=None).run


def test_the_time_zone_is_the_dreams(config: Config) -> None:
    now = dt.datetime(2025, 11, 28, 1, 30, tzinfo=dt.UTC)
    assert not decide(config, now).run  # 02:30 in Madrid: waiting for the server
    config.set("dream", "timezone", "Asia/Tokyo")  # 10:30 in Tokyo: past the grace time
    d = decide(config, now)
    assert d.run and d.night == dt.date(2025, 11, 28)


def test_naive_times_are_refused(config: Config) -> None:
    with pytest.raises(ValueError):
        decide(config, dt.datetime(2025, 11, 28, 9))


# ---- the clock ---------------------------------------------------------------------------------


class World:
    """A vault, a movable clock, a relay switch and a launcher that records what it started."""

    def __init__(self, tmp_path: Path, config: Config, now: dt.datetime) -> None:
        self.vault = tmp_path / "vault"
        self.vault.mkdir()
        self.now = now
        self.mono = 1000.0
        self.online: bool | None = True
        self.launched: list[Decision] = []
        self.accept = True
        self.state_file = tmp_path / "state" / "dream-clock.json"
        self.config = config

    def clock(self) -> DreamClock:
        return DreamClock(
            self.config,
            self.state_file,
            vault=lambda: self.vault,
            relay_reachable=lambda: self.online,
            launch=self.launch,
            now=lambda: self.now,
            monotonic=lambda: self.mono,
        )

    def launch(self, decision: Decision) -> bool:
        self.launched.append(decision)
        return self.accept

    def server_report(self, date: str) -> None:
        folder = self.vault / ".companion" / "dreams"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{date}.json").write_text("{}", encoding="utf-8")

    def sleep(self, hours: float) -> None:
        """The laptop sleeps: the wall clock moves, the monotonic clock does not."""
        self.now += dt.timedelta(hours=hours)

    def awake(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)
        self.mono += seconds


def test_asleep_at_two_wakes_at_nine_decides_once(tmp_path: Path, config: Config) -> None:
    w = World(tmp_path, config, at(27, 23, 0))
    clock = w.clock()
    assert clock.tick() is False  # first tick: the reference point
    w.awake(60)
    assert clock.tick() is False
    w.sleep(10)  # 23:01 -> 09:01: the 02:00 dream and the 04:00 grace passed asleep
    assert clock.tick() is True
    assert [d.night for d in w.launched] == [dt.date(2025, 11, 28)]
    # the dream is still running: the catch-up of the missed cron jobs starts nothing more
    assert not clock.check("dream-grace").run
    clock.finished(True)
    w.awake(60)
    assert clock.tick() is False
    assert not clock.check("dream-grace").run
    assert len(w.launched) == 1
    saved = json.loads(w.state_file.read_text())
    assert dt.datetime.fromisoformat(saved["last_local_run"]) == w.now - dt.timedelta(seconds=60)


def test_already_ran_today_survives_a_restart(tmp_path: Path, config: Config) -> None:
    w = World(tmp_path, config, at(28, 4, 30))
    first = w.clock()
    assert first.check("start").run
    first.finished(True)
    w.awake(3600)
    again = w.clock()  # the app restarted
    assert not again.check("start").run
    assert len(w.launched) == 1
    w.now = at(29, 4, 30)  # the next night is a new night
    assert again.check("dream-grace").run


def test_server_report_present_no_local_dream(tmp_path: Path, config: Config) -> None:
    w = World(tmp_path, config, at(28, 9))
    w.server_report("2025-11-28")
    assert not w.clock().check("start").run
    assert w.launched == []


def test_relay_unreachable_local_dream(tmp_path: Path, config: Config) -> None:
    w = World(tmp_path, config, at(28, 2, 0))
    w.online = False
    d = w.clock().check("dream-time")
    assert d.run and d.cause == OFFLINE
    assert len(w.launched) == 1


def test_relay_up_waits_for_grace(tmp_path: Path, config: Config) -> None:
    w = World(tmp_path, config, at(28, 2, 0))
    clock = w.clock()
    assert not clock.check("dream-time").run
    w.awake(2 * 3600)
    assert clock.check("dream-grace").run


def test_a_failed_dream_is_tried_again(tmp_path: Path, config: Config) -> None:
    w = World(tmp_path, config, at(28, 4, 0))
    clock = w.clock()
    assert clock.check("dream-grace").run
    clock.finished(False)
    assert clock.last_local_run is None
    assert clock.check("resume").run
    assert len(w.launched) == 2


def test_a_launch_refused_is_not_running(tmp_path: Path, config: Config) -> None:
    w = World(tmp_path, config, at(28, 4, 0))
    w.accept = False
    clock = w.clock()
    d = clock.check("start")
    assert not d.run and not clock.running
    w.accept = True
    assert clock.check("start").run and clock.running


def test_no_vault_no_dream(tmp_path: Path, config: Config) -> None:
    w = World(tmp_path, config, at(28, 9))
    w.vault = tmp_path / "gone"
    assert not w.clock().check("start").run


def test_clock_set_back_counts_as_a_jump(tmp_path: Path, config: Config) -> None:
    w = World(tmp_path, config, at(28, 9))
    clock = w.clock()
    clock.tick()
    w.now -= dt.timedelta(hours=3)
    assert clock.tick() is True


def test_scheduler_jobs(tmp_path: Path, config: Config) -> None:
    w = World(tmp_path, config, at(28, 1, 0))
    clock = w.clock()
    try:
        assert not clock.start().run  # the catch-up at start: before the dream time
        jobs = {j.id: j for j in clock.scheduler.get_jobs()}
        assert set(jobs) == {"dream-time", "dream-grace", "tick"}
        for job in jobs.values():
            assert job.coalesce is True and job.misfire_grace_time is None
        probe = dt.datetime(2025, 11, 28, 0, 0, tzinfo=MADRID)
        fire = {
            k: jobs[k].trigger.get_next_fire_time(None, probe)
            for k in ("dream-time", "dream-grace")
        }
        assert fire["dream-time"] == at(28, 2, 0)
        assert fire["dream-grace"] == at(28, 4, 0)
        config.set("dream", "time", "23:30")  # grace past midnight: 01:30
        clock.reschedule()
        jobs = {j.id: j for j in clock.scheduler.get_jobs()}
        assert jobs["dream-grace"].trigger.get_next_fire_time(None, probe) == at(28, 1, 30)
    finally:
        clock.stop()
    assert clock.scheduler is None
