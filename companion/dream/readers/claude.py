"""Claude Code session JSONL files (``~/.claude/projects/<project>/<session>.jsonl``; a file,
or a folder searched for ``*.jsonl``), and which of their parts are the person's and the
agent's words:

- ``isCompactSummary`` lines are the model's summary of earlier turns, written as a user line;
  ``isMeta`` lines are scaffolding; neither is anyone's words;
- subagent transcripts (``<session>/subagents/agent-*.jsonl``, older ``agent-*.jsonl`` beside
  the sessions, any line with ``isSidechain: true``) are a conversation between the main agent
  and a helper, whose "user" is the prompt the main agent wrote: skipped;
- bash mode and local slash commands arrive as user lines wrapped in tags (``<bash-input>``,
  ``<bash-stdout>``, ``<local-command-stdout>``, ``<command-name>``, ...), as do system
  reminders and task notifications: the tagged blocks are removed, and what is left (usually
  nothing) is the person's text;
- a message the person types while the agent works is not a user line but an ``attachment``
  line, ``{"attachment": {"type": "queued_command", "commandMode": "prompt", "prompt": ...}}``:
  read as the person's words (unless it is meta, or its origin is not a human).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from companion.dream.model import Message
from companion.dream.readers.files import JsonlFormat, Lines
from companion.dream.readers.message import build_message, parse_time
from companion.dream.readers.source import SourceSpec

_CLAUDE_TAGS = (
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "command-name",
    "command-message",
    "command-args",
    "command-contents",
    "system-reminder",
    "task-notification",
    "user-prompt-submit-hook",
)
_CLAUDE_TAG_RE = re.compile(
    r"<(" + "|".join(_CLAUDE_TAGS) + r")>[\s\S]*?(?:</\1>|\Z)", re.IGNORECASE
)


def claude_skip_file(path: Path, root: Path) -> bool:
    """A subagent transcript: under a ``subagents`` folder, or named ``agent-*.jsonl``."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = path.parts
    return "subagents" in parts[:-1] or path.name.startswith("agent-")


def claude_skip_line(obj: Mapping[str, Any]) -> bool:
    return bool(obj.get("isSidechain") or obj.get("isCompactSummary") or obj.get("isMeta"))


def claude_clean(text: str) -> str:
    """User text without Claude Code's tagged blocks (bash mode, local commands, reminders)."""
    if "<" not in text:
        return text
    return _CLAUDE_TAG_RE.sub("", text).strip()


def claude_queued_prompt(obj: Mapping[str, Any]) -> Any | None:
    """The content of a message typed while the agent worked, or None for any other line."""
    if obj.get("type") != "attachment":
        return None
    att = obj.get("attachment")
    if not isinstance(att, dict) or att.get("type") != "queued_command" or att.get("isMeta"):
        return None
    if att.get("commandMode", "prompt") != "prompt":
        return None  # a task notification, or a message to a helper agent
    origin = att.get("origin")
    if isinstance(origin, dict) and origin.get("kind", "human") != "human":
        return None
    prompt = att.get("prompt")
    return prompt if isinstance(prompt, str | list) and prompt else None


def _claude_message(spec: SourceSpec, n: int, obj: dict[str, Any]) -> Message | None:
    if claude_skip_line(obj):
        return None
    t = parse_time(obj.get("timestamp"))
    if t is None:
        return None
    mid = str(obj.get("uuid") or f"L{n}")
    session = str(obj.get("sessionId") or spec.path)
    queued = claude_queued_prompt(obj)
    if queued is not None:  # typed while the agent worked
        return build_message(spec, session, mid, "user", t, queued, n, clean=claude_clean)
    if obj.get("type") not in ("user", "assistant"):
        return None
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return None
    return build_message(
        spec,
        session,
        mid,
        str(msg.get("role") or obj["type"]),
        t,
        msg.get("content"),
        n,
        clean=claude_clean,
    )


def _messages(spec: SourceSpec, _session: str, lines: Lines) -> Iterator[Message]:
    for n, obj in lines:
        msg = _claude_message(spec, n, obj)
        if msg is not None:
            yield msg


FORMAT = JsonlFormat(_messages, skip_file=claude_skip_file)
