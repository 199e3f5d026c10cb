"""The plan: what the dream will do to each note and to the injected memory, as typed steps.

Pure: it reads no file, writes none, and asks no lock. The stages (`docs/dream.md`, "The
stages") are

    read -> distill -> gates -> placement -> plan -> apply -> record

and this module is the plan, in two parts, each a function from what is known to a list of
steps (table-tested row by row in `tests/test_dream_plan_steps.py`):

1. **A note's steps** (`plan_note`): the candidates placed in one note
   (`companion.dream.placement`), against the note's text as read and the ledger's word on
   which block lines are the dream's own (`owns`). For each candidate, in order:

   - the dream's own line already says it, maybe in other words (`meaning.paraphrase`):
     `Merge`, its new sources join that line (none new: nothing changes, but its recurrence
     is counted on that line's key);
   - the note already says it (the person's text or the dream's): no step, a duplicate;
   - it disagrees with a line of the person's (the same subject with another value,
     `meaning.same_subject`), outside the blocks or a dream line the person changed: `Flag`,
     a new line `⚠ Disagrees with your line (DAY): ...`, right under the person's line when
     that is inside a block;
   - it makes one of the dream's own lines stale (the same subject, another value): the new
     line `Supersede`s them; a project's new status supersedes the dream's own status lines;
   - otherwise: `Add`, a new line of the note's dream block (a decision dated `Decided DAY:`).

   A step changes nothing yet: `companion.dream.consolidate` applies them through
   `Plan.write`, the single door that checks every guardrail (the person's lines, provenance,
   secrets, the injection guard, the removal cap: a supersession over the cap adds the new
   line and keeps the old).
2. **The injected memory's steps** (`memory_step`, `plan_memory`): each write the promotion
   plan holds for MEMORY.md / USER.md (`promote.plan_memory_writes`, on the entries as
   `promote.read_memory` read them: no file either) is an `Add` or a `Supersede`
   (the agent's replace or remove, an older entry on the same subject), or a `Propose` when
   `[dream] apply` says the person decides (`companion.dream.proposals.needs_proposal`); each
   fact the agent's memory lock kept out is a `Hold`, retried at the next dream.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from companion.dream import blocks
from companion.dream.blocks import Ref
from companion.dream.meaning import contradicts, meaning, paraphrase, same_statement, same_subject
from companion.dream.model import Candidate
from companion.dream.text import fold, norm_key
from companion.dream.topics import TopicMatch
from companion.l10n import LANGUAGES, say

# ------------------------------------------------------------------- the lines of a note

LABELS = {
    "en": {"decision": "Decided", "status": "Status"},
    "es": {"decision": "Decidido", "status": "Estado"},
    "fr": {"decision": "Décidé", "status": "Statut"},
    "de": {"decision": "Entschieden", "status": "Stand"},
    "pt": {"decision": "Decidido", "status": "Situação"},
    "it": {"decision": "Deciso", "status": "Stato"},
}


def _alts(kind: str | None = None) -> str:
    words = {w for t in LABELS.values() for k, w in t.items() if kind in (None, k)}
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


PREFIX_RE = re.compile(rf"^(?:{_alts()}) \d{{4}}-\d{{2}}-\d{{2}}: ")
_STATUS_LINE = re.compile(rf"^- (?:{_alts('status')}) \d{{4}}-\d{{2}}-\d{{2}}: ")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
FLAG = "⚠"


def flag_text(text: str, day: str, language: str) -> str:
    """A new line that disagrees with the person's, as the person reads it."""
    return f"{FLAG} {say(language, 'Disagrees with your line')} ({day}): {text}"


@lru_cache(maxsize=1)
def _flag_re() -> re.Pattern[str]:
    labels = sorted({say(lang, "Disagrees with your line") for lang in LANGUAGES}, key=len)
    alts = "|".join(re.escape(x) for x in reversed(labels))
    return re.compile(rf"^{FLAG}\ufe0f? (?:{alts}) \(\d{{4}}-\d{{2}}-\d{{2}}\): ")


def is_flag_line(line: str) -> bool:
    return bool(_flag_re().match(_BULLET.sub("", line, count=1)))


def line_core(line: str) -> str:
    """A note line as a statement: no bullet, no provenance comment, no Decided/Status prefix."""
    m = blocks.SRC_RE.search(line)
    if m:
        line = line[: m.start()]
    line = _BULLET.sub("", line, count=1).strip()
    return PREFIX_RE.sub("", _flag_re().sub("", line, count=1))


def _cores(text: str) -> list[tuple[int, str]]:
    """(line index, statement) of every line of `text` that says something."""
    out = []
    for i, raw in enumerate(blocks.split_lines(text)):
        core = line_core(raw)
        if core and not core.startswith("<!--") and not core.startswith("#"):
            out.append((i, core))
    return out


def _everything_own(_line: str) -> bool:
    return True


@dataclass
class Known:
    """What a note already says: the person's lines and the dream's own, as statements (each
    with its folded text, a cheap first filter before comparing meanings). The person's lines
    are those outside the dream's blocks and those inside that the dream did not write as they
    are (`owns`: the ledger)."""

    keys: set[str]
    # (line index, statement, folded, the raw line when it is inside a content block)
    human: list[tuple[int, str, str, str | None]]
    dream: list[tuple[str, str]]  # (statement, folded) of the dream's own content lines
    own_raw: dict[str, str] = field(default_factory=dict)  # statement -> its block line

    @classmethod
    def of(cls, text: str, owns: Callable[[str], bool] = _everything_own) -> Known:
        human: list[tuple[int, str, str, str | None]] = [
            (i, c, fold(c), None) for i, c in _cores(blocks.blank_blocks(text))
        ]
        dream: list[tuple[str, str]] = []
        own_raw: dict[str, str] = {}
        raw = blocks.split_lines(text)
        for dl in blocks.dream_lines(text):
            if dl.kind != "content":
                continue
            c = line_core(dl.text)
            line = raw[dl.line - 1].rstrip("\r")
            if owns(line):
                dream.append((c, fold(c)))
                own_raw.setdefault(c, line)
            elif c and not c.startswith("<!--") and not c.startswith("#"):
                human.append((dl.line - 1, c, fold(c), line))
        keys = {norm_key(h[1]) for h in human} | {norm_key(c) for c, _f in dream}
        return cls(keys, human, dream, own_raw)

    @staticmethod
    def _near(text: str, lines: list[tuple[str, str]]) -> list[str]:
        """The lines sharing at least one stem of `text` (the others cannot say the same
        thing, nor contradict it)."""
        stems = meaning(text).stems
        return [c for c, f in lines if any(s in f for s in stems)]

    def says(self, text: str) -> bool:
        if norm_key(text) in self.keys:
            return True
        pool = [(h[1], h[2]) for h in self.human] + self.dream
        near = self._near(text, pool)
        if any(same_statement(text, c) for c in near):
            return True
        # The person's line saying the lesson in other words (often the dream's line they
        # edited, a name added): one lesson, one line, and that line is theirs.
        theirs = {h[1] for h in self.human}
        return any(paraphrase(text, c) for c in near if c in theirs)

    def host(self, text: str) -> str | None:
        """The dream's own block line (as it is in the note) saying `text`, maybe in other
        words (`meaning.paraphrase`: the same values, a close stem overlap): one lesson is one
        line, holding every source."""
        for c in self._near(text, [(c, f) for c, f in self.dream if c in self.own_raw]):
            if paraphrase(text, c) and not is_flag_line(self.own_raw[c]):
                return self.own_raw[c]  # a flag is not said again: a repeat changes nothing
        return None

    def stale_own(self, text: str) -> set[str]:
        """The dream's own lines `text` makes stale."""
        return {c for c in self._near(text, self.dream) if contradicts(text, c)}

    def clashes(self, text: str) -> list[tuple[int, str, str, str | None]]:
        """(line, statement, how, raw line inside a block) of the person's lines `text`
        disagrees with (the same subject, even said with more words, another value)."""
        near = set(self._near(text, [(h[1], h[2]) for h in self.human]))
        out = []
        for i, c, _f, raw in self.human:
            how = same_subject(text, c) if c in near else None
            if how:
                out.append((i, c, how, raw))
        return out

    def add(self, text: str) -> None:
        self.keys.add(norm_key(text))
        self.dream.append((text, fold(text)))


def is_status_line(line: str) -> bool:
    return bool(_STATUS_LINE.match(line))


def line_refs(line: str) -> list[Ref]:
    m = blocks.SRC_RE.search(line)
    return blocks.parse_refs(m.group("refs")) if m else []


def new_refs(host: str, c: Candidate) -> list[Ref]:
    have = line_refs(host)
    return [r for r in c.refs() if r not in have]


# ------------------------------------------------------------------------------ the steps


@dataclass(frozen=True)
class Add:
    """A new line in `note`'s dream block (`line`: as written, with its provenance)."""

    note: str
    cand: Candidate
    kind: str  # knowledge, decision, status (in the memory: memory, user)
    line: str


@dataclass(frozen=True)
class Merge:
    """`cand` says what the dream's own line `host` says: its new sources (`refs`) join that
    line; none new, nothing is written."""

    note: str
    cand: Candidate
    host: str
    refs: tuple[Ref, ...]


@dataclass(frozen=True)
class Supersede:
    """A new line replacing the dream's own older lines on the same subject (`old`: their
    statements; for a status, the dream's own status lines as written). In the memory: an
    entry replaced or removed."""

    note: str
    cand: Candidate
    kind: str
    line: str
    old: tuple[str, ...]


@dataclass(frozen=True)
class Flag:
    """A new line disagreeing with the person's: written flagged, under `anchor` (the
    person's block line) when there is one; `clashes` are the report's contradictions.
    `old`: the dream's own lines it also makes stale."""

    note: str
    cand: Candidate
    line: str
    anchor: str | None
    clashes: tuple[dict[str, Any], ...]
    old: tuple[str, ...] = ()


@dataclass(frozen=True)
class Propose:
    """A change to the injected memory that waits for the person (`reason`: a code of
    `companion.dream.proposals.WHY`)."""

    target: str  # memory or user
    cand: Candidate
    op: str  # add, replace, remove
    old: str | None
    new: str | None
    reason: str


@dataclass(frozen=True)
class Hold:
    """A promotion the agent's memory lock blocked: kept for the next dream."""

    target: str
    cand: Candidate
    why: str


Step = Add | Merge | Supersede | Flag | Propose | Hold


@dataclass
class NotePlan:
    """One note's steps, and what to say of each candidate (`explained`: candidate, decision,
    why, in order; a duplicate has no step, only its explanation)."""

    note: str
    steps: list[Step] = field(default_factory=list)
    explained: list[tuple[Candidate, str, str]] = field(default_factory=list)

    @property
    def contradictions(self) -> list[dict[str, Any]]:
        return [c for s in self.steps if isinstance(s, Flag) for c in s.clashes]


def own_status_lines(text: str, owns: Callable[[str], bool]) -> tuple[str, ...]:
    """The dream's own status lines of `text`'s content blocks."""
    lines = blocks.split_lines(text)
    return tuple(
        lines[i]
        for b in blocks.find_blocks(lines)
        if b.kind == "content"
        for i in b.body
        if lines[i].strip() and is_status_line(lines[i]) and owns(lines[i])
    )


def plan_note(
    note: str,
    text: str,
    items: Sequence[tuple[Candidate, TopicMatch]],
    *,
    today: dt.date,
    language: str = "en",
    owns: Callable[[str], bool] = _everything_own,
) -> NotePlan:
    """The steps that put `items` (candidates placed in `note`, in order) into `note`, whose
    text is `text` (a new note's head when it does not exist yet). `owns(line)`: the dream
    wrote that block line and nobody changed it (the ledger). See the module docstring."""
    from companion.dream.placement import how_placed  # noqa: PLC0415 - placement imports topics

    out = NotePlan(note)
    labels = LABELS.get(language, LABELS["en"])
    known = Known.of(text, owns)
    status_old: tuple[str, ...] | None = None
    for c, m in items:
        host = known.host(c.text) if c.kind == "knowledge" else None
        if host is not None:
            refs = tuple(new_refs(host, c))
            out.steps.append(Merge(note, c, host, refs))
            if refs:
                out.explained.append((c, "consolidated", "said again: its source joins the line"))
            else:
                out.explained.append((c, "duplicate", "the note already says this"))
            continue
        if known.says(c.text):
            out.explained.append((c, "duplicate", "the note already says this"))
            continue
        day = (c.day or today).isoformat()
        shown = c.text if c.kind == "knowledge" else f"{labels[c.kind]} {day}: {c.text}"
        stale: tuple[str, ...] = ()
        clashes: list[dict[str, Any]] = []
        anchor: str | None = None
        if c.kind == "knowledge":
            stale = tuple(sorted(known.stale_own(c.text)))
            found = known.clashes(c.text)
            for line_no, core, clash, raw in found:
                clashes.append(
                    {
                        "note": note,
                        "line": line_no + 1,
                        "existing": core,
                        "new": c.text,
                        "why": clash,
                        "edited": raw is not None,  # a dream line the person changed
                    }
                )
            if found:
                shown = flag_text(c.text, day, language)
                anchor = next((raw for *_x, raw in found if raw is not None), None)
        known.add(c.text)
        line = blocks.render_line(shown, c.refs())
        if clashes:
            out.steps.append(Flag(note, c, line, anchor, tuple(clashes), stale))
        elif stale:
            out.steps.append(Supersede(note, c, c.kind, line, stale))
        elif c.kind == "status":
            if status_old is None:
                status_old = own_status_lines(text, owns)
            step: Step = (
                Supersede(note, c, c.kind, line, status_old)
                if status_old
                else Add(note, c, c.kind, line)
            )
            out.steps.append(step)
        else:
            out.steps.append(Add(note, c, c.kind, line))
        out.explained.append((c, "consolidated", how_placed(m)))
    return out


# ------------------------------------------------------------------- the injected memory


def memory_step(
    target: str,
    op: str,
    old: str | None,
    new: str | None,
    cand: Candidate,
    mode: str,
    *,
    unsure: Callable[[str], str | None] | None = None,
) -> Add | Supersede | Propose:
    """One planned write to MEMORY.md / USER.md (`op`: add, replace, remove) as a step: a
    `Propose` when `[dream] apply = mode` says the person decides, else an `Add` (or a
    `Supersede`: a replace or a remove)."""
    from companion.dream import proposals  # noqa: PLC0415 - proposals imports the promote step

    change = proposals.MemoryChange(
        target,
        op,
        old,
        new,
        proposals.voices(cand),
        memory_tool=cand.promote == "memory-tool" or cand.origin == "memory-tool",
    )
    reason = proposals.needs_proposal(change, mode, unsure=unsure or proposals.guard_unsure)
    if reason is not None:
        return Propose(target, cand, op, old, new, reason)
    if op == "add":
        return Add(target, cand, target, new or "")
    return Supersede(target, cand, target, new or "", (old,) if old else ())


def hold(c: Candidate, blocked: Mapping[str, str]) -> Hold | None:
    """A `Hold` when the memory file `c` is promoted to is blocked (`blocked`: target -> why,
    the files whose lock another writer holds), else None."""
    why = blocked.get(c.target)
    return Hold(c.target, c, why) if why is not None else None


def plan_memory(
    ops: Mapping[str, Sequence[tuple[str, str | None, str | None, Candidate]]],
    mode: str,
    *,
    eligible: Sequence[Candidate] = (),
    blocked: Mapping[str, str] | None = None,
    unsure: Callable[[str], str | None] | None = None,
) -> list[Step]:
    """The injected memory's steps: a `Hold` for each eligible fact whose file is blocked
    (`hold`), then each planned write (`ops`: target -> (op, old, new, candidate)) as
    `memory_step` says. (`promote.plan_promotions` asks `hold` and
    `proposals.take_proposals` asks `memory_step`, one fact at a time.)"""
    out: list[Step] = [h for c in eligible if (h := hold(c, blocked or {})) is not None]
    out.extend(
        memory_step(target, op, old, new, c, mode, unsure=unsure)
        for target, planned in ops.items()
        for op, old, new, c in planned
    )
    return out
