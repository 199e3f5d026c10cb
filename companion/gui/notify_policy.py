"""What to tell the person, and when: engine events + the `[notify]` config -> notifications.

Qt-free and pure (the clock is a parameter), so every rule is tested directly. How a
notification is shown is `notify.Notifier`'s job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, time, timedelta
from time import time_ns

from companion.config import NotifySettings, parse_hhmm
from companion.dream.report import KINDS
from companion.gui.events import (
    ChangesHeld,
    ConflictsCreated,
    DreamLanded,
    EngineEvent,
    KeyringProblem,
    LocalDreamRan,
    MassDeleteTripped,
    RelayUnreachable,
    SecretFound,
)
from companion.gui.i18n import N_, tr

# What clicking a notification does (Action.kind).
OPEN_REVIEW = "open_review"  # target: the dream report path
OPEN_REVIEW_NOTE = "open_review_note"  # target: the review note, vault-relative
OPEN_CONFLICTS = "open_conflicts"  # target: the first conflict copy
OPEN_NOTE = "open_note"  # target: vault-relative note
OPEN_SETTINGS = "open_settings"  # target: settings tab name
SHOW_MAIN = "show_main"
MOVE_SECRET = "move_secret"  # target: vault-relative note; line; detail: the detector's kind


@dataclass(frozen=True)
class Action:
    kind: str
    target: str | None = None
    line: int | None = None
    detail: str = ""


@dataclass(frozen=True)
class Notification:
    """One notification. `key` identifies it so it is shown once; `not_before` defers it."""

    key: str
    title: str
    body: str
    action: Action | None = None
    not_before: datetime | None = None
    urgent: bool = False
    # extra choices offered as buttons where the backend can (label, action)
    buttons: tuple[tuple[str, Action], ...] = ()


def dream_counts_text(counts: Mapping[str, int]) -> str:
    """ "2 consolidated, 1 promoted" (known kinds in a fixed order, zeros left out)."""
    keys = {
        "consolidated": N_("count.consolidated"),
        "corrected": N_("count.corrected"),
        "promoted": N_("count.promoted"),
        "represented": N_("count.represented"),
        "recorded": N_("count.recorded"),
    }
    parts = [tr(keys[k], n=counts[k]) for k in KINDS if counts.get(k)]
    return ", ".join(parts) if parts else tr("notify.dream.no_changes")


REVIEW_KINDS = {
    "change": N_("count.review_change"),
    "disagreement": N_("count.review_disagreement"),
    "proposal": N_("count.review_proposal"),
}


def review_counts_text(waiting: Mapping[str, int]) -> str:
    """ "3 changes, 1 proposal": what a review note still waits for (its open items)."""
    parts = [tr(key, n=waiting[k]) for k, key in REVIEW_KINDS.items() if waiting.get(k)]
    return ", ".join(parts) if parts else tr("notify.review.nothing")


def recount_review(n: Notification, waiting: Mapping[str, int]) -> Notification:
    """A review note's notification with what the note waits for now (a notification held
    until the morning is told with the counts of the morning, not of the night: items
    decided on the phone meanwhile are not counted)."""
    a = n.action
    if a is None or a.kind != OPEN_REVIEW_NOTE or not a.detail:
        return n
    counts = review_counts_text(waiting)
    return replace(n, title=tr("notify.review.title", date=a.detail, counts=counts))


def _llm_failed(counts: Mapping[str, int]) -> str:
    """A line when the model distiller failed (the dream used the rules only, or lost some
    batches): the person configured a model and should know it did not answer."""
    n = counts.get("llm_failed") or 0
    return "\n" + tr("notify.dream.llm_failed", n=n) if n else ""


def dream_not_before(
    now: datetime, morning_time: str, night: datetime | None = None
) -> datetime | None:
    """When to tell of a dream report that lands `now`: None (at once), or today's morning time.

    A report is held only when it lands in the night: before today's `morning_time` (the
    desktop's local time) and after the night's dream time `night` (the most recent scheduled
    dream time at or before `now`, any time zone), when that dream time came after yesterday's
    morning. So a report landing after the morning time, or before tonight's dream time (a
    dream someone ran by hand to try it, late in the evening), is told when it lands; a
    `morning_time` of 00:00 never holds anything. `night` None (the schedule is unknown): every
    report landing before the morning time is held.
    """
    try:
        at = parse_hhmm(morning_time)
    except (
        ValueError
    ):  # the config schema refuses it; a hand-built NotifySettings may still hold it
        at = time(8, 0)
    morning = now.replace(hour=at.hour, minute=at.minute, second=0, microsecond=0)
    if now >= morning:
        return None
    if night is not None and now.tzinfo is None and night.tzinfo is not None:
        night = night.astimezone().replace(tzinfo=None)  # a naive `now` is the local time
    if night is not None and night <= morning - timedelta(days=1):
        return None  # the last dream time was yesterday's day: this report is not the night's
    return morning


def dream_title(date: str, ran_on: str, counts: Mapping[str, int]) -> str:
    """ "Dream of 2026-11-28: 4 consolidated, 1 promoted": the night and what it did."""
    key = N_("notify.dream.title_local") if ran_on == "local" else N_("notify.dream.title")
    return tr(key, date=date, counts=dream_counts_text(counts))


def dream_now_started() -> Notification:
    """ "Dream now" was pressed: said at once (a dream can take a while)."""
    return Notification(
        key=f"dream-now:{time_ns()}",
        title=tr("notify.dream_now.title"),
        body=tr("notify.dream_now.body"),
    )


def dream_now_finished(
    report: str | None, date: str, ran_on: str, counts: Mapping[str, int]
) -> Notification:
    """The dream started by hand ended: what it did (click: review), or that another device
    dreams tonight (`report` None: it holds the night's lease)."""
    if report is None:
        return Notification(
            key=f"dream-now-skipped:{time_ns()}",
            title=tr("notify.dream_now.skipped_title"),
            body=tr("notify.dream_now.skipped_body"),
        )
    return Notification(
        key=f"dream-now-done:{date}:{time_ns()}",
        title=dream_title(date, ran_on, counts),
        body=tr("notify.dream.body_hint"),
        action=Action(OPEN_REVIEW, report),
    )


def _one(
    event: EngineEvent, cfg: NotifySettings, now: datetime, night: datetime | None
) -> Notification | None:
    if isinstance(event, DreamLanded):
        if not cfg.dream_landed:
            return None
        if event.review is not None:  # the night's review note: its open items, and it
            return Notification(
                key=f"dream:{event.date}",
                title=tr(
                    "notify.review.title",
                    date=event.date,
                    counts=review_counts_text(event.waiting or {}),
                ),
                body=tr("notify.review.body") + _llm_failed(event.counts),
                action=Action(OPEN_REVIEW_NOTE, event.review, detail=event.date),
                not_before=dream_not_before(now, cfg.morning_time, night),
                buttons=((tr("notify.review.obsidian"), Action(OPEN_NOTE, event.review)),),
            )
        return Notification(
            key=f"dream:{event.date}",
            title=dream_title(event.date, event.ran_on, event.counts),
            body=tr("notify.dream.body_hint") + _llm_failed(event.counts),
            action=Action(OPEN_REVIEW, str(event.report)),
            not_before=dream_not_before(now, cfg.morning_time, night),
        )
    if isinstance(event, ConflictsCreated):
        if not cfg.conflicts or not event.paths:
            return None
        names = [p.name for p in event.paths[:3]]
        more = len(event.paths) - len(names)
        body = "\n".join(names) + (("\n" + tr("notify.more", n=more)) if more else "")
        return Notification(
            key="conflicts:" + "|".join(sorted(str(p) for p in event.paths)),
            title=tr("notify.conflicts.title", n=len(event.paths)),
            body=body,
            action=Action(OPEN_CONFLICTS, str(event.paths[0])),
        )
    if isinstance(event, ChangesHeld):
        if not event.paths:
            return None  # not optional: an agent tried to change how Obsidian runs
        listed = ", ".join(event.paths[:3]) + ("…" if len(event.paths) > 3 else "")
        return Notification(
            key="held:" + "|".join(sorted(event.paths)),
            title=tr("notify.held.title", n=len(event.paths)),
            body=tr("notify.held.body", paths=listed),
            action=Action(SHOW_MAIN),
            urgent=True,
        )
    if isinstance(event, MassDeleteTripped):
        if not cfg.mass_delete:
            return None
        return Notification(
            key=f"mass_delete:{event.deletions}/{event.total}",
            title=tr("notify.mass_delete.title"),
            body=tr("notify.mass_delete.body", n=event.deletions, total=event.total),
            action=Action(SHOW_MAIN),
            urgent=True,
        )
    if isinstance(event, RelayUnreachable):
        minutes = cfg.offline_minutes
        away = now - event.since
        if away < timedelta(minutes=minutes):
            return None
        return Notification(
            key=f"offline:{event.since.isoformat()}",
            title=tr("notify.offline.title"),
            body=tr("notify.offline.body", n=int(away.total_seconds() // 60)),
            action=Action(SHOW_MAIN),
        )
    if isinstance(event, KeyringProblem):
        # not optional: without the keyring the vault key cannot be kept safely
        return Notification(
            key=f"keyring:{event.message}",
            title=tr("notify.keyring.title"),
            body=event.message,
            action=Action(OPEN_SETTINGS, event.settings_tab),
            urgent=True,
        )
    if isinstance(event, LocalDreamRan):
        if not cfg.local_dream:
            return None
        why = (
            N_("notify.local_dream.body_offline")
            if event.offline
            else N_("notify.local_dream.body")
        )
        # The same key as the report's own DreamLanded: one notification for the night.
        return Notification(
            key=f"dream:{event.date}",
            title=dream_title(event.date, "local", event.counts),
            body=tr(why, date=event.date),
            action=Action(OPEN_REVIEW, str(event.report)) if event.report else None,
            not_before=dream_not_before(now, cfg.morning_time, night),
        )
    if isinstance(event, SecretFound):
        if not cfg.secrets:
            return None
        where = event.note + (f":{event.line}" if event.line else "")
        return Notification(
            key=f"secret:{event.note}:{event.kind}:{event.line}",
            title=tr("notify.secret.title"),
            body=tr("notify.secret.body", where=where, kind=event.kind),
            action=Action(OPEN_NOTE, event.note),
            urgent=True,
            buttons=(
                (
                    (
                        tr("notify.secret.move"),
                        Action(MOVE_SECRET, event.note, event.line, event.kind),
                    ),
                )
                if event.line
                else ()
            ),
        )
    return None


def notifications_for(
    events: Iterable[EngineEvent],
    cfg: NotifySettings,
    now: datetime,
    night: datetime | None = None,
) -> list[Notification]:
    """The notifications these events call for under the `[notify]` settings; `night` is the
    night's dream time (see `dream_not_before`)."""
    out = []
    for event in events:
        n = _one(event, cfg, now, night)
        if n is not None:
            out.append(n)
    return out
