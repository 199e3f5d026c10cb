"""The documented generic transcript format (kind `jsonl`, docs/dream.md): one message per
line, `{"role", "content", "timestamp" or "time", "session" or "session_id", "id",
"tool_calls", "tool_call_id"}`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from companion.dream.model import Message
from companion.dream.readers.files import JsonlFormat, Lines
from companion.dream.readers.message import build_message, parse_time, tool_call
from companion.dream.readers.source import SourceSpec


def _generic_message(spec: SourceSpec, n: int, obj: dict[str, Any]) -> Message | None:
    t = parse_time(obj.get("timestamp", obj.get("time")))
    if t is None:
        return None
    calls = [c for c in (tool_call(x) for x in obj.get("tool_calls") or []) if c]
    mid = str(obj.get("id") or f"L{n}")
    session = str(obj.get("session") or obj.get("session_id") or spec.path)
    return build_message(
        spec,
        session,
        mid,
        str(obj.get("role") or ""),
        t,
        obj.get("content"),
        n,
        calls,
        obj.get("tool_call_id"),
    )


def _messages(spec: SourceSpec, _session: str, lines: Lines) -> Iterator[Message]:
    for n, obj in lines:
        msg = _generic_message(spec, n, obj)
        if msg is not None:
            yield msg


FORMAT = JsonlFormat(_messages)
