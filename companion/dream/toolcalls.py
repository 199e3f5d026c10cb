"""Which of the agent's tool calls count: each call paired with the result that answers it.

A transcript records what the agent *asked* a tool to do and, in a separate message, what the
tool answered. For the `memory` tool only the answer says whether anything happened: Hermes's
threat scanner may have blocked the write (``{"success": false, "error": "Blocked: ..."}``),
the person's approval gate may have staged it (``{"success": true, "staged": true,
"pending_id": ...}``, not yet saved), or the store may have refused it (over the limit, no
match). Only a write Hermes applied is the agent's memory; everything else never happened.

`pair_results` attaches each tool result to the call it answers (by call id; without ids, the
first unanswered call of that tool, in order), per session. `memory_ops` then lists the memory
operations that took effect, in order, with batch calls (``operations: [...]``, the shape
Hermes's schema asks the model to prefer) expanded into their operations.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from companion.dream.model import Message, ToolCall

# Sources whose format may not record tool results at all: a call there with no result is
# taken at its word. Every agent format read here records results, so a missing one means the
# call never completed (or its answer is outside the window) and it does not count.
RESULTLESS_KINDS = frozenset({"jsonl"})

MEMORY_TOOL = "memory"
TARGETS = ("memory", "user")
ACTIONS = ("add", "replace", "remove")


def pair_results(messages: Sequence[Message]) -> list[Message]:
    """`messages` with every tool result attached to its call, and the pure tool-result
    messages dropped (they are never sources). Order is kept."""
    out: list[Message] = []
    # per (source, session): calls still waiting for a result, as (index in out, call index)
    waiting: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for msg in messages:
        key = (msg.source, msg.session)
        pending = waiting.setdefault(key, [])
        for cid, name, text in msg.results:
            slot = _match(out, pending, cid, name)
            if slot is None:
                continue
            pending.remove(slot)
            i, j = slot
            calls = list(out[i].tool_calls)
            calls[j] = dataclasses.replace(calls[j], result=text)
            out[i] = dataclasses.replace(out[i], tool_calls=tuple(calls))
        if msg.role == "tool" and not msg.text.strip() and not msg.tool_calls:
            continue
        out.append(dataclasses.replace(msg, results=()))
        pending.extend((len(out) - 1, j) for j in range(len(msg.tool_calls)))
    return out


def _match(
    out: list[Message], pending: list[tuple[int, int]], cid: str | None, name: str | None
) -> tuple[int, int] | None:
    if cid:
        for slot in pending:
            if out[slot[0]].tool_calls[slot[1]].call_id == cid:
                return slot
    for slot in pending:
        call = out[slot[0]].tool_calls[slot[1]]
        if call.call_id and cid:
            continue  # both carry ids and they differ: not this one
        if name is None or call.name == name:
            return slot
    return None


def outcome(call: ToolCall) -> str:
    """What the tool answered: ``applied``, ``staged`` (waiting for the person's approval),
    ``refused`` (blocked or failed), or ``unknown`` (no result, or one that is not Hermes's)."""
    if call.result is None:
        return "unknown"
    try:
        value = json.loads(call.result)
    except (json.JSONDecodeError, TypeError):
        return "unknown"
    if not isinstance(value, dict) or "success" not in value:
        return "unknown"
    if value.get("success") is not True:
        return "refused"
    if value.get("staged"):
        return "staged"
    return "applied"


def counts(call: ToolCall, kind: str) -> bool:
    """Whether a memory call took effect: applied, or (only in formats that may not record
    results) unanswered."""
    state = outcome(call)
    return state == "applied" or (state == "unknown" and kind in RESULTLESS_KINDS)


@dataclass(frozen=True)
class MemoryOp:
    """One memory operation that took effect, and the message whose call made it."""

    target: str
    action: str
    content: str
    old_text: str
    message: Message


def _ops_of(args: dict[str, Any]) -> list[dict[str, Any]]:
    ops = args.get("operations")
    if isinstance(ops, list) and ops:
        return [op for op in ops if isinstance(op, dict)]
    return [args]


def memory_ops(messages: Sequence[Message]) -> Iterator[MemoryOp]:
    """The agent's memory operations that Hermes applied, in order (batches expanded)."""
    for msg in messages:
        if msg.role != "assistant":
            continue
        for call in msg.tool_calls:
            if call.name != MEMORY_TOOL or not counts(call, msg.kind):
                continue
            target = call.arguments.get("target") or "memory"
            if target not in TARGETS:
                continue
            for op in _ops_of(call.arguments):
                action = str(op.get("action") or "")
                if action not in ACTIONS:
                    continue
                yield MemoryOp(
                    str(target),
                    action,
                    str(op.get("content") or ""),
                    str(op.get("old_text") or ""),
                    msg,
                )
