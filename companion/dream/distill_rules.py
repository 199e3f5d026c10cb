"""The `rules` distiller: deterministic and offline, from conventions people and agents follow.

Sources of candidates:
- journal sections: items of `## Learned` / `## Aprendido` become lessons; items of
  `## Decided` / `## Decidido` become decisions of the project they link to;
- explicit markers (see `companion.dream.markers`) at the start of a journal line or of a line
  of a user or assistant message: lessons, always/siempre lessons (also promoted), decisions,
  status lines;
- the agent's own `memory` tool calls that Hermes applied (never one its scanner blocked or
  its approval gate staged; batch calls expanded): what it added and did not remove or replace
  later in the window. Adds to `memory` become lessons and are promoted; adds to `user` are
  promoted to USER.md only. The candidate keeps the exact entry (which may span lines).

Every candidate carries its provenance and the verbatim text it came from. Candidates saying
the same thing (`companion.dream.meaning.same_statement`: the same stems, one contained in the
other or a close paraphrase, with the same values, negations and hedges) are merged, keeping
every source and the fuller text. Text the secret gate flags becomes a "secret" skip that
names only the location.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from companion.dream import gates
from companion.dream.blocks import Ref
from companion.dream.markers import match_marker
from companion.dream.meaning import paraphrase, same_statement
from companion.dream.model import Candidate, JournalEntry, Message, Provenance
from companion.dream.quality import personal_fact
from companion.dream.report import Skipped
from companion.dream.text import collapse, sentence
from companion.dream.toolcalls import memory_ops
from companion.memory import format as fmt

_PROMOTE_RANK = {None: 0, "recurrence": 1, "marker": 2, "memory-tool": 3}


@dataclass
class Distilled:
    candidates: list[Candidate] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # the agent's replace and remove calls (applied), in order: promote follows them
    memory_edits: list[MemoryEdit] = field(default_factory=list)


@dataclass(frozen=True)
class MemoryEdit:
    """An entry the agent replaced or removed with its memory tool (`content` None: removed)."""

    target: str
    old_text: str
    content: str | None
    time: dt.datetime
    ref: Ref


def _journal_time(entry: JournalEntry) -> dt.datetime:
    # Journal items carry only their day: order them by day, then by line.
    base = dt.datetime.combine(entry.day, dt.time(12), dt.UTC)
    return base + dt.timedelta(seconds=entry.line)


def first_link(text: str) -> str | None:
    """The target of the first wikilink in `text`."""
    from companion.vault.code import mask_code  # noqa: PLC0415
    from companion.vault.note import extract_links  # noqa: PLC0415

    for link in extract_links(mask_code(text)):
        if not link.markdown and link.target:
            return link.target
    return None


def _from_journal(entry: JournalEntry) -> Candidate | None:
    mk = match_marker(entry.text)
    promote = None
    if mk is not None:
        kind, text = mk.kind, mk.text
        if kind == "always":
            kind, promote = "knowledge", "marker"
    elif entry.section == "learned":
        kind, text = "knowledge", entry.text
    elif entry.section == "decided":
        kind, text = "decision", entry.text
    else:
        return None  # a Done item: what was done is not a lesson
    text = sentence(text)
    prov = Provenance(
        entry.ref(), collapse(entry.text), _journal_time(entry), f"day:{entry.day.isoformat()}"
    )
    cand = Candidate(kind, text, [prov], "journal", promote=promote, day=entry.day, time=prov.time)
    if mk is not None and kind == "knowledge":
        _personal(cand)
    if kind in ("decision", "status"):
        cand.topic = first_link(text)
    cand.days.add(entry.day.isoformat())
    return cand


def _from_message_lines(msg: Message) -> Iterable[Candidate]:
    if msg.role not in ("user", "assistant") or ":" not in msg.text:
        return
    for raw in msg.text.split("\n"):
        mk = match_marker(raw)
        if mk is None:
            continue
        kind, promote = mk.kind, None
        if kind == "always":
            kind, promote = "knowledge", "marker"
        text = sentence(mk.text)
        prov = Provenance(
            msg.ref(), collapse(raw), msg.time, f"{msg.source}#{msg.session}", role=msg.role
        )
        cand = Candidate(
            kind, text, [prov], "marker", promote=promote, day=msg.time.date(), time=msg.time
        )
        if kind == "knowledge" and msg.role == "user":
            _personal(cand)
        if kind in ("decision", "status"):
            cand.topic = first_link(text)
        cand.sessions.add(prov.session or "")
        cand.days.add(msg.time.date().isoformat())
        yield cand


def _personal(cand: Candidate) -> None:
    """The person's marked statement about themselves ("recuerda: prefiero que me llames Lu")
    is USER.md's, asked for explicitly: promoted there, never a knowledge note."""
    if personal_fact(cand.text):
        cand.kind, cand.target, cand.promote, cand.consolidate = "fact", "user", "marker", False


def _memory_calls(messages: Sequence[Message]) -> tuple[list[Candidate], list[MemoryEdit]]:
    """Net effect of the agent's memory writes that Hermes applied in the window, per target
    (`companion.dream.toolcalls` says which calls count): the entries it added and kept, and
    its replace and remove calls, which promote follows."""
    live: dict[str, list[tuple[str, Message]]] = {"memory": [], "user": []}
    edits: list[MemoryEdit] = []
    for op in memory_ops(messages):
        content = fmt.normalise_entry(op.content)
        old = fmt.normalise_entry(op.old_text)
        if op.action in ("remove", "replace") and old:
            live[op.target] = [(c, m) for c, m in live[op.target] if old not in c]
            edits.append(
                MemoryEdit(
                    op.target,
                    old,
                    content if op.action == "replace" and content else None,
                    op.message.time,
                    op.message.ref(),
                )
            )
        if op.action in ("add", "replace") and content:
            live[op.target].append((content, op.message))
    out = []
    for target, adds in live.items():
        for entry, msg in adds:
            content = collapse(entry)
            prov = Provenance(msg.ref(), content, msg.time, f"{msg.source}#{msg.session}")
            kind = "knowledge" if target == "memory" else "fact"
            cand = Candidate(
                kind,
                content,
                [prov],
                "memory-tool",
                promote="memory-tool",
                target=target,
                consolidate=kind == "knowledge",
                day=msg.time.date(),
                time=msg.time,
                entry=entry,
            )
            cand.sessions.add(prov.session or "")
            cand.days.add(msg.time.date().isoformat())
            out.append(cand)
    return out, edits


def merge_candidates(cands: Iterable[Candidate]) -> list[Candidate]:
    """Merge candidates that say the same thing (same kind, target and project), as
    `companion.dream.meaning.same_statement` decides: the merged one keeps the fuller text."""
    merged: list[Candidate] = []
    by_key: dict[tuple[str, str, str], Candidate] = {}
    for c in cands:
        k = (c.kind, c.target, c.key)
        same = by_key.get(k)
        if same is not None and c.kind in ("decision", "status") and same.topic != c.topic:
            same = None
        if same is None:
            for other in merged:
                if other.kind != c.kind or other.target != c.target or other.topic != c.topic:
                    continue
                if same_statement(c.text, other.text):
                    same = other
                    break
                if c.kind == "knowledge" and paraphrase(c.text, other.text):
                    same = other  # one lesson said two ways: one line, both sources
                    break
                if same_statement(other.text, c.text):  # c says more: keep its words
                    other.text, other.entry = c.text, c.entry or other.entry
                    same = other
                    break
        if same is None:
            by_key[k] = c
            merged.append(c)
            continue
        for p in c.provenance:
            if p.ref not in [q.ref for q in same.provenance]:
                same.provenance.append(p)
        same.sessions |= c.sessions
        same.days |= c.days
        same.secret = same.secret or c.secret
        if _PROMOTE_RANK[c.promote] > _PROMOTE_RANK[same.promote]:
            same.promote = c.promote
            same.target = c.target
            same.entry = c.entry or same.entry
        same.consolidate = same.consolidate or c.consolidate
        if c.time and same.time and c.time > same.time:
            same.time = c.time
    return merged


def distill_rules(
    entries: Sequence[JournalEntry],
    messages: Sequence[Message],
    is_secret: Callable[[str], bool],
) -> Distilled:
    """Candidates from journal entries and transcript messages (see the module docstring)."""
    raw: list[Candidate] = []
    for e in entries:
        c = _from_journal(e)
        if c is not None:
            raw.append(c)
    for m in messages:
        raw.extend(_from_message_lines(m))
    adds, edits = _memory_calls(messages)
    raw.extend(adds)
    out = screen(raw, is_secret)
    out.memory_edits = [e for e in edits if not is_secret(e.old_text + "\n" + (e.content or ""))]
    return out


def screen(raw: Iterable[Candidate], is_secret: Callable[[str], bool]) -> Distilled:
    """The gates before merging (`companion.dream.gates.BEFORE_MERGE`: secret, junk,
    durability, transient), then merge what remains."""
    out = Distilled()
    kept: list[Candidate] = []
    for c in raw:
        found = gates.refusal(c, is_secret, gates.BEFORE_MERGE)
        if found is not None:
            out.skipped.append(found.skipped(c))
            continue
        kept.append(c)
    out.candidates = merge_candidates(kept)
    return out
