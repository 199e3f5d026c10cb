"""The injection guard (`companion.memory.guard.check_write`) as the dream applies it.

Two places, so nothing hostile is written and nothing is lost:
- `screen`: after distilling, a candidate whose text the guard refuses is dropped before it can
  reach a note, the journal's Dreaming lines, Home.md's index or the injected memory; it is
  listed among the night's skipped items (code ``guard``) and warnings. Its source (the journal
  line, the session) is untouched, so the person can read and fix it.
- `line_problem`: `Plan.write` asks it for every line a planned edit adds (the single door for
  notes, journal and index), so whatever step composed the line, a refused line is never
  written: the edit is refused and the warning names the rule.
"""

from __future__ import annotations

from companion.dream import blocks
from companion.dream.gates import guard_screen
from companion.dream.model import Candidate
from companion.dream.report import Skipped
from companion.memory import guard


def where_for(rel: str) -> str:
    """The `guard.check_write` place for a vault file the dream writes."""
    if rel == "Home.md":
        return "index"
    if rel.startswith("journal/"):
        return "journal"
    return "note"


def _visible(line: str) -> str:
    """`line` without the dream's own markup (block markers, the provenance comment)."""
    if blocks.BEGIN_RE.match(line) or blocks.END_RE.match(line):
        return ""
    return blocks.SRC_RE.sub("", line)


def line_problem(rel: str, line: str) -> str | None:
    """Why the dream may not add `line` to `rel`, or None."""
    text = _visible(line)
    if not text.strip():
        return None
    finding = guard.check_write(text, where=where_for(rel))
    if finding is None:
        return None
    return f"a new line is refused by the injection guard [rule {finding.rule}]"


def screen(cands: list[Candidate]) -> tuple[list[Candidate], list[Skipped], list[str]]:
    """(kept, skipped, warnings): the candidates the guard lets through, the others (the
    guard gate of `companion.dream.gates`)."""
    return guard_screen(cands)
