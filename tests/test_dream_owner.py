"""Issue 40, findings 2 and 3: a line the person wrote or changed inside a dream block is
theirs. The dream keeps a ledger of the lines it wrote; a line whose hash is not there is never
replaced, moved or removed, a newer value that disagrees is written as a flagged contradiction
next to it, and `--verify` reports it as "edited by a person" (exit 0)."""

from __future__ import annotations

import datetime as dt
import json
import re
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.cli import cli
from companion.dream import blocks
from companion.dream.verify import verify_vault
from tests.fixtures.dream import NOW
from tests.fixtures.mini import Mini, journal

NOTE = "knowledge/NAS.md"
LESSON = "A full restic backup of the NAS takes 45 minutes."


def _night_one(w: Mini) -> None:
    w.note(NOTE, "# NAS\n\nThe Synology in the hall closet.\n")
    w.note("journal/2026-11-27.md", journal("2026-11-27", {"Learned": [LESSON]}))
    w.dream()
    assert LESSON in w.read(NOTE)


def _person_edits(w: Mini, old: str, new: str) -> str:
    """The person changes `old` to `new` in the note, the morning after; returns her line."""
    text = w.read(NOTE)
    assert old in text
    text = text.replace(old, new)
    w.note(NOTE, text, edited=NOW + dt.timedelta(hours=8))
    return next(ln for ln in text.split("\n") if new in ln)


def _night_three(w: Mini, said: str) -> object:
    w.say("user", f"remember: {said}", NOW + dt.timedelta(days=1, hours=12))
    return w.dream(now=NOW + dt.timedelta(days=2))


def _dream_block_lines(text: str) -> list[str]:
    lines = text.split("\n")
    return [lines[i] for b in blocks.find_blocks(lines) if b.kind == "content" for i in b.body]


def test_finding_2_the_persons_corrected_value_stays_and_the_old_one_is_flagged(tmp_path):
    w = Mini(tmp_path)
    _night_one(w)
    hers = _person_edits(w, "takes 45 minutes", "takes 70 minutes")
    rep = _night_three(w, LESSON)
    text = w.read(NOTE)
    lines = text.split("\n")
    assert hers in lines  # byte for byte
    body = _dream_block_lines(text)
    flag = body[body.index(hers) + 1]  # next to her line
    assert flag.startswith("- ⚠") and "45 minutes" in flag and "<!-- src: " in flag
    change = next(c for c in rep.run_changes if c.note == NOTE)
    assert change.removed == 0
    assert not any(f["fact"] == "stale_lines_replaced" for f in change.facts)
    assert any(f["fact"] == "disagreements_flagged" for f in change.facts)
    (entry,) = [c for c in rep.contradictions if c["note"] == NOTE]
    assert "70 minutes" in entry["existing"] and "45 minutes" in entry["new"]
    assert entry["edited"] is True
    today = w.read("journal/2026-11-30.md")
    assert "kept your line in [[nas]]; a session disagrees" in today.casefold()
    result = verify_vault(w.vault)
    assert result.ok
    (edited,) = [c for c in result.checks if c.status == "edited"]
    assert "70 minutes" in edited.text and edited.detail == "edited by a person"
    out = CliRunner().invoke(cli, ["dream", str(w.vault), "--verify"])
    assert out.exit_code == 0, out.output
    assert "edited by a person" in out.output


def test_finding_3_her_line_with_extra_words_is_the_same_subject(tmp_path):
    w = Mini(tmp_path)
    _night_one(w)
    hers = _person_edits(
        w,
        "takes 45 minutes.",
        "takes 70 minutes since the SSD swap, measured on Sunday.",
    )
    rep = _night_three(w, "running a full backup of the NAS takes 45 minutes.")
    text = w.read(NOTE)
    assert hers in text.split("\n")
    body = _dream_block_lines(text)
    unflagged = [ln for ln in body if "45 minutes" in ln and not ln.startswith("- ⚠")]
    assert unflagged == []  # the old value is never written as if nothing disagreed
    flag = body[body.index(hers) + 1]
    assert flag.startswith("- ⚠") and "45 minutes" in flag
    assert [c["note"] for c in rep.contradictions] == [NOTE]


def test_a_repeated_disagreement_is_written_once(tmp_path):
    w = Mini(tmp_path)
    _night_one(w)
    _person_edits(w, "takes 45 minutes", "takes 70 minutes")
    _night_three(w, LESSON)
    once = w.read(NOTE)
    w.say("user", f"remember: {LESSON}", NOW + dt.timedelta(days=3, hours=12))
    w.dream(now=NOW + dt.timedelta(days=4))
    assert w.read(NOTE) == once


def test_the_dreams_own_unchanged_line_is_still_superseded(tmp_path):
    w = Mini(tmp_path)
    _night_one(w)
    rep = _night_three(w, "A full restic backup of the NAS takes 70 minutes.")
    body = _dream_block_lines(w.read(NOTE))
    assert [blocks.SRC_RE.sub("", ln) for ln in body] == [
        "- A full restic backup of the NAS takes 70 minutes."
    ]
    assert next(c for c in rep.run_changes if c.note == NOTE).removed == 1


def test_verify_still_fails_on_the_dreams_own_line_without_a_source(tmp_path):
    w = Mini(tmp_path)
    _night_one(w)
    j = w.vault / "journal/2026-11-27.md"
    j.write_text(j.read_text("utf-8").replace("45 minutes", "an hour"), "utf-8")
    result = verify_vault(w.vault)
    assert not result.ok
    assert [c.status for c in result.checks if c.note == NOTE] == ["unresolved"]


# --- any nights, any edits: the person's lines survive ------------------------------------

SUBJECTS = [
    "A full restic backup of the NAS takes {v} minutes.",
    "The NAS wakes its disks at {v}:00 every night.",
    "The NAS fans spin at {v} percent under load.",
]
VALUES = ["10", "20", "45", "70"]

night_said = st.lists(
    st.tuples(st.integers(0, len(SUBJECTS) - 1), st.sampled_from(VALUES)), min_size=1, max_size=2
)
person_edit = st.tuples(
    st.sampled_from(["value", "words", "new"]), st.integers(0, 9), st.sampled_from(VALUES)
)
scripts = st.lists(st.tuples(night_said, st.lists(person_edit, max_size=2)), min_size=2, max_size=3)


def _edit(text: str, op: str, at: int, value: str) -> tuple[str, str | None, str | None]:
    """The person's edit of a dream block line: (new text, line replaced, her line)."""
    lines = text.split("\n")
    body = [
        i
        for b in blocks.find_blocks(lines)
        if b.kind == "content"
        for i in b.body
        if lines[i].strip()
    ]
    if not body:
        return text, None, None
    i = body[at % len(body)]
    old = lines[i]
    if op == "new":
        mine = f"- My own note: the NAS is dusted every {value} weeks."
        lines.insert(i + 1, mine)
        return "\n".join(lines), None, mine
    if op == "value":
        mine = re.sub(r"\d+", value, old, count=1)
        if mine == old:
            mine = old.replace(" <!--", f" ({value} by my count) <!--", 1)
    else:
        mine = old.replace(" <!--", ", I measured it myself <!--", 1)
    if mine == old:
        return text, None, None
    lines[i] = mine
    return "\n".join(lines), old, mine


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(script=scripts)
def test_every_line_the_person_wrote_or_changed_survives_every_night(script):
    with tempfile.TemporaryDirectory() as tmp:
        w = Mini(Path(tmp))
        w.note(NOTE, "# NAS\n\nThe Synology in the hall closet.\n")
        theirs: set[str] = set()
        for night, (said, edits) in enumerate(script):
            at = NOW + dt.timedelta(days=2 * night)
            for k, (subject, value) in enumerate(said):
                w.say(
                    "user",
                    "remember: " + SUBJECTS[subject].format(v=value),
                    at - dt.timedelta(hours=20 - k),
                )
            w.dream(now=at)
            text = w.read(NOTE)
            lines = text.split("\n")
            for mine in theirs:
                assert mine in lines, (mine, text)
            before, prior = set(lines), set(theirs)
            for op, where, value in edits:
                text, old, mine = _edit(text, op, where, value)
                if mine is None:
                    continue
                theirs.discard(old or "")
                theirs.add(mine)
            # edits that put a dream line back as the dream wrote it change nothing: that line
            # is byte for byte the dream's own again, and the dream may supersede it
            theirs = {m for m in theirs if m in prior or m not in before}
            w.note(NOTE, text, edited=at + dt.timedelta(hours=2))
        w.dream(now=NOW + dt.timedelta(days=2 * len(script)))
        lines = w.read(NOTE).split("\n")
        for mine in theirs:
            assert mine in lines
        assert verify_vault(w.vault).ok


# --- Home.md's index block is the person's where she changed it ------------------------------


def _index_lines(w: Mini) -> list[str]:
    lines = w.read("Home.md").split("\n")
    return [lines[i] for b in blocks.find_blocks(lines) if b.kind == "index" for i in b.body]


def _indexed_world(w: Mini) -> None:
    for name in ("Backups", "NAS", "Recipes"):
        w.note(f"knowledge/{name}.md", f"# {name}\n\nWhat we keep in the house about {name}.\n")
    w.dream()
    assert "- [[NAS]]" in _index_lines(w)


def _person_edits_home(w: Mini, old: str, new: str, when: dt.datetime) -> None:
    text = w.read("Home.md")
    assert old in text
    w.note("Home.md", text.replace(old, new), edited=when)


def test_a_line_she_changed_in_the_index_block_stays_in_place(tmp_path):
    w = Mini(tmp_path)
    _indexed_world(w)
    hers = "- [[NAS]] — the Synology in the hall closet"
    _person_edits_home(w, "- [[NAS]]\n", hers + "\n", NOW + dt.timedelta(hours=8))
    before = _index_lines(w)
    w.note("knowledge/Printers.md", "# Printers\n\nThe laser in the office.\n")
    w.dream(now=NOW + dt.timedelta(days=2))
    after = _index_lines(w)
    assert "- [[Printers]]" in after  # the index was rebuilt
    assert hers in after  # byte for byte
    assert after[after.index(hers) - 1] == before[before.index(hers) - 1]  # not moved
    assert "- [[NAS]]" not in after  # the note she annotated is not listed twice
    home = w.read("Home.md")
    w.dream(now=NOW + dt.timedelta(days=3))
    assert w.read("Home.md") == home  # and a quiet night leaves it alone
    assert verify_vault(w.vault).ok


def test_a_line_she_added_to_the_index_block_is_never_removed(tmp_path):
    w = Mini(tmp_path)
    _indexed_world(w)
    hers = "- [[Someday]] (to write this winter)"
    _person_edits_home(w, "- [[NAS]]\n", f"- [[NAS]]\n{hers}\n", NOW + dt.timedelta(hours=8))
    (w.vault / "knowledge/Recipes.md").unlink()  # the dream's own line for it goes
    w.dream(now=NOW + dt.timedelta(days=2))
    after = _index_lines(w)
    assert hers in after
    assert after[after.index(hers) - 1] == "- [[NAS]]"
    assert "- [[Recipes]]" not in after


def test_her_line_for_a_deleted_note_stays(tmp_path):
    w = Mini(tmp_path)
    _indexed_world(w)
    hers = "- [[Recipes]] (moved to the paper notebook)"
    _person_edits_home(w, "- [[Recipes]]", hers, NOW + dt.timedelta(hours=8))
    (w.vault / "knowledge/Recipes.md").unlink()
    rep = w.dream(now=NOW + dt.timedelta(days=2))
    assert hers in _index_lines(w)
    assert all(c.removed == 0 for c in rep.run_changes if c.note == "Home.md")


def test_an_index_the_ledger_does_not_know_yet_is_still_the_dreams(tmp_path):
    """A vault whose ledger predates index lines: the index lines in the dream's own form are
    the dream's, so a deleted note's line still goes."""
    w = Mini(tmp_path)
    _indexed_world(w)
    ledger = w.vault / ".companion/dreams/ledger.json"
    data = json.loads(ledger.read_text("utf-8"))
    data.get("lines", {}).pop("Home.md", None)
    ledger.write_text(json.dumps(data), encoding="utf-8")
    (w.vault / "knowledge/Recipes.md").unlink()
    w.dream(now=NOW + dt.timedelta(days=2))
    assert "- [[Recipes]]" not in _index_lines(w)
    assert "- [[NAS]]" in _index_lines(w)
