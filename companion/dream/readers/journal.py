"""The journal days the window touches, each read with the dream's blocks blanked out and
without its `## Dreaming` section; quoted lines are never sources (`companion.dream.taint`).
A heading or a line prefix that looks like a journal section or a marker (in any of the
languages the dream knows) but is none is named in the report's warnings (`not_understood`),
so a lesson missed for a typo or a language is seen."""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from companion.dream import blocks, taint
from companion.dream.markers import MARKERS, marker_key, marker_prefix, match_marker
from companion.dream.model import JournalEntry
from companion.dream.text import fold
from companion.vault.code import mask_code
from companion.vault.journal import SECTION_NAMES, parse_journal, section_key
from companion.vault.layout import journal_path
from companion.vault.note import normalise_newlines, split_frontmatter
from companion.vault.reader import read_note_text


def journal_days(start: dt.date, end: dt.date) -> list[dt.date]:
    days = []
    d = start
    while d <= end:
        days.append(d)
        d += dt.timedelta(days=1)
    return days


def read_journal_text(root: Path, day: dt.date) -> str | None:
    path = journal_path(root, day)
    if not path.is_file():
        return None
    rr = read_note_text(path, f"journal/{day.isoformat()}.md")
    if rr.text is None:
        return None
    text = normalise_newlines(rr.text)
    return text[1:] if text.startswith("\ufeff") else text


def journal_entries(
    rel: str,
    day: dt.date,
    text: str,
    names: Mapping[str, Sequence[str]] = SECTION_NAMES,
    refused: list[taint.Refused] | None = None,
) -> list[JournalEntry]:
    """Items of the Done/Decided/Learned sections, and marked lines anywhere else (outside
    code, the dream's blocks and the `## Dreaming` section). Quoted lines are never sources
    (`companion.dream.taint`): those that would have been candidates go to `refused`."""
    clean = blocks.blank_blocks(text)
    _yaml, body_start, body_line, _w = split_frontmatter(clean)
    body = clean[body_start:].split("\n")
    why = taint.line_taint(clean[body_start:])
    if not any(why):
        return _journal_entries(rel, day, clean, names)
    kept = "\n".join("" if w else ln for ln, w in zip(body, why, strict=True))
    kept_text = clean[:body_start] + kept
    entries = _journal_entries(rel, day, kept_text, names)
    if refused is not None:
        have = {e.line for e in entries}
        for e in _journal_entries(rel, day, clean, names):
            w = why[e.line - body_line] if 0 <= e.line - body_line < len(why) else None
            if w is None or e.line in have:
                continue
            mk = match_marker(e.text)
            kind = (mk.kind if mk else e.section) or ""
            kind = {"always": "knowledge", "learned": "knowledge", "decided": "decision"}.get(
                kind, kind
            )
            if kind in ("knowledge", "decision", "status"):
                refused.append(taint.Refused(e.ref(), e.text, w, kind))
    return entries


def _journal_entries(
    rel: str, day: dt.date, clean: str, names: Mapping[str, Sequence[str]]
) -> list[JournalEntry]:
    sections = parse_journal(clean, names)
    out: list[JournalEntry] = []
    taken: set[int] = set()
    dreaming = sections.get("dreaming")
    skip_lines: set[int] = set()
    if dreaming is not None:
        skip_lines = {item.line for item in dreaming.items}
    for key, sec in sections.items():
        if key == "dreaming":
            continue
        for item in sec.items:
            if item.text:
                out.append(JournalEntry(rel, day, key, item.text, item.line))
                taken.add(item.line)
    _yaml, body_start, body_line, _w = split_frontmatter(clean)
    masked = mask_code(clean[body_start:]).split("\n")
    lines = clean[body_start:].split("\n")
    in_dreaming = False
    for i, (raw, m_line) in enumerate(zip(lines, masked, strict=False)):
        n = body_line + i
        stripped = m_line.strip()
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip()
            in_dreaming = heading.casefold() in {x.casefold() for x in names.get("dreaming", ())}
            continue
        if in_dreaming or n in taken or n in skip_lines or not stripped:
            continue
        mk = match_marker(raw)
        if mk is not None:
            out.append(JournalEntry(rel, day, None, raw.strip(), n))
    out.sort(key=lambda e: e.line)
    return out


def read_journal(
    root: Path,
    days: Sequence[dt.date],
    names: Mapping[str, Sequence[str]] = SECTION_NAMES,
    refused: list[taint.Refused] | None = None,
) -> tuple[list[JournalEntry], dict[str, str]]:
    """(entries, {path: text}) of the journal days that exist (quoted lines that would have
    been candidates go to `refused`)."""
    entries: list[JournalEntry] = []
    texts: dict[str, str] = {}
    for day in days:
        text = read_journal_text(root, day)
        if text is None:
            continue
        rel = f"journal/{day.isoformat()}.md"
        texts[rel] = text
        entries.extend(journal_entries(rel, day, text, names, refused))
    return entries, texts


# --- what was not understood ---------------------------------------------------------------

_HEAD_LINE = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
NEAR_SECTION = 0.75  # how alike a heading must be to a section name to be taken for a try
NEAR_MARKER = 0.8


def _closest(word: str, known: Iterable[str], cutoff: float) -> str | None:
    key = fold(word).strip()
    if len(key) < 4:
        return None
    found = difflib.get_close_matches(key, list(known), n=1, cutoff=cutoff)
    return found[0] if found else None


def not_understood(rel: str, text: str) -> list[str]:
    """Warnings for the report: headings of a journal day that look like one of its sections
    but are none (`## Aprendi2`, `## Learnt`), and line prefixes that look like a marker but
    are none (`rapelle-toi:`, `lessons:`): what they hold was not read as what it seems to be."""
    clean = blocks.blank_blocks(text)
    _yaml, body_start, body_line, _w = split_frontmatter(clean)
    masked = mask_code(clean[body_start:]).split("\n")
    sections = {_section_key_text(n): n for ns in SECTION_NAMES.values() for n in ns}
    markers = {w for ws in MARKERS.values() for w in ws}
    out: list[str] = []
    for i, line in enumerate(masked):
        n = body_line + i
        h = _HEAD_LINE.match(line)
        if h:
            title = h.group(2).strip()
            if section_key(title) is None:
                near = _closest(_section_key_text(title), sections, NEAR_SECTION)
                if near is not None:
                    out.append(
                        f"{rel}:{n}: heading '{title}' was not understood as a journal section "
                        f"(closest: '{sections[near]}'); its lines were not read as one"
                    )
            continue
        prefix = marker_prefix(line)
        if prefix is None or match_marker(line) is not None:
            continue
        near = _closest(marker_key(prefix), markers, NEAR_MARKER)
        if near is not None:
            out.append(
                f"{rel}:{n}: '{prefix}:' was not understood as a marker (closest: '{near}:'); "
                "the line was not read as one"
            )
    return out


def _section_key_text(text: str) -> str:
    return re.sub(r"[\W_]+", "", fold(text))
