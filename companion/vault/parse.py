"""Read and parse many notes for the index, using a second process on a cold build.

A cold build parses thousands of notes. Threads cannot help (parsing is Python, holding the
GIL), so a helper process parses a share of them while this process parses the rest and
writes SQLite. Small updates, one-core machines and frozen apps (where a "helper" would start
the whole app again) stay in one process. Any trouble with the helper (no processes allowed,
a crash) falls back to parsing here: the result is the same either way.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

from companion.logs import get_logger
from companion.vault.graph import NoteMeta
from companion.vault.note import normalise_newlines, parse_note
from companion.vault.reader import read_note_text
from companion.vault.walk import Issue

log = get_logger("vault.parse")

PARALLEL_MIN_NOTES = 2000
# The helper starts ~0.2 s late; this process also writes SQLite (much more with the text).
_HELPER_SHARE = {False: 0.45, True: 0.6}

ParseResult = tuple[tuple[Any, ...] | None, Issue | None, str, str | None]


def clean_text(text: str) -> str:
    """The text as the parser sees it (`\\n` line ends, no BOM), so line numbers match."""
    text = normalise_newlines(text)
    return text[1:] if text.startswith("\ufeff") else text


def note_title(rel: str) -> str:
    name = rel.rpartition("/")[2]
    return name[:-3] if name[-3:].lower() == ".md" else name


def parse_one(root: str, cap: int | None, rel: str, fulltext: bool) -> ParseResult:
    """(meta record, issue, title, text or None) of the note at `root + rel`."""
    rr = read_note_text(root + rel, rel, cap)
    if rr.issue is not None:
        return None, rr.issue, "", None
    text = clean_text(rr.text or "")
    note = parse_note(text, rel)
    note.warnings[:0] = rr.warnings
    return NoteMeta.from_note(note).to_record(), None, note.title, (text if fulltext else None)


def _parse_chunk(root: str, cap: int | None, rels: list[str], fulltext: bool) -> list[ParseResult]:
    return [parse_one(root, cap, rel, fulltext) for rel in rels]


def parse_notes(
    root: str, cap: int | None, rels: list[str], fulltext: bool, helpers: list[int] | None = None
) -> Iterator[ParseResult]:
    """Parse `rels` (relative to `root`, which ends with a separator), yielding results in
    order. Appends to `helpers` how many notes a helper process parsed."""
    if len(rels) < PARALLEL_MIN_NOTES or (os.cpu_count() or 1) < 2 or getattr(sys, "frozen", False):
        for rel in rels:
            yield parse_one(root, cap, rel, fulltext)
        return
    split = int(len(rels) * (1 - _HELPER_SHARE[fulltext]))
    mine, theirs = rels[:split], rels[split:]
    pool = future = None
    try:
        import concurrent.futures
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")  # never fork a process that may run threads
        pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx)
        future = pool.submit(_parse_chunk, root, cap, theirs, fulltext)
    except Exception as exc:  # noqa: BLE001 - no processes here (sandbox): go on alone
        log.debug("parsing in one process: %s", exc)
    try:
        for rel in mine:
            yield parse_one(root, cap, rel, fulltext)
        results: list[ParseResult] | None = None
        if future is not None:
            try:
                results = future.result()
            except Exception as exc:  # noqa: BLE001 - a broken helper: do its share here
                log.warning("note parser process failed (%s); parsing here", exc)
        if results is None:
            results = _parse_chunk(root, cap, theirs, fulltext)
        elif helpers is not None:
            helpers.append(len(results))
        yield from results
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
