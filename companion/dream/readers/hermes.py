"""Hermes Agent's SQLite `state.db`, opened read-only (`mode=ro`, `query_only`; never locked).

Columns are read by name, so newer schemas with extra columns work. Rows the agent itself
hides are skipped: rewound messages (`active = 0` and not `compacted`), rows Hermes typed for
display (`display_kind`: hidden scaffolding, notifications), compaction summaries and the
context it inserts as a turn, background-review prompts and the replies to them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from companion.dream.model import Message, ToolCall
from companion.dream.readers.message import (
    HARNESS_PREFIXES,
    build_message,
    parse_time,
    parts,
    tool_call,
)
from companion.dream.readers.source import SourceSpec, Window

# Openings of the context Hermes writes into a session as if it were a turn: the compaction
# summary (`[CONTEXT COMPACTION — REFERENCE ONLY] ...`, the legacy `[CONTEXT SUMMARY]:`) and a
# tail message with a summary merged into it (`[PRIOR CONTEXT — for reference only; ...]`).
_HERMES_SCAFFOLD_PREFIXES = (
    "[CONTEXT COMPACTION",
    "[CONTEXT SUMMARY]:",
    "[PRIOR CONTEXT — for reference only",
)


def connect_ro(path: Path) -> sqlite3.Connection:
    uri = "file:" + quote(str(path.resolve()), safe="/:") + "?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, timeout=5)
        db.execute("PRAGMA query_only = 1")
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return db
    except sqlite3.OperationalError:
        # A WAL database in a folder we cannot write (no -shm yet): read the file as is.
        db = sqlite3.connect(uri.replace("mode=ro", "mode=ro&immutable=1"), uri=True, timeout=5)
        db.execute("PRAGMA query_only = 1")
        return db


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


_HERMES_REQUIRED = ("id", "session_id", "role", "content", "timestamp")
_HERMES_OPTIONAL = (
    "tool_calls",
    "tool_call_id",
    "tool_name",
    "active",
    "compacted",
    "display_kind",
    "_compressed_summary",
)


def _hermes_rows(spec: SourceSpec, where: str, params: Sequence[Any]) -> Iterator[sqlite3.Row]:
    path = spec.real_path
    if not path.is_file():
        raise FileNotFoundError(f"{spec.name}: {path} does not exist")
    db = connect_ro(path)
    try:
        db.row_factory = sqlite3.Row
        cols = _columns(db, "messages")
        missing = [c for c in _HERMES_REQUIRED if c not in cols]
        if missing:
            raise ValueError(f"{spec.name}: table messages lacks {', '.join(missing)}")
        chosen = [*_HERMES_REQUIRED, *(c for c in _HERMES_OPTIONAL if c in cols)]
        sql = f"SELECT {', '.join(chosen)} FROM messages WHERE {where} ORDER BY timestamp, id"
        yield from db.execute(sql, params)
    finally:
        db.close()


def _hermes_message(spec: SourceSpec, row: sqlite3.Row) -> Message | None:
    keys = row.keys()

    def get(name: str) -> Any:
        return row[name] if name in keys else None

    if get("active") == 0 and not get("compacted"):
        return None  # rewound: the agent no longer considers it said
    role = str(get("role") or "")
    if get("_compressed_summary") or (get("display_kind") and role != "tool"):
        # A compaction summary, or a row Hermes typed for display (hidden scaffolding, an
        # internal notification, an async delegation's report): not what anyone said.
        return None
    if _hermes_scaffold(get("content")):
        return None
    t = parse_time(get("timestamp"))
    if t is None:
        return None
    calls: list[ToolCall] = []
    raw_calls = get("tool_calls")
    if raw_calls:
        try:
            parsed = json.loads(raw_calls) if isinstance(raw_calls, str) else raw_calls
        except json.JSONDecodeError:
            parsed = []
        for obj in parsed if isinstance(parsed, list) else []:
            call = tool_call(obj)
            if call:
                calls.append(call)
    return build_message(
        spec,
        str(get("session_id")),
        str(get("id")),
        role,
        t,
        get("content"),
        None,
        calls,
        get("tool_call_id"),
        get("tool_name"),
    )


def _hermes_scaffold(content: Any) -> bool:
    """Model-written context Hermes inserts as a message: a compaction summary (current and
    legacy openings), or a tail message it merged a summary into."""
    text, _calls, _results = parts(content)
    return text.lstrip().startswith(_HERMES_SCAFFOLD_PREFIXES)


def _is_harness(row: sqlite3.Row) -> bool:
    """A background-review harness prompt (Hermes drops it and the reply that follows)."""
    content = row["content"]
    return (
        row["role"] in ("user", "system")
        and isinstance(content, str)
        and content.lstrip().startswith(HARNESS_PREFIXES)
    )


def read_hermes(spec: SourceSpec, window: Window) -> list[Message]:
    out = []
    params = (window.start.timestamp(), window.end.timestamp())
    after_harness: set[str] = set()  # sessions whose next row answers a harness prompt
    for row in _hermes_rows(spec, "timestamp >= ? AND timestamp <= ?", params):
        session = str(row["session_id"])
        if _is_harness(row):
            after_harness.add(session)
            continue
        if session in after_harness:
            after_harness.discard(session)
            if row["role"] == "assistant":
                continue  # the curator-mode reply to the harness prompt
        msg = _hermes_message(spec, row)
        if msg is not None:
            out.append(msg)
    return out


def find_hermes(spec: SourceSpec, ids: Iterable[str]) -> dict[str, Message]:
    """The messages with these ids (any time; ids that are not row ids are not there)."""
    found: dict[str, Message] = {}
    wanted = [i for i in ids if i.isdigit()]
    if not wanted:
        return found
    marks = ",".join("?" * len(wanted))
    for row in _hermes_rows(spec, f"id IN ({marks})", [int(i) for i in wanted]):
        msg = _hermes_message(spec, row)
        if msg is not None:
            found[msg.id] = msg
    return found
