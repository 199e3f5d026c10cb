"""Step 2, Consolidate: lessons into `knowledge/`, decisions and state into `projects/`.

Each candidate goes to the note its topic matching found (`companion.dream.topics`); lines are
added to the note's dream block (created at the end of the note when missing), each ending in
its provenance. The note on a topic is extended, never duplicated: a new note is created only
when no existing note matches, and two candidates for the same new title share it.

Dedupe: a candidate is not written when the note already says it, in the person's text or the
dream's (`meaning.same_statement`). One lesson, one line: a candidate saying what one of the
dream's own lines says, maybe in other words (`meaning.paraphrase`), adds its source to that
line's provenance instead, and its recurrence is counted on that line's key (`line_key`).

Project notes get `Decided YYYY-MM-DD: ...` lines and one `Status YYYY-MM-DD: ...` line (in the
vault's language: `Decidido`, `Estado`); a newer status replaces the dream's older status line
(a removal, within the cap), except in a note a person edited recently, where lines are only
ever appended at the end and the report says so.

Ownership: only the dream's own lines, those the ledger (`companion.dream.ledger`) says it
wrote and nobody changed since, are ever superseded. A line of a block the person wrote or
changed is theirs, like the text outside blocks: a candidate that disagrees with it (the same
subject, `meaning.same_subject`, with another value) is written as a flagged contradiction,
`- ⚠ Disagrees with your line (DAY): ...`, right under it when it is inside a block, and the
person decides.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from companion.dream import blocks
from companion.dream.blocks import Ref
from companion.dream.meaning import contradicts, meaning, paraphrase, same_statement, same_subject
from companion.dream.model import Candidate
from companion.dream.plan import Plan
from companion.dream.report import Skipped
from companion.dream.summary import fact
from companion.dream.text import fold, norm_key
from companion.dream.topics import NoteCatalog, TopicMatch
from companion.l10n import LANGUAGES, say

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
class _Known:
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
    def of(cls, text: str, owns: Callable[[str], bool] = _everything_own) -> _Known:
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


def _is_status_line(line: str) -> bool:
    return bool(_STATUS_LINE.match(line))


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
    """Plan the candidates into their notes. `owns(note, line)`: whether the dream wrote that
    block line and nobody changed it (the ledger); without it every block line is the
    dream's."""
    out = Consolidated()
    labels = LABELS.get(language, LABELS["en"])
    catalog.inbox = say(language, "Inbox")  # TRANSLATORS: the note lessons without a topic wait in
    catalog.inbox_names = tuple(dict.fromkeys(say(lang, "Inbox") for lang in LANGUAGES))
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
        own = _everything_own if owns is None else (lambda ln, rel=rel: owns(rel, ln))
        _write_note(rel, items, plan, labels, today, explain, out, own, language)
    return out


def _write_note(
    rel: str,
    items: list[tuple[Candidate, TopicMatch]],
    plan: Plan,
    labels: dict[str, str],
    today: dt.date,
    explain: Explanation,
    out: Consolidated,
    owns: Callable[[str], bool] = _everything_own,
    language: str = "en",
) -> None:
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
    known = _Known.of(base, owns)
    stale: set[str] = set()  # the dream's own lines a newer candidate makes stale
    by_kind: dict[str, list[tuple[Candidate, str]]] = {}
    anchors: dict[str, str] = {}  # a flagged line -> the person's block line it goes under
    flagged = 0
    hosts: dict[str, list[Candidate]] = {}  # the dream's line -> lessons saying it again
    for c, m in items:
        host = known.host(c.text) if c.kind == "knowledge" else None
        if host is not None:
            c.line_key = norm_key(line_core(host))
            c.entry = c.entry or line_core(host)  # promoted, it is the note's one wording
            if _new_refs(host, c):
                hosts.setdefault(host, []).append(c)
                explain.add(c, "consolidated", "said again: its source joins the line", rel)
            else:
                explain.add(c, "duplicate", "the note already says this", rel)
            continue
        if known.says(c.text):
            explain.add(c, "duplicate", "the note already says this", rel)
            continue
        day = (c.day or today).isoformat()
        shown = c.text if c.kind == "knowledge" else f"{labels[c.kind]} {day}: {c.text}"
        anchor: str | None = None
        if c.kind == "knowledge":
            stale |= known.stale_own(c.text)
            clashes = known.clashes(c.text)
            for line_no, core, clash, raw in clashes:
                out.contradictions.append(
                    {
                        "note": rel,
                        "line": line_no + 1,
                        "existing": core,
                        "new": c.text,
                        "why": clash,
                        "edited": raw is not None,  # a dream line the person changed
                    }
                )
            if clashes:
                shown = flag_text(c.text, day, language)
                flagged += 1
                anchor = next((raw for *_x, raw in clashes if raw is not None), None)
        known.add(c.text)
        line = blocks.render_line(shown, c.refs())
        if anchor is not None:
            anchors[line] = anchor
        by_kind.setdefault(c.kind, []).append((c, line))
        how = {
            "link": "its wikilink",
            "title": "the note's title",
            "alias": "an alias",
            "similar": f"full-text similarity {m.score}",
            "mention": "the note that names its topic",
        }.get(m.how, m.how)
        if m.how == "inbox":
            why = "no topic to name a note by: it waits in the inbox for you to sort"
        elif m.is_new:
            why = "no note on this topic yet: a new note named by its topic"
        else:
            why = f"matched by {how}"
        explain.add(c, "consolidated", why, rel)
    current = base
    for kind in ("knowledge", "decision", "status"):
        lines = by_kind.get(kind)
        if not lines:
            continue
        new_lines = [ln for _c, ln in lines if ln not in anchors]
        trial, removed = current, 0
        if kind == "status":
            trial, removed = _drop_own_lines(current, _is_status_line, plan, owns)
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


def _line_refs(line: str) -> list[Ref]:
    m = blocks.SRC_RE.search(line)
    return blocks.parse_refs(m.group("refs")) if m else []


def _new_refs(host: str, c: Candidate) -> list[Ref]:
    have = _line_refs(host)
    return [r for r in c.refs() if r not in have]


def _add_sources(
    rel: str, text: str, hosts: dict[str, list[Candidate]], plan: Plan, out: Consolidated
) -> None:
    """The dream's lines said again in other words get the new sources in their provenance
    (one lesson, one line, every source), in place."""
    lines = blocks.split_lines(text)
    added = 0
    for host, cands in hosts.items():
        refs = _line_refs(host)
        for c in cands:
            refs += [r for r in c.refs() if r not in refs]
        m = blocks.SRC_RE.search(host)
        if m is None or host not in lines:
            continue
        new = host[: m.start()] + " " + blocks.format_refs(refs)
        lines = [new if ln == host else ln for ln in lines]
        added += len(refs) - len(_line_refs(host))
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
