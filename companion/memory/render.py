"""The frozen snapshot: memory as the agent sees it at the start of a session, byte for byte.

::

    ══════════════════════════════════════════════      (46 × U+2550)
    MEMORY (your personal notes) [67% — 1,474/2,200 chars]
    ══════════════════════════════════════════════
    entry one
    §
    entry two

USER.md's header reads ``USER PROFILE (who the user is) [...]``. The percent is
``min(100, int(current / limit * 100))``, the dash an em dash, numbers carry thousands commas.
An empty store renders nothing. Entries Hermes's threat scanner flags appear as Hermes injects
them, ``[BLOCKED: MEMORY.md entry contained threat pattern(s): ...]``. Hermes 0.19.0 (the
pinned release) adds no marker for a file over its limit; its unreleased main branch adds
``⚠ OVER BUDGET`` and cuts very large files: the interop test shows when a release does. The
snapshot is taken once and does not follow later writes,
which is what keeps the agent's prompt stable for a whole session.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from companion.memory import format as fmt
from companion.memory import hermes_threats
from companion.memory.home import DEFAULT_LIMITS, TARGETS
from companion.memory.store import MemoryStore, Usage

SEPARATOR = "═" * 46
HEADERS: dict[str, str] = {
    "memory": "MEMORY (your personal notes)",
    "user": "USER PROFILE (who the user is)",
}


def header(target: str, usage: Usage) -> str:
    """``MEMORY (your personal notes) [67% — 1,474/2,200 chars]``."""
    return f"{HEADERS[target]} [{usage.describe()}]"


def render_block(target: str, entries: Sequence[str], limit: int) -> str:
    """One store's block, or ``""`` when it has no entries. As Hermes does at load time, an
    entry its threat scanner flags is shown as its ``[BLOCKED: ...]`` placeholder, and the
    header counts the text as injected (placeholders included)."""
    if not entries:
        return ""
    body = fmt.serialise(hermes_threats.for_snapshot(list(entries), TARGETS[target]))
    return f"{SEPARATOR}\n{header(target, Usage(len(body), limit))}\n{SEPARATOR}\n{body}"


@dataclass(frozen=True)
class Snapshot:
    """Both blocks rendered once, from the files as they were when captured."""

    memory: str
    user: str

    @classmethod
    def capture(
        cls, home: str | os.PathLike[str], limits: Mapping[str, int] | None = None
    ) -> Snapshot:
        lim = {**DEFAULT_LIMITS, **(limits or {})}
        blocks = {t: render_block(t, MemoryStore(home, t, lim[t]).read(), lim[t]) for t in TARGETS}
        return cls(memory=blocks["memory"], user=blocks["user"])

    def block(self, target: str) -> str:
        return self.memory if target == "memory" else self.user

    def text(self) -> str:
        """Both blocks, memory first, separated by a blank line; empty ones left out."""
        return "\n\n".join(b for b in (self.memory, self.user) if b)
