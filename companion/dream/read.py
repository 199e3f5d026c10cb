"""Step 1, Read: transcripts in the window, the journal days, nothing the dream wrote itself.

Transcript sources (each read-only; formats in docs/dream.md and HERMES-MEMORY.md):
- `hermes`: Hermes Agent's SQLite `state.db`, opened read-only (`mode=ro`, `query_only`; never
  locked). Columns are read by name, so newer schemas with extra columns work. Rows the agent
  itself hides are skipped: rewound messages (`active = 0` and not `compacted`),
  `display_kind = 'hidden'` scaffolding, compression summaries, background-review prompts.
- `claude`: Claude Code session JSONL files (a file, or a folder searched for `*.jsonl`);
  subagent transcripts, compaction summaries and bash-mode output skipped, messages queued
  while the agent worked read (`companion.dream.read_agents`).
- `openclaw`: OpenClaw session JSONL files (and `/new` / `/reset` archives): only the active
  branch of the session tree, channel envelopes removed.
- `jsonl`: the documented generic format, one message per line.

Only what the person and the agent said counts: user and assistant text, and the assistant's
tool calls. Tool results and system text are never sources (they may echo files of the vault,
including the dream's own output), and any line carrying a dream provenance comment or marker is
dropped from a message before it is used. Quoted and relayed text is never a source either
(`companion.dream.taint`): block quotes, code, forwarded mail, and an assistant's lines
restating a tool result are blanked from journal days and messages here, and the marked lines
refused are kept in `refused` for the report.

Journal: the days the window touches, each read with the dream's blocks blanked out and without
its `## Dreaming` section. A heading or a line prefix that looks like a journal section or a
marker (in any of the languages the dream knows) but is none is named in the report's warnings
(`not_understood`), so a lesson missed for a typo or a language is seen.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from companion.dream import blocks, taint
from companion.dream import read_agents as ra
from companion.dream.markers import MARKERS, marker_key, marker_prefix, match_marker
from companion.dream.model import JournalEntry, Message, ToolCall
from companion.dream.text import fold
from companion.dream.toolcalls import pair_results
from companion.errors import ConfigError
from companion.logs import get_logger
from companion.vault.code import mask_code
from companion.vault.journal import SECTION_NAMES, parse_journal, section_key
from companion.vault.layout import journal_path
from companion.vault.note import normalise_newlines, split_frontmatter
from companion.vault.reader import read_note_text

if TYPE_CHECKING:
    from companion.config import Config

log = get_logger("dream.read")

SOURCE_KINDS = ("hermes", "claude", "openclaw", "jsonl")
_HARNESS_PREFIXES = (
    "Review the conversation above and update the skill library",
    "Review the conversation above and consider saving to memory",
)
_JSON_PREFIX = "\x00json:"
# Openings of the context Hermes writes into a session as if it were a turn: the compaction
# summary (`[CONTEXT COMPACTION — REFERENCE ONLY] ...`, the legacy `[CONTEXT SUMMARY]:`) and a
# tail message with a summary merged into it (`[PRIOR CONTEXT — for reference only; ...]`).
_HERMES_SCAFFOLD_PREFIXES = (
    "[CONTEXT COMPACTION",
    "[CONTEXT SUMMARY]:",
    "[PRIOR CONTEXT — for reference only",
)


@dataclass(frozen=True)
class SourceSpec:
    """A configured transcript source: its kind, its path as written in the config, and the
    label it is named by when its path is outside the home folder (`[dream] sources` item's
    `name`; empty: its own file or folder name, `source_labels`)."""

    kind: str
    path: str
    label: str = ""

    @property
    def name(self) -> str:
        """The provenance name, e.g. `hermes:~/.hermes/state.db`: a path under the home
        folder is written from `~`, so no line of the vault names the person's account."""
        path = self.path
        if not path.startswith("~") and os.path.isabs(os.path.expandvars(path)):
            path = _contract_home(Path(os.path.expandvars(path)))
        return f"{self.kind}:{path}"

    @property
    def real_path(self) -> Path:
        return Path(os.path.expandvars(self.path)).expanduser()


@dataclass(frozen=True)
class Window:
    start: dt.datetime  # aware
    end: dt.datetime  # aware

    def __contains__(self, t: dt.datetime) -> bool:
        return self.start <= t <= self.end

    def to_dict(self) -> dict[str, str]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat()}


@dataclass
class ReadResult:
    messages: list[Message] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    # marked lines quoted or relayed from a tool result: never sources (companion.dream.taint)
    refused: list[taint.Refused] = field(default_factory=list)


def _contract_home(path: Path) -> str:
    home = str(Path.home())
    s = str(path)
    if s == home or s.startswith(home.rstrip(os.sep) + os.sep):
        return "~" + s[len(home) :]
    return s


_LABEL_BAD = re.compile(r"[^\w.+-]+")


def _clean_label(text: str) -> str:
    """A label that reads as one name in a provenance comment: no `/`, `#`, `|` or spaces."""
    return _LABEL_BAD.sub("-", text).strip("-.") or "source"


def source_labels(specs: Iterable[SourceSpec]) -> dict[str, Path]:
    """{label: real path} of each source whose provenance name would hold an absolute path
    (outside the home folder): its configured label, or its own file or folder name; a label
    two such sources share gets a short hash of the path added, so it is the same whatever
    the order of `[dream] sources`. Provenance names such a source `kind:@label[/path inside]`
    (`companion.dream.portable`), and `--verify` maps the label back (`find_messages`)."""
    outside = []
    for spec in specs:
        _kind, _, path = spec.name.partition(":")
        if os.path.isabs(path):
            real = Path(os.path.abspath(spec.real_path))
            outside.append((_clean_label(spec.label or real.name), real))
    count: dict[str, int] = {}
    for label, _real in outside:
        count[label] = count.get(label, 0) + 1
    out: dict[str, Path] = {}
    for label, real in outside:
        if count[label] > 1:
            digest = hashlib.sha256(str(real).encode("utf-8")).hexdigest()[:6]
            label = f"{label}-{digest}"
        out[label] = real
    return out


def labels_from_config(config: Config, hermes_home: Path | None) -> dict[str, Path]:
    """`source_labels` of the configured sources: what `--verify` maps labels back with."""
    return source_labels(sources_from_config(config, hermes_home)[0])


def _labeled_path(path: str, labels: Mapping[str, Path] | None) -> str | None:
    """The real path of a labelled provenance path (`@lab/a.jsonl`), or None (an unknown
    label: not reachable from here)."""
    label, _, rel = path[1:].partition("/")
    base = (labels or {}).get(label)
    if base is None:
        return None
    return str(base / rel) if rel else str(base)


def sources_from_config(
    config: Config, hermes_home: Path | None
) -> tuple[list[SourceSpec], list[str]]:
    """The transcript sources of `[dream] sources`; with none configured, Hermes's
    `state.db` in the Hermes home when it exists. Returns (sources, notes)."""
    raw = config.settings.dream.sources if config is not None else []
    specs: list[SourceSpec] = []
    notes: list[str] = []
    for i, item in enumerate(raw or []):
        if not isinstance(item, Mapping):
            raise ConfigError(f"[dream] sources item {i + 1}: expected a table {{kind, path}}")
        kind, path = item.get("kind"), item.get("path")
        if kind not in SOURCE_KINDS:
            raise ConfigError(
                f"[dream] sources item {i + 1}: kind {kind!r} is not one of "
                f"{', '.join(SOURCE_KINDS)}"
            )
        if not isinstance(path, str) or not path.strip():
            raise ConfigError(f"[dream] sources item {i + 1}: path must be a non-empty string")
        label = item.get("name", "")
        if not isinstance(label, str):
            raise ConfigError(f"[dream] sources item {i + 1}: name must be a string")
        specs.append(SourceSpec(kind, path.strip(), label.strip()))
    if not specs and hermes_home is not None:
        db = Path(hermes_home).expanduser() / "state.db"
        if db.is_file():
            specs.append(SourceSpec("hermes", _contract_home(db)))
            notes.append(f"no [dream] sources configured: reading {db}")
        else:
            notes.append("no transcript sources configured and no Hermes state.db found")
    return specs, notes


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


def _own_output_free(text: str) -> str:
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


def _tool_call(obj: Any) -> ToolCall | None:
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


def _parts(content: Any) -> tuple[str, list[ToolCall], list[Result]]:
    """(text, tool calls, tool results) of a content string or list of parts."""
    if content is None:
        return "", [], []
    if isinstance(content, str):
        if content.startswith(_JSON_PREFIX):
            try:
                return _parts(json.loads(content[len(_JSON_PREFIX) :]))
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
            call = _tool_call(part)
            if call:
                calls.append(call)
        elif ptype in ("tool_result", "toolResult", "function_call_output"):
            cid = part.get("tool_use_id") or part.get("toolCallId") or part.get("call_id")
            results.append((str(cid) if cid else None, None, _result_text(part)))
    return "\n".join(texts), calls, results


def _message(
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
    text, calls, results = _parts(content)
    if role == "tool":
        if not results:
            results = [(tool_call_id, tool_name, text)]
        else:
            results = [(c or tool_call_id, n or tool_name, r) for c, n, r in results]
        text = ""
    elif results and not text.strip() and not calls:
        role = "tool"
    calls = [*calls, *extra_calls]
    if role in ("user", "system") and text.lstrip().startswith(_HARNESS_PREFIXES):
        return None
    if role not in ("user", "assistant"):
        text = ""  # tool results and system text are never sources
    text = _own_output_free(normalise_newlines(text))
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


# --- Hermes state.db ----------------------------------------------------------------------


def _connect_ro(path: Path) -> sqlite3.Connection:
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
    db = _connect_ro(path)
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
            call = _tool_call(obj)
            if call:
                calls.append(call)
    return _message(
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
    text, _calls, _results = _parts(content)
    return text.lstrip().startswith(_HERMES_SCAFFOLD_PREFIXES)


def _is_harness(row: sqlite3.Row) -> bool:
    """A background-review harness prompt (Hermes drops it and the reply that follows)."""
    content = row["content"]
    return (
        row["role"] in ("user", "system")
        and isinstance(content, str)
        and content.lstrip().startswith(_HARNESS_PREFIXES)
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


# --- JSONL sources ---------------------------------------------------------------------------


# A line's time, as the JSONL formats write it: Claude Code and OpenClaw `timestamp`, the
# generic format `timestamp` or `time` (an ISO-8601 string or Unix seconds/milliseconds).
_TIME_FIELD = re.compile(rb'"(?:timestamp|time)"\s*:\s*("[^"\\\n]{1,64}"|\d{9,16}(?:\.\d+)?)')
_TAIL_BYTES = 64 * 1024


def _newest_time(path: Path) -> dt.datetime | None:
    """The latest line time written in the last bytes of a JSONL file (None: none there)."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - _TAIL_BYTES))
        tail = fh.read()
    best: dt.datetime | None = None
    for m in _TIME_FIELD.finditer(tail):
        try:
            t = parse_time(json.loads(m.group(1)))
        except ValueError:
            continue
        if t is not None and (best is None or t > best):
            best = t
    return best


def _nothing_since(path: Path, since: dt.datetime) -> bool:
    """True when the file holds nothing from `since` on: untouched since before it (its
    modification time) and, as its own last lines say, nothing written after it. The
    modification time alone is not enough: it is the file system's clock, the window is the
    transcripts' (a file copied or synced from another machine, or a dream run with `--now`
    ahead of this machine's clock, has lines newer than its modification time)."""
    if path.stat().st_mtime >= since.timestamp() - 1:
        return False
    newest = _newest_time(path)
    return newest is not None and newest < since


def _jsonl_files(spec: SourceSpec, since: dt.datetime | None) -> list[Path]:
    root = spec.real_path
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise FileNotFoundError(f"{spec.name}: {root} does not exist")
    files = []
    found = set(root.rglob("*.jsonl"))
    if spec.kind == "openclaw":
        found |= {p for p in root.rglob("*.jsonl.reset.*") if ra.openclaw_is_archive(p)}
    for p in sorted(found):
        if spec.kind == "claude" and ra.claude_skip_file(p, root):
            continue  # a subagent's transcript: not the person's conversation
        try:
            if since is not None and _nothing_since(p, since):
                continue  # untouched since before the window: nothing new in it
        except OSError:
            continue
        files.append(p)
    return files


def _file_source(spec: SourceSpec, file: Path) -> SourceSpec:
    """The per-file provenance name: the configured folder, plus the file inside it."""
    root = spec.real_path
    if file == root:
        return spec
    rel = file.relative_to(root).as_posix()
    return SourceSpec(spec.kind, spec.path.rstrip("/") + "/" + rel)


def _iter_jsonl(path: Path, problems: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    bad = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(obj, dict):
                yield n, obj
    if bad:
        problems.append(f"{path}: {bad} line(s) are not JSON and were skipped")


def _claude_message(spec: SourceSpec, n: int, obj: dict[str, Any]) -> Message | None:
    if ra.claude_skip_line(obj):
        return None
    t = parse_time(obj.get("timestamp"))
    if t is None:
        return None
    mid = str(obj.get("uuid") or f"L{n}")
    session = str(obj.get("sessionId") or spec.path)
    queued = ra.claude_queued_prompt(obj)
    if queued is not None:  # typed while the agent worked
        return _message(spec, session, mid, "user", t, queued, n, clean=ra.claude_clean)
    if obj.get("type") not in ("user", "assistant"):
        return None
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return None
    return _message(
        spec,
        session,
        mid,
        str(msg.get("role") or obj["type"]),
        t,
        msg.get("content"),
        n,
        clean=ra.claude_clean,
    )


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
    return _message(
        spec,
        session,
        mid,
        str(msg.get("role") or ""),
        t,
        msg.get("content"),
        n,
        tool_call_id=msg.get("toolCallId"),
        tool_name=msg.get("toolName"),
        clean=ra.openclaw_clean,
    )


def _generic_message(spec: SourceSpec, n: int, obj: dict[str, Any]) -> Message | None:
    t = parse_time(obj.get("timestamp", obj.get("time")))
    if t is None:
        return None
    calls = [c for c in (_tool_call(x) for x in obj.get("tool_calls") or []) if c]
    mid = str(obj.get("id") or f"L{n}")
    session = str(obj.get("session") or obj.get("session_id") or spec.path)
    return _message(
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


def _read_jsonl_file(spec: SourceSpec, file: Path, problems: list[str]) -> Iterator[Message]:
    fspec = _file_source(spec, file)
    session = file.name.split(".jsonl")[0]
    lines = list(_iter_jsonl(file, problems))
    active = ra.openclaw_active_ids([o for _n, o in lines]) if spec.kind == "openclaw" else None
    for n, obj in lines:
        if active is not None and obj.get("type") != "session" and str(obj.get("id")) not in active:
            continue  # an abandoned branch of the session tree
        if spec.kind == "claude":
            msg = _claude_message(fspec, n, obj)
        elif spec.kind == "openclaw":
            if obj.get("type") == "session":
                session = str(obj.get("id") or session)
                continue
            msg = _openclaw_message(fspec, n, obj, session)
        else:
            msg = _generic_message(fspec, n, obj)
        if msg is not None:
            yield msg


def read_jsonl_source(spec: SourceSpec, window: Window, problems: list[str]) -> list[Message]:
    out: list[Message] = []
    for file in _jsonl_files(spec, window.start):
        try:
            out.extend(m for m in _read_jsonl_file(spec, file, problems) if m.time in window)
        except OSError as exc:
            problems.append(f"{spec.name}: cannot read {file}: {exc.strerror or exc}")
    return out


def read_transcripts(specs: Iterable[SourceSpec], window: Window) -> ReadResult:
    """Every message of every source inside the window, in time order. A source that cannot
    be read is reported in `problems`, never fatal."""
    result = ReadResult()
    for spec in specs:
        try:
            if spec.kind == "hermes":
                msgs = read_hermes(spec, window)
            else:
                msgs = read_jsonl_source(spec, window, result.problems)
        except (OSError, sqlite3.Error, ValueError) as exc:
            result.problems.append(f"{spec.name}: cannot read ({exc})")
            log.warning("transcript source %s unreadable: %s", spec.name, exc)
            continue
        msgs, refused = taint.gate_messages(pair_results(msgs))
        result.refused.extend(refused)
        result.counts[spec.name] = len(msgs)
        result.messages.extend(msgs)
    result.messages.sort(key=lambda m: (m.time, m.source, m.id))
    return result


def find_messages(
    spec_name: str, ids: set[str], labels: Mapping[str, Path] | None = None
) -> dict[str, Message] | None:
    """Messages with these ids in the source named `spec_name` (any time), or None when the
    source is not reachable from here. A labelled name (`jsonl:@lab/a.jsonl`) is found through
    `labels` (`source_labels` of `[dream] sources`). Used by `dream --verify`."""
    kind, _, path = spec_name.partition(":")
    if kind not in SOURCE_KINDS or not path:
        return None
    if path.startswith("@"):
        real = _labeled_path(path, labels)
        if real is None:
            return None
        path = real
    spec = SourceSpec(kind, path)
    found: dict[str, Message] = {}
    try:
        if kind == "hermes":
            wanted = [i for i in ids if i.isdigit()]
            if not wanted:
                return found
            marks = ",".join("?" * len(wanted))
            for row in _hermes_rows(spec, f"id IN ({marks})", [int(i) for i in wanted]):
                msg = _hermes_message(spec, row)
                if msg is not None:
                    found[msg.id] = msg
            return found
        if not spec.real_path.exists():
            return None
        for file in _jsonl_files(spec, None):
            for msg in _read_jsonl_file(spec, file, []):
                if msg.id in ids:
                    found[msg.id] = msg
        return found
    except (OSError, sqlite3.Error, ValueError):
        return None


# --- journal -------------------------------------------------------------------------------


def journal_days(start: dt.date, end: dt.date) -> list[dt.date]:
    days = []
    d = start
    while d <= end:
        days.append(d)
        d += dt.timedelta(days=1)
    return days


def read_journal_text(root: Path, day: dt.date) -> str | None:
    path = journal_path(root, day)
    if not path.is_file():
        return None
    rr = read_note_text(path, f"journal/{day.isoformat()}.md")
    if rr.text is None:
        return None
    text = normalise_newlines(rr.text)
    return text[1:] if text.startswith("\ufeff") else text


def journal_entries(
    rel: str,
    day: dt.date,
    text: str,
    names: Mapping[str, Sequence[str]] = SECTION_NAMES,
    refused: list[taint.Refused] | None = None,
) -> list[JournalEntry]:
    """Items of the Done/Decided/Learned sections, and marked lines anywhere else (outside
    code, the dream's blocks and the `## Dreaming` section). Quoted lines are never sources
    (`companion.dream.taint`): those that would have been candidates go to `refused`."""
    clean = blocks.blank_blocks(text)
    _yaml, body_start, body_line, _w = split_frontmatter(clean)
    body = clean[body_start:].split("\n")
    why = taint.line_taint(clean[body_start:])
    if not any(why):
        return _journal_entries(rel, day, clean, names)
    kept = "\n".join("" if w else ln for ln, w in zip(body, why, strict=True))
    kept_text = clean[:body_start] + kept
    entries = _journal_entries(rel, day, kept_text, names)
    if refused is not None:
        have = {e.line for e in entries}
        for e in _journal_entries(rel, day, clean, names):
            w = why[e.line - body_line] if 0 <= e.line - body_line < len(why) else None
            if w is None or e.line in have:
                continue
            mk = match_marker(e.text)
            kind = (mk.kind if mk else e.section) or ""
            kind = {"always": "knowledge", "learned": "knowledge", "decided": "decision"}.get(
                kind, kind
            )
            if kind in ("knowledge", "decision", "status"):
                refused.append(taint.Refused(e.ref(), e.text, w, kind))
    return entries


def _journal_entries(
    rel: str, day: dt.date, clean: str, names: Mapping[str, Sequence[str]]
) -> list[JournalEntry]:
    sections = parse_journal(clean, names)
    out: list[JournalEntry] = []
    taken: set[int] = set()
    dreaming = sections.get("dreaming")
    skip_lines: set[int] = set()
    if dreaming is not None:
        skip_lines = {item.line for item in dreaming.items}
    for key, sec in sections.items():
        if key == "dreaming":
            continue
        for item in sec.items:
            if item.text:
                out.append(JournalEntry(rel, day, key, item.text, item.line))
                taken.add(item.line)
    _yaml, body_start, body_line, _w = split_frontmatter(clean)
    masked = mask_code(clean[body_start:]).split("\n")
    lines = clean[body_start:].split("\n")
    in_dreaming = False
    for i, (raw, m_line) in enumerate(zip(lines, masked, strict=False)):
        n = body_line + i
        stripped = m_line.strip()
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip()
            in_dreaming = heading.casefold() in {x.casefold() for x in names.get("dreaming", ())}
            continue
        if in_dreaming or n in taken or n in skip_lines or not stripped:
            continue
        mk = match_marker(raw)
        if mk is not None:
            out.append(JournalEntry(rel, day, None, raw.strip(), n))
    out.sort(key=lambda e: e.line)
    return out


def read_journal(
    root: Path,
    days: Sequence[dt.date],
    names: Mapping[str, Sequence[str]] = SECTION_NAMES,
    refused: list[taint.Refused] | None = None,
) -> tuple[list[JournalEntry], dict[str, str]]:
    """(entries, {path: text}) of the journal days that exist (quoted lines that would have
    been candidates go to `refused`)."""
    entries: list[JournalEntry] = []
    texts: dict[str, str] = {}
    for day in days:
        text = read_journal_text(root, day)
        if text is None:
            continue
        rel = f"journal/{day.isoformat()}.md"
        texts[rel] = text
        entries.extend(journal_entries(rel, day, text, names, refused))
    return entries, texts


# --- what was not understood ---------------------------------------------------------------

_HEAD_LINE = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
NEAR_SECTION = 0.75  # how alike a heading must be to a section name to be taken for a try
NEAR_MARKER = 0.8


def _closest(word: str, known: Iterable[str], cutoff: float) -> str | None:
    key = fold(word).strip()
    if len(key) < 4:
        return None
    found = difflib.get_close_matches(key, list(known), n=1, cutoff=cutoff)
    return found[0] if found else None


def not_understood(rel: str, text: str) -> list[str]:
    """Warnings for the report: headings of a journal day that look like one of its sections
    but are none (`## Aprendi2`, `## Learnt`), and line prefixes that look like a marker but
    are none (`rapelle-toi:`, `lessons:`): what they hold was not read as what it seems to be."""
    clean = blocks.blank_blocks(text)
    _yaml, body_start, body_line, _w = split_frontmatter(clean)
    masked = mask_code(clean[body_start:]).split("\n")
    sections = {_section_key_text(n): n for ns in SECTION_NAMES.values() for n in ns}
    markers = {w for ws in MARKERS.values() for w in ws}
    out: list[str] = []
    for i, line in enumerate(masked):
        n = body_line + i
        h = _HEAD_LINE.match(line)
        if h:
            title = h.group(2).strip()
            if section_key(title) is None:
                near = _closest(_section_key_text(title), sections, NEAR_SECTION)
                if near is not None:
                    out.append(
                        f"{rel}:{n}: heading '{title}' was not understood as a journal section "
                        f"(closest: '{sections[near]}'); its lines were not read as one"
                    )
            continue
        prefix = marker_prefix(line)
        if prefix is None or match_marker(line) is not None:
            continue
        near = _closest(marker_key(prefix), markers, NEAR_MARKER)
        if near is not None:
            out.append(
                f"{rel}:{n}: '{prefix}:' was not understood as a marker (closest: '{near}:'); "
                "the line was not read as one"
            )
    return out


def _section_key_text(text: str) -> str:
    return re.sub(r"[\W_]+", "", fold(text))
