"""Placement: which note each kept candidate goes to, decided once (issue 40).

The stage after the gates (`companion.dream.gates`) and before the plan of typed steps
(`companion.dream.steps`). `place` is the one decision for one candidate, by its kind:

- a lesson (`knowledge`): the note its topic matching finds (`NoteCatalog.match_knowledge`:
  its wikilink, a note's title or alias named in it, full-text similarity, a note named by its
  topic, else the inbox). The agent's memory-tool facts extend only a note they name (no
  similarity, no new note): else they stay in memory only;
- a decision or a status: the note in `projects/` its link or the project's name points to
  (`NoteCatalog.match_project`); with neither it is skipped, never guessed.

`place_all` places the night's candidates in time order and says what it did not place: those
a person undid (the ledger's `rejected`), decisions and status lines without a project, and,
for one project note, every status but the latest. A new note placed here is added to the
catalog at once, so two candidates for the same new title share it.

What the candidate says of the lines already in its note (a paraphrase of the dream's line, a
newer value of the same subject, a disagreement with the person's line) is the plan's to
decide (`companion.dream.steps.plan_note`): it depends on the lines planned before it in the
same note.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from companion.dream.model import Candidate
from companion.dream.report import Skipped
from companion.dream.topics import NoteCatalog, TopicMatch
from companion.l10n import LANGUAGES, say

if TYPE_CHECKING:
    from companion.dream.consolidate import Explanation

_EPOCH = dt.datetime.min.replace(tzinfo=dt.UTC)


@dataclass
class Placed:
    """The night's candidates by note (in the order placed), and what was not placed."""

    notes: dict[str, list[tuple[Candidate, TopicMatch]]] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)


def place(c: Candidate, catalog: NoteCatalog) -> TopicMatch:
    """The note `c` belongs to (`TopicMatch.path`; None: no home for it), and how it was
    found."""
    if c.kind == "knowledge":
        tool = c.origin == "memory-tool"  # extends a note it names; else memory only
        return catalog.match_knowledge(c.text, c.topic, may_create=not tool, by_similarity=not tool)
    return catalog.match_project(c.text, c.topic)


def how_placed(m: TopicMatch) -> str:
    """Why a candidate went to its note, as `--explain` says it."""
    how = {
        "link": "its wikilink",
        "title": "the note's title",
        "alias": "an alias",
        "similar": f"full-text similarity {m.score}",
        "mention": "the note that names its topic",
    }.get(m.how, m.how)
    if m.how == "inbox":
        return "no topic to name a note by: it waits in the inbox for you to sort"
    if m.is_new:
        return "no note on this topic yet: a new note named by its topic"
    return f"matched by {how}"


def place_all(
    cands: Sequence[Candidate],
    catalog: NoteCatalog,
    *,
    language: str,
    explain: Explanation,
    rejected: Callable[[str], str | None] = lambda _k: None,
) -> Placed:
    """Place every candidate meant for a note (see the module docstring)."""
    out = Placed()
    catalog.inbox = say(language, "Inbox")  # TRANSLATORS: the note lessons without a topic wait in
    catalog.inbox_names = tuple(dict.fromkeys(say(lang, "Inbox") for lang in LANGUAGES))
    catalog.prefetch(c.text for c in cands if c.kind == "knowledge")
    targets = out.notes
    latest_status: dict[str, Candidate] = {}
    for c in sorted(cands, key=lambda c: c.time or _EPOCH):
        if not c.consolidate:
            continue
        undone = rejected(c.key)
        if undone:
            explain.add(c, "skipped", f"undone on {undone}")
            out.skipped.append(Skipped.of(c, "undone", f"a person undid it on {undone}"))
            continue
        m = place(c, catalog)
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
    return out
