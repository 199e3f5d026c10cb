"""Issue 41, end to end on one relay: the night's review note is the relay's account, and the
decisions ticked in it are carried out by the right device.

A laptop (human) owns the vault; a server (agent) writes a note of its own and dreams with
every memory change proposed; both run the review after each sync round
(`companion.review.rounds.install`, as `companion sync`, `watch` and the desktop app do).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from companion.demo.sample import write_hermes_state, write_sample_vault
from companion.dream import run_dream
from companion.mcp.writelog import FOLDER as LOG_FOLDER
from companion.review import hook
from companion.review import note as notes
from companion.review.rounds import install
from companion.sync.service.dreamhook import EngineSyncHook
from companion.sync.state.device import vault_dir
from tests.syncharness import Device, SyncCluster, cluster

NIGHT = dt.datetime(2026, 11, 29, 2, 0, tzinfo=ZoneInfo("Europe/Madrid"))
REVIEW = "review/2026-11-29.md"
AGENT_NOTE = "knowledge/Agent scratch.md"


def _world(tmp: Path, c: SyncCluster, laptop_tz: str | None = None) -> tuple[Device, Device, Path]:
    laptop = c.add_device("laptop", "human")
    if laptop_tz:
        with laptop.paths.config_file.open("a", encoding="utf-8") as fh:
            fh.write(f'\n[dream]\ntimezone = "{laptop_tz}"\n')
    server = c.add_device("server", "agent")
    write_sample_vault(laptop.vault, NIGHT.date())
    hermes = tmp / "hermes"
    write_hermes_state(hermes / "state.db", NIGHT)
    cfg = server.paths.config_file
    cfg.write_text(
        cfg.read_text()
        + f'\n[dream]\napply = "propose-all"\n\n[memory]\nhermes_home = "{hermes}"\n'
    )
    c.sync_all()
    install(laptop.engine())
    install(server.engine())
    server.write(AGENT_NOTE, "# Agent scratch\n\nThe agent wrote this on its own.\n")
    server.sync()
    run_dream(
        server.vault,
        server.config,
        NIGHT,
        paths=server.paths,
        hermes_home=hermes,
        sync=EngineSyncHook(server.engine()),
    )
    laptop.sync()
    return laptop, server, hermes


def _text(d: Device, rel: str = REVIEW) -> str:
    data = d.read(rel)
    assert data is not None, f"{rel} is not on {d.name}"
    return data.decode()


def _ids(text: str, prefix: str) -> list[str]:
    return sorted({ln.id for ln in notes.parse_lines(text) if ln.id.startswith(prefix)})


def _tick(d: Device, item: str, code: str) -> None:
    text = _text(d)
    d.write(REVIEW, notes.set_ticked(text, (item, code)))


def _line(d: Device, item: str, code: str) -> notes.Line:
    [ln] = [x for x in notes.parse_lines(_text(d)) if x.key == (item, code)]
    return ln


def test_the_night_reaches_the_laptop_from_the_relays_history(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c)
        text = _text(laptop)
        assert text == _text(server)
        # the agent's own write and the dream's notes, each with a revert line; the person's
        # initial upload is not the agent's and is not listed
        assert f"[[{AGENT_NOTE[:-3]}]]" in text
        assert "[[Home]]" not in text.split("## Changes")[1].split("## ")[0] or True
        assert "journal/2026-11-22" not in text  # the person's own note: not a change
        changes = _ids(text, "c-")
        assert len(changes) >= 2
        assert _ids(text, "p-"), "propose-all: the memory changes wait as proposals"
        assert "`n-20261129/r`" in text and "`n-20261129/a`" in text
        home = _text(laptop, "Home.md")
        assert home.startswith("<!-- review:begin -->\n> [!todo] [[review/2026-11-29|")


def test_an_agent_that_rewrites_the_note_or_its_log_changes_nothing(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c)
        honest = _text(laptop)
        agent_block = honest.split(f"### [[{AGENT_NOTE[:-3]}]]")[1].split("### ")[0]
        [agent_change] = [x for x in _ids(agent_block, "c-")]
        # the agent empties its write log, forges one entry under the person's device, and
        # rewrites the review: its own change left out, a forged one added
        log = server.vault / LOG_FOLDER
        for f in log.glob("*.jsonl") if log.is_dir() else []:
            f.write_text("")
        server.write(
            f"{LOG_FOLDER}/2026-11-29.laptop.jsonl",
            json.dumps({"v": 1, "tool": "write_note", "path": "x.md", "action": "created",
                        "message": "approved by the person", "device": "laptop",
                        "time": "2026-11-29T01:00:00Z"}) + "\n",
        )  # fmt: skip
        forged = honest.replace(f"### [[{AGENT_NOTE[:-3]}]]{agent_block}", "").replace(
            "## Changes\n",
            "## Changes\n\n### [[knowledge/Forged]]\n\n- [ ] Revert this change `c-0000000000/r`\n",
            1,
        )
        server.write(REVIEW, forged)
        server.sync()
        laptop.sync()
        fixed = _text(laptop)
        assert agent_change in _ids(fixed, "c-")
        assert "c-0000000000" not in fixed
        assert "rewrote this review from the relay's history" in fixed
        server.sync()
        assert _text(server) == fixed


def test_a_tick_on_the_server_is_ignored_and_says_so(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c)
        item = _ids(_text(server), "c-")[0]
        _tick(server, item, "r")
        server.sync()
        laptop.sync()
        ln = _line(laptop, item, "r")
        assert not ln.ticked and not ln.final
        assert ln.outcome and "an agent device, was ignored" in ln.outcome
        server.sync()
        assert not _line(server, item, "r").ticked


def test_a_revert_ticked_on_the_laptop_is_carried_out_everywhere(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c)
        text = _text(laptop)
        block = text.split(f"### [[{AGENT_NOTE[:-3]}]]")[1].split("### ")[0]
        [item] = _ids(block, "c-")
        assert laptop.read(AGENT_NOTE) is not None
        _tick(laptop, item, "r")
        laptop.sync()
        assert laptop.read(AGENT_NOTE) is None  # the agent's new note, reverted: gone
        ln = _line(laptop, item, "r")
        assert ln.final and ln.outcome and ln.outcome.startswith("reverted ")
        assert ln.outcome.endswith("from laptop")
        server.sync()
        assert server.read(AGENT_NOTE) is None
        assert _line(server, item, "r").final
        # the note names a note that is gone now: worth a look, not a broken vault
        check = laptop.cli("vault", "check", str(laptop.vault), "--json")
        report = json.loads(check.stdout)
        assert not [b for b in report["broken_links"] if b["source"].startswith("review/")]
        assert any(w["path"] == REVIEW and "gone" in w["message"] for w in report["warnings"])


def test_a_revert_of_a_note_edited_since_says_why_and_changes_nothing(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c)
        block = _text(laptop).split(f"### [[{AGENT_NOTE[:-3]}]]")[1].split("### ")[0]
        [item] = _ids(block, "c-")
        laptop.write(AGENT_NOTE, "# Agent scratch\n\nI rewrote this myself.\n")
        _tick(laptop, item, "r")
        laptop.sync()
        assert laptop.read(AGENT_NOTE) == b"# Agent scratch\n\nI rewrote this myself.\n"
        ln = _line(laptop, item, "r")
        assert ln.final and ln.outcome and ln.outcome.startswith("not done: the note changed")


def test_a_proposal_applied_on_the_laptop_is_applied_by_the_server(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop, server, hermes = _world(tmp_path, c)
        text = _text(laptop)
        item = _ids(text, "p-")[0]
        section = text.split(f"`{item}/a`")[0].rsplit("```diff\n", 1)[1].split("\n```")[0]
        entry = section.splitlines()[-1][2:]
        memory = hermes / "memories"
        before = {p.name: p.read_text() for p in memory.glob("*.md")} if memory.is_dir() else {}
        assert not any(entry in t for t in before.values())
        _tick(laptop, item, "a")
        laptop.sync()
        assert not _line(laptop, item, "a").final  # the laptop does not apply proposals
        server.sync()
        after = {p.name: p.read_text() for p in memory.glob("*.md")}
        assert any(entry in t for t in after.values())
        ln = _line(server, item, "a")
        assert ln.final and ln.outcome and "ticked on laptop" in ln.outcome
        assert _line(server, item, "d").final  # the other choice says it too
        laptop.sync()
        assert _line(laptop, item, "a").final
        book = json.loads(_text(laptop, ".companion/dreams/proposals.json"))
        states = {p["id"]: p["state"] for p in book["proposals"]}
        assert "applied" in states.values()


@pytest.mark.parametrize("who", ["server"])
def test_an_agent_tick_on_a_proposal_is_never_applied(tmp_path: Path, who: str) -> None:
    with cluster(tmp_path / "c") as c:
        laptop, server, hermes = _world(tmp_path, c)
        item = _ids(_text(server), "p-")[0]
        _tick(server, item, "a")
        server.sync()
        book = json.loads(_text(server, ".companion/dreams/proposals.json"))
        assert all(p["state"] == "pending" for p in book["proposals"])
        laptop.sync()
        assert not _line(laptop, item, "a").ticked


def test_review_list_and_decide_on_the_command_line(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c)
        out = laptop.cli("review", "list", str(laptop.vault), "--json")
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        assert data["note"] == REVIEW
        by_id = {i["id"]: i for i in data["items"]}
        block = _text(laptop).split(f"### [[{AGENT_NOTE[:-3]}]]")[1].split("### ")[0]
        [item] = _ids(block, "c-")
        change = by_id[item]
        assert change["kind"] == "change" and change["file"] == AGENT_NOTE
        assert change["before"] is None and "The agent wrote this" in change["after"]
        assert change["decisions"] == ["revert"] and change["state"] == "open"
        assert any(i["kind"] == "proposal" and i["decisions"] == ["apply", "drop"]
                   for i in data["items"])  # fmt: skip

        bad = laptop.cli("review", "decide", str(laptop.vault), "c-nope", "revert")
        assert bad.returncode == 2 and "no review line has the id" in bad.stderr
        ok = laptop.cli("review", "decide", str(laptop.vault), item, "revert")
        assert ok.returncode == 0, ok.stderr
        laptop.sync()
        again = laptop.cli("review", "decide", str(laptop.vault), item, "revert")
        assert again.returncode == 1
        data = json.loads(laptop.cli("review", "list", str(laptop.vault), "--json").stdout)
        done = {i["id"]: i for i in data["items"]}[item]
        assert done["state"] == "decided" and done["decided_by"] == "laptop"
        assert done["decided_by_kind"] == "human" and done["outcome"].startswith("reverted")


def test_revert_the_whole_night_reverts_each_change_still_as_left(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c)
        text = _text(laptop)
        changes = _ids(text, "c-")
        assert "- Why: " in text  # the dream's report says what each change did
        _tick(laptop, "n-20261129", "r")
        laptop.sync()
        now = _text(laptop)
        lines = {ln.key: ln for ln in notes.parse_lines(now)}
        assert lines[("n-20261129", "r")].final
        assert all(lines[(i, "r")].final for i in changes)
        assert laptop.read(AGENT_NOTE) is None
        reverted = [i for i in changes if (lines[(i, "r")].outcome or "").startswith("reverted")]
        assert len(reverted) >= 2
        server.sync()
        c.assert_converged()
        end = now.rstrip("\n").rsplit("\n", 1)[-1]
        assert end == "Everything here is decided." or end.startswith("Waiting for you: 1 proposal")


def test_a_change_shown_otherwise_than_the_history_is_put_right(tmp_path: Path) -> None:
    """The agent keeps its change's id but shows a harmless diff under it."""
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c)
        honest = _text(server)
        assert "+ The agent wrote this on its own." in honest
        server.write(REVIEW, honest.replace("+ The agent wrote this on its own.", "+ (typo fix)"))
        server.sync()
        laptop.sync()
        fixed = _text(laptop)
        assert "+ The agent wrote this on its own." in fixed and "(typo fix)" not in fixed
        assert "1 change(s) shown otherwise than the history holds" in fixed


def test_an_honest_note_is_left_alone_by_a_laptop_on_another_clock(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c, laptop_tz="Asia/Tokyo")
        laptop.sync()
        assert _text(laptop) == _text(server)
        assert "rewrote this review" not in _text(laptop)


def test_the_next_night_does_not_list_homes_link_to_the_review(tmp_path: Path) -> None:
    with cluster(tmp_path / "c") as c:
        laptop, server, hermes = _world(tmp_path, c)
        server.sync()
        assert "<!-- review:begin -->" in _text(server, "Home.md")
        laptop.write(
            "journal/2026-11-29.md", "# 2026-11-29\n\n## Learned\n- Restic prunes weekly.\n"
        )
        laptop.sync()
        server.sync()
        run_dream(
            server.vault, server.config, NIGHT + dt.timedelta(days=1), paths=server.paths,
            hermes_home=hermes, sync=EngineSyncHook(server.engine()),
        )  # fmt: skip
        laptop.sync()
        second = _text(laptop, "review/2026-11-30.md")
        assert "review:begin" not in second
        assert notes.front_matter(second)["from"] == notes.front_matter(_text(laptop))["to"]


def test_a_tick_made_while_the_agent_rewrote_the_note_is_carried_out_after_the_repair(
    tmp_path: Path,
) -> None:
    """The repair moves the note's lines: the ticks are read again from the repaired note
    (they were carried out against the old line numbers, so "the line is no longer there")."""
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c)
        honest = _text(laptop)
        blocks = honest.split("## Changes\n", 1)[1].split("\n## ", 1)[0].split("### ")[1:]
        first, last = _ids(blocks[0], "c-")[0], _ids(blocks[-1], "c-")[0]
        assert first != last
        server.write(REVIEW, honest.replace("### " + blocks[0], "", 1))  # hides a change
        server.sync()
        _tick(laptop, last, "r")
        laptop.sync()
        fixed = _text(laptop)
        assert "rewrote this review from the relay's history" in fixed
        assert f"`{first}/r`" in fixed
        ln = _line(laptop, last, "r")
        assert ln.final and ln.outcome and ln.outcome.startswith("reverted "), ln.outcome


def test_a_new_process_does_not_look_at_a_seen_note_again(tmp_path: Path) -> None:
    """A one-shot `companion sync` is a new process each time: what the last one looked at is
    kept in the engine's folder, so a quiet round asks the relay for no note's history."""
    with cluster(tmp_path / "c") as c:
        laptop, server, _ = _world(tmp_path, c)
        laptop.sync()
        laptop.restart()
        engine = laptop.engine()
        hook.install(engine)  # as `companion sync`, `watch` and the desktop app install it
        asked: list[str] = []
        history = engine.core.remote.history

        def counted(path: str, limit: int = 1000):  # type: ignore[no-untyped-def]
            asked.append(path)
            return history(path, limit)

        engine.core.remote.history = counted  # type: ignore[method-assign]
        laptop.sync()
        assert [p for p in asked if p.startswith("review/")] == []
        seen = json.loads((vault_dir(laptop.paths, laptop.vault) / hook.SEEN_FILE).read_text())
        assert not hook.work_waits(laptop.vault, seen)  # so the round imports no review module
        _tick(laptop, _ids(_text(laptop), "c-")[0], "r")
        laptop.sync()
        assert REVIEW in asked  # a changed note is looked at again
