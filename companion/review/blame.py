"""Who ticked a decision line: read from the review note's revisions, not from the note.

The relay's history of the note is a list of verified revisions, each with the device that
committed it and that device's kind (the relay's record and the sealed one agree, or it counts
as an agent's). A line's tick belongs to the revision since which it has been ticked without a
break: an agent device that rewrites the note with `[x]` owns that tick, whatever name the
line or the note claims. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from companion.review.note import parse_lines


@dataclass(frozen=True)
class Revision:
    rev: int
    device_id: str
    device: str
    kind: str  # human | agent
    text: str | None  # None: the note was deleted in this revision


@dataclass(frozen=True)
class Tick:
    rev: int
    device_id: str
    device: str
    kind: str


def ticks(revisions: Sequence[Revision]) -> dict[tuple[str, str], Tick]:
    """For each decision line ticked in the newest revision: the revision that ticked it.
    `revisions` oldest first."""
    since: dict[tuple[str, str], Tick] = {}
    for r in revisions:
        now = {}
        if r.text is not None:
            for ln in parse_lines(r.text):
                if ln.ticked:
                    now[ln.key] = since.get(ln.key) or Tick(r.rev, r.device_id, r.device, r.kind)
        since = now
    return since
