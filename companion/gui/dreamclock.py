"""When the desktop app dreams on its own: the local fallback and the clock that decides it.

The server dreams every night at `[dream] time` in `[dream] timezone`. This computer dreams
instead when the relay cannot be reached, or when the server's report for the night has not
arrived by the grace time (`dream time + [dream] grace_minutes`). Sync carries the local report
to the other copies afterwards.

`fallback_decision` is the rule, pure and tested directly. `DreamClock` asks it at the right
moments: at start, at the dream time, at the grace time (APScheduler cron jobs in the dream's
time zone, `coalesce=True`, no misfire limit, so a night missed while asleep is checked once on
waking), and after a resume or a clock change, which a cheap 60 s tick notices because the wall
clock moved more than the time that passed. The night's date is the dream time's date, so a
laptop asleep at 02:00 that wakes at 09:00 decides once, for that night. The last local run is
kept in a small JSON file so a restart never dreams the same night twice.

Qt-free: the app hands in `launch` (start the dream off the GUI thread) and calls `finished`
when it ends. The clock (`now`) is injected so tests can move it.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from companion.config import Config
from companion.dream.report import report_path
from companion.dream.schedule import dream_time, last_scheduled, trigger
from companion.errors import CompanionError
from companion.logs import get_logger
from companion.statefile import JsonStateFile

log = get_logger("gui.dreamclock")

# Why a local dream runs (Decision.cause).
NO_RELAY = "no_relay"  # the vault has no relay: this is the only dreamer
OFFLINE = "offline"  # the relay cannot be reached
LATE = "late"  # the server's report had not arrived by the grace time

TICK_S = 60.0
JUMP_SLACK_S = 90.0  # the wall clock may run this far ahead of the tick before it is a resume


@dataclass(frozen=True)
class Decision:
    """Whether to dream locally now, and why (the reason goes to the log and the report)."""

    run: bool
    reason: str
    night: dt.date | None = None  # the night concerned (the date of its dream time)
    cause: str = ""  # when run: NO_RELAY, OFFLINE or LATE
    # not run because a person must fix something (a broken config): said out loud, not logged
    # at debug level like the ordinary "not yet"
    blocked: bool = False


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def night_of(now: dt.datetime, config: Config) -> dt.datetime:
    """The most recent scheduled dream time at or before `now` (in the dream's time zone)."""
    trig = trigger(config)
    at = last_scheduled(trig, now)
    if at is None:  # cannot happen for a daily trigger; be safe anyway
        raise CompanionError("cannot work out the last scheduled dream time")
    return at


def fallback_decision(
    now: dt.datetime,
    last_local_run: dt.datetime | None,
    server_report_present: bool,
    relay_reachable: bool | None,
    config: Config,
) -> Decision:
    """Should this computer dream now?

    `relay_reachable` is None when the vault has no relay (nobody else will dream for it).
    In order: the fallback must be on; the night is today's dream time, once it has passed
    (the dream dates its report by the day it runs, like `dream.schedule.local_fallback_due`);
    once the night has a report (from anywhere, even undone) or a local run, nothing more
    happens; with no relay or an unreachable one the dream runs at once; otherwise it waits
    for the server until the grace time, then runs.
    """
    if now.tzinfo is None:
        raise ValueError("now must carry a time zone")
    if not config.settings.dream.local_fallback:
        return Decision(False, "local fallback is off ([dream] local_fallback)")
    dream_at = night_of(now, config)
    night = dream_at.date()
    if night != now.astimezone(dream_at.tzinfo).date():
        # The dream dates its report by the day it runs: a night from yesterday would land
        # under today's date. Today's dream time is near; its window covers the gap.
        return Decision(False, f"today's dream time {dream_at:%H:%M} has not come yet")
    if last_local_run is not None and last_local_run >= dream_at:
        return Decision(False, f"already dreamed here for {night}", night)
    if server_report_present:
        return Decision(False, f"the report for {night} is already in the vault", night)
    if relay_reachable is None:
        return Decision(
            True, f"no relay for this vault: dreaming here for {night}", night, NO_RELAY
        )
    if not relay_reachable:
        return Decision(
            True, f"the relay is unreachable: dreaming here for {night}", night, OFFLINE
        )
    due = dream_at + dt.timedelta(minutes=int(config.settings.dream.grace_minutes))
    if now < due:
        return Decision(False, f"waiting for the server's report until {due:%H:%M}", night)
    return Decision(True, f"no report from the server by {due:%H:%M}: dreaming here", night, LATE)


class ClockState(JsonStateFile):
    """`dream-clock.json`: the last local run (and the last decision, for people reading it)."""

    @property
    def last_local_run(self) -> dt.datetime | None:
        try:
            return dt.datetime.fromisoformat(str(self.data["last_local_run"]))
        except (KeyError, ValueError):
            return None

    def ran(self, when: dt.datetime, night: dt.date | None) -> None:
        self.data["last_local_run"] = when.isoformat()
        if night is not None:
            self.data["last_night"] = night.isoformat()
        self.save()

    def decided(self, when: dt.datetime, why: str, decision: Decision) -> None:
        self.data["last_check"] = {
            "at": when.isoformat(),
            "why": why,
            "run": decision.run,
            "reason": decision.reason,
        }
        self.save()

    def save(self) -> None:
        try:
            super().save()
        except OSError as exc:
            log.warning("cannot save %s: %s", self.path, exc)


Launch = Callable[[Decision], bool]


class DreamClock:
    """Checks the local fallback at start, dream time, grace time and after a resume.

    `vault()` is the vault folder now (None: nothing to do), `relay_reachable()` as in
    `fallback_decision`, `launch(decision)` starts the dream without blocking and returns
    whether it started; the app then calls `finished(ok)`. `check` is safe to call from any
    thread, and never launches a second dream while one runs.
    """

    def __init__(
        self,
        config: Config,
        state_file: Path,
        *,
        vault: Callable[[], Path | None],
        relay_reachable: Callable[[], bool | None],
        launch: Launch,
        now: Callable[[], dt.datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
        tick_s: float = TICK_S,
        on_blocked: Callable[[Decision], None] | None = None,
    ) -> None:
        self.config = config
        self.on_blocked = on_blocked
        self._blocked_said: str | None = None
        self.state = ClockState(state_file)
        self.vault = vault
        self.relay_reachable = relay_reachable
        self.launch = launch
        self.now = now
        self.monotonic = monotonic
        self.tick_s = tick_s
        self._lock = threading.RLock()
        self._running: Decision | None = None
        self._last_tick: tuple[dt.datetime, float] | None = None
        self.scheduler: BackgroundScheduler | None = None

    # ---- the decision ------------------------------------------------------------------------

    def decide(self) -> Decision:
        """The decision now, without acting on it."""
        vault = self.vault()
        if vault is None or not Path(vault).is_dir():
            return Decision(False, "no vault folder")
        if self.config.problems:  # never dream on defaults standing in for what a person wrote
            n = len(self.config.problems)
            return Decision(
                False,
                f"the configuration has {n} problem{'s' if n != 1 else ''} "
                f"({self.config.file}); fix it in Settings or in the file",
                blocked=True,
            )
        now = self.now()
        try:
            night = night_of(now, self.config).date()
        except CompanionError as exc:  # a bad [dream] time or time zone
            return Decision(False, f"the configuration has problems: {exc}", blocked=True)
        present = report_path(Path(vault), night.isoformat()).is_file()
        try:
            return fallback_decision(
                now, self.state.last_local_run, present, self.relay_reachable(), self.config
            )
        except CompanionError as exc:
            return Decision(False, str(exc))

    def check(self, why: str = "check") -> Decision:
        """Decide, and start the local dream when it is due. Returns the decision."""
        with self._lock:
            if self._running is not None:
                return Decision(False, "a local dream is already running", self._running.night)
            decision = self.decide()
            if decision.run:
                log.info("local dream (%s): %s", why, decision.reason)
                self._running = decision
                try:
                    started = self.launch(decision)
                except Exception:  # the app's bug must not kill the scheduler thread
                    log.exception("could not start the local dream")
                    started = False
                if not started:
                    self._running = None
                    decision = Decision(False, "the dream could not start", decision.night)
            elif decision.blocked:
                self._say_blocked(decision)
            else:
                log.debug("no local dream (%s): %s", why, decision.reason)
                self._blocked_said = None
            self.state.decided(self.now(), why, decision)
            return decision

    def _say_blocked(self, decision: Decision) -> None:
        """A refused local dream is an error a person sees: logged and shown once per reason."""
        if decision.reason == self._blocked_said:
            return
        self._blocked_said = decision.reason
        log.error("local dream refused: %s", decision.reason)
        if self.on_blocked is not None:
            try:
                self.on_blocked(decision)
            except Exception:  # noqa: BLE001 - the app's bug must not stop the clock
                log.exception("could not show the refused local dream")

    def finished(self, ok: bool) -> None:
        """The launched dream ended; a success is remembered so the night is not dreamt again.

        A failure is retried at the next check (start, dream time, grace time, resume).
        """
        with self._lock:
            decision, self._running = self._running, None
            if ok:
                self.state.ran(self.now(), decision.night if decision else None)

    @property
    def running(self) -> bool:
        with self._lock:
            return self._running is not None

    @property
    def last_local_run(self) -> dt.datetime | None:
        return self.state.last_local_run

    # ---- resume detection --------------------------------------------------------------------

    def tick(self) -> bool:
        """Called every `tick_s`: True (and a check) when the wall clock jumped, i.e. the
        computer slept or the clock was changed since the previous tick."""
        wall, mono = self.now(), self.monotonic()
        previous, self._last_tick = self._last_tick, (wall, mono)
        if previous is None:
            return False
        wall_delta = (wall - previous[0]).total_seconds()
        mono_delta = mono - previous[1]
        if wall_delta - mono_delta > JUMP_SLACK_S or wall_delta < -JUMP_SLACK_S:
            log.info("the clock moved %.0f s in %.0f s: resumed, checking", wall_delta, mono_delta)
            self.check("resume")
            return True
        return False

    # ---- the scheduler -----------------------------------------------------------------------

    def triggers(self) -> dict[str, CronTrigger]:
        """The cron triggers: the dream time and the grace time, in the dream's time zone."""
        at = trigger(self.config)
        when = dream_time(self.config)
        minutes = when.hour * 60 + when.minute + int(self.config.settings.dream.grace_minutes)
        grace = CronTrigger(hour=(minutes // 60) % 24, minute=minutes % 60, timezone=at.timezone)
        return {"dream-time": at, "dream-grace": grace}

    def start(self) -> Decision:
        """Start the scheduler and check once now (the catch-up at start)."""
        sched = BackgroundScheduler(timezone=trigger(self.config).timezone)
        self.scheduler = sched
        self._add_cron_jobs()
        sched.add_job(
            self.tick,
            IntervalTrigger(seconds=self.tick_s),
            id="tick",
            coalesce=True,
            misfire_grace_time=None,
            max_instances=1,
        )
        self.tick()  # the reference point of the next tick
        sched.start()
        return self.check("start")

    def _add_cron_jobs(self) -> None:
        assert self.scheduler is not None
        for job_id, trig in self.triggers().items():
            self.scheduler.add_job(
                self.check,
                trig,
                args=(job_id,),
                id=job_id,
                coalesce=True,
                misfire_grace_time=None,
                max_instances=1,
                replace_existing=True,
            )

    def reschedule(self) -> Decision:
        """The dream time, time zone or grace changed: new cron jobs, and a check now."""
        if self.scheduler is not None:
            try:
                self._add_cron_jobs()
            except CompanionError as exc:
                log.warning("dream schedule not changed: %s", exc)
        return self.check("settings")

    def stop(self) -> None:
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        self.scheduler = None
