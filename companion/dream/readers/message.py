"""The common shape every transcript format's messages are put in, and the time of a line.

Only what the person and the agent said counts: user and assistant text, and the assistant's
tool calls. Tool results are kept (to be paired with the call they answer) but never as text,
system text is never a source (either may echo files of the vault, including the dream's own
output), and any line carrying a dream provenance comment or marker is dropped from a message
before it is used.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from typing import Any

from companion.dream import blocks
from companion.dream.model import Message, ToolCall
from companion.dream.readers.source import SourceSpec
from companion.vault.note import normalise_newlines

# Background-review prompts of Hermes's harness: neither they nor the reply to them are
# anyone's words.
HARNESS_PREFIXES = (
    "Review the conversation above and update the skill library",
    "Review the conversation above and consider saving to memory",
)
_JSON_PREFIX = "\x00json:"


# --- time --------------------------------------------------------------------------------


def parse_time(value: Any) -> dt.datetime | None:
    """An aware UTC datetime from Unix seconds/milliseconds or an ISO-8601 string."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        secs = float(value)
        if secs > 1e11:  # milliseconds
            secs /= 1000.0
        try:
            return dt.datetime.fromtimestamp(secs, dt.UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return None
        try:
            return parse_time(float(s))
        except ValueError:
            pass
        if s.endswith(("Z", "z")):
            s = s[:-1] + "+00:00"
        try:
            t = dt.datetime.fromisoformat(s)
        except ValueError:
            return None
        if t.tzinfo is None:
            t = t.replace(tzinfo=dt.UTC)
        return t.astimezone(dt.UTC)
    return None


# --- text of a message ---------------------------------------------------------------------


def own_output_free(text: str) -> str:
    """`text` without the dream's blocks and without lines carrying its provenance comments."""
    if not blocks.has_marker(text) and "<!-- src:" not in text:
        return text
    text = blocks.blank_blocks(text)
    return "\n".join(
        "" if (blocks.SRC_RE.search(ln) or "<!-- dream:" in ln) else ln for ln in text.split("\n")
    )


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip():
        try:
            val = json.loads(raw)
        except json.JSONDecodeError:
            return {}
        return val if isinstance(val, dict) else {}
    return {}


def tool_call(obj: Any) -> ToolCall | None:
    """A tool call in any of the shapes transcripts use: OpenAI `{id, function: {name,
    arguments}}`, Anthropic `tool_use` `{name, input}`, OpenClaw `toolCall` `{name, arguments}`
    or a flat `{name, arguments}`."""
    if not isinstance(obj, dict):
        return None
    fn = obj.get("function")
    if isinstance(fn, dict):
        name, args = fn.get("name"), fn.get("arguments")
    else:
        name = obj.get("name") or obj.get("toolName")
        args = obj.get("arguments", obj.get("input", obj.get("args")))
    if not isinstance(name, str) or not name:
        return None
    cid = obj.get("id") or obj.get("toolCallId")
    return ToolCall(name, _args(args), str(cid) if cid is not None else None)


def _result_text(part: dict[str, Any]) -> str:
    """The text of a tool-result part (`content` a string or a list of text parts)."""
    body = part.get("content", part.get("output", part.get("text")))
    if isinstance(body, str):
        return body
    if isinstance(body, list):
        return "\n".join(
            str(b.get("text"))
            for b in body
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return "" if body is None else json.dumps(body, ensure_ascii=False)


Result = tuple[str | None, str | None, str]


def parts(content: Any) -> tuple[str, list[ToolCall], list[Result]]:
    """(text, tool calls, tool results) of a content string or list of parts."""
    if content is None:
        return "", [], []
    if isinstance(content, str):
        if content.startswith(_JSON_PREFIX):
            try:
                return parts(json.loads(content[len(_JSON_PREFIX) :]))
            except json.JSONDecodeError:
                return "", [], []
        return content, [], []
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return "", [], []
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[Result] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            continue
        ptype = part.get("type")
        if ptype in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif ptype in ("tool_use", "toolCall", "tool_call", "function_call"):
            call = tool_call(part)
            if call:
                calls.append(call)
        elif ptype in ("tool_result", "toolResult", "function_call_output"):
            cid = part.get("tool_use_id") or part.get("toolCallId") or part.get("call_id")
            results.append((str(cid) if cid else None, None, _result_text(part)))
    return "\n".join(texts), calls, results


def build_message(
    spec: SourceSpec,
    session: str,
    mid: str,
    role: str,
    t: dt.datetime,
    content: Any,
    line: int | None,
    extra_calls: Sequence[ToolCall] = (),
    tool_call_id: str | None = None,
    tool_name: str | None = None,
    clean: Callable[[str], str] | None = None,
) -> Message | None:
    """One message in the common shape. Tool results are kept (to be paired with the call they
    answer) but never as text; `clean` removes agent-specific scaffolding from user text."""
    role = (role or "").lower()
    if role in ("toolresult", "tool_result", "function"):
        role = "tool"
    text, calls, results = parts(content)
    if role == "tool":
        if not results:
            results = [(tool_call_id, tool_name, text)]
        else:
            results = [(c or tool_call_id, n or tool_name, r) for c, n, r in results]
        text = ""
    elif results and not text.strip() and not calls:
        role = "tool"
    calls = [*calls, *extra_calls]
    if role in ("user", "system") and text.lstrip().startswith(HARNESS_PREFIXES):
        return None
    if role not in ("user", "assistant"):
        text = ""  # tool results and system text are never sources
    text = own_output_free(normalise_newlines(text))
    if clean is not None and role == "user":
        text = clean(text)
    if not text.strip() and not calls and not results:
        return None
    return Message(
        spec.name,
        spec.kind,
        session,
        mid,
        role,
        t,
        text,
        line,
        tuple(calls),
        tool_call_id,
        tuple(results),
    )
