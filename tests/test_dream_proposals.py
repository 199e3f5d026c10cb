"""Issue 40, the proposal rule: risky changes to the injected memory are proposed, not applied.

A MEMORY/USER change whose only source is an assistant message, any replacement or removal of an
injected entry, and anything the guard is unsure of wait for the person (`[dream] apply`,
default `propose-risky`): kept in the night's report and in `.companion/dreams/proposals.json`
until decided, counted in the Dreaming lines, applied or dropped with `companion dream
proposals`. Nothing a proposal holds reaches MEMORY.md / USER.md before it is applied.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner
from filelock import FileLock

from companion.cli import cli
from companion.config import load_config
from companion.dream.proposals import MemoryChange, is_risky, needs_proposal
from companion.dream.record import RunSummary, dreaming_lines
from companion.dream.report import load_report
from companion.memory import MemoryStore
from tests.fixtures.dream import NOW
from tests.fixtures.mini import Mini, journal

FACT = "The backup NAS is called atlas."
AT = NOW - dt.timedelta(hours=3)


@pytest.fixture
def quick_lock(monkeypatch):
    """The memory store gives up on a held lock after 0.2 s instead of 10 s."""
    orig = MemoryStore.__init__

    def init(self, *a, **k):
        k["lock_timeout"] = 0.2
        orig(self, *a, **k)

    monkeypatch.setattr(MemoryStore, "__init__", init)


def proposals(w: Mini, *args: str):
    return CliRunner().invoke(
        cli, ["dream", "proposals", str(w.vault), *args], catch_exceptions=False
    )


def listed(w: Mini) -> list[dict]:
    res = proposals(w, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["proposals"]


# --- the classifier ------------------------------------------------------------------------


def ch(op="add", voices=("assistant",), old=None, new="The NAS is called atlas.", tool=False):
    return MemoryChange("memory", op, old, new, tuple(voices), memory_tool=tool)


@pytest.mark.parametrize(
    ("change", "risky"),
    [
        (ch(voices=("assistant",)), "assistant_only"),  # always: only the agent says it
        (ch(voices=("assistant", "assistant")), "assistant_only"),
        (ch(voices=("user",)), None),  # the person's own words
        (ch(voices=("journal",)), None),  # the person's journal
        (ch(voices=("assistant", "user")), None),  # the person said it too
        (ch(voices=("assistant",), tool=True), None),  # the agent's own memory-tool add
        (ch("replace", ("user",), old="The NAS is called nas1."), "replaces"),
        (ch("replace", ("assistant",), old="X is 1.", tool=True), "replaces"),
        (ch("remove", ("user",), old="The NAS is called nas1.", new=None), "removes"),
    ],
)
def test_is_risky_table(change, risky):
    assert is_risky(change) == risky


def test_the_guard_hook_makes_an_unsure_change_risky():
    change = ch(voices=("user",))
    assert is_risky(change, unsure=lambda text: "an odd phrase") == "unsure"
    assert is_risky(change, unsure=lambda text: None) is None


def test_the_modes():
    person = ch(voices=("user",))
    agent = ch(voices=("assistant",))
    assert needs_proposal(person, "auto") is None and needs_proposal(agent, "auto") is None
    assert needs_proposal(person, "propose-risky") is None
    assert needs_proposal(agent, "propose-risky") == "assistant_only"
    assert needs_proposal(person, "propose-all") == "propose_all"


def test_the_config_key_defaults_to_propose_risky(tmp_path):
    w = Mini(tmp_path)
    assert w.config().settings.dream.apply == "propose-risky"
    assert load_config(w.paths).settings.dream.apply == "propose-risky"


# --- the dream -----------------------------------------------------------------------------


def test_an_assistant_only_always_fact_is_proposed_not_written(tmp_path):
    w = Mini(tmp_path)
    w.say("assistant", "always: the backup NAS is called atlas.", AT)
    rep = w.dream()
    assert w.entries("memory") == []  # nothing a proposal holds is written
    [p] = rep.proposals
    assert (p["target"], p["op"], p["new"], p["state"]) == ("memory", "add", FACT, "pending")
    assert p["reason"] == "assistant_only" and "assistant" in p["why"]
    assert "always: the backup NAS is called atlas." in p["quote"]
    data = json.loads((w.vault / ".companion/dreams/2026-11-28.json").read_text("utf-8"))
    assert [q["id"] for q in data["proposals"]] == [p["id"]]
    assert "1 change waits for you" in w.read("journal/2026-11-28.md")
    assert not [c for c in rep.run_changes if c.kind == "promoted"]


def test_a_replacement_of_an_existing_entry_is_proposed(tmp_path):
    w = Mini(tmp_path)
    w.set_entries("memory", ["Backups run at 02:00 every night."])
    w.say("user", "always: backups run at 03:30 every night.", AT)
    rep = w.dream()
    assert w.entries("memory") == ["Backups run at 02:00 every night."]
    [p] = rep.proposals
    assert p["op"] == "replace" and p["reason"] == "replaces"
    assert p["old"] == "Backups run at 02:00 every night."
    assert p["new"] == "Backups run at 03:30 every night."


def test_apply_lands_it_and_drop_removes_it_both_recorded(tmp_path):
    w = Mini(tmp_path)
    w.say("assistant", "always: the backup NAS is called atlas.", AT)
    w.say("assistant", "always: the relay listens on port 8443.", AT)
    w.dream()
    items = listed(w)
    assert len(items) == 2 and {i["state"] for i in items} == {"pending"}
    keep = next(i for i in items if i["new"] == FACT)
    other = next(i for i in items if i["new"] != FACT)
    for field in ("id", "target", "op", "old", "new", "quote", "why", "state"):
        assert field in keep
    res = proposals(w, "apply", keep["id"])
    assert res.exit_code == 0, res.output
    assert w.entries("memory") == [FACT]
    res = proposals(w, "drop", other["id"])
    assert res.exit_code == 0, res.output
    assert w.entries("memory") == [FACT]
    assert listed(w) == []  # nothing waits any more
    day = json.loads((w.vault / ".companion/dreams/2026-11-28.json").read_text("utf-8"))
    by_id = {p["id"]: p for p in day["proposals"]}
    applied, dropped = by_id[keep["id"]], by_id[other["id"]]
    assert applied["state"] == "applied" and dropped["state"] == "dropped"
    for p, action in ((applied, "apply"), (dropped, "drop")):
        assert p["decision"]["action"] == action
        assert p["decision"]["at"] and p["decision"]["device"]
    # a later dream over the same inputs neither proposes nor writes them again
    w.dream(now=NOW + dt.timedelta(hours=1))
    assert w.entries("memory") == [FACT] and listed(w) == []


def test_an_undecided_proposal_survives_a_second_run_and_the_next_night(tmp_path):
    w = Mini(tmp_path)
    w.say("assistant", "always: the backup NAS is called atlas.", AT)
    first = w.dream()
    [p] = first.proposals
    w.dream(now=NOW + dt.timedelta(hours=1))  # the same night, again
    assert [i["id"] for i in listed(w)] == [p["id"]]
    nxt = w.dream(now=NOW + dt.timedelta(days=1))  # the window no longer reads the message
    assert [i["id"] for i in listed(w)] == [p["id"]]
    assert [q["id"] for q in nxt.proposals] == [p["id"]]
    assert "1 change waits for you" in w.read("journal/2026-11-29.md")
    assert w.entries("memory") == []
    res = proposals(w, "apply", "--all")
    assert res.exit_code == 0, res.output
    assert w.entries("memory") == [FACT]
    day1 = load_report(w.vault, "2026-11-28")
    assert day1 is not None and day1.proposals[0]["state"] == "applied"


def test_auto_applies_as_before(tmp_path):
    w = Mini(tmp_path)
    w.set_entries("memory", ["Backups run at 02:00 every night."])
    w.say("assistant", "always: the backup NAS is called atlas.", AT)
    w.say("user", "always: backups run at 03:30 every night.", AT)
    rep = w.dream(dream_config={"apply": "auto"})
    assert w.entries("memory") == ["Backups run at 03:30 every night.", FACT]
    assert rep.proposals == []


def test_propose_all_proposes_even_the_persons_remember(tmp_path):
    w = Mini(tmp_path)
    w.say("user", "remember: I prefer short answers.", AT)
    rep = w.dream(dream_config={"apply": "propose-all"})
    assert w.entries("user") == []
    [p] = rep.proposals
    assert p["target"] == "user" and p["new"] == "The user prefers short answers."
    assert p["reason"] == "propose_all"


def test_a_dropped_proposal_is_not_proposed_again_when_its_day_is_read_again(tmp_path):
    w = Mini(tmp_path)
    w.note(
        "journal/2026-11-27.md",
        journal("2026-11-27", {"Notes": ["always: the backup NAS is called atlas."]}),
    )
    w.dream(dream_config={"apply": "propose-all"})
    [p] = listed(w)
    assert proposals(w, "drop", "--all").exit_code == 0
    w.dream(now=NOW + dt.timedelta(hours=1), dream_config={"apply": "propose-all"})
    assert listed(w) == [] and w.entries("memory") == []


def test_apply_while_the_memory_lock_is_held_keeps_it_pending(tmp_path, quick_lock):
    w = Mini(tmp_path)
    w.say("assistant", "always: the backup NAS is called atlas.", AT)
    w.dream()
    [p] = listed(w)
    with FileLock(str(w.memory("memory")) + ".lock"):
        res = proposals(w, "apply", p["id"])
    assert res.exit_code == 1 and "lock" in res.output
    assert w.entries("memory") == []
    [again] = listed(w)
    assert again["id"] == p["id"] and again["state"] == "pending"
    assert proposals(w, "apply", p["id"]).exit_code == 0
    assert w.entries("memory") == [FACT]


def test_a_risky_fact_the_lock_blocked_is_proposed_when_retried(tmp_path, quick_lock):
    w = Mini(tmp_path)
    w.say("assistant", "always: the backup NAS is called atlas.", AT)
    with FileLock(str(w.memory("memory")) + ".lock"):
        w.dream()
    assert listed(w) == []  # blocked: kept on this device for the next dream
    w.dream(now=NOW + dt.timedelta(days=1))
    assert [i["new"] for i in listed(w)] == [FACT] and w.entries("memory") == []


def test_a_proposal_whose_entry_changed_since_is_refused_with_why(tmp_path):
    w = Mini(tmp_path)
    w.set_entries("memory", ["Backups run at 02:00 every night."])
    w.say("user", "always: backups run at 03:30 every night.", AT)
    w.dream()
    [p] = listed(w)
    w.set_entries("memory", ["Backups run at 04:00 every night."])  # the person changed it
    res = proposals(w, "apply", p["id"])
    assert res.exit_code == 1 and "changed since" in res.output
    assert w.entries("memory") == ["Backups run at 04:00 every night."]
    assert [i["state"] for i in listed(w)] == ["pending"]  # the person decides: drop it


def test_the_dreaming_line_counts_proposals_in_both_languages():
    s = RunSummary(proposed=2)
    assert "2 changes wait for you" in " ".join(dreaming_lines(s, "en"))
    assert "2 cambios te esperan" in " ".join(dreaming_lines(s, "es"))
