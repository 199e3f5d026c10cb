"""Sections of a note: a heading and the lines under it, up to the next heading of the same or a
higher level (Obsidian's folding rule). Headings inside code blocks and frontmatter are not
headings.

A section is named by its heading text, matched as Obsidian matches `[[Note#Heading]]`
(case-folded, punctuation and spaces ignored); `Parent#Child` names a heading inside another.
Text is handled with `\\n` line ends; callers convert CRLF notes in and out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from companion.vault.code import mask_code
from companion.vault.graph import anchor_key
from companion.vault.note import split_frontmatter

_HEADING = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")


class SectionError(ValueError):
    """A section name that matches no heading, or several."""


@dataclass(frozen=True)
class Section:
    """Lines `heading` (0-based index of the heading line) to `end` (exclusive)."""

    title: str
    level: int
    heading: int
    end: int


def headings(text: str) -> list[tuple[int, int, str]]:
    """(line index, level, title) of every heading of `text`, in order."""
    _yaml, body_start, body_line, _warning = split_frontmatter(text)
    masked = mask_code(text[body_start:]).split("\n")
    out = []
    for i, line in enumerate(masked):
        m = _HEADING.match(line)
        if m:
            out.append((body_line - 1 + i, len(m[1]), m[2].strip()))
    return out


def all_sections(text: str) -> list[Section]:
    """Every section of `text`, in order (nested ones included)."""
    heads = headings(text)
    total = len(text.split("\n"))
    out = []
    for n, (line, level, title) in enumerate(heads):
        end = next((h[0] for h in heads[n + 1 :] if h[1] <= level), total)
        out.append(Section(title, level, line, end))
    return out


def find_section(text: str, name: str) -> Section | None:
    """The section `name` names (`Parent#Child` for a nested one); None when there is none.
    Raises `SectionError` when several sections match."""
    parts = [anchor_key(p.lstrip("#").strip()) for p in name.split("#") if p.strip("# ")]
    if not parts or not all(parts):
        raise SectionError(f"{name!r} names no heading")
    found: list[Section] = []
    sections = all_sections(text)
    for s in sections:
        if anchor_key(s.title) != parts[-1]:
            continue
        # the parents, innermost first, must enclose it
        want = list(reversed(parts[:-1]))
        outer = [p for p in sections if p.heading < s.heading < p.end and p.level < s.level]
        outer.sort(key=lambda p: -p.heading)
        names = [anchor_key(p.title) for p in outer]
        it = iter(names)
        if all(any(w == x for x in it) for w in want):
            found.append(s)
    if len(found) > 1:
        lines = ", ".join(str(s.heading + 1) for s in found)
        raise SectionError(
            f"{len(found)} sections are named {name!r} (lines {lines}); "
            "name the one you mean as 'Parent#Heading'"
        )
    return found[0] if found else None


def _body_end(lines: list[str], s: Section) -> int:
    """The end of the section's own text: before the trailing blank lines."""
    end = s.end
    while end > s.heading + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def _join(lines: list[str]) -> str:
    return "\n".join(lines)


def _block(text: str) -> list[str]:
    return text.strip("\n").split("\n") if text.strip() else []


def replace_section(text: str, s: Section, body: str) -> str:
    """`text` with the lines under the heading of `s` replaced by `body` (heading kept)."""
    lines = text.split("\n")
    new = _block(body)
    after = lines[s.end :]
    sep = [""] if after and new else []
    out = _join([*lines[: s.heading + 1], *([""] if new else []), *new, *sep, *after])
    return out + "\n" if text.endswith("\n") and not out.endswith("\n") else out


def append_to_section(text: str, s: Section, body: str) -> str:
    """`text` with `body` added after the last line of section `s` (before its blank tail)."""
    lines = text.split("\n")
    end = _body_end(lines, s)
    new = _block(body)
    has_text = end > s.heading + 1
    return _join([*lines[:end], *([""] if not has_text else []), *new, *lines[end:]])


def add_section(text: str, title: str, body: str, level: int = 2) -> str:
    """`text` with a new section `title` and `body` at its end."""
    base = text.rstrip("\n")
    head = f"{'#' * level} {title.strip()}"
    block = [head, "", *_block(body)] if body.strip() else [head]
    return (base + "\n\n" if base else "") + _join(block) + "\n"


def append_at_end(text: str, body: str) -> str:
    """`text` with `body` after everything, separated by one blank line: the only edit made to
    a note a person is editing, so nothing they wrote moves."""
    base = text.rstrip("\n")
    return (base + "\n\n" if base else "") + body.strip("\n") + "\n"
