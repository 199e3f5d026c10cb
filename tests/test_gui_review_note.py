"""The tray app's morning review (issue 41, item 5): the review note's items, decided line by
line as in Obsidian, through a real relay.

A laptop (human) runs the app's engine (`SyncFacade`: the sync daemon with the review's round
work); a server (agent) writes a note of its own and dreams with every memory change proposed
(the world of tests/test_review_e2e.py); a phone (human) is another device the person uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from PySide6.QtCore import QUrl

from companion.gui import i18n
from companion.gui.app import CompanionApp
from companion.gui.notify_policy import OPEN_NOTE, OPEN_REVIEW_NOTE
from companion.gui.review_note import ReviewNoteWindow
from companion.gui.sync_facade import SyncFacade
from companion.review import note as notes
from companion.review.rounds import install
from tests.syncharness import Device, cluster
from tests.test_review_e2e import AGENT_NOTE, REVIEW, _text, _world

FAST = {"rescan_interval_s": None, "poll_wait_s": 2.0}
# the desktop's local time, as the app's clock is
MORNING = datetime(2026, 11, 29, 9, 30).astimezone()  # after the morning time: told at once
WAIT_MS = 60_000


@dataclass
class World:
    laptop: Device
    server: Device
    phone: Device
    app: CompanionApp
    opened: list[QUrl]
    clock: Clock


@pytest.fixture(autouse=True)
def english() -> Iterator[None]:
    i18n.set_language("en")
    yield
    i18n.set_language("en")


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def world(qtbot, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[World]:  # noqa: ANN001
    """The app starts at MORNING, or at the time a test gives (`indirect` parameter)."""
    clock = Clock(getattr(request, "param", MORNING))
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c)
        phone = c.add_device("phone", "human")
        install(phone.engine())
        phone.sync()
        laptop.restart()  # the app's engine takes the laptop's copy over
        engine = SyncFacade(
            laptop.vault, laptop.config, engine_options={"settle_ns": 0}, daemon_options=FAST
        )
        assert engine.ready(15), "the laptop's first round did not finish"
        app = CompanionApp(
            laptop.config,
            engine,
            tray_available=False,
            use_desktop_notifications=False,
            dream_clock=False,
            now=clock,
        )
        opened: list[QUrl] = []
        app.actions._open_url = lambda url: opened.append(url) or True
        app.start()
        try:
            yield World(laptop, server, phone, app, opened, clock)
        finally:
            app.shutdown()


def _change_of(text: str, rel: str) -> str:
    block = text.split(f"### [[{rel[:-3]}]]")[1].split("### ")[0]
    [item] = {ln.id for ln in notes.parse_lines(block) if ln.id.startswith("c-")}
    return item


def _window(qtbot, w: World) -> ReviewNoteWindow:  # noqa: ANN001
    window = w.app.open_review_note()
    qtbot.waitUntil(lambda: window.view is not None and window.view.attested, timeout=WAIT_MS)
    return window


def test_the_window_lists_the_items_of_the_night(qtbot, world: World) -> None:
    window = _window(qtbot, world)
    text = _text(world.laptop)
    assert window.note == REVIEW
    assert window.header.text() == "Review of the night of 2026-11-29"
    assert window.counts.text() == "Waiting for you: 4 changes, 1 proposal."
    ids = [ln.id for ln in notes.parse_lines(text) if not ln.id.startswith("n-")]
    listed = [
        window.items.topLevelItem(i).data(0, 256) for i in range(window.items.topLevelItemCount())
    ]
    assert listed == list(dict.fromkeys(ids))  # every item of the note, in its order
    scratch = _change_of(text, AGENT_NOTE)
    assert window.row(scratch) == ["Change", AGENT_NOTE, "waiting for you", ""]
    proposal = next(i for i in ids if i.startswith("p-"))
    assert window.row(proposal)[:3] == ["Proposal", "MEMORY.md", "waiting for you"]
    assert window.button(proposal, "apply") is not None
    assert window.button(proposal, "drop") is not None
    # the change as the relay's history holds it: the agent's new note, every line added
    window.select(scratch)
    assert "+ The agent wrote this on its own." in window.detail.toPlainText()
    assert window.batch["revert"].isEnabled() and window.batch["apply"].isEnabled()


def test_revert_ticks_that_line_and_the_round_carries_it_out(qtbot, world: World) -> None:
    window = _window(qtbot, world)
    before = _text(world.laptop)
    item = _change_of(before, AGENT_NOTE)
    button = window.button(item, "revert")
    assert button is not None and button.isEnabled()
    with qtbot.waitSignal(window.decided, timeout=WAIT_MS):
        button.click()
    qtbot.waitUntil(lambda: window.row(item)[2].startswith("reverted "), timeout=WAIT_MS)
    state = window.row(item)
    assert state[2].endswith(" from laptop") and state[3] == "laptop"
    assert not window.button(item, "revert").isEnabled()  # decided: nothing more to do
    assert world.laptop.read(AGENT_NOTE) is None  # the agent's new note, reverted: gone
    after = _text(world.laptop)
    changed = [(a, b) for a, b in zip(before.split("\n"), after.split("\n"), strict=True) if a != b]
    counts = [(a, b) for a, b in changed if a.startswith("Waiting for you")]
    assert (
        counts
        == [
            ("Waiting for you: 4 changes, 1 proposal.",) * 1
            + ("Waiting for you: 3 changes, 1 proposal.",)
        ]
        * 2
    )
    changed = [c for c in changed if c not in counts]
    assert len(changed) == 1  # exactly that line: ticked, and its outcome (and the counts)
    old, new = changed[0]
    assert old == f"- [ ] Revert this change `{item}/r`"
    assert new.startswith(f"- [x] Revert this change `{item}/r` — reverted ")
    assert window.counts.text() == "Waiting for you: 3 changes, 1 proposal."
    world.server.sync()
    assert world.server.read(AGENT_NOTE) is None  # and on the agent's copy


def test_a_decision_on_another_device_shows_decided_after_a_round(qtbot, world: World) -> None:
    window = _window(qtbot, world)
    rtc = _change_of(_text(world.phone), "knowledge/RTC.md")
    assert window.row(rtc)[2] == "waiting for you"
    world.phone.write(REVIEW, notes.set_ticked(_text(world.phone), (rtc, "r")))
    world.phone.sync()  # the phone ticked it: the phone carries it out
    assert world.phone.read("knowledge/RTC.md") is None
    # nothing asked of the laptop: its daemon's next round brings the note, and the window
    # reads its items again
    qtbot.waitUntil(lambda: window.row(rtc)[2].startswith("reverted "), timeout=WAIT_MS)
    assert window.row(rtc)[2].endswith(" from phone") and window.row(rtc)[3] == "phone"
    assert window.button(rtc, "revert") is not None
    assert not window.button(rtc, "revert").isEnabled()


def test_the_morning_notification_opens_the_review(qtbot, world: World) -> None:
    app = world.app
    key = "dream:2026-11-29"
    qtbot.waitUntil(lambda: any(n.key == key for _, n in app.notifier.shown), timeout=WAIT_MS)
    note = next(n for _, n in app.notifier.shown if n.key == key)
    assert note.title == "Dream of 2026-11-29: 4 changes, 1 proposal to review"
    assert note.action is not None and note.action.kind == OPEN_REVIEW_NOTE
    assert note.action.target == REVIEW
    [(label, obsidian)] = note.buttons
    assert label == "Open in Obsidian" and obsidian.kind == OPEN_NOTE
    app.run_action(note.action)
    window = app.review_note
    assert window is not None and window.isVisible()
    qtbot.waitUntil(lambda: window.view is not None and window.view.attested, timeout=WAIT_MS)
    assert window.note == REVIEW and window.items.topLevelItemCount() == 5
    app.run_action(obsidian)
    assert world.opened and world.opened[-1].scheme() == "obsidian"
    assert world.opened[-1].toString().endswith("2026-11-29.md")
    # the tray's "last report" and a second start's "review" open the same window
    report = world.laptop.vault / ".companion" / "dreams" / "2026-11-29.json"
    assert app.open_review(report) is window


def test_without_the_relay_the_note_alone_and_a_tick_waits(qtbot, tmp_path: Path) -> None:
    """No sync here (or paused): the items come from the note alone, and it says so; a button
    still ticks exactly its line, carried out at the next round."""
    from companion.gui.bridge import EngineWorker
    from companion.gui.facade import IdleEngine
    from tests.test_review import _review

    vault = tmp_path / "vault"
    (vault / "review").mkdir(parents=True)
    before = notes.render(_review())
    (vault / "review" / "2026-11-29.md").write_text(before, encoding="utf-8")
    worker = EngineWorker(IdleEngine(vault))
    opened: list[QUrl] = []
    window = ReviewNoteWindow(worker, lambda: vault, open_url=lambda u: opened.append(u) or True)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.loaded, timeout=WAIT_MS):
        window.show_note(None)
    assert window.note == REVIEW and "from the note alone" in window.source.text()
    item = _review().disagreements[0].id
    assert window.row(item)[:3] == ["Disagreement", "knowledge/Backups.md", "waiting for you"]
    window.select(item)
    shown = window.detail.toPlainText()
    assert "- The prune runs on Saturdays." in shown
    assert "+ The prune runs on Sundays at 02:00." in shown
    with qtbot.waitSignal(window.decided, timeout=WAIT_MS):
        window.button(item, "take").click()
    after = (vault / REVIEW).read_text(encoding="utf-8")
    assert after == notes.set_ticked(before, (item, "t"))
    assert "next sync" in window.message.text()
    qtbot.waitUntil(lambda: window.row(item)[2] == "ticked, waiting to be carried out")
    assert not window.button(item, "keep").isEnabled()
    window.obsidian_button.click()
    assert opened[0].scheme() == "obsidian" and "review%2F2026-11-29.md" in opened[0].toString()
    worker.shutdown()


def test_revert_the_whole_night_asks_first_and_reverts_every_open_change(
    qtbot, world: World
) -> None:
    window = _window(qtbot, world)
    text = _text(world.laptop)
    changes = sorted({ln.id for ln in notes.parse_lines(text) if ln.id.startswith("c-")})
    asked: list[str] = []
    window._confirm = lambda question: asked.append(question) is not None  # "No"
    assert window.decide_night("revert") is False and asked
    assert _text(world.laptop) == text  # nothing ticked
    window._confirm = lambda _question: True
    with qtbot.waitSignal(window.decided, timeout=WAIT_MS):
        assert window.decide_night("revert")
    qtbot.waitUntil(
        lambda: all(window.row(c)[2].startswith("reverted ") for c in changes), timeout=WAIT_MS
    )
    assert world.laptop.read(AGENT_NOTE) is None
    assert not window.batch["revert"].isEnabled()
    assert window.batch["apply"].isEnabled()  # the proposals still wait
    assert window.counts.text() == "Waiting for you: 1 proposal."


def test_switching_notes_ends_on_the_note_asked_last(qtbot, tmp_path: Path) -> None:
    from companion.gui.bridge import EngineWorker
    from companion.gui.facade import IdleEngine
    from tests.test_review import _review

    vault = tmp_path / "vault"
    (vault / "review").mkdir(parents=True)
    for night in ("2026-11-28", "2026-11-29"):
        text = notes.render(_review()).replace("night: 2026-11-29", f"night: {night}")
        (vault / "review" / f"{night}.md").write_text(text, encoding="utf-8")
    worker = EngineWorker(IdleEngine(vault))
    window = ReviewNoteWindow(worker, lambda: vault)
    qtbot.addWidget(window)
    window.show_note("review/2026-11-28.md")
    window.show_note("review/2026-11-29.md")  # while the first read may still run
    qtbot.waitUntil(lambda: window.view is not None and window.view.note == REVIEW)
    qtbot.waitUntil(lambda: not worker.busy("review"))
    assert window.header.text() == "Review of the night of 2026-11-29"
    worker.shutdown()


NIGHT_TIME = datetime(2026, 11, 29, 5, 0).astimezone()  # after the dream, before the morning


@pytest.mark.parametrize("world", [NIGHT_TIME], indirect=True)
def test_a_notification_held_until_morning_counts_what_still_waits(qtbot, world: World) -> None:
    app = world.app
    key = "dream:2026-11-29"
    qtbot.waitUntil(lambda: any(n.key == key for n in app.notifications.pending), timeout=WAIT_MS)
    assert not any(n.key == key for _, n in app.notifier.shown)  # held for the morning
    rtc = _change_of(_text(world.phone), "knowledge/RTC.md")
    world.phone.write(REVIEW, notes.set_ticked(_text(world.phone), (rtc, "r")))
    world.phone.sync()  # decided on the phone before the morning
    qtbot.waitUntil(
        lambda: "reverted " in (world.laptop.read(REVIEW) or b"").decode(), timeout=WAIT_MS
    )
    world.clock.now = MORNING
    app.notifications.flush()
    note = next(n for _, n in app.notifier.shown if n.key == key)
    assert note.title == "Dream of 2026-11-29: 3 changes, 1 proposal to review"


def test_the_agents_log_is_not_what_the_window_lists(qtbot, world: World) -> None:
    """The agent empties its MCP write log and forges one entry under the person's device:
    the window's items are the relay's account, unchanged."""
    import json

    from companion.mcp.writelog import FOLDER as LOG_FOLDER

    window = _window(qtbot, world)
    assert window.view is not None
    before = [(it.id, it.file, it.state) for it in window.view.items]
    log = world.server.vault / LOG_FOLDER
    for f in log.glob("*.jsonl") if log.is_dir() else []:
        f.write_text("")
    forged = {"v": 1, "tool": "write_note", "path": "x.md", "action": "created",
              "message": "approved by the person", "device": "laptop",
              "time": "2026-11-29T01:00:00Z"}  # fmt: skip
    world.server.write(f"{LOG_FOLDER}/2026-11-29.laptop.jsonl", json.dumps(forged) + "\n")
    world.server.sync()
    forged_log = world.laptop.vault / LOG_FOLDER / "2026-11-29.laptop.jsonl"
    qtbot.waitUntil(forged_log.exists, timeout=WAIT_MS)  # the laptop's daemon brought it
    with qtbot.waitSignal(window.loaded, timeout=WAIT_MS):
        window.refresh()
    assert [(it.id, it.file, it.state) for it in window.view.items] == before
    assert all("approved by the person" not in " ".join(it.explanation) for it in window.view.items)
