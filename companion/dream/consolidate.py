"""Step 2, Consolidate: lessons into `knowledge/`, decisions and state into `projects/`.

Three of the dream's stages (`docs/dream.md`, "The stages"), one home each:

- **placement** (`companion.dream.placement.place_all`): the note each candidate goes to,
  decided once by its topic matching (`companion.dream.topics`); a new note is created only
  when no existing note matches, and two candidates for the same new title share it;
- **plan** (`companion.dream.steps.plan_note`, pure): each note's typed steps against its
  text and the ledger -- `Add` a line, `Merge` a paraphrase's sources into the dream's line
  saying it, `Supersede` the dream's own stale line (a newer status its older status line),
  `Flag` a line that disagrees with the person's;
- **apply** (`_write_note`, here): the steps become edits of the working copy
  (`companion.dream.plan.Plan`), one change per kind of line, through `Plan.write`, the single
  door that checks every guardrail. Lines are added to the note's dream block (created at the
  end of the note when missing), each ending in its provenance.

Dedupe: a candidate is not written when the note already says it, in the person's text or the
dream's (`meaning.same_statement`). One lesson, one line: a candidate saying what one of the
dream's own lines says, maybe in other words (`meaning.paraphrase`), adds its source to that
line's provenance instead, and its recurrence is counted on that line's key (`line_key`).

Project notes get `Decided YYYY-MM-DD: ...` lines and one `Status YYYY-MM-DD: ...` line (in the
vault's language: `Decidido`, `Estado`); a newer status replaces the dream's older status line
(a removal, within the cap), except in a note a person edited recently, where nothing is
written: its lines wait for the next dream and the report says so.

Ownership: only the dream's own lines, those the ledger (`companion.dream.ledger`) says it
wrote and nobody changed since, are ever superseded. A line of a block the person wrote or
changed is theirs, like the text outside blocks: a candidate that disagrees with it (the same
subject, `meaning.same_subject`, with another value) is written as a flagged contradiction,
`- ⚠ Disagrees with your line (DAY): ...`, right under it when it is inside a block, and the
person decides.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from companion.dream import blocks
from companion.dream.model import Candidate
from companion.dream.placement import place_all
from companion.dream.plan import Plan
from companion.dream.report import Skipped
from companion.dream.steps import (  # the lines of a note (re-exported: promote, verify)
    FLAG,
    LABELS,
    PREFIX_RE,
    Add,
    Flag,
    Known,
    Merge,
    Supersede,
    _everything_own,
    flag_text,
    is_flag_line,
    is_status_line,
    line_core,
    line_refs,
    plan_note,
)
from companion.dream.summary import fact
from companion.dream.text import norm_key
from companion.dream.topics import NoteCatalog, TopicMatch

__all__ = [
    "FLAG",
    "LABELS",
    "PREFIX_RE",
    "Consolidated",
    "Explanation",
    "consolidate",
    "flag_text",
    "is_flag_line",
    "line_core",
    "new_note_text",
]
_Known = Known  # its old name (tests)


@dataclass
class Explanation:
    items: list[dict[str, Any]] = field(default_factory=list)

    def add(self, c: Candidate, decision: str, why: str, note: str | None = None) -> None:
        self.items.append(
            {
                "text": None if c.secret else c.text,
                "kind": c.kind,
                "source": c.where(),
                "decision": decision,
                "why": why,
                "note": note,
            }
        )

    def amend(self, c: Candidate, note: str, was: str, decision: str, why: str) -> None:
        """Correct what was said of `c` for `note` (`was`: the decision said at planning)
        once the write turned out otherwise (the memory lock refused it)."""
        text = None if c.secret else c.text
        for item in self.items:
            if (
                item["text"] == text
                and item["source"] == c.where()
                and item["note"] == note
                and item["decision"] == was
            ):
                item["decision"], item["why"] = decision, why


def _prov(c: Candidate, p: Any) -> dict[str, Any]:
    """The report's provenance entry; a model-written line also records its own text, so
    `--verify` can tie that exact line to the quote that grounds it."""
    d = p.to_dict()
    if c.origin == "llm":
        d["written"] = c.text
    return d


def new_note_text(day: dt.date, title: str | None = None) -> str:
    """A new note: minimal frontmatter, then its title as an H1 (as written: ":" kept)."""
    head = f"---\ntags: [dream]\ndate: {day.isoformat()}\n---\n"
    return head + (f"# {title}\n" if title else "")


def _drop_own_lines(
    text: str, stale: Callable[[str], bool], plan: Plan, owns: Callable[[str], bool]
) -> tuple[str, int]:
    """`text` without the dream's own content lines `stale` picks (a removal each, within the
    removal cap: over it, nothing is removed). A line the ledger does not hold as the dream's
    (`owns`) is the person's and never removed."""
    lines = blocks.split_lines(text)
    drop = {
        i
        for b in blocks.find_blocks(lines)
        if b.kind == "content"
        for i in b.body
        if lines[i].strip() and stale(lines[i]) and owns(lines[i])
    }
    if not drop or len(drop) > plan.removal_room():
        return text, 0
    return "\n".join(ln for i, ln in enumerate(lines) if i not in drop), len(drop)


def _insert_after(text: str, anchor: str, line: str) -> str:
    """`text` with `line` added right under the content-block line `anchor` (after the flags
    already there), or at the end of the last content block when `anchor` is gone."""
    lines = blocks.split_lines(text)
    for b in blocks.find_blocks(lines):
        if b.kind != "content":
            continue
        for i in b.body:
            if lines[i] == anchor:
                j = i + 1
                while j < b.end and is_flag_line(lines[j]):
                    j += 1
                return "\n".join([*lines[:j], line, *lines[j:]])
    return blocks.add_lines(text, [line])


@dataclass
class Consolidated:
    skipped: list[Skipped] = field(default_factory=list)
    notes: dict[str, list[Candidate]] = field(default_factory=dict)  # note -> written
    created: list[str] = field(default_factory=list)
    # notes a person is editing: their candidates wait for the next dream
    waiting: dict[str, list[Candidate]] = field(default_factory=dict)
    # a new line saying another value than the person's line: {note, line, existing, new, why}
    contradictions: list[dict[str, Any]] = field(default_factory=list)


def consolidate(
    cands: list[Candidate],
    catalog: NoteCatalog,
    plan: Plan,
    *,
    language: str,
    today: dt.date,
    explain: Explanation,
    rejected: Callable[[str], str | None] = lambda _k: None,
    owns: Callable[[str, str], bool] | None = None,
) -> Consolidated:
    """Place the candidates (`placement.place_all`), plan each note's steps
    (`steps.plan_note`) and apply them to the working copy. `owns(note, line)`: whether the
    dream wrote that block line and nobody changed it (the ledger); without it every block
    line is the dream's."""
    out = Consolidated()
    placed = place_all(cands, catalog, language=language, explain=explain, rejected=rejected)
    out.skipped.extend(placed.skipped)
    for rel, items in placed.notes.items():
        own = _everything_own if owns is None else (lambda ln, rel=rel: owns(rel, ln))
        _write_note(rel, items, plan, today, explain, out, own, language)
    return out


def _write_note(
    rel: str,
    items: list[tuple[Candidate, TopicMatch]],
    plan: Plan,
    today: dt.date,
    explain: Explanation,
    out: Consolidated,
    owns: Callable[[str], bool] = _everything_own,
    language: str = "en",
) -> None:
    """Apply one note's steps: read it, plan it (`steps.plan_note`, pure), write it through
    `Plan.write` (the guardrails), one change per kind of line, then the merged sources."""
    text = plan.read(rel)
    exists = plan.exists(rel)
    if exists and text is None:
        for c, _m in items:
            explain.add(c, "skipped", "the note cannot be rewritten (not plain UTF-8)", rel)
        return
    if exists and plan.is_recent(rel):
        # A person is editing it (or someone we cannot name changed it): not a byte is
        # written; the lines wait for the next dream.
        why = f"the note was {plan.edit_note(rel)}: it waits for the next dream"
        for c, _m in items:
            explain.add(c, "waiting", why, rel)
            out.skipped.append(Skipped.of(c, "being_edited", f"{rel}: {why}"))
            out.waiting.setdefault(rel, []).append(c)
        return
    title = next((m.title for _c, m in items if m.title), None)
    base = text if text is not None else new_note_text(today, title)
    np = plan_note(rel, base, items, today=today, language=language, owns=owns)
    for c, decision, why in np.explained:
        explain.add(c, decision, why, rel)
    out.contradictions.extend(np.contradictions)
    stale: set[str] = set()  # the dream's own lines a newer candidate makes stale
    by_kind: dict[str, list[tuple[Candidate, str]]] = {}
    anchors: dict[str, str] = {}  # a flagged line -> the person's block line it goes under
    hosts: dict[str, list[Candidate]] = {}  # the dream's line -> lessons saying it again
    flagged = 0
    status_supersedes = False
    for step in np.steps:
        if isinstance(step, Merge):
            c = step.cand
            c.line_key = norm_key(line_core(step.host))
            c.entry = c.entry or line_core(step.host)  # promoted, it is the note's one wording
            if step.refs:
                hosts.setdefault(step.host, []).append(c)
        elif isinstance(step, Flag):
            flagged += 1
            stale.update(step.old)
            if step.anchor is not None:
                anchors[step.line] = step.anchor
            by_kind.setdefault("knowledge", []).append((step.cand, step.line))
        elif isinstance(step, Supersede):
            if step.kind == "status":
                status_supersedes = True
            else:
                stale.update(step.old)
            by_kind.setdefault(step.kind, []).append((step.cand, step.line))
        elif isinstance(step, Add):
            by_kind.setdefault(step.kind, []).append((step.cand, step.line))
    current = base
    for kind in ("knowledge", "decision", "status"):
        lines = by_kind.get(kind)
        if not lines:
            continue
        new_lines = [ln for _c, ln in lines if ln not in anchors]
        trial, removed = current, 0
        if kind == "status" and status_supersedes:
            trial, removed = _drop_own_lines(current, is_status_line, plan, owns)
        elif kind == "knowledge" and stale:
            trial, removed = _drop_own_lines(current, lambda ln: line_core(ln) in stale, plan, owns)
        after = blocks.add_lines(trial, new_lines)
        for _c, ln in lines:
            if ln in anchors:
                after = _insert_after(after, anchors[ln], ln)
        cands = [c for c, _ln in lines]
        n = len(cands)
        if kind == "knowledge":
            facts = [fact("lessons_added", n=n)]
        elif kind == "decision":
            facts = [fact("decisions_added", n=n)]
        else:
            facts = [fact("status_updated" if removed else "status_added")]
        if not exists and trial == base and text is None:
            facts.append(fact("new_note"))
        if kind == "knowledge" and removed:
            facts.append(fact("stale_lines_replaced", n=removed))
        if kind == "knowledge" and flagged:
            facts.append(fact("disagreements_flagged", n=flagged))
        change = plan.write(
            rel,
            after,
            kind="corrected" if kind == "status" else "consolidated",
            facts=facts,
            provenance=[_prov(c, p) for c in cands for p in c.provenance],
            keys=[c.key for c in cands],
            removed=removed,
        )
        if change is None:
            for c in cands:
                out.skipped.append(
                    Skipped.of(
                        c, "refused", plan.warnings[-1] if plan.warnings else "the edit was refused"
                    )
                )
            continue
        current = after
        out.notes.setdefault(rel, []).extend(cands)
        if text is None and rel not in out.created:
            out.created.append(rel)
    if hosts:
        _add_sources(rel, current, hosts, plan, out)


def _add_sources(
    rel: str, text: str, hosts: dict[str, list[Candidate]], plan: Plan, out: Consolidated
) -> None:
    """The dream's lines said again in other words get the new sources in their provenance
    (one lesson, one line, every source), in place."""
    lines = blocks.split_lines(text)
    added = 0
    for host, cands in hosts.items():
        refs = line_refs(host)
        for c in cands:
            refs += [r for r in c.refs() if r not in refs]
        m = blocks.SRC_RE.search(host)
        if m is None or host not in lines:
            continue
        new = host[: m.start()] + " " + blocks.format_refs(refs)
        lines = [new if ln == host else ln for ln in lines]
        added += len(refs) - len(line_refs(host))
    if not added:
        return
    cands = [c for cs in hosts.values() for c in cs]
    change = plan.write(
        rel,
        "\n".join(lines),
        kind="consolidated",
        facts=[fact("sources_added", n=added)],
        provenance=[_prov(c, p) for c in cands for p in c.provenance],
        keys=[c.key for c in cands],
        removed=0,
    )
    if change is None:
        for c in cands:
            why = plan.warnings[-1] if plan.warnings else "the edit was refused"
            out.skipped.append(Skipped.of(c, "refused", why))
