"""Drive Hermes Agent's own code, as shipped, for the interop tests (run in the Hermes venv).

Reads one JSON request on stdin: ``{"home": HERMES_HOME, "steps": [{"op": ..., ...}, ...]}``,
runs the steps in order inside one process, and prints ``{"results": [...]}`` on stdout. Every
step calls Hermes's real functions (the memory tool and its store, the write-approval gate, the
threat scanner, the session store); nothing here re-implements their behaviour.

This file must not import the companion: it runs under the Hermes venv's interpreter.
"""

from __future__ import annotations

import json
import os
import sys
from importlib import metadata
from typing import Any


def _store() -> Any:
    from tools.memory_tool import load_on_disk_store

    return load_on_disk_store()  # honours memory.*_char_limit from config.yaml, as the agent


def _memory(step: dict[str, Any]) -> Any:
    from tools.memory_tool import memory_tool

    args = step["args"]
    raw = memory_tool(
        action=args.get("action"),
        target=args.get("target", "memory"),
        content=args.get("content"),
        old_text=args.get("old_text"),
        operations=args.get("operations"),
        store=_store(),
    )
    return {"raw": raw, "result": json.loads(raw)}


def _snapshot(_step: dict[str, Any]) -> Any:
    store = _store()
    return {
        "memory": store.format_for_system_prompt("memory"),
        "user": store.format_for_system_prompt("user"),
        "entries": {"memory": store.memory_entries, "user": store.user_entries},
        "limits": {"memory": store.memory_char_limit, "user": store.user_char_limit},
    }


def _scan(step: dict[str, Any]) -> Any:
    from tools.threat_patterns import scan_for_threats

    return [scan_for_threats(t, scope=step.get("scope", "strict")) for t in step["texts"]]


def _pending(_step: dict[str, Any]) -> Any:
    from tools import write_approval as wa

    return wa.list_pending(wa.MEMORY)


def _approve_all(_step: dict[str, Any]) -> Any:
    from tools.memory_tool import apply_memory_pending

    from tools import write_approval as wa

    out = []
    for record in wa.list_pending(wa.MEMORY):
        out.append(apply_memory_pending(record["payload"], _store()))
        wa.discard_pending(wa.MEMORY, record["id"])
    return out


_DBS: dict[str, Any] = {}


def _db(path: str) -> Any:
    from hermes_state import SessionDB

    if path not in _DBS:
        _DBS[path] = SessionDB(db_path=__import__("pathlib").Path(path))
    return _DBS[path]


def _session(step: dict[str, Any]) -> Any:
    db = _db(step["db"])
    return db.create_session(step["session"], step.get("source", "cli"), model="test-model")


def _append(step: dict[str, Any]) -> Any:
    db = _db(step["db"])
    kwargs = {k: v for k, v in step.items() if k not in ("op", "db", "session", "role")}
    return db.append_message(step["session"], step["role"], **kwargs)


def _turn(step: dict[str, Any]) -> Any:
    """One assistant turn calling the memory tool, persisted the way the agent persists it: the
    assistant row with its tool call, then the `tool` row holding the tool's real result."""
    db = _db(step["db"])
    out = _memory(step)
    arguments = json.dumps(step["args"], ensure_ascii=False)
    if step.get("flat_calls"):  # the agent's object path stores {name, arguments} without an id
        calls: list[dict[str, Any]] = [{"name": "memory", "arguments": arguments}]
        call_id = None
    else:
        call_id = step.get("call_id", "call_" + os.urandom(4).hex())
        calls = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "memory", "arguments": arguments},
            }
        ]
    t = step.get("timestamp")
    db.append_message(
        step["session"], "assistant", step.get("content", ""), tool_calls=calls, timestamp=t
    )
    db.append_message(
        step["session"],
        "tool",
        out["raw"],
        tool_call_id=call_id,
        tool_name="memory",
        timestamp=None if t is None else t + 0.5,
    )
    return out


def _compact(step: dict[str, Any]) -> Any:
    db = _db(step["db"])
    return db.archive_and_compact(step["session"], step["messages"])


def _conversation(step: dict[str, Any]) -> Any:
    db = _db(step["db"])
    return db.get_messages_as_conversation(step["session"])


def _constants(_step: dict[str, Any]) -> Any:
    from agent import background_review, context_compressor

    prompts = [
        v
        for k, v in vars(background_review).items()
        if k.endswith("_PROMPT") and isinstance(v, str) and v.startswith("Review the conversation")
    ]
    return {
        "review_prompts": prompts,
        "summary_prefix": context_compressor.SUMMARY_PREFIX,
        "summary_end": context_compressor._SUMMARY_END_MARKER,
        "merged_header": context_compressor._MERGED_PRIOR_CONTEXT_HEADER,
        "merged_delimiter": context_compressor._MERGED_SUMMARY_DELIMITER,
    }


def _version(_step: dict[str, Any]) -> Any:
    return metadata.version("hermes-agent")


OPS = {
    "memory": _memory,
    "snapshot": _snapshot,
    "scan": _scan,
    "pending": _pending,
    "approve_all": _approve_all,
    "session": _session,
    "append": _append,
    "turn": _turn,
    "compact": _compact,
    "conversation": _conversation,
    "constants": _constants,
    "version": _version,
}


def main() -> None:
    request = json.load(sys.stdin)
    os.environ["HERMES_HOME"] = request["home"]
    results = []
    for step in request["steps"]:
        try:
            results.append({"ok": OPS[step["op"]](step)})
        except Exception as exc:  # report, do not hide: the test decides
            results.append({"error": f"{type(exc).__name__}: {exc}"})
    json.dump({"results": results}, sys.stdout, ensure_ascii=False, default=str)


if __name__ == "__main__":
    main()
