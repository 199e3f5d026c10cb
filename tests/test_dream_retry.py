"""Issue 40, finding 6 and the USER.md part of 7: a promotion the agent's memory lock blocked is
retried at the next dream (even when the next window no longer reads its source), the day's
report keeps every run's skipped items, `--explain` says what happened; USER.md gets
Hermes's third person, and no report or note names a source by its absolute path."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from filelock import FileLock

from companion.dream.cli import _print_explain
from companion.dream.report import load_report
from companion.memory import MemoryStore
from tests.fixtures.dream import NOW
from tests.fixtures.mini import Mini, journal

FACT = "The backup NAS is called atlas."


@pytest.fixture
def quick_lock(monkeypatch):
    """The memory store gives up on a held lock after 0.2 s instead of 10 s."""
    orig = MemoryStore.__init__

    def init(self, *a, **k):
        k["lock_timeout"] = 0.2
        orig(self, *a, **k)

    monkeypatch.setattr(MemoryStore, "__init__", init)


def held(w: Mini, target: str = "memory") -> FileLock:
    return FileLock(str(w.memory(target)) + ".lock")


def test_a_blocked_promotion_is_retried_and_lands_the_next_night(tmp_path, quick_lock):
    w = Mini(tmp_path)
    # the person's words: an assistant's alone would wait for them as a proposal (issue 40)
    w.say("user", "always: the backup NAS is called atlas.", NOW - dt.timedelta(hours=3))
    with held(w):  # the agent is writing its memory all through the dream
        rep = w.dream(explain=True)
    assert w.entries("memory") == []
    today = w.read("journal/2026-11-28.md")
    assert "Promoted 1 fact" not in today and "memory lock" in today
    said = [e for e in rep.explanations if e["text"] == FACT and e["note"] == "MEMORY.md"]
    assert said and all(e["decision"] != "promoted" for e in said), said
    assert "blocked by the memory lock: will retry" in said[-1]["why"]
    nxt = w.dream(now=NOW + dt.timedelta(days=1))  # the window starts after the message
    assert nxt.window["start"] > (NOW - dt.timedelta(hours=3)).isoformat()
    assert w.entries("memory") == [FACT]
    assert [c.note for c in nxt.run_changes if c.kind == "promoted"] == ["MEMORY.md"]
    w.dream(now=NOW + dt.timedelta(days=2))
    assert w.entries("memory") == [FACT]  # retried once, then done


def test_explain_of_the_blocked_run_says_blocked_not_promoted(tmp_path, quick_lock, capsys):
    w = Mini(tmp_path)
    w.say("assistant", "always: the backup NAS is called atlas.", NOW - dt.timedelta(hours=3))
    with held(w):
        rep = w.dream(explain=True)
    _print_explain(rep)
    out = capsys.readouterr().out
    assert "blocked by the memory lock: will retry" in out
    assert f"[promoted] {FACT}" not in out


def test_a_second_run_the_same_day_keeps_the_first_runs_skipped(tmp_path, quick_lock):
    w = Mini(tmp_path)
    at = NOW - dt.timedelta(hours=3)
    w.say("user", "always: the backup NAS is called atlas.", at)  # not a proposal: hers
    w.say("user", "remember: tonight I am working from the café.", at)
    with held(w):
        first = w.dream()
    codes = sorted(s.code for s in first.skipped)
    assert codes == ["locked", "transient"], codes
    w.dream(now=NOW + dt.timedelta(hours=1))
    day = load_report(w.vault, "2026-11-28")
    assert day is not None
    kept = sorted((s.code, s.text) for s in day.skipped)
    assert ("transient", "Tonight I am working from the café.") in kept, kept
    assert ("locked", FACT) in kept, kept
    assert w.entries("memory") == [FACT]


def test_i_prefer_lands_in_user_md_in_the_third_person(tmp_path):
    w = Mini(tmp_path)
    w.say("user", "remember: I prefer short answers.", NOW - dt.timedelta(hours=5))
    w.say("user", "recuerda: prefiero que me llames Lu", NOW - dt.timedelta(hours=4))
    w.dream()
    assert w.entries("user") == [
        "The user prefers short answers.",
        "El usuario prefiere que le llames Lu",
    ]


def test_no_absolute_path_in_any_report_or_note_provenance(tmp_path, quick_lock, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # transcripts where people keep them: under ~
    w = Mini(tmp_path)
    w.note("Home.md", "# Home\n")
    w.note(
        "journal/2026-11-27.md",
        journal("2026-11-27", {"Learned": ["SQLite WAL mode fails on NFS shares."]}),
    )
    at = NOW - dt.timedelta(hours=3)
    w.say("assistant", "always: the backup NAS is called atlas.", at)
    w.say("user", "remember: I prefer short answers.", at)
    with held(w, "user"):
        w.dream(explain=True)
    w.dream(now=NOW + dt.timedelta(hours=1))
    report = (w.vault / ".companion" / "dreams" / "2026-11-28.json").read_text(encoding="utf-8")
    data = json.loads(report)
    sources = [p["source"] for c in data["changes"] for p in c["provenance"]] + [
        r["source"] for s in data["skipped"] for r in s["refs"]
    ]
    assert sources and not [s for s in sources if str(tmp_path) in s], sources
    reasons = [s["reason"] for s in data["skipped"]] + data["warnings"]
    assert not [r for r in reasons if str(tmp_path) in r], reasons
    for rel in w.files():
        text = w.read(rel)
        for line in text.split("\n"):
            if "<!-- src:" in line:
                assert str(tmp_path) not in line, (rel, line)
    assert w.entries("user") == ["The user prefers short answers."]
