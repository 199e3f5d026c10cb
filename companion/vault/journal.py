"""Journal days: the sections the dream reads and writes (`## Done`, `## Decided`, ...).

A section is a heading whose text is one of its names in any of the languages of `SECTIONS`
(case- and accent-insensitive; a heading may carry two names, e.g. `## Hecho / Done`). It runs
until the next heading of the same or a higher level. Each bullet (`-`, `*`, `+`, `1.`, with
or without a `[ ]` checkbox) or plain line in it is an item; an indented plain line continues
the item above. Lines in code blocks are not items.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from companion.vault.code import mask_code
from companion.vault.note import normalise_newlines, split_frontmatter
from companion.vault.query import fold_word

# The sections' names, one table per language the dream knows (`companion.dream.langdetect`);
# the first name of a language is the one written in a vault of that language. A heading is
# read in every language, whatever the vault's: a journal quotes days kept in others.
SECTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {"done": ("Done",), "decided": ("Decided",), "learned": ("Learned",)},
    "es": {"done": ("Hecho",), "decided": ("Decidido",), "learned": ("Aprendido", "Aprendí")},
    "fr": {"done": ("Fait",), "decided": ("Décidé",), "learned": ("Appris", "Leçons")},
    "de": {"done": ("Erledigt",), "decided": ("Entschieden",), "learned": ("Gelernt",)},
    "pt": {"done": ("Feito",), "decided": ("Decidido",), "learned": ("Aprendido", "Aprendi")},
    "it": {"done": ("Fatto",), "decided": ("Deciso",), "learned": ("Imparato",)},
}
# The dream's own section, as `record` writes it (`say(lang, "Dreaming")`): never a source.
DREAMING_NAMES = ("Dreaming", "Rêves", "Träume", "Sonhos", "Sogni")
SECTION_NAMES: dict[str, tuple[str, ...]] = {
    key: tuple(dict.fromkeys(n for table in SECTIONS.values() for n in table[key]))
    for key in ("done", "decided", "learned")
}
SECTION_NAMES["dreaming"] = DREAMING_NAMES


def section_title(key: str, lang: str) -> str:
    """The name a vault in `lang` gives section `key` (English for a language not known)."""
    table = SECTIONS.get(lang, SECTIONS["en"])
    return table.get(key, SECTIONS["en"][key])[0]


_HEADING = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_BULLET = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?(.*)$")
_NAME_DROP = re.compile(r"[\W_]+")


@dataclass(frozen=True)
class JournalItem:
    section: str  # the section key: done, decided, learned, dreaming
    text: str
    line: int  # 1-based line in the file
    indent: int = 0  # leading spaces of a bullet (nesting)


@dataclass
class JournalSection:
    key: str
    title: str  # the heading text as written (first occurrence)
    line: int  # line of that heading
    level: int
    items: list[JournalItem] = field(default_factory=list)


def _name_key(text: str) -> str:
    return _NAME_DROP.sub("", fold_word(text))


def section_key(heading: str, names: Mapping[str, Sequence[str]] = SECTION_NAMES) -> str | None:
    """The section key a heading text names, or None."""
    wanted = {_name_key(n): key for key, ns in names.items() for n in ns}
    for part in re.split(r"[/|·,]", heading):
        key = wanted.get(_name_key(part))
        if key:
            return key
    return None


def parse_journal(
    text: str, names: Mapping[str, Sequence[str]] = SECTION_NAMES
) -> dict[str, JournalSection]:
    """The known sections of a journal note, by key (sections of the same key are merged)."""
    text = normalise_newlines(text)
    if text.startswith("\ufeff"):
        text = text[1:]
    _yaml, body_start, body_line, _warning = split_frontmatter(text)
    lines = text[body_start:].split("\n")
    masked = mask_code(text[body_start:]).split("\n")
    sections: dict[str, JournalSection] = {}
    current: JournalSection | None = None
    current_level = 0
    last: JournalItem | None = None
    for i, (raw, m_line) in enumerate(zip(lines, masked, strict=False)):
        line_no = body_line + i
        h = _HEADING.match(m_line)
        if h:
            level = len(h[1])
            key = section_key(h[2], names)
            if key is not None:
                current = sections.get(key)
                if current is None:
                    current = JournalSection(key, h[2].strip(), line_no, level)
                    sections[key] = current
                current_level = level
                last = None
            elif current is not None and level <= current_level:
                current, last = None, None
            continue
        if current is None or not m_line.strip():  # outside a section, blank, or code
            continue
        b = _BULLET.match(raw)
        if b:
            last = JournalItem(current.key, b[2].strip(), line_no, len(b[1].expandtabs(4)))
            current.items.append(last)
        elif raw[:1] in (" ", "\t") and last is not None:
            merged = JournalItem(last.section, f"{last.text} {raw.strip()}", last.line, last.indent)
            current.items[-1] = merged
            last = merged
        else:
            last = JournalItem(current.key, raw.strip(), line_no, 0)
            current.items.append(last)
    return sections
