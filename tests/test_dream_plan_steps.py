"""The dream's plan is pure and typed (issue 40): state in -> steps out, row by row.

A note's steps (`steps.plan_note`): the note's text as read, the ledger's word on which block
lines are the dream's own, the candidates placed in it -> `Add`, `Merge`, `Supersede`, `Flag`.
The injected memory's steps (`steps.plan_memory`): the promotion plan's writes, the files whose
lock is held, `[dream] apply` -> `Add`, `Supersede`, `Propose`, `Hold`. No file is read or
written: every row runs on strings."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from companion.dream import blocks, steps
from companion.dream.blocks import Ref
from companion.dream.consolidate import Explanation
from companion.dream.model import Candidate, Provenance
from companion.dream.plan import Plan
from companion.dream.promote import MemoryFile, plan_memory_writes
from companion.dream.state import MtimeEditors
from companion.dream.steps import Add, Flag, Hold, Merge, Propose, Supersede
from companion.dream.topics import TopicMatch

TODAY = dt.date(2026, 11, 28)
NOTE = "knowledge/NAS.md"
OLD_REF = Ref("journal/2026-11-20.md", 4)


def cand(
    text: str,
    kind: str = "knowledge",
    *,
    line: int = 7,
    role: str | None = None,
    origin: str = "journal",
    promote: str | None = None,
    target: str = "memory",
) -> Candidate:
    ref = Ref(f"journal/{TODAY.isoformat()}.md", line)
    return Candidate(
        kind,
        text,
        [Provenance(ref, text, role=role)],
        origin,
        promote=promote,
        target=target,
        day=TODAY,
    )


def dream_line(text: str, ref: Ref = OLD_REF) -> str:
    return blocks.render_line(text, [ref])


def note(*person: str, block: tuple[str, ...] = ()) -> str:
    """A note: the person's lines, then a dream block holding `block`."""
    head = ["# NAS", "", *person, ""]
    if block:
        head += [blocks.BEGIN_TEXT["content"], *block, blocks.END, ""]
    return "\n".join(head)


def shape(step: Any) -> tuple[Any, ...]:
    """A step as the table writes it (the candidate by its text)."""
    if isinstance(step, Add):
        return ("add", step.kind, blocks.SRC_RE.sub("", step.line))
    if isinstance(step, Merge):
        return ("merge", blocks.SRC_RE.sub("", step.host), [r.format() for r in step.refs])
    if isinstance(step, Supersede):
        return ("supersede", blocks.SRC_RE.sub("", step.line), list(step.old))
    if isinstance(step, Flag):
        return ("flag", blocks.SRC_RE.sub("", step.line), step.anchor is not None)
    if isinstance(step, Propose):
        return ("propose", step.target, step.op, step.reason)
    if isinstance(step, Hold):
        return ("hold", step.target, step.cand.text)
    raise AssertionError(step)


MATCH = TopicMatch(NOTE, "title")
BACKUPS_3 = "Backups of the NAS start at 03:00 every night."
BACKUPS_430 = "Backups of the NAS start at 04:30 every night."
PARA_A = "The proxy drops long connections unless keepalive-timeout is raised."
PARA_B = "If keepalive-timeout is not raised, the proxy drops long connections."

# (id, the note's text, the dream's own block lines (None: every block line), candidates,
#  the steps out)
NOTE_ROWS: list[tuple[str, str, set[str] | None, list[Candidate], list[tuple[Any, ...]]]] = [
    (
        "a new lesson is added",
        note("The NAS is a DS920+."),
        None,
        [cand("Scrub the NAS volumes once a month.")],
        [("add", "knowledge", "- Scrub the NAS volumes once a month.")],
    ),
    (
        "a paraphrase of the dream's line merges: its source joins that line",
        note(block=(dream_line(PARA_A),)),
        None,
        [cand(PARA_B)],
        [("merge", f"- {PARA_A}", [f"journal/{TODAY.isoformat()}.md#L7"])],
    ),
    (
        "said again from a source the line already holds: a merge that adds nothing",
        note(block=(dream_line(PARA_A),)),
        None,
        [Candidate("knowledge", PARA_B, [Provenance(OLD_REF, PARA_B)], "journal", day=TODAY)],
        [("merge", f"- {PARA_A}", [])],
    ),
    (
        "already said by the person: no step",
        note(BACKUPS_3),
        None,
        [cand(BACKUPS_3)],
        [],
    ),
    (
        "a newer value supersedes the dream's own line",
        note(block=(dream_line(BACKUPS_3),)),
        None,
        [cand(BACKUPS_430)],
        [("supersede", f"- {BACKUPS_430}", [BACKUPS_3])],
    ),
    (
        "a newer value against the person's line (outside the blocks) is flagged",
        note(BACKUPS_3),
        None,
        [cand(BACKUPS_430)],
        [("flag", f"- ⚠ Disagrees with your line ({TODAY}): {BACKUPS_430}", False)],
    ),
    (
        "a dream line the person changed is theirs: flagged under it, never superseded",
        note(block=(dream_line(BACKUPS_3),)),
        set(),
        [cand(BACKUPS_430)],
        [("flag", f"- ⚠ Disagrees with your line ({TODAY}): {BACKUPS_430}", True)],
    ),
    (
        "a decision is added, dated",
        note(),
        None,
        [cand("Move the backups to the second volume.", "decision")],
        [("add", "decision", f"- Decided {TODAY}: Move the backups to the second volume.")],
    ),
    (
        "a new status supersedes the dream's own status line",
        note(block=(dream_line("Status 2026-11-20: Waiting for the new disks."),)),
        None,
        [cand("The new disks are installed and syncing.", "status")],
        [
            (
                "supersede",
                f"- Status {TODAY}: The new disks are installed and syncing.",
                [dream_line("Status 2026-11-20: Waiting for the new disks.")],
            )
        ],
    ),
    (
        "two lessons in one note: the second sees the first (one lesson, one line)",
        note(),
        None,
        [cand("Scrub the NAS volumes once a month."), cand("Scrub the NAS volumes once a month.")],
        [("add", "knowledge", "- Scrub the NAS volumes once a month.")],
    ),
]


@pytest.mark.parametrize(
    ("text", "own", "cands", "expected"),
    [row[1:] for row in NOTE_ROWS],
    ids=[row[0] for row in NOTE_ROWS],
)
def test_a_notes_steps(
    text: str, own: set[str] | None, cands: list[Candidate], expected: list[tuple[Any, ...]]
) -> None:
    owns = (lambda _ln: True) if own is None else (lambda ln: ln in own)
    before = [(c.text, c.line_key, c.entry) for c in cands]
    out = steps.plan_note(NOTE, text, [(c, MATCH) for c in cands], today=TODAY, owns=owns)
    assert [shape(s) for s in out.steps] == expected
    # pure: the candidates are not changed (apply sets a merged lesson's line key)
    assert [(c.text, c.line_key, c.entry) for c in cands] == before


def test_every_candidate_is_explained_once_in_order() -> None:
    cands = [cand("Scrub the NAS volumes once a month."), cand(BACKUPS_3)]
    out = steps.plan_note(
        NOTE, note(BACKUPS_3), [(c, MATCH) for c in cands], today=TODAY, language="en"
    )
    assert [(c.text, d, w) for c, d, w in out.explained] == [
        ("Scrub the NAS volumes once a month.", "consolidated", "matched by the note's title"),
        (BACKUPS_3, "duplicate", "the note already says this"),
    ]


def test_a_flag_carries_the_reports_contradiction() -> None:
    out = steps.plan_note(
        NOTE, note(BACKUPS_3), [(cand(BACKUPS_430), MATCH)], today=TODAY, language="es"
    )
    (flag,) = out.steps
    assert isinstance(flag, Flag)
    assert flag.line.startswith(f"- ⚠ {steps.say('es', 'Disagrees with your line')} (")
    assert out.contradictions == [
        {
            "note": NOTE,
            "line": 3,
            "existing": BACKUPS_3,
            "new": BACKUPS_430,
            "why": out.contradictions[0]["why"],
            "edited": False,
        }
    ]


def _never_unsure(_text: str) -> str | None:
    return None


RISKY = "The NAS admin page is on port 5001."
OLDER = "The NAS admin page is on port 5000."
BLOCKED = {"memory": "blocked by the memory lock: will retry at the next dream"}

# (id, planned writes: target -> (op, old, new, candidate), [dream] apply, eligible facts,
#  blocked files, the steps out)
MEMORY_ROWS: list[
    tuple[
        str,
        dict[str, list[tuple[str, str | None, str | None, Candidate]]],
        str,
        list[Candidate],
        dict[str, str],
        list[tuple[Any, ...]],
    ]
] = [
    (
        "the person's own marked fact is added",
        {"memory": [("add", None, RISKY, cand(RISKY, "fact", role="user", promote="marker"))]},
        "propose-risky",
        [],
        {},
        [("add", "memory", RISKY)],
    ),
    (
        "replacing an injected entry is proposed, not applied",
        {"memory": [("replace", OLDER, RISKY, cand(RISKY, "fact", role="user"))]},
        "propose-risky",
        [],
        {},
        [("propose", "memory", "replace", "replaces")],
    ),
    (
        "an add only an assistant message says is proposed",
        {"memory": [("add", None, RISKY, cand(RISKY, "fact", role="assistant"))]},
        "propose-risky",
        [],
        {},
        [("propose", "memory", "add", "assistant_only")],
    ),
    (
        "the agent's own memory-tool add is not risky",
        {
            "memory": [
                ("add", None, RISKY, cand(RISKY, "fact", role="assistant", origin="memory-tool"))
            ]
        },
        "propose-risky",
        [],
        {},
        [("add", "memory", RISKY)],
    ),
    (
        "with apply = auto a replacement is applied: a supersede",
        {"memory": [("replace", OLDER, RISKY, cand(RISKY, "fact", role="user"))]},
        "auto",
        [],
        {},
        [("supersede", RISKY, [OLDER])],
    ),
    (
        "with apply = propose-all even the person's own add waits",
        {"user": [("add", None, "Prefers metric units.", cand("x", "fact", role="user"))]},
        "propose-all",
        [],
        {},
        [("propose", "user", "add", "propose_all")],
    ),
    (
        "a promotion the memory lock blocks is held for the next dream",
        {},
        "propose-risky",
        [
            cand(RISKY, "fact", promote="marker"),
            cand(OLDER, "fact", promote="marker", target="user"),
        ],
        BLOCKED,
        [("hold", "memory", RISKY)],
    ),
]


@pytest.mark.parametrize(
    ("ops", "mode", "eligible", "blocked", "expected"),
    [row[1:] for row in MEMORY_ROWS],
    ids=[row[0] for row in MEMORY_ROWS],
)
def test_the_memorys_steps(
    ops: dict[str, list[tuple[str, str | None, str | None, Candidate]]],
    mode: str,
    eligible: list[Candidate],
    blocked: dict[str, str],
    expected: list[tuple[Any, ...]],
) -> None:
    out = steps.plan_memory(ops, mode, eligible=eligible, blocked=blocked, unsure=_never_unsure)
    assert [shape(s) for s in out] == expected


def test_a_hold_says_why() -> None:
    c = cand(RISKY, "fact", promote="marker")
    assert steps.hold(c, BLOCKED) == Hold("memory", c, BLOCKED["memory"])
    assert steps.hold(c, {"user": "held"}) is None


def test_the_guard_doubt_makes_an_add_a_proposal() -> None:
    c = cand(RISKY, "fact", role="user", promote="marker")
    step = steps.memory_step(
        "memory", "add", None, RISKY, c, "propose-risky", unsure=lambda _t: "encoded text"
    )
    assert step == Propose("memory", c, "add", None, RISKY, "unsure")


def _counting_plan(cap: int = 10) -> Plan:
    """The removal cap's counter, all the memory plan asks of the working copy (a root that
    does not exist: nothing can be read from it)."""
    return Plan(
        root=Path("/nonexistent-vault"),
        is_secret=lambda _t: False,
        max_removals=cap,
        editors=MtimeEditors(Path("/nonexistent-vault"), None),  # type: ignore[arg-type]
        now=dt.datetime(2026, 11, 28, tzinfo=dt.UTC),
        human_window=dt.timedelta(hours=1),
    )


# (id, MEMORY.md's entries as read, the lock held, the fact promoted, [dream] apply, steps out)
ENTRY_ROWS: list[tuple[str, list[str] | None, bool, str, str, list[tuple[Any, ...]]]] = [
    ("a new fact is added", ["The NAS is a DS920+."], False, RISKY, "propose-risky", [
        ("add", "memory", RISKY)
    ]),
    ("a newer value of an entry is a replacement: proposed", [OLDER], False, RISKY,
     "propose-risky", [("propose", "memory", "replace", "replaces")]),
    ("the same, with apply = auto: the older entry is superseded", [OLDER], False, RISKY, "auto",
     [("supersede", RISKY, [OLDER])]),
    ("the lock is held: held, nothing planned", None, True, RISKY, "propose-risky",
     [("hold", "memory", RISKY)]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("entries", "locked", "text", "mode", "expected"),
    [row[1:] for row in ENTRY_ROWS],
    ids=[row[0] for row in ENTRY_ROWS],
)
def test_memory_entries_in_steps_out(
    entries: list[str] | None, locked: bool, text: str, mode: str, expected: list[Any]
) -> None:
    """From the entries as read (no store, no file) through the promotion plan to steps."""
    c = cand(text, "knowledge", role="user", promote="marker")
    files = {"memory": MemoryFile("MEMORY.md", 2200, entries)}
    blocked = {"memory": BLOCKED["memory"]} if locked else {}
    pp = plan_memory_writes([c], files, _counting_plan(), Explanation(), blocked=blocked)
    ops = {
        t: [(p.op.action, p.op.old_text or p.replaced, p.op.content, p.cand) for p in planned]
        for t, planned in pp.ops.items()
    }
    got = steps.plan_memory(ops, mode, eligible=pp.pending, blocked=blocked, unsure=_never_unsure)
    assert [shape(s) for s in got] == expected
