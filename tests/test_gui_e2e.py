"""The morning loop, for real (#13): what a person does, end to end.

A relay on loopback (`companion relay serve`); an agent device with a sample vault and a
Hermes `state.db` in Hermes's own format runs `companion dream`; a laptop joined with
`companion init` runs the tray app (Qt offscreen in this process; a real `companion` process
on Xvfb with a tray host for Quit). The morning notification names the dream's date and what
its review note waits for; the review window lists the note's items with diffs from the
relay's history and the dream's sources; reverting one change ticks its line, and the round
carries it out to the server's copy; Settings show the relay and the
device the laptop joined as; Quit ends the app (exit 0) with the review and settings windows
open; a broken config shows in the app, not as a traceback, and `doctor` names it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from companion.config import load_config
from companion.dream.report import read_report
from companion.gui.app import CompanionApp, create_engine
from companion.gui.notify_policy import OPEN_REVIEW_NOTE, review_counts_text
from companion.gui.sync_facade import SyncFacade
from companion.review import desk
from tests.conftest import wait_for
from tests.desktop_world import DesktopWorld

# A hang guard, not a time claim (no timed assertions in tests): a Quit that does not end the
# process within it has hung. How fast Quit is belongs in a benchmark.
QUIT_HANG_S = 60.0


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DesktopWorld]:
    with DesktopWorld(tmp_path_factory.mktemp("morning")) as w:
        w.server_report = w.dream()  # type: ignore[attr-defined]
        yield w


def server_synced(world: DesktopWorld, check) -> bool:  # noqa: ANN001
    """One `companion sync` on the server, then `check()`: polled with a deadline."""
    world.agent_cli("sync", str(world.agent_vault), check=False)
    return bool(check())


def test_the_morning_on_the_laptop(qtbot, world: DesktopWorld) -> None:
    report = read_report(world.server_report)  # type: ignore[attr-defined]
    notes = [c for c in report.changes if c.note not in ("MEMORY.md", "USER.md")]
    assert report.counts["consolidated"] >= 2 and report.counts["promoted"] >= 1

    config = load_config(world.laptop_paths(), lenient=True)
    assert config.get("vault", "path") == os.path.realpath(world.laptop_vault)  # from init
    app = CompanionApp(config, create_engine(config), tray_available=True,
                       use_desktop_notifications=False)  # fmt: skip
    assert isinstance(app.worker.engine, SyncFacade)
    app.start()
    try:
        # -- the notification: the night's date and what the dream did, once the report
        # arrives by sync
        qtbot.waitUntil(
            lambda: any(n.key == f"dream:{report.date}" for _, n in app.notifier.shown),
            timeout=60_000,
        )
        note = next(n for _, n in app.notifier.shown if n.key == f"dream:{report.date}")
        assert report.date in note.title and "ledger" not in note.title
        # the counts are what the night's review note still waits for
        rel = f"review/{report.date}.md"
        waiting = desk.open_counts(world.laptop_vault, rel)
        assert waiting.get("change", 0) >= 2
        assert review_counts_text(waiting) in note.title

        # -- clicking it opens the review: the note's items, each change's diff from the
        # relay's history and what the dream's report says of it
        assert note.action is not None and note.action.kind == OPEN_REVIEW_NOTE
        assert note.action.target == rel
        app.run_action(note.action)
        review = app.review_note
        assert review is not None and review.isVisible()
        qtbot.waitUntil(lambda: review.view is not None and review.view.attested, timeout=60_000)
        assert review.view is not None
        files = {it.file for it in review.view.items if it.kind == "change"}
        assert {c.note for c in notes} <= files
        created = next(  # a lesson from the agent's transcript, in a note the dream created
            c
            for c in notes
            if c.before is None
            and c.kind == "consolidated"
            and str(c.provenance[0]["source"]).startswith("hermes:")
        )
        item = next(it for it in review.view.items if it.file == created.note)
        review.select(item.id)
        shown = review.detail.toPlainText()
        added = [ln for ln in shown.splitlines() if ln.startswith("+ - ")]
        assert added and "src: hermes:" in added[0]
        assert " ".join(created.provenance[0]["quote"].split())[:60] in " ".join(shown.split())

        # -- revert it: the line is ticked, the round carries it out, the server follows
        button = review.button(item.id, "revert")
        assert button is not None and button.isEnabled()
        button.click()
        qtbot.waitUntil(lambda: review.row(item.id)[2].startswith("reverted "), timeout=60_000)
        assert review.row(item.id)[2].endswith(f" from {world.laptop_name}")
        assert not (world.laptop_vault / created.note).exists()
        wait_for(
            lambda: server_synced(world, lambda: not (world.agent_vault / created.note).exists()),
            60,
            "the reverted note to leave the server",
        )

        # -- Settings: the relay and the device this laptop joined as
        settings = app.open_settings("sync")
        assert world.relay is not None
        assert settings.relay_url.text() == world.relay.url
        assert settings.device_name.text() == world.laptop_name
        assert settings.joined.isVisibleTo(settings) and not settings.join_button.isVisibleTo(
            settings
        )
    finally:
        app.quit()


def test_quit_with_review_and_settings_open_exits(
    world: DesktopWorld, x_desktop: dict[str, str]
) -> None:
    """A real `companion` on a real X screen with a tray: the tray menu's Quit command (sent
    through the single-instance socket) ends the process cleanly (exit 0, no traceback) while
    the main, review and settings windows are open; a process still there after the hang
    guard has hung."""
    from PySide6.QtCore import QCoreApplication

    from companion.gui.single import SingleInstance, server_name

    paths = world.laptop_paths()
    log = paths.log_file
    start = log.stat().st_size if log.exists() else 0

    def logged(text: str) -> bool:
        return log.exists() and text in log.read_text(encoding="utf-8")[start:]

    proc = subprocess.Popen(
        [sys.executable, "-m", "companion"],
        env=world.env(world.laptop_home, **x_desktop),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    quit_done = False
    try:
        _ = QCoreApplication.instance() or QCoreApplication([])
        probe = SingleInstance(server_name(paths), paths.state_dir / "probe.lock")
        wait_for(lambda: proc.poll() is not None or logged("tray app started"), 60, "the app")
        assert proc.poll() is None, proc.communicate()
        assert logged("tray available: True")
        for message in ("show", "review", "settings"):
            assert probe.send(message)
        try:  # a hang guard, not a timing claim: under a loaded CI a first window can be slow
            wait_for(
                lambda: logged("review window opened") and logged("settings window opened"),
                120,
                "the windows",
            )
        except AssertionError as exc:
            tail = log.read_text(encoding="utf-8")[start:][-3000:] if log.exists() else ""
            raise AssertionError(f"{exc}; the app's log since it started:\n{tail}") from None
        assert probe.send("quit")
        proc.wait(timeout=QUIT_HANG_S)
        quit_done = True
    finally:
        if proc.poll() is None:
            proc.kill()
        _out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert quit_done
    assert "Traceback" not in err


def test_a_broken_config_shows_in_the_app_and_doctor_names_it(world: DesktopWorld) -> None:
    config_file = world.laptop_paths().config_file
    good = config_file.read_text(encoding="utf-8")
    assert "[dream]\n" in good
    config_file.write_text(good.replace("[dream]\n", '[dream]\ntime = "25:00"\n', 1), "utf-8")
    log = world.laptop_paths().log_file
    start = log.stat().st_size if log.exists() else 0

    def new_log() -> str:
        return log.read_text(encoding="utf-8")[start:] if log.exists() else ""

    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "companion"],
            env=world.env(world.laptop_home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(
                lambda: proc.poll() is not None or "tray app started" in new_log(), 60, "the app"
            )
            assert proc.poll() is None, proc.communicate()  # it runs, and says what is wrong
            assert new_log().count(f"{config_file}: [dream] time") == 1
            assert "local dream refused" in new_log() or "configuration problem" in new_log()
        finally:
            proc.terminate()
            _out, err = proc.communicate(timeout=30)
        assert "Traceback" not in err and "Traceback" not in new_log()
        doctor = world.laptop_cli("doctor", "--json", check=False)
        checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
        assert checks["config"]["status"] == "FAIL"
        assert (
            "[dream] time" in checks["config"]["detail"] and "25:00" in checks["config"]["detail"]
        )
    finally:
        config_file.write_text(good, encoding="utf-8")
