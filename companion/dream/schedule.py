"""Nightly scheduling: `companion dream VAULT --schedule` on the server, and the desktop app's
"has the server dreamt yet?" check.

APScheduler runs the dream with a cron trigger at `[dream] time` in `[dream] timezone`
(default 02:00 Europe/Madrid), `coalesce=True` (nights missed while asleep run once, not once
each) and no misfire grace limit (a late night still runs). Across restarts no night is
dropped: the last successful run is kept in the state dir, and at start, if the most recent
scheduled time came after it (and after the schedule was first set up), the dream runs at once.

A failed dream is logged and retried at the next scheduled time; the catch-up at start also
retries it. The systemd timer in `installers/linux/` is the alternative for servers that
prefer systemd to a long-running process.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.cron import CronTrigger

from companion.config import Config, parse_hhmm
from companion.dream.report import load_report
from companion.dream.state import vault_key
from companion.errors import CompanionError, ConfigError
from companion.logs import get_logger
from companion.paths import DevicePaths
from companion.statefile import JsonStateFile

log = get_logger("dream.schedule")


def dream_time(config: Config) -> dt.time:
    """`[dream] time` (validated by the config schema's `parse_hhmm`)."""
    text = config.settings.dream.time
    try:
        return parse_hhmm(text)
    except ValueError as exc:  # a config built in code, not loaded: still one clear line
        raise ConfigError(f"[dream] time: {exc}") from None


def trigger(config: Config) -> CronTrigger:
    from companion.dream.engine import dream_timezone  # noqa: PLC0415 - avoid an import cycle

    at = dream_time(config)
    return CronTrigger(hour=at.hour, minute=at.minute, timezone=dream_timezone(config))


def last_scheduled(trig: CronTrigger, now: dt.datetime) -> dt.datetime | None:
    """The most recent fire time of `trig` at or before `now` (None within the first days)."""
    probe = now - dt.timedelta(days=3)
    last = None
    fire = trig.get_next_fire_time(None, probe)
    while fire is not None and fire <= now:
        last = fire
        fire = trig.get_next_fire_time(fire, fire + dt.timedelta(seconds=1))
    return last


class ScheduleState(JsonStateFile):
    """`<state_dir>/dream/schedule-<vault>.json`: when the schedule began, the last success."""

    @classmethod
    def for_vault(cls, paths: DevicePaths, vault: Path) -> ScheduleState:
        return cls(paths.state_dir / "dream" / f"schedule-{vault_key(vault)}.json")

    def _get(self, key: str) -> dt.datetime | None:
        try:
            return dt.datetime.fromisoformat(str(self.data[key]))
        except (KeyError, ValueError):
            return None

    @property
    def since(self) -> dt.datetime | None:
        return self._get("since")

    @property
    def last_success(self) -> dt.datetime | None:
        return self._get("last_success")

    def begin(self, now: dt.datetime) -> None:
        if self.since is None:
            self.data["since"] = now.isoformat()
            self.save()

    def succeeded(self, when: dt.datetime) -> None:
        self.data["last_success"] = when.isoformat()
        self.data.pop("last_error", None)
        self.save()

    def failed(self, when: dt.datetime, error: str) -> None:
        self.data["last_error"] = {"at": when.isoformat(), "error": error}
        self.save()


def needs_catch_up(state: ScheduleState, trig: CronTrigger, now: dt.datetime) -> bool:
    """True when a scheduled night passed without a successful dream since the schedule
    began."""
    due = last_scheduled(trig, now)
    if due is None:
        return False
    since = state.since
    if since is None or due <= since:
        return False
    last = state.last_success
    return last is None or last < due


Runner = Callable[[Path, Config, DevicePaths], Any]


def _default_runner(vault: Path, config: Config, paths: DevicePaths) -> Any:
    from companion.dream.engine import run_dream  # noqa: PLC0415

    return run_dream(vault, config, paths=paths)


def nightly(vault: Path, config: Config, paths: DevicePaths, run: Runner) -> None:
    """One scheduled dream: run it, remember the outcome, never raise into the scheduler."""
    state = ScheduleState.for_vault(paths, vault)
    now = dt.datetime.now(dt.UTC)
    try:
        run(vault, config, paths)
    except CompanionError as exc:
        log.error("the nightly dream of %s failed: %s", vault, exc)
        state.failed(now, str(exc))
        return
    except Exception as exc:  # noqa: BLE001 - the scheduler must survive any failure
        log.exception("the nightly dream of %s crashed", vault)
        state.failed(now, f"{type(exc).__name__}: {exc}")
        return
    state.succeeded(now)
    log.info("the nightly dream of %s landed", vault)


def build_scheduler(
    vault: Path,
    config: Config,
    paths: DevicePaths,
    *,
    blocking: bool = True,
    run: Runner = _default_runner,
    now: dt.datetime | None = None,
) -> BaseScheduler:
    """A scheduler with the nightly job (and a catch-up run now when a night was missed)."""
    trig = trigger(config)
    tz = trig.timezone
    sched: BaseScheduler = (
        BlockingScheduler(timezone=tz) if blocking else BackgroundScheduler(timezone=tz)
    )
    state = ScheduleState.for_vault(paths, vault)
    now = now or dt.datetime.now(dt.UTC)
    catch_up = needs_catch_up(state, trig, now)
    state.begin(now)
    if catch_up:
        log.info("a scheduled dream of %s was missed: running it now", vault)
    # A missed night is caught up by running the nightly job itself now (its next run is the
    # trigger's), not by a one-shot job: APScheduler removes a one-shot job after its run, and
    # a shutdown at that moment made the removal fail in the scheduler's thread
    # (JobLookupError). One job also cannot overlap itself (max_instances=1).
    extra = {"next_run_time": dt.datetime.now(tz)} if catch_up else {}
    sched.add_job(
        nightly,
        trig,
        args=(vault, config, paths, run),
        id="dream",
        name=f"dream {vault}",
        coalesce=True,
        misfire_grace_time=None,
        max_instances=1,
        replace_existing=True,
        **extra,
    )
    return sched


def local_fallback_due(vault: Path, config: Config, now: dt.datetime | None = None) -> bool:
    """For the desktop app: True when it should dream locally because the server has not
    (local fallback on, past tonight's dream time plus the grace minutes, no report for the
    day in the vault)."""
    if not config.settings.dream.local_fallback:
        return False
    from companion.dream.engine import dream_timezone  # noqa: PLC0415

    tz: ZoneInfo = dream_timezone(config)
    now = (now or dt.datetime.now(dt.UTC)).astimezone(tz)
    due = dt.datetime.combine(now.date(), dream_time(config), tz) + dt.timedelta(
        minutes=int(config.settings.dream.grace_minutes)
    )
    if now < due:
        return False
    report = load_report(Path(vault), now.date().isoformat())
    return report is None or bool(report.undone_at)
