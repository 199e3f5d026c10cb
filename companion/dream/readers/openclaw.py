"""OpenClaw session JSONL files (pi session files,
``~/.openclaw/agents/<agent>/sessions/<id>.jsonl``), and which of their parts are the person's
and the agent's words:

- entries form a tree by ``id`` / ``parentId``; the conversation is the path from the last
  entry of the file (the active leaf) back to the root, and abandoned branches are not read;
- a session closed with ``/new`` or ``/reset`` is archived as ``<id>.jsonl.reset.<time>``: read;
- messages from chat channels start with OpenClaw's envelope,
  ``[Telegram Ana +2m 2026-11-27 09:14 UTC] remember: ...``: removed before reading.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from companion.dream.model import Message
from companion.dream.readers.files import JsonlFormat, Lines
from companion.dream.readers.message import build_message, parse_time
from companion.dream.readers.source import SourceSpec

# ``[Channel sender ... time] `` at the very start: the bracket holds a date or a clock time.
_ENVELOPE = re.compile(r"^\[(?=[^\]\n]*(?:\d{4}-\d{2}-\d{2}|\b\d{1,2}:\d{2}\b))[^\]\n]{1,200}\]\s*")


def openclaw_clean(text: str) -> str:
    """User text without OpenClaw's channel envelope."""
    return _ENVELOPE.sub("", text, count=1) if text.startswith("[") else text


def openclaw_is_archive(path: Path) -> bool:
    """``<id>.jsonl.reset.<time>``: a session closed with /new or /reset."""
    return ".jsonl.reset." in path.name


def openclaw_active_ids(entries: Sequence[Mapping[str, Any]]) -> set[str] | None:
    """Ids on the path from the active leaf (the last entry with an id) to the root, or None
    for a file without a tree (every entry then counts)."""
    by_id = {str(e["id"]): e for e in entries if e.get("type") != "session" and e.get("id")}
    if not any("parentId" in e for e in by_id.values()):
        return None
    leaf = next(
        (str(e["id"]) for e in reversed(entries) if e.get("type") != "session" and e.get("id")),
        None,
    )
    path: set[str] = set()
    current = leaf
    while current is not None and current in by_id and current not in path:
        path.add(current)
        parent = by_id[current].get("parentId")
        current = str(parent) if parent else None
    return path


def _archives(root: Path) -> Iterable[Path]:
    return {p for p in root.rglob("*.jsonl.reset.*") if openclaw_is_archive(p)}


def _openclaw_message(
    spec: SourceSpec, n: int, obj: dict[str, Any], session: str
) -> Message | None:
    if obj.get("type") != "message":
        return None
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return None
    t = parse_time(obj.get("timestamp") or msg.get("timestamp"))
    if t is None:
        return None
    mid = str(obj.get("id") or f"L{n}")
    return build_message(
        spec,
        session,
        mid,
        str(msg.get("role") or ""),
        t,
        msg.get("content"),
        n,
        tool_call_id=msg.get("toolCallId"),
        tool_name=msg.get("toolName"),
        clean=openclaw_clean,
    )


def _messages(spec: SourceSpec, session: str, lines: Lines) -> Iterator[Message]:
    active = openclaw_active_ids([o for _n, o in lines])
    for n, obj in lines:
        if active is not None and obj.get("type") != "session" and str(obj.get("id")) not in active:
            continue  # an abandoned branch of the session tree
        if obj.get("type") == "session":
            session = str(obj.get("id") or session)
            continue
        msg = _openclaw_message(spec, n, obj, session)
        if msg is not None:
            yield msg


FORMAT = JsonlFormat(_messages, more_files=_archives)
