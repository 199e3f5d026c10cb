"""Transcript writers of the generated worlds: Hermes's `state.db` (Hermes Agent's own
`SessionDB` and memory tool through `tests/interop/hermes_driver.py`, or, when its venv is not
there, `FallbackHermesWriter`, built on the demo's schema `companion.demo.sample.HERMES_SCHEMA`),
Claude Code and OpenClaw JSONL sessions."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path
from typing import Any, Protocol


class HermesWriter(Protocol):
    name: str

    def run(self, home: Path, *steps: dict[str, Any]) -> Any: ...


class InteropHermesWriter:
    """Hermes Agent's own code, in its venv (`tests.interop.hermes.Hermes`)."""

    name = "hermes-sessiondb"

    def __init__(self, hermes: Any) -> None:
        self.hermes = hermes

    def run(self, home: Path, *steps: dict[str, Any]) -> Any:
        return self.hermes.run(home, *steps)


class FallbackHermesWriter:
    """NOT Hermes's code: the demo's minimal `state.db` schema and a plain memory-file writer,
    for machines without the Hermes venv. Worlds built with it say so in their key
    (`hermes_writer: fallback-demo-schema`); prefer the interop writer for any number you quote."""

    name = "fallback-demo-schema"

    def run(self, home: Path, *steps: dict[str, Any]) -> Any:
        from companion.demo.sample import HERMES_SCHEMA

        out = []
        for step in steps:
            db = Path(step.get("db", home / "state.db"))
            new = not db.exists()
            con = sqlite3.connect(db)
            try:
                if new:
                    con.executescript(HERMES_SCHEMA)
                op = step["op"]
                if op == "session":
                    con.execute(
                        "INSERT OR IGNORE INTO sessions (id, source, model, started_at)"
                        " VALUES (?,?,?,?)",
                        (step["session"], "cli", "test-model", step.get("timestamp", 0.0)),
                    )
                elif op == "append":
                    calls = step.get("tool_calls")
                    con.execute(
                        "INSERT INTO messages (session_id, role, content, tool_call_id,"
                        " tool_calls, tool_name, timestamp) VALUES (?,?,?,?,?,?,?)",
                        (
                            step["session"],
                            step["role"],
                            step.get("content"),
                            step.get("tool_call_id"),
                            json.dumps(calls) if calls else None,
                            step.get("tool_name"),
                            step["timestamp"],
                        ),
                    )
                elif op == "turn":
                    args = step["args"]
                    result = _apply_memory(home / "memories", args)
                    cid = step.get("call_id", "c" + str(zlib.crc32(json.dumps(args).encode())))
                    fn = {"name": "memory", "arguments": json.dumps(args, ensure_ascii=False)}
                    con.execute(
                        "INSERT INTO messages (session_id, role, content, tool_calls, timestamp)"
                        " VALUES (?,?,?,?,?)",
                        (
                            step["session"],
                            "assistant",
                            "",
                            json.dumps([{"id": cid, "type": "function", "function": fn}]),
                            step["timestamp"],
                        ),
                    )
                    con.execute(
                        "INSERT INTO messages (session_id, role, content, tool_call_id,"
                        " tool_name, timestamp) VALUES (?,?,?,?,?,?)",
                        (
                            step["session"],
                            "tool",
                            json.dumps(result),
                            cid,
                            "memory",
                            step["timestamp"] + 0.5,
                        ),
                    )
                con.commit()
            finally:
                con.close()
            out.append(None)
        return out


def _apply_memory(memories: Path, args: dict[str, Any]) -> dict[str, Any]:
    memories.mkdir(parents=True, exist_ok=True)
    f = memories / ("USER.md" if args.get("target") == "user" else "MEMORY.md")
    entries = [e.strip() for e in f.read_text("utf-8").split("\n§\n")] if f.exists() else []
    entries = [e for e in entries if e]
    action = args["action"]
    if action == "add":
        if args["content"] not in entries:
            entries.append(args["content"])
    else:
        hits = [i for i, e in enumerate(entries) if args["old_text"] in e]
        if len(hits) != 1:
            return {"success": False, "error": "no single match"}
        if action == "replace":
            entries[hits[0]] = args["content"]
        else:
            del entries[hits[0]]
    f.write_text("\n§\n".join(entries), encoding="utf-8")
    return {"success": True, "message": "done"}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
