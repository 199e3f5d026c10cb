"""Hermes Agent's memory file format, as pure functions (no I/O).

A memory file is a list of entries joined by ``"\\n§\\n"`` with no trailing newline; an empty store
is an empty file. Hermes reads a file as text with universal newlines (``\\r\\n`` and ``\\r`` become
``\\n``), splits it on the full three-character delimiter, strips every entry, drops empty ones and
keeps the first of exact duplicates. These functions do the same, so the agent and the companion
see the same entries in the same file.

An entry may contain a bare ``§`` and may span several lines, but no line of it may be ``§`` alone:
such a line is the delimiter and the entry would come back as two (or merge with its neighbour).
"""

from __future__ import annotations

from collections.abc import Iterable

DELIMITER = "\n§\n"
SECTION_SIGN = "§"
BOM = "\ufeff"


def decode(raw: bytes) -> str:
    """File bytes to text as Hermes reads them: UTF-8 with universal newlines.

    A leading UTF-8 BOM is *kept*, as Hermes keeps it (it reads ``utf-8``, not ``utf-8-sig``):
    it stays at the start of the first entry, where Hermes's scanner sees an invisible
    character and hides that entry from the agent. The store removes it on its next write.
    Raises ``UnicodeDecodeError`` for bytes that are not UTF-8.
    """
    return normalise_newlines(raw.decode("utf-8"))


def encode(text: str) -> bytes:
    """Text to file bytes: UTF-8, no BOM, newlines written as they are."""
    return text.encode("utf-8")


def normalise_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` become ``\\n`` (Python's universal newlines, as Hermes reads)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def normalise_entry(text: str) -> str:
    """What an entry becomes once written and read back: LF newlines, stripped."""
    return normalise_newlines(text).strip()


def _pieces(text: str) -> list[str]:
    """The raw pieces between delimiters, after the whole-file strip Hermes applies."""
    body = normalise_newlines(text).strip()
    return body.split(DELIMITER) if body else []


def parse(text: str) -> list[str]:
    """Entries of a memory file's text: split on the delimiter, strip, drop empty, dedupe."""
    return dedupe(p.strip() for p in _pieces(text) if p.strip())


def dedupe(entries: Iterable[str]) -> list[str]:
    """Drop exact duplicates, keeping the first occurrence and the order."""
    return list(dict.fromkeys(entries))


def serialise(entries: Iterable[str]) -> str:
    """Entries to file text: joined by the delimiter, no trailing newline; none -> ``""``."""
    return DELIMITER.join(entries)


def char_count(entries: Iterable[str]) -> int:
    """Characters of the joined file, separators included (what the limits count)."""
    return len(serialise(entries))


def entry_problem(entry: str) -> str | None:
    """Why `entry` (already normalised) cannot be stored as one entry, or None if it can."""
    if not entry:
        return "it is empty"
    if SECTION_SIGN in entry and SECTION_SIGN in entry.split("\n"):
        return (
            "it has a line holding only '§', which is the entry separator; "
            "put other text on that line or split the text into separate entries"
        )
    return None


def round_trips(text: str) -> bool:
    """Whether a file's text survives split-and-rejoin unchanged: Hermes's drift test.

    Hermes compares the stripped file with its entries rejoined, so whitespace around an entry
    or an empty entry between two delimiters is drift (a replace or remove then refuses and
    keeps a backup; an add, which only appends, goes ahead and normalises it). Exact duplicate
    entries are not drift (the first is kept), nor are CRLF newlines or a trailing newline.
    """
    pieces = [p.strip() for p in _pieces(text) if p.strip()]
    return normalise_newlines(text).strip() == DELIMITER.join(pieces)


def preview(entry: str, width: int = 60) -> str:
    """A one-line preview of an entry for error messages."""
    flat = " ".join(entry.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
