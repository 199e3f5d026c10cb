"""Which parts of a Claude Code or OpenClaw transcript are the person's and the agent's words.

Claude Code (``~/.claude/projects/<project>/<session>.jsonl``):
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

OpenClaw (pi session files, ``~/.openclaw/agents/<agent>/sessions/<id>.jsonl``):
- entries form a tree by ``id`` / ``parentId``; the conversation is the path from the last
  entry of the file (the active leaf) back to the root, and abandoned branches are not read;
- a session closed with ``/new`` or ``/reset`` is archived as ``<id>.jsonl.reset.<time>``: read;
- messages from chat channels start with OpenClaw's envelope,
  ``[Telegram Ana +2m 2026-11-27 09:14 UTC] remember: ...``: removed before reading.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# --- Claude Code -----------------------------------------------------------------------------

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


# --- OpenClaw --------------------------------------------------------------------------------

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
