"""Explicit markers: how a person or the agent flags a line for the dream, in the languages the
dream knows (`BY_LANGUAGE`: English, Spanish, French, German, Portuguese, Italian).

A marker starts a line (after an optional list bullet, checkbox, `>` quote or `**bold**`),
is matched without regard to case or accents, and is followed by a colon:

- `remember:` `lesson:` `learned:` `TIL:` `note to self:` / `recuerda:` `lección:`
  `aprendido:` `aprendí:` -> a lesson for `knowledge/`;
- `always:` / `siempre:` -> a lesson, also promoted to the injected memory (MEMORY.md);
- `decided:` `decision:` / `decidido:` `decisión:` `decidimos:` -> a decision of the linked
  project;
- `status:` / `estado:` -> the linked project's current state;
- and their French, German, Portuguese and Italian equivalents (`rappelle-toi :`, `toujours :`,
  `merke:`, `immer:`, `lembra:`, `sempre:`, `ricorda:` ... in `BY_LANGUAGE`). French typography's
  space before the colon (also a no-break space) is allowed.

Decisions and status lines need a `[[link]]` to a note in `projects/`.

The matcher reads a line as written, `>` included; quoted and relayed lines never reach it as
sources: `companion.dream.taint` blanks them first (a marker under `>` is somebody else's words).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from companion.dream.text import fold

# One table per language the dream knows (`companion.dream.langdetect`), written folded (lower
# case, no accents). Every table is read whatever the vault's language: a person writes a
# marker in the language of the moment, and sessions are held in others.
BY_LANGUAGE: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "knowledge": ("remember", "lesson", "learned", "til", "note to self"),
        "always": ("always",),
        "decision": ("decided", "decision"),
        "status": ("status",),
    },
    "es": {
        "knowledge": ("recuerda", "recordar", "leccion", "aprendido", "aprendi"),
        "always": ("siempre",),
        "decision": ("decidido", "decision", "decidimos"),
        "status": ("estado",),
    },
    "fr": {
        "knowledge": (
            "rappelle-toi",
            "rappel",
            "retiens",
            "a retenir",
            "lecon",
            "appris",
            "j'ai appris",
            "note pour moi",
        ),
        "always": ("toujours",),
        "decision": ("decide", "decision", "on a decide"),
        "status": ("statut", "etat"),
    },
    "de": {
        "knowledge": ("merke", "merken", "merk dir", "lektion", "gelernt", "notiz an mich"),
        "always": ("immer",),
        "decision": ("entschieden", "entscheidung", "beschlossen"),
        "status": ("status", "stand"),
    },
    "pt": {
        "knowledge": ("lembra", "lembre-se", "lembrar", "licao", "aprendi", "aprendido"),
        "always": ("sempre",),
        "decision": ("decidido", "decisao", "decidimos"),
        "status": ("estado", "situacao"),
    },
    "it": {
        "knowledge": ("ricorda", "ricordati", "lezione", "imparato", "ho imparato"),
        "always": ("sempre",),
        "decision": ("deciso", "decisione", "abbiamo deciso"),
        "status": ("stato",),
    },
}
MARKERS: dict[str, tuple[str, ...]] = {
    kind: tuple(dict.fromkeys(w for table in BY_LANGUAGE.values() for w in table[kind]))
    for kind in ("knowledge", "always", "decision", "status")
}
_BY_WORD = {w: kind for kind, ws in MARKERS.items() for w in ws}
_LEAD = re.compile(
    r"^[ \t]*(?:>[ \t]*)*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?(?:\[[ xX]\][ \t]+)?"
    r"(?P<open>\*\*|__)?(?P<word>[^\W\d_][\w '’\-]{0,15}?)[ \t\u00a0\u202f]*"
    r"(?P<close1>\*\*|__)?[ \t\u00a0\u202f]*:(?P<close2>\*\*|__)?[ \t\u00a0\u202f]+(?P<rest>\S.*)$"
)


class Marked(NamedTuple):
    kind: str  # knowledge, always, decision, status
    text: str  # what follows the marker, trimmed


def marker_key(word: str) -> str:
    """A marker word as the tables write it: folded, `’` as `'`, spaces single."""
    return " ".join(fold(word.replace("’", "'")).split())


def marker_prefix(line: str) -> str | None:
    """The word(s) before the colon of a line shaped like a marker (`word: text`), as written,
    whether or not the word is a marker."""
    if ":" not in line:
        return None
    m = _LEAD.match(line)
    return m.group("word").strip() if m else None


def match_marker(line: str) -> Marked | None:
    """The marker starting `line` and the text after it, or None."""
    if ":" not in line:
        return None
    m = _LEAD.match(line)
    if not m:
        return None
    kind = _BY_WORD.get(marker_key(m.group("word")))
    if kind is None:
        return None
    rest = m.group("rest").strip()
    return Marked(kind, rest) if rest else None
