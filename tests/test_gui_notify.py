"""Notification policy per config, and the center that shows each one once, on time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from companion.config import NotifySettings
from companion.gui import i18n
from companion.gui.events import (
    ConflictsCreated,
    DreamLanded,
    KeyringProblem,
    LocalDreamRan,
    MassDeleteTripped,
    RelayUnreachable,
    SecretFound,
)
from companion.gui.notify import NotificationCenter, Notifier
from companion.gui.notify_policy import (
    OPEN_CONFLICTS,
    OPEN_NOTE,
    OPEN_REVIEW,
    OPEN_SETTINGS,
    Action,
    Notification,
    dream_not_before,
    notifications_for,
)
from tests.notify_probe import start_private_bus

NOW = datetime(2025, 11, 28, 9, 0)
REPORT = Path("/v/.companion/dreams/2025-11-28.json")


def cfg(**changes) -> NotifySettings:
    return replace(NotifySettings(), **changes)


ALL_EVENTS = [
    DreamLanded(REPORT, "2025-11-28", "server", {"consolidated": 2, "promoted": 1}),
    ConflictsCreated((Path("/v/a (conflict x 2025-11-28 0900).md"),)),
    MassDeleteTripped(120, 200),
    RelayUnreachable(NOW - timedelta(minutes=45)),
    KeyringProblem("The keyring is locked."),
    LocalDreamRan("2025-11-28", REPORT),
    SecretFound("knowledge/AWS.md", "AWS access key", 12),
]


def test_everything_on_by_default() -> None:
    got = notifications_for(ALL_EVENTS, cfg(), NOW)
    assert len(got) == 7
    dream = got[0]
    assert dream.title == "Dream of 2025-11-28: 2 consolidated, 1 promoted"
    assert dream.body == "Click to review the changes."
    assert dream.action == Action(OPEN_REVIEW, str(REPORT))
    assert got[1].title == "1 conflict copy created" and got[1].action.kind == OPEN_CONFLICTS
    assert "120 of 200" in got[2].body and got[2].urgent
    assert "45 minutes" in got[3].body
    assert got[4].action == Action(OPEN_SETTINGS, "keys")
    assert got[6].action == Action(OPEN_NOTE, "knowledge/AWS.md")
    assert "knowledge/AWS.md:12" in got[6].body and "AWS access key" in got[6].body


@pytest.mark.parametrize(
    ("switch", "event_index"),
    [
        ("dream_landed", 0),
        ("conflicts", 1),
        ("mass_delete", 2),
        ("local_dream", 5),
        ("secrets", 6),
    ],
)
def test_each_switch_silences_only_its_event(switch: str, event_index: int) -> None:
    got = notifications_for(ALL_EVENTS, cfg(**{switch: False}), NOW)
    assert len(got) == 6
    silenced = notifications_for([ALL_EVENTS[event_index]], cfg(**{switch: False}), NOW)
    assert silenced == []


def test_keyring_problems_are_always_told() -> None:
    off = cfg(
        **{k: False for k in ("dream_landed", "conflicts", "mass_delete", "secrets", "local_dream")}
    )
    assert [n.title for n in notifications_for(ALL_EVENTS, off, NOW)] == [
        "Relay unreachable",
        "Keyring problem",
    ]


def test_offline_waits_for_offline_minutes() -> None:
    since = NOW - timedelta(minutes=20)
    assert notifications_for([RelayUnreachable(since)], cfg(offline_minutes=30), NOW) == []
    got = notifications_for([RelayUnreachable(since)], cfg(offline_minutes=15), NOW)
    assert len(got) == 1 and "20 minutes" in got[0].body


def test_dream_waits_for_the_morning_time() -> None:
    event = [ALL_EVENTS[0]]
    early = datetime(2025, 11, 28, 2, 40)
    (n,) = notifications_for(event, cfg(morning_time="08:00"), early)
    assert n.not_before == datetime(2025, 11, 28, 8, 0)
    (n,) = notifications_for(event, cfg(morning_time="08:00"), datetime(2025, 11, 28, 8, 0))
    assert n.not_before is None


MADRID = ZoneInfo("Europe/Madrid")


def at(day: int, hhmm: str, tz=UTC) -> datetime:
    hour, minute = map(int, hhmm.split(":"))
    return datetime(2025, 11, day, hour, minute, tzinfo=tz)


@pytest.mark.parametrize(
    ("lands", "night", "morning", "held_until"),
    [
        # the night's dream (02:00 Madrid = 01:00 UTC) lands while the person sleeps: morning
        (at(28, "02:40"), at(28, "02:00", MADRID), "08:00", at(28, "08:00")),
        (at(28, "07:59"), at(28, "02:00", MADRID), "08:00", at(28, "08:00")),
        # a dream time before midnight: the night started yesterday
        (at(28, "00:30"), at(27, "23:00"), "08:00", at(28, "08:00")),
        # after the morning time: at once
        (at(28, "08:00"), at(28, "02:00", MADRID), "08:00", None),
        (at(28, "10:15"), at(28, "02:00", MADRID), "08:00", None),
        # set up in the evening and tried: at once, before midnight and after it, as long as
        # tonight's dream time has not come (the last one was yesterday's)
        (at(28, "21:30"), at(28, "02:00", MADRID), "08:00", None),
        (at(29, "00:40"), at(28, "02:00", MADRID), "08:00", None),
        (at(29, "00:59"), at(28, "02:00", MADRID), "08:00", None),
        # a dream time after the morning time: its report is never the night's
        (at(28, "07:00"), at(27, "09:00"), "08:00", at(28, "08:00")),
        (at(28, "07:00"), at(27, "08:00"), "08:00", None),
        # 00:00 never holds anything; an unknown schedule holds what lands before the morning
        (at(28, "02:40"), at(28, "02:00", MADRID), "00:00", None),
        (at(28, "02:40"), None, "08:00", at(28, "08:00")),
        (at(28, "21:30"), None, "08:00", None),
        # a time the schema would refuse: the default 08:00
        (at(28, "02:40"), at(28, "02:00", MADRID), "8 am", at(28, "08:00")),
    ],
)
def test_when_a_dream_report_is_told(
    lands: datetime, night: datetime | None, morning: str, held_until: datetime | None
) -> None:
    """#39 finding 6: only the night's dream waits for `morning_time`; a report that lands
    after it, or a dream tried in the evening before tonight's dream time, is told at once."""
    assert dream_not_before(lands, morning, night) == held_until
    (n,) = notifications_for([ALL_EVENTS[0]], cfg(morning_time=morning), lands, night)
    assert n.not_before == held_until
    (local,) = notifications_for([ALL_EVENTS[5]], cfg(morning_time=morning), lands, night)
    assert local.not_before == held_until


def test_no_changes_and_local_titles() -> None:
    (n,) = notifications_for([DreamLanded(REPORT, "2025-11-28", "local", {})], cfg(), NOW)
    assert n.title == "Dream of 2025-11-28 on this computer: nothing changed"


def test_spanish() -> None:
    i18n.set_language("es")
    try:
        got = notifications_for(ALL_EVENTS[:2], cfg(), NOW)
        assert got[0].title == "Sueño del 2025-11-28: 2 consolidadas, 1 promovida"
        assert got[0].body == "Haz clic para revisar los cambios."
        assert got[1].title == "Se creó 1 copia en conflicto"
    finally:
        i18n.set_language("en")


# ---- showing -------------------------------------------------------------------------------


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_center_shows_once_and_defers(qtbot, tmp_path: Path) -> None:
    notifier = Notifier(None, use_desktop=False)
    window_texts = []
    notifier.fallback_text.connect(lambda t, b: window_texts.append(t))
    clock = Clock(datetime(2025, 11, 28, 3, 0))
    state = tmp_path / "shown.json"
    center = NotificationCenter(notifier, state, clock=clock)
    later = Notification("dream:x", "Dream", "b", not_before=datetime(2025, 11, 28, 8, 0))
    now = Notification("conflicts:y", "Conflict", "b")
    center.submit([later, now, now])
    assert window_texts == ["Conflict"]
    center.submit([later])  # already pending: not queued twice
    clock.now = datetime(2025, 11, 28, 8, 0)
    center.flush()
    assert window_texts == ["Conflict", "Dream"]
    center.submit([later, now])
    assert window_texts == ["Conflict", "Dream"]
    # remembered across restarts
    again = NotificationCenter(notifier, state, clock=clock)
    again.submit([now])
    assert window_texts == ["Conflict", "Dream"]


def test_tray_balloon_fallback_and_click(qtbot) -> None:
    from PySide6.QtWidgets import QSystemTrayIcon

    tray = QSystemTrayIcon()
    tray.show()
    notifier = Notifier(tray, use_desktop=False)
    action = Action(OPEN_REVIEW, str(REPORT))
    notifier.show(Notification("k", "Dream landed", "2 consolidated", action))
    assert notifier.shown[-1][0] == "tray"
    with qtbot.waitSignal(notifier.clicked) as clicked:
        tray.messageClicked.emit()
    assert clicked.args == [action]
    tray.hide()


def test_desktop_backend_falls_back_when_not_confirmed(qtbot, monkeypatch) -> None:
    import companion.gui.notify as notify

    monkeypatch.setattr(notify, "DISPATCH_TIMEOUT_MS", 50)
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    notifier = Notifier(None, use_desktop=True)  # no bus here: never dispatched
    with qtbot.waitSignal(notifier.fallback_text, timeout=5000) as shown:
        notifier.show(Notification("k", "Title", "Body"))
    assert shown.args == ["Title", "Body"]
    assert notifier.use_desktop is False
    notifier.close()


@pytest.fixture
def bus_without_notifications(tmp_path: Path, monkeypatch) -> Iterator[str]:
    proc, address = start_private_bus(tmp_path / "bus")
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
    try:
        yield address
    finally:
        proc.terminate()
        proc.wait(10)


def test_no_notification_service_is_one_log_line(
    qtbot, bus_without_notifications: str, app_log, capfd
) -> None:
    """#39 finding 6: a session bus with no notification service. The app falls back to the
    tray (here: the window) and says so in one log line, with no traceback (desktop-notifier
    logged its failure with the whole traceback); later notifications go straight there."""
    notifier = Notifier(None, use_desktop=True)
    try:
        with qtbot.waitSignal(notifier.fallback_text, timeout=10_000) as shown:
            notifier.show(Notification("k", "Title", "Body"))
        assert shown.args == ["Title", "Body"]
        assert notifier.use_desktop is False
        notifier.show(Notification("k2", "Second", "Body"))
        assert [(b, n.title) for b, n in notifier.shown] == [
            ("window", "Title"),
            ("window", "Second"),
        ]
    finally:
        notifier.close()
    said = [r for r in app_log.records if "notification" in r.getMessage().lower()]
    about_backend = [r for r in said if "unavailable" in r.getMessage()]
    assert len(about_backend) == 1, [r.getMessage() for r in said]
    assert "org.freedesktop.Notifications" in about_backend[0].getMessage()
    assert "\n" not in about_backend[0].getMessage()
    assert [r.getMessage() for r in app_log.records if r.exc_info] == []
    assert all(not r.name.startswith("desktop_notifier") for r in app_log.records)
    assert "Traceback" not in capfd.readouterr().err


def test_backend_detection() -> None:
    from companion.gui.notify import desktop_backend_available

    assert desktop_backend_available({"DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"}) is True
    assert desktop_backend_available({"XDG_RUNTIME_DIR": "/nonexistent-dir"}) is False


def test_a_local_dream_is_one_notification_for_the_night() -> None:
    """The local fallback says why it dreamed; the report's own DreamLanded is not shown too."""
    late = LocalDreamRan("2025-11-28", REPORT, {"consolidated": 2})
    offline = LocalDreamRan("2025-11-28", REPORT, {}, offline=True)
    (n_late,) = notifications_for([late], cfg(), NOW)
    (n_off,) = notifications_for([offline], cfg(), NOW)
    assert n_late.title == "Dream of 2025-11-28 on this computer: 2 consolidated"
    assert "by the grace time" in n_late.body
    assert "could not be reached" in n_off.body and "nothing changed" in n_off.title
    landed = notifications_for([DreamLanded(REPORT, "2025-11-28", "local", {})], cfg(), NOW)
    assert n_late.key == landed[0].key == "dream:2025-11-28"
    early = datetime(2025, 11, 28, 4, 1)  # landed at 04:01: told at the morning time
    (deferred,) = notifications_for([late], cfg(morning_time="08:00"), early)
    assert deferred.not_before == datetime(2025, 11, 28, 8, 0)


def test_the_dream_with_its_review_note_counts_and_opens_the_note() -> None:
    from companion.gui.notify_policy import OPEN_REVIEW_NOTE

    event = replace(
        ALL_EVENTS[0],
        review="review/2025-11-28.md",
        waiting={"change": 3, "proposal": 1},
    )
    (n,) = notifications_for([event], cfg(), NOW)
    assert n.key == "dream:2025-11-28"  # one notification for the night, as before
    assert n.title == "Dream of 2025-11-28: 3 changes, 1 proposal to review"
    assert n.action == Action(OPEN_REVIEW_NOTE, "review/2025-11-28.md", detail="2025-11-28")
    assert n.buttons == (("Open in Obsidian", Action(OPEN_NOTE, "review/2025-11-28.md")),)
    (done,) = notifications_for([replace(event, waiting={})], cfg(), NOW)
    assert done.title == "Dream of 2025-11-28: nothing to review"
    try:
        i18n.set_language("es")
        (es,) = notifications_for([event], cfg(), NOW)
        assert es.title == "Sueño del 2025-11-28: 3 cambios, 1 propuesta por revisar"
        assert es.buttons[0][0] == "Abrir en Obsidian"
    finally:
        i18n.set_language("en")


def test_a_held_review_notification_counts_the_morning_not_the_night(qtbot, tmp_path) -> None:
    """Items decided on the phone before the morning time are not counted when it is told."""
    from companion.gui.notify_policy import recount_review

    event = replace(ALL_EVENTS[0], review="review/2025-11-28.md", waiting={"change": 3})
    early = datetime(2025, 11, 28, 3, 0)
    (held,) = notifications_for([event], cfg(morning_time="08:00"), early)
    assert held.not_before == datetime(2025, 11, 28, 8, 0)
    waiting = {"change": 3}
    notifier = Notifier(None, use_desktop=False)
    titles: list[str] = []
    notifier.fallback_text.connect(lambda t, _b: titles.append(t))
    clock = Clock(early)
    center = NotificationCenter(
        notifier, None, clock=clock, prepare=lambda n: recount_review(n, waiting)
    )
    center.submit([held])
    assert titles == []
    waiting = {"change": 1}  # two decided on another device meanwhile
    clock.now = datetime(2025, 11, 28, 8, 0)
    center.flush()
    assert titles == ["Dream of 2025-11-28: 1 change to review"]
    other = Notification("conflicts:z", "Conflict", "b")
    assert recount_review(other, {}) is other
