"""The review's pure rules (issue 41): the note's lines, who ticked them, what a decision does.

These are the rules the Obsidian plugin replays from `tests/vectors/review_v1.json`
(obsidian-plugin/test/review.test.ts). Regenerate on purpose only:
    python tests/test_review.py --write
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.review import blame, decide, diff, labels
from companion.review import note as notes
from companion.review.model import (
    Carried,
    ChangeItem,
    Disagreement,
    ProposalItem,
    Review,
    change_id,
    disagreement_id,
    night_id,
    proposal_item_id,
)

VECTORS = Path(__file__).parent / "vectors" / "review_v1.json"
FLAG = "- ⚠ Disagrees with your line (2026-11-28): The prune runs on Sundays at 02:00."


def _review(lang: str = "en") -> Review:
    before = "# Backups\n\n<!-- dream:begin -->\n- Restic runs nightly.\n<!-- dream:end -->\n"
    after = before.replace(
        "- Restic runs nightly.\n",
        "- Restic runs nightly.\n- The prune runs on Saturdays.\n" + FLAG + "\n",
    )
    return Review(
        night="2026-11-29",
        from_seq=12,
        to_seq=40,
        lang=lang,
        tz="Europe/Madrid",
        changes=[
            ChangeItem(
                id=change_id("f1", 3, 4),
                path="knowledge/Backups.md",
                file_id="f1",
                from_rev=3,
                to_rev=4,
                before=before,
                after=after,
                device="server",
                kind="agent",
                at="03:12",
                notes=(
                    labels.text(lang, "source")
                    + ": “I moved the prune to Sundays” — [[journal/2026-11-28]]",
                ),
            ),
            ChangeItem(
                id=change_id("f2", 0, 1),
                path="knowledge/New ```fenced``` idea.md",
                file_id="f2",
                from_rev=0,
                to_rev=1,
                before=None,
                after="# Idea\n\n```sh\nrm -rf /tmp/x\n```\n",
                device="server",
                kind="agent",
                at="03:13",
            ),
        ],
        disagreements=[
            Disagreement(
                id=disagreement_id("knowledge/Backups.md", FLAG),
                path="knowledge/Backups.md",
                flag=FLAG,
                new="The prune runs on Sundays at 02:00.",
                mine="The prune runs on Saturdays.",
            )
        ],
        proposals=[
            ProposalItem(
                id=proposal_item_id("abc123"),
                pid="abc123",
                file="MEMORY.md",
                op="replace",
                old="Backups prune on Saturdays.",
                new="Backups prune on Sundays at 02:00.",
                reason="replaces",
                quote="I moved the prune to Sundays",
            )
        ],
        carried=[
            Carried("c-1111111111", "r", "Revert this change: [[knowledge/Old]]", "2026-11-28")
        ],
    )


# ------------------------------------------------------------------ the note


def test_render_lists_every_decision_once_and_none_ticked() -> None:
    text = notes.render(_review())
    keys = [ln.key for ln in notes.parse_lines(text)]
    assert len(keys) == len(set(keys))
    r = _review()
    expected = {(c.id, "r") for c in r.changes} | {
        (night_id(r.night), "r"),
        (night_id(r.night), "a"),
    }
    expected |= {(r.disagreements[0].id, "k"), (r.disagreements[0].id, "t")}
    expected |= {(r.proposals[0].id, "a"), (r.proposals[0].id, "d"), ("c-1111111111", "r")}
    assert set(keys) == expected
    assert not any(ln.ticked or ln.outcome for ln in notes.parse_lines(text))
    assert (
        "Waiting for you: 2 changes, 1 disagreement, 1 proposal, 1 from an earlier night." in text
    )


def test_a_diff_with_fences_inside_uses_a_longer_fence_and_hides_nothing() -> None:
    text = notes.render(_review())
    assert "````diff\n+ # Idea\n+\n+ ```sh\n+ rm -rf /tmp/x\n+ ```\n````" in text
    # a decision line typed inside a fenced block is text, not a decision
    assert all(
        not ln.id.startswith("c-9")
        for ln in notes.parse_lines("```\n- [ ] x `c-9999999999/r`\n```\n")
    )


def test_nothing_to_review() -> None:
    text = notes.render(Review("2026-11-29", 1, 2))
    assert "Nothing to review." in text and not notes.parse_lines(text)


@pytest.mark.parametrize("lang", ["en", "es", "fr", "de", "pt", "it"])
def test_the_note_is_in_the_vaults_language_only(lang: str) -> None:
    r = _review(lang)
    r.carried = []
    text = notes.render(r)
    table = labels.table()
    for key in ("changes", "disagreements", "proposals", "revert", "keep", "take", "apply", "drop"):
        assert str(table[lang][key]) in text
    if lang != "en":  # no English label where the language has its own word
        for key, value in table["en"].items():
            if isinstance(value, str) and "{" not in value and value != table[lang][key]:
                assert value not in text, (key, value)


def test_an_unknown_language_is_written_in_english() -> None:
    assert "Review of the night" in notes.render(_review("xx"))


def test_states_survive_a_new_rendering() -> None:
    r = _review()
    text = notes.render(r)
    key = (r.changes[0].id, "r")
    text = notes.set_outcome(text, key, "reverted 08:14 from phone", ticked=True)
    again = notes.render(r, notes.states_of(text))
    [ln] = [x for x in notes.parse_lines(again) if x.key == key]
    assert ln.ticked and ln.final and ln.outcome == "reverted 08:14 from phone"
    assert "Waiting for you: 1 change," in again


def test_the_counts_follow_the_decisions() -> None:
    r = _review()
    text = notes.render(r)
    assert notes.recount(text) == text
    key = (r.changes[0].id, "r")
    done = notes.recount(notes.set_outcome(text, key, "reverted 08:14 from phone", ticked=True))
    assert "Waiting for you: 1 change, 1 disagreement, 1 proposal, 1 from an earlier night." in done
    for ln in notes.parse_lines(done):
        done = notes.set_outcome(done, ln.key, "done", ticked=True)
    assert "Everything here is decided." in notes.recount(done)


def test_a_notice_is_not_a_decision() -> None:
    text = (
        "- [ ] Revert this change `c-0123456789/r` — "
        "⚠ a tick written by server, an agent device, was ignored\n"
    )
    [ln] = notes.parse_lines(text)
    assert not ln.final and ln.outcome and ln.outcome.startswith("⚠")


def test_front_matter_and_context() -> None:
    r = _review()
    text = notes.render(r)
    assert notes.front_matter(text)["to"] == "40"
    lines = {ln.key: ln for ln in notes.parse_lines(text)}
    ctx = notes.context(text, lines[(r.disagreements[0].id, "t")], "en")
    assert ctx.target == "knowledge/Backups"
    assert ctx.mine == "The prune runs on Saturdays."
    assert ctx.new == "The prune runs on Sundays at 02:00."
    carried = notes.context(text, lines[("c-1111111111", "r")], "en")
    assert carried.target == "knowledge/Old" and carried.night == "2026-11-28"


# ------------------------------------------------------------------ who ticked


def _rev(rev: int, kind: str, text: str, device: str = "") -> blame.Revision:
    return blame.Revision(rev, device or kind, device or kind, kind, text)


OPEN = "- [ ] Revert this change `c-0123456789/r`\n- [ ] Drop `p-0123456789/d`\n"
TICKED = OPEN.replace("[ ] Revert", "[x] Revert")


def test_a_tick_belongs_to_the_revision_that_made_it() -> None:
    ticks = blame.ticks([_rev(1, "agent", OPEN), _rev(2, "human", TICKED, "phone")])
    assert ticks[("c-0123456789", "r")].device == "phone"
    # an agent that rewrites the note later (other lines) does not take the person's tick
    later = TICKED.replace("[ ] Drop", "[ ] Drop it")
    ticks = blame.ticks(
        [_rev(1, "agent", OPEN), _rev(2, "human", TICKED, "phone"), _rev(3, "agent", later)]
    )
    assert ticks[("c-0123456789", "r")].kind == "human"


def test_an_agent_cannot_tick_in_the_persons_name() -> None:
    forged = TICKED.replace("`c-0123456789/r`", "`c-0123456789/r` (ticked by laptop)")
    ticks = blame.ticks([_rev(1, "agent", OPEN), _rev(2, "agent", forged, "laptop")])
    assert ticks[("c-0123456789", "r")].kind == "agent"
    # created ticked by an agent: the agent's tick
    assert blame.ticks([_rev(1, "agent", TICKED)])[("c-0123456789", "r")].kind == "agent"


def test_an_untick_and_retick_starts_again() -> None:
    ticks = blame.ticks(
        [
            _rev(1, "agent", OPEN),
            _rev(2, "human", TICKED),
            _rev(3, "agent", OPEN),
            _rev(4, "agent", TICKED),
        ]
    )
    assert ticks[("c-0123456789", "r")].kind == "agent"
    assert blame.ticks([_rev(1, "human", TICKED), _rev(2, "human", None)]) == {}  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["human", "agent"]), st.booleans()), min_size=1, max_size=8)
)
def test_the_tick_is_owned_by_the_first_revision_of_its_unbroken_run(
    history: list[tuple[str, bool]],
) -> None:
    revs = [_rev(i + 1, kind, TICKED if on else OPEN) for i, (kind, on) in enumerate(history)]
    ticks = blame.ticks(revs)
    key = ("c-0123456789", "r")
    if not history[-1][1]:
        assert key not in ticks
        return
    start = len(history) - 1
    while start > 0 and history[start - 1][1]:
        start -= 1
    assert ticks[key].rev == start + 1 and ticks[key].kind == history[start][0]


# ------------------------------------------------------------------ what a decision does


def test_revert_only_what_the_change_left() -> None:
    c = _review().changes[0]
    assert decide.revert(c.after, c) == decide.Result(True, c.before)
    assert decide.revert(c.after + "mine\n", c).refusal == "edited"
    new = _review().changes[1]
    assert decide.revert(new.after, new) == decide.Result(True, None)  # a new note: deleted


def test_keep_mine_and_take_the_new_value() -> None:
    r = _review()
    d = r.disagreements[0]
    after = r.changes[0].after
    kept = decide.keep_mine(after, d)
    assert (
        kept.ok
        and FLAG not in (kept.text or "")
        and "- The prune runs on Saturdays." in (kept.text or "")
    )
    taken = decide.take_new(after, d)
    assert taken.ok and "Saturdays" not in (taken.text or "") and FLAG not in (taken.text or "")
    assert "- The prune runs on Sundays at 02:00.\n" in (taken.text or "")
    assert decide.keep_mine(r.changes[0].before, d).refusal == "gone"


def test_the_simple_diff() -> None:
    assert diff.hunk("a\nb\nc\n", "a\nx\nc\n") == (["b"], ["x"])
    assert diff.hunk(None, "a\n") == ([], ["a"])
    assert diff.hunk("a\nb\n", "a\nb\n") == ([], [])
    lines, more = diff.diff_lines(None, "".join(f"{i}\n" for i in range(50)))
    assert len(lines) == diff.MAX_LINES and more == 10


# ------------------------------------------------------------------ the shared vectors


def vectors() -> dict[str, Any]:
    r = _review()
    rendered = notes.render(r)
    key = (r.changes[0].id, "r")
    ticked = notes.set_ticked(rendered, key)
    decided = notes.set_outcome(ticked, key, "reverted 08:14 from phone", ticked=True)
    revs = [
        _rev(1, "agent", OPEN),
        _rev(2, "human", TICKED, "phone"),
        _rev(3, "agent", TICKED.replace("Drop", "Drop it")),
    ]
    d = r.disagreements[0]
    after = r.changes[0].after
    return {
        "ids": [
            {"kind": "change", "args": ["f1", 3, 4], "id": change_id("f1", 3, 4)},
            {"kind": "disagreement", "args": [d.path, FLAG], "id": d.id},
            {"kind": "proposal", "args": ["abc123"], "id": proposal_item_id("abc123")},
            {"kind": "night", "args": ["2026-11-29"], "id": night_id("2026-11-29")},
        ],
        "labels_sha256": __import__("hashlib").sha256(labels.TABLE.read_bytes()).hexdigest(),
        "note": rendered,
        "parsed": [asdict(ln) for ln in notes.parse_lines(decided)],
        "ticked": {"key": list(key), "text": ticked},
        "decided": {"key": list(key), "outcome": "reverted 08:14 from phone", "text": decided},
        "front_matter": notes.front_matter(rendered),
        "recounted": notes.recount(decided),
        "blocks": {k: list(v) for k, v in notes.change_blocks(rendered).items()},
        "contexts": [
            {"key": list(ln.key), **asdict(notes.context(rendered, ln, "en"))}
            for ln in notes.parse_lines(rendered)
        ],
        "blame": {
            "revisions": [asdict(x) for x in revs],
            "ticks": {f"{k[0]}/{k[1]}": asdict(v) for k, v in blame.ticks(revs).items()},
        },
        "decide": [
            {
                "op": "revert",
                "current": after,
                "change": {"before": r.changes[0].before, "after": after, "before_known": True},
                "result": asdict(decide.revert(after, r.changes[0])),
            },
            {
                "op": "revert",
                "current": after + "x\n",
                "change": {"before": r.changes[0].before, "after": after, "before_known": True},
                "result": asdict(decide.revert(after + "x\n", r.changes[0])),
            },
            {
                "op": "keep",
                "current": after,
                "mine": d.mine,
                "new": d.new,
                "result": asdict(decide.keep_mine(after, d)),
            },
            {
                "op": "take",
                "current": after,
                "mine": d.mine,
                "new": d.new,
                "result": asdict(decide.take_new(after, d)),
            },
            {
                "op": "take",
                "current": after.replace("- The prune runs on Saturdays.\n", ""),
                "mine": d.mine,
                "new": d.new,
                "result": asdict(
                    decide.take_new(after.replace("- The prune runs on Saturdays.\n", ""), d)
                ),
            },
            {
                "op": "keep",
                "current": r.changes[0].before,
                "mine": d.mine,
                "new": d.new,
                "result": asdict(decide.keep_mine(r.changes[0].before, d)),
            },
        ],
        "diffs": [
            {
                "before": b,
                "after": a,
                "lines": diff.diff_lines(b, a)[0],
                "more": diff.diff_lines(b, a)[1],
            }
            for b, a in [("a\nb\nc\n", "a\nx\nc\n"), (None, "a\n"), ("a\n", None), ("x\n", "x\n")]
        ],
    }


def test_the_committed_vectors_are_what_the_code_says() -> None:
    assert json.loads(VECTORS.read_text(encoding="utf-8")) == json.loads(json.dumps(vectors()))


if __name__ == "__main__" and "--write" in sys.argv:
    VECTORS.write_text(json.dumps(vectors(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {VECTORS}")
