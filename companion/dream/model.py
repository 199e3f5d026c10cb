"""The records the dream's steps pass along: messages, journal entries, candidates."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from companion.dream.blocks import Ref
from companion.dream.text import norm_key

KINDS = ("knowledge", "decision", "status", "fact")


@dataclass(frozen=True)
class ToolCall:
    """A tool call of an assistant message, with the tool's answer when the transcript has it.

    `result` is the raw text of the tool result that answers this call (Hermes's `role=tool`
    row, Claude Code's `tool_result` part, OpenClaw's `toolResult` message), or None when the
    transcript holds none.
    """

    name: str
    arguments: dict[str, Any]
    call_id: str | None = None
    result: str | None = None


@dataclass
class Message:
    """One transcript message, from any source, in one shape.

    `source` is the provenance name of the transcript (`hermes:~/.hermes/state.db`,
    `claude:~/.claude/projects/p/s.jsonl`, ...), `id` the message's own id there (stable across
    runs), `line` its line in a JSONL file (None for SQLite).
    """

    source: str
    kind: str
    session: str
    id: str
    role: str
    time: dt.datetime
    text: str
    line: int | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    # Tool results this message carries, as (call id, tool name, text): paired with the calls
    # they answer by `companion.dream.toolcalls.pair_results`, never a source themselves.
    results: tuple[tuple[str | None, str | None, str], ...] = ()

    def ref(self) -> Ref:
        return Ref(self.source, self.line, self.id)


@dataclass(frozen=True)
class JournalEntry:
    """One item of a journal day (an item of a known section, or a marked line elsewhere)."""

    path: str  # vault-relative
    day: dt.date
    section: str | None  # done, decided, learned, or None outside known sections
    text: str
    line: int

    def ref(self) -> Ref:
        return Ref(self.path, self.line)


@dataclass
class Provenance:
    """Where a candidate comes from: the reference and the exact text quoted from it."""

    ref: Ref
    quote: str
    time: dt.datetime | None = None
    session: str | None = None  # a transcript session, or "day:YYYY-MM-DD" for the journal
    # who said it: "user" or "assistant" for a transcript message's text, None for the journal
    # and the agent's memory-tool calls (companion.dream.proposals decides on it)
    role: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.ref.source,
            "line": self.ref.line,
            "message_id": self.ref.message_id,
            "quote": self.quote,
        }


@dataclass
class Candidate:
    """Something the distillers propose to consolidate or promote.

    kind: knowledge (a lesson for `knowledge/`), decision or status (for a note in
    `projects/`), fact (only for the injected memory: the agent's memory-tool adds to USER.md).
    `text` is exactly what would be written (one line). `promote` says why it may go to the
    injected memory: "memory-tool", "marker" (always/siempre) or "recurrence" (set later).
    """

    kind: str
    text: str
    provenance: list[Provenance]
    origin: str  # journal, marker, memory-tool, llm
    topic: str | None = None  # an explicit topic or project link target
    promote: str | None = None
    target: str = "memory"  # memory or user, for promotion
    consolidate: bool = True
    day: dt.date | None = None
    time: dt.datetime | None = None
    secret: bool = False  # flagged by the secret scanner: never written, never shown
    sessions: set[str] = field(default_factory=set)
    days: set[str] = field(default_factory=set)
    seen: int = 0  # distinct sessions or days so far (the ledger's count), for recurrence
    entry: str | None = None  # the exact memory entry (may span lines) a memory-tool add stored
    # the day a past dream's promotion of it was blocked by the agent's memory lock: it is
    # retried (companion.dream.pending), and only promoted, never consolidated again
    retry_since: str | None = None
    # the dream line in a note saying the same lesson in other words, which this one's source
    # joined (issue 40): recurrence is counted on that line's key, by meaning
    line_key: str | None = None

    @property
    def key(self) -> str:
        return norm_key(self.text)

    def refs(self) -> list[Ref]:
        seen: list[Ref] = []
        for p in self.provenance:
            if p.ref not in seen:
                seen.append(p.ref)
        return seen

    def where(self) -> str:
        """A short location for reports and --explain: the first reference."""
        r = self.provenance[0].ref if self.provenance else None
        return r.format() if r else "?"
