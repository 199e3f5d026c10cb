"""Step 2, Consolidate: lessons into `knowledge/`, decisions and state into `projects/`.

Each candidate goes to the note its topic matching found (`companion.dream.topics`); lines are
added to the note's dream block (created at the end of the note when missing), each ending in
its provenance. The note on a topic is extended, never duplicated: a new note is created only
when no existing note matches, and two candidates for the same new title share it.

Dedupe: a candidate is not written when the note already says it, in the person's text or the
dream's (same normalised text, or 85% word overlap with one of its lines).

Project notes get `Decided YYYY-MM-DD: ...` lines and one `Status YYYY-MM-DD: ...` line (in the
vault's language: `Decidido`, `Estado`); a newer status replaces the dream's older status line
(a removal, within the cap), except in a note a person edited recently, where lines are only
ever appended at the end and the report says so.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from companion.dream import blocks
from companion.dream.model import Candidate
from companion.dream.plan import Plan
from companion.dream.report import Skipped
from companion.dream.summary import fact
from companion.dream.text import jaccard, norm_key, words
from companion.dream.topics import NoteCatalog, TopicMatch

SIMILAR_LINE = 0.85
LABELS = {
    "en": {"decision": "Decided", "status": "Status"},
    "es": {"decision": "Decidido", "status": "Estado"},
}
PREFIX_RE = re.compile(r"^(?:Decided|Decidido|Status|Estado) \d{4}-\d{2}-\d{2}: ")
_STATUS_LINE = re.compile(r"^- (?:Status|Estado) \d{4}-\d{2}-\d{2}: ")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


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


def line_core(line: str) -> str:
    """A note line as a statement: no bullet, no provenance comment, no Decided/Status prefix."""
    m = blocks.SRC_RE.search(line)
    if m:
        line = line[: m.start()]
    line = _BULLET.sub("", line, count=1).strip()
    return PREFIX_RE.sub("", line)


def _known(text: str) -> tuple[set[str], list[set[str]]]:
    keys: set[str] = set()
    sets: list[set[str]] = []
    for raw in blocks.split_lines(text):
        core = line_core(raw)
        if not core or core.startswith("<!--"):
            continue
        keys.add(norm_key(core))
        ws = words(core)
        if len(ws) >= 3:
            sets.append(ws)
    return keys, sets


def _is_dup(c: Candidate, keys: set[str], sets: list[set[str]]) -> bool:
    if c.key in keys:
        return True
    ws = words(c.text)
    return len(ws) >= 3 and any(jaccard(ws, s) >= SIMILAR_LINE for s in sets)


def _prov(c: Candidate, p: Any) -> dict[str, Any]:
    """The report's provenance entry; a model-written line also records its own text, so
    `--verify` can tie that exact line to the quote that grounds it."""
    d = p.to_dict()
    if c.origin == "llm":
        d["written"] = c.text
    return d


def new_note_text(day: dt.date) -> str:
    return f"---\ntags: [dream]\ndate: {day.isoformat()}\n---\n"


@dataclass
class Consolidated:
    skipped: list[Skipped] = field(default_factory=list)
    notes: dict[str, list[Candidate]] = field(default_factory=dict)  # note -> written
    created: list[str] = field(default_factory=list)
    appended_recent: list[str] = field(default_factory=list)


def consolidate(
    cands: list[Candidate],
    catalog: NoteCatalog,
    plan: Plan,
    *,
    language: str,
    today: dt.date,
    explain: Explanation,
    rejected: Callable[[str], str | None] = lambda _k: None,
) -> Consolidated:
    out = Consolidated()
    labels = LABELS.get(language, LABELS["en"])
    catalog.prefetch(c.text for c in cands if c.kind == "knowledge")
    targets: dict[str, list[tuple[Candidate, TopicMatch]]] = {}
    latest_status: dict[str, Candidate] = {}
    for c in sorted(cands, key=lambda c: c.time or dt.datetime.min.replace(tzinfo=dt.UTC)):
        if not c.consolidate:
            continue
        undone = rejected(c.key)
        if undone:
            explain.add(c, "skipped", f"undone on {undone}")
            out.skipped.append(Skipped.of(c, "undone", f"a person undid it on {undone}"))
            continue
        if c.kind == "knowledge":
            # The agent's memory-tool facts extend a note they name; else they stay in memory.
            tool = c.origin == "memory-tool"
            m = catalog.match_knowledge(
                c.text, c.topic, may_create=not tool, by_similarity=not tool
            )
        else:
            m = catalog.match_project(c.text, c.topic)
        if m.path is None:
            explain.add(c, "not consolidated", m.reason)
            if c.kind != "knowledge":
                out.skipped.append(Skipped.of(c, "no_project", m.reason))
            continue
        if m.is_new:
            catalog.add_created(m.path)
        if c.kind == "status":
            prev = latest_status.get(m.path)
            if prev is not None:
                explain.add(
                    prev, "skipped", "a later status of the same project replaces it", m.path
                )
                targets[m.path] = [(x, y) for x, y in targets[m.path] if x is not prev]
            latest_status[m.path] = c
        targets.setdefault(m.path, []).append((c, m))
    for rel, items in targets.items():
        _write_note(rel, items, plan, labels, today, explain, out)
    return out


def _write_note(
    rel: str,
    items: list[tuple[Candidate, TopicMatch]],
    plan: Plan,
    labels: dict[str, str],
    today: dt.date,
    explain: Explanation,
    out: Consolidated,
) -> None:
    text = plan.read(rel)
    exists = plan.exists(rel)
    if exists and text is None:
        for c, _m in items:
            explain.add(c, "skipped", "the note cannot be rewritten (not plain UTF-8)", rel)
        return
    base = text if text is not None else new_note_text(today)
    keys, sets = _known(
        blocks.blank_blocks(base) + "\n" + "\n".join(dl.text for dl in blocks.dream_lines(base))
    )
    recent = exists and plan.is_recent(rel)
    by_kind: dict[str, list[tuple[Candidate, str]]] = {}
    for c, m in items:
        if _is_dup(c, keys, sets):
            explain.add(c, "duplicate", "the note already says this", rel)
            continue
        keys.add(c.key)
        ws = words(c.text)
        if len(ws) >= 3:
            sets.append(ws)
        day = (c.day or today).isoformat()
        shown = c.text if c.kind == "knowledge" else f"{labels[c.kind]} {day}: {c.text}"
        line = blocks.render_line(shown, c.refs())
        by_kind.setdefault(c.kind, []).append((c, line))
        how = {
            "link": "its wikilink",
            "title": "the note's title",
            "alias": "an alias",
            "similar": f"full-text similarity {m.score}",
        }.get(m.how, m.how)
        why = "no note on this topic yet: a new note" if m.is_new else f"matched by {how}"
        explain.add(c, "consolidated", why, rel)
    current = base
    for kind in ("knowledge", "decision", "status"):
        lines = by_kind.get(kind)
        if not lines:
            continue
        new_lines = [ln for _c, ln in lines]
        removed = 0
        if kind == "status" and not recent:
            body_lines = blocks.split_lines(current)
            stale = [
                i
                for b in blocks.find_blocks(body_lines)
                if b.kind == "content"
                for i in b.body
                if _STATUS_LINE.match(body_lines[i])
            ]
            if stale:
                removed = len(stale)
                current_wo = "\n".join(ln for i, ln in enumerate(body_lines) if i not in stale)
                if removed <= plan.removal_room():
                    current = current_wo
                else:
                    removed = 0
        after = blocks.add_lines(current, new_lines, tail_only=recent)
        cands = [c for c, _ln in lines]
        n = len(cands)
        if kind == "knowledge":
            facts = [fact("lessons_added", n=n)]
        elif kind == "decision":
            facts = [fact("decisions_added", n=n)]
        else:
            facts = [fact("status_updated" if removed else "status_added")]
        if not exists and current == base and text is None:
            facts.append(fact("new_note"))
        if recent:
            facts.append(fact("appended_recent"))
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
        if recent and rel not in out.appended_recent:
            out.appended_recent.append(rel)
