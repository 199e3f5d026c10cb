"""What one dream change did, as facts, and those facts in words (English or Spanish).

A change records `facts`, a list of small dicts (`{"fact": "lessons_added", "n": 2}`), never
prose, so each reader words them in its own language: the desktop app in the interface's
language, `companion dream` in `[gui] language` (the same setting), and the report's `summary`
field in English for people reading the JSON. Adding a fact means adding its two wordings
here; an unknown fact (from a newer version) is shown by its code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from companion.l10n import N_, catalog

Fact = dict[str, Any]

# fact -> (singular, plural) in English; other languages come from the gettext catalogue
# (companion/locale/*/LC_MESSAGES/companion.po). "{n}" is the count, other names come from
# the fact itself.
_WORDS: dict[str, tuple[str, str]] = {
    "new_note": N_("new note", "new note"),
    "lessons_added": N_("{n} lesson added", "{n} lessons added"),
    "decisions_added": N_("{n} decision added", "{n} decisions added"),
    "status_added": N_("project status added", "project status added"),
    "status_updated": N_("project status updated", "project status updated"),
    "appended_recent": N_(
        "appended at the end: a person edited the note recently",
        "appended at the end: a person edited the note recently",
    ),
    "stale_lines_replaced": N_("{n} stale line replaced", "{n} stale lines replaced"),
    "sources_added": N_(
        "{n} source added to a line saying it already",
        "{n} sources added to lines saying it already",
    ),
    "disagreements_flagged": N_(
        "kept your line; {n} disagreement flagged", "kept your lines; {n} disagreements flagged"
    ),
    "facts_added": N_("{n} fact added", "{n} facts added"),
    "entries_replaced": N_("{n} stale entry replaced", "{n} stale entries replaced"),
    "entries_removed": N_("{n} stale entry removed", "{n} stale entries removed"),
    "memory_usage": N_(
        "now {percent}% — {current:,}/{limit:,} chars",
        "now {percent}% — {current:,}/{limit:,} chars",
    ),
    "index_listed": N_("index: listed {n} note", "index: listed {n} notes"),
    "index_dropped": N_("index: dropped {n} gone", "index: dropped {n} gone"),
    "index_reordered": N_("index: reordered", "index: reordered"),
    "links_repaired": N_("repaired {n} broken link", "repaired {n} broken links"),
    "journal_logged": N_(
        "what the dream did, in today's journal",
        "what the dream did, in today's journal",
    ),
}

LANGUAGES = ("en", "es")


def fact(name: str, **values: Any) -> Fact:
    if name not in _WORDS:
        raise ValueError(f"unknown dream fact {name!r}")
    return {"fact": name, **values}


def fact_text(f: Mapping[str, Any], lang: str = "en") -> str:
    """One fact in words; an unknown fact or language falls back to its code / English."""
    words = _WORDS.get(str(f.get("fact")))
    if words is None:
        return str(f.get("fact"))
    n = f.get("n", 0)
    template = catalog(lang).ngettext(*words, n if isinstance(n, int) else 0)
    try:
        return template.format(**{k: v for k, v in f.items() if k != "fact"})
    except (KeyError, IndexError, ValueError):
        return template


def render(facts: Iterable[Mapping[str, Any]], lang: str = "en") -> str:
    """The facts of one change, joined: "2 lessons added; new note"."""
    return "; ".join(fact_text(f, lang) for f in facts)


def merge(into: list[Fact], more: Iterable[Fact]) -> None:
    """Add `more` to `into`: counts of the same fact add up; other facts appear once."""
    for f in more:
        same = next((g for g in into if g.get("fact") == f.get("fact")), None)
        if same is None:
            into.append(dict(f))
        elif "n" in f and "n" in same:
            same["n"] = int(same["n"]) + int(f["n"])
        elif f.get("fact") == "memory_usage":
            same.update(f)  # the latest usage wins


def change_text(change: Any, lang: str = "en") -> str:
    """A change's summary in `lang`: its facts when it has them, else its stored summary (a
    report written before facts existed)."""
    facts = getattr(change, "facts", None)
    return render(facts, lang) if facts else str(getattr(change, "summary", "") or "")
