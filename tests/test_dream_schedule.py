"""Nightly scheduling: time zone, DST, coalescing, catch-up of a missed night, local fallback."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from companion.config import load_config
from companion.dream.schedule import (
    ScheduleState,
    build_scheduler,
    dream_time,
    last_scheduled,
    local_fallback_due,
    needs_catch_up,
    trigger,
)
from companion.errors import ConfigError
from companion.paths import device_paths

MADRID = ZoneInfo("Europe/Madrid")


def config(**dream):
    paths = device_paths()
    cfg = load_config(paths)
    for k, v in dream.items():
        cfg.set("dream", k, v)
    return paths, cfg


def test_default_trigger_is_two_in_madrid():
    _paths, cfg = config()
    trig = trigger(cfg)
    nxt = trig.get_next_fire_time(None, dt.datetime(2026, 11, 27, 12, tzinfo=MADRID))
    assert nxt == dt.datetime(2026, 11, 28, 2, tzinfo=MADRID)
    assert nxt.utcoffset() == dt.timedelta(hours=1)  # CET in winter
    summer = trig.get_next_fire_time(None, dt.datetime(2026, 7, 1, 12, tzinfo=MADRID))
    assert summer.utcoffset() == dt.timedelta(hours=2)  # CEST


def test_last_scheduled_across_the_spring_dst_gap():
    _paths, cfg = config()
    trig = trigger(cfg)
    # 2027-03-28: clocks jump from 02:00 to 03:00 in Madrid; the night still has its run
    last = last_scheduled(trig, dt.datetime(2027, 3, 28, 9, tzinfo=MADRID))
    assert last is not None and last.date() == dt.date(2027, 3, 28)
    before = last_scheduled(trig, dt.datetime(2026, 11, 28, 1, 59, tzinfo=MADRID))
    assert before == dt.datetime(2026, 11, 27, 2, tzinfo=MADRID)


def test_dream_time_reads_the_schema_rule():
    paths, cfg = config()
    cfg.set("dream", "time", "2:30")  # H:MM is the same time as HH:MM everywhere
    assert dream_time(cfg) == dt.time(2, 30)
    cfg.values["dream"]["time"] = "24:00"  # a config built in code, bypassing the schema
    with pytest.raises(ConfigError, match=r"\[dream\] time"):
        dream_time(cfg)


def test_catch_up_only_for_a_missed_night(tmp_path):
    paths, cfg = config()
    trig = trigger(cfg)
    state = ScheduleState(tmp_path / "s.json")
    now = dt.datetime(2026, 11, 28, 9, tzinfo=MADRID)
    assert not needs_catch_up(state, trig, now)  # a fresh schedule has missed nothing
    state.begin(dt.datetime(2026, 11, 26, 12, tzinfo=MADRID))
    assert needs_catch_up(state, trig, now)  # 27th and 28th at 02:00 passed, no success
    state.succeeded(dt.datetime(2026, 11, 28, 2, 1, tzinfo=MADRID))
    assert not needs_catch_up(state, trig, now)
    assert needs_catch_up(state, trig, now + dt.timedelta(days=1))
    again = ScheduleState(tmp_path / "s.json")  # persisted
    assert again.last_success == dt.datetime(2026, 11, 28, 2, 1, tzinfo=MADRID)


def test_scheduler_job_settings_and_catch_up_run(tmp_path):
    paths, cfg = config()
    vault = tmp_path / "vault"
    vault.mkdir()
    state = ScheduleState.for_vault(paths, vault)
    state.begin(dt.datetime.now(dt.UTC) - dt.timedelta(days=3))
    ran = threading.Event()
    calls: list[Path] = []

    def fake_run(v, c, p):
        calls.append(v)
        ran.set()

    sched = build_scheduler(vault, cfg, paths, blocking=False, run=fake_run)
    job = sched.get_job("dream")
    assert job.coalesce is True and job.misfire_grace_time is None and job.max_instances == 1
    assert str(job.trigger.timezone) == "Europe/Madrid"
    # the missed night: the nightly job itself runs now, no second (one-shot) job
    assert [j.id for j in sched.get_jobs()] == ["dream"]
    assert job.next_run_time <= dt.datetime.now(MADRID)
    sched.start()
    try:
        assert ran.wait(10)
    finally:
        sched.shutdown(wait=True)
    assert calls == [vault]
    assert ScheduleState.for_vault(paths, vault).last_success is not None


def test_no_catch_up_when_no_night_was_missed(tmp_path):
    paths, cfg = config()
    vault = tmp_path / "vault"
    vault.mkdir()
    ScheduleState.for_vault(paths, vault).begin(dt.datetime.now(dt.UTC))
    sched = build_scheduler(vault, cfg, paths, blocking=False, run=lambda v, c, p: None)
    sched.start(paused=True)
    try:
        job = sched.get_job("dream")
        assert job.next_run_time > dt.datetime.now(MADRID)
        assert job.next_run_time.timetz().replace(tzinfo=None) == dt.time(2, 0)
    finally:
        sched.shutdown(wait=False)


def test_stopping_the_scheduler_as_the_catch_up_runs_raises_nothing(tmp_path, monkeypatch):
    """A shutdown right after the caught-up dream started: APScheduler removed a one-shot
    job after its run and, once stopped, looked for it among the jobs not started yet
    (JobLookupError in its thread). The nightly job is rescheduled instead, never removed."""
    paths, cfg = config()
    errors: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    for i in range(30):
        vault = tmp_path / f"vault{i}"
        vault.mkdir()
        ScheduleState.for_vault(paths, vault).begin(dt.datetime.now(dt.UTC) - dt.timedelta(days=2))
        stopped = threading.Event()
        holder: dict[str, object] = {}

        def stop_at_once(v, c, p, holder=holder, stopped=stopped):  # the person quits now
            holder["sched"].shutdown(wait=False)  # type: ignore[attr-defined]  # joins its thread
            stopped.set()

        sched = build_scheduler(vault, cfg, paths, blocking=False, run=stop_at_once)
        holder["sched"] = sched
        sched.start()
        assert stopped.wait(10)  # shutdown() returned: the scheduler's thread has ended
        assert not sched.running
    assert errors == []


def test_a_failing_dream_is_recorded_not_raised(tmp_path):
    from companion.dream.schedule import nightly
    from companion.errors import CompanionError

    paths, cfg = config()

    def boom(v, c, p):
        raise CompanionError("sync did not settle")

    nightly(tmp_path, cfg, paths, boom)
    state = ScheduleState.for_vault(paths, tmp_path)
    assert state.data["last_error"]["error"] == "sync did not settle"
    assert state.last_success is None


def test_local_fallback_due(tmp_path):
    _paths, cfg = config(grace_minutes=120)
    vault = tmp_path / "v"
    (vault / ".companion/dreams").mkdir(parents=True)
    assert not local_fallback_due(vault, cfg, dt.datetime(2026, 11, 28, 3, 59, tzinfo=MADRID))
    assert local_fallback_due(vault, cfg, dt.datetime(2026, 11, 28, 4, 1, tzinfo=MADRID))
    (vault / ".companion/dreams/2026-11-28.json").write_text('{"date": "2026-11-28"}')
    assert not local_fallback_due(vault, cfg, dt.datetime(2026, 11, 28, 4, 1, tzinfo=MADRID))
    cfg.set("dream", "local_fallback", False)
    (vault / ".companion/dreams/2026-11-28.json").unlink()
    assert not local_fallback_due(vault, cfg, dt.datetime(2026, 11, 28, 9, tzinfo=MADRID))
