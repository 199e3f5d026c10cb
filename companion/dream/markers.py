"""Explicit markers: how a person or the agent flags a line for the dream (English and Spanish).

A marker starts a line (after an optional list bullet, checkbox, `>` quote or `**bold**`),
is matched without regard to case or accents, and is followed by a colon:

- `remember:` `lesson:` `learned:` `TIL:` `note to self:` / `recuerda:` `lección:`
  `aprendido:` `aprendí:` -> a lesson for `knowledge/`;
- `always:` / `siempre:` -> a lesson, also promoted to the injected memory (MEMORY.md);
- `decided:` `decision:` / `decidido:` `decisión:` `decidimos:` -> a decision of the linked
  project;
- `status:` / `estado:` -> the linked project's current state.

Decisions and status lines need a `[[link]]` to a note in `projects/`.

The matcher reads a line as written, `>` included; quoted and relayed lines never reach it as
sources: `companion.dream.taint` blanks them first (a marker under `>` is somebody else's words).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from companion.dream.text import fold

MARKERS: dict[str, tuple[str, ...]] = {
    "knowledge": (
        "remember",
        "lesson",
        "learned",
        "til",
        "note to self",
        "recuerda",
        "recordar",
        "leccion",
        "aprendido",
        "aprendi",
    ),
    "always": ("always", "siempre"),
    "decision": ("decided", "decision", "decidido", "decidimos"),
    "status": ("status", "estado"),
}
_BY_WORD = {w: kind for kind, ws in MARKERS.items() for w in ws}
_LEAD = re.compile(
    r"^[ \t]*(?:>[ \t]*)*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?(?:\[[ xX]\][ \t]+)?"
    r"(?P<open>\*\*|__)?(?P<word>[^\W\d_][\w ]{0,15}?)[ \t]*(?P<close1>\*\*|__)?[ \t]*:"
    r"(?P<close2>\*\*|__)?[ \t]+(?P<rest>\S.*)$"
)


class Marked(NamedTuple):
    kind: str  # knowledge, always, decision, status
    text: str  # what follows the marker, trimmed


def match_marker(line: str) -> Marked | None:
    """The marker starting `line` and the text after it, or None."""
    if ":" not in line:
        return None
    m = _LEAD.match(line)
    if not m:
        return None
    kind = _BY_WORD.get(fold(m.group("word")).strip())
    if kind is None:
        return None
    rest = m.group("rest").strip()
    return Marked(kind, rest) if rest else None
