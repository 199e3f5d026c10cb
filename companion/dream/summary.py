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

Fact = dict[str, Any]

# fact -> language -> (singular, plural); "{n}" is the count, other names come from the fact
_WORDS: dict[str, dict[str, tuple[str, str]]] = {
    "new_note": {"en": ("new note", "new note"), "es": ("nota nueva", "nota nueva")},
    "lessons_added": {
        "en": ("{n} lesson added", "{n} lessons added"),
        "es": ("{n} lección añadida", "{n} lecciones añadidas"),
    },
    "decisions_added": {
        "en": ("{n} decision added", "{n} decisions added"),
        "es": ("{n} decisión añadida", "{n} decisiones añadidas"),
    },
    "status_added": {
        "en": ("project status added", "project status added"),
        "es": ("estado del proyecto añadido", "estado del proyecto añadido"),
    },
    "status_updated": {
        "en": ("project status updated", "project status updated"),
        "es": ("estado del proyecto actualizado", "estado del proyecto actualizado"),
    },
    "appended_recent": {
        "en": (
            "appended at the end: a person edited the note recently",
            "appended at the end: a person edited the note recently",
        ),
        "es": (
            "añadido al final: una persona editó la nota hace poco",
            "añadido al final: una persona editó la nota hace poco",
        ),
    },
    "stale_lines_replaced": {
        "en": ("{n} stale line replaced", "{n} stale lines replaced"),
        "es": ("{n} línea antigua sustituida", "{n} líneas antiguas sustituidas"),
    },
    "facts_added": {
        "en": ("{n} fact added", "{n} facts added"),
        "es": ("{n} dato añadido", "{n} datos añadidos"),
    },
    "entries_replaced": {
        "en": ("{n} stale entry replaced", "{n} stale entries replaced"),
        "es": ("{n} entrada antigua sustituida", "{n} entradas antiguas sustituidas"),
    },
    "entries_removed": {
        "en": ("{n} stale entry removed", "{n} stale entries removed"),
        "es": ("{n} entrada antigua quitada", "{n} entradas antiguas quitadas"),
    },
    "memory_usage": {
        "en": (
            "now {percent}% — {current:,}/{limit:,} chars",
            "now {percent}% — {current:,}/{limit:,} chars",
        ),
        "es": (
            "ahora {percent} % — {current}/{limit} caracteres",
            "ahora {percent} % — {current}/{limit} caracteres",
        ),
    },
    "index_listed": {
        "en": ("index: listed {n} note", "index: listed {n} notes"),
        "es": ("índice: {n} nota añadida", "índice: {n} notas añadidas"),
    },
    "index_dropped": {
        "en": ("index: dropped {n} gone", "index: dropped {n} gone"),
        "es": ("índice: {n} nota desaparecida quitada", "índice: {n} notas desaparecidas quitadas"),
    },
    "index_reordered": {
        "en": ("index: reordered", "index: reordered"),
        "es": ("índice: reordenado", "índice: reordenado"),
    },
    "links_repaired": {
        "en": ("repaired {n} broken link", "repaired {n} broken links"),
        "es": ("{n} enlace roto reparado", "{n} enlaces rotos reparados"),
    },
    "journal_logged": {
        "en": ("what the dream did, in today's journal", "what the dream did, in today's journal"),
        "es": (
            "lo que hizo el sueño, en el diario de hoy",
            "lo que hizo el sueño, en el diario de hoy",
        ),
    },
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
    one, other = words.get(lang, words["en"])
    n = f.get("n", 0)
    template = one if n == 1 else other
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
