"""Step 1, Read: transcripts in the window, the journal days, nothing the dream wrote itself.

Transcript sources (each read-only; formats in docs/dream.md and HERMES-MEMORY.md), one reader
a format in `companion.dream.readers` (`registry` says which reads which kind):
- `hermes`: Hermes Agent's SQLite `state.db`, opened read-only (`mode=ro`, `query_only`; never
  locked). Columns are read by name, so newer schemas with extra columns work. Rows the agent
  itself hides are skipped: rewound messages (`active = 0` and not `compacted`),
  `display_kind = 'hidden'` scaffolding, compression summaries, background-review prompts
  (`readers.hermes`).
- `claude`: Claude Code session JSONL files (a file, or a folder searched for `*.jsonl`);
  subagent transcripts, compaction summaries and bash-mode output skipped, messages queued
  while the agent worked read (`readers.claude`).
- `openclaw`: OpenClaw session JSONL files (and `/new` / `/reset` archives): only the active
  branch of the session tree, channel envelopes removed (`readers.openclaw`).
- `jsonl`: the documented generic format, one message per line (`readers.generic`).

Only what the person and the agent said counts: user and assistant text, and the assistant's
tool calls. Tool results and system text are never sources (they may echo files of the vault,
including the dream's own output), and any line carrying a dream provenance comment or marker is
dropped from a message before it is used (`readers.message`). Quoted and relayed text is never
a source either (`companion.dream.taint`): block quotes, code, forwarded mail, and an
assistant's lines restating a tool result are blanked from journal days and messages here, and
the marked lines refused are kept in `refused` for the report.

Journal: the days the window touches, each read with the dream's blocks blanked out and without
its `## Dreaming` section. A heading or a line prefix that looks like a journal section or a
marker (in any of the languages the dream knows) but is none is named in the report's warnings
(`not_understood`), so a lesson missed for a typo or a language is seen (`readers.journal`).

This module is the step the dream runs and what the rest of it imports: the configured sources
and their labels, `read_transcripts`, `find_messages` for `--verify`, and the journal's
functions.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from companion.dream import taint
from companion.dream.model import Message
from companion.dream.readers.journal import (
    NEAR_MARKER,
    NEAR_SECTION,
    journal_days,
    journal_entries,
    not_understood,
    read_journal,
    read_journal_text,
)
from companion.dream.readers.message import parse_time
from companion.dream.readers.registry import SOURCE_KINDS, find_in_source, read_source
from companion.dream.readers.source import SourceSpec, Window, contract_home
from companion.dream.toolcalls import pair_results
from companion.errors import ConfigError
from companion.logs import get_logger

if TYPE_CHECKING:
    from companion.config import Config

__all__ = [
    "NEAR_MARKER",
    "NEAR_SECTION",
    "SOURCE_KINDS",
    "ReadResult",
    "SourceSpec",
    "Window",
    "find_messages",
    "journal_days",
    "journal_entries",
    "labels_from_config",
    "not_understood",
    "parse_time",
    "read_journal",
    "read_journal_text",
    "read_transcripts",
    "source_labels",
    "sources_from_config",
]

log = get_logger("dream.read")


@dataclass
class ReadResult:
    messages: list[Message] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    # marked lines quoted or relayed from a tool result: never sources (companion.dream.taint)
    refused: list[taint.Refused] = field(default_factory=list)


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
            specs.append(SourceSpec("hermes", contract_home(db)))
            notes.append(f"no [dream] sources configured: reading {db}")
        else:
            notes.append("no transcript sources configured and no Hermes state.db found")
    return specs, notes


def read_transcripts(specs: Iterable[SourceSpec], window: Window) -> ReadResult:
    """Every message of every source inside the window, in time order. A source that cannot
    be read is reported in `problems`, never fatal."""
    result = ReadResult()
    for spec in specs:
        try:
            msgs = read_source(spec, window, result.problems)
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
    try:
        return find_in_source(spec, ids)
    except (OSError, sqlite3.Error, ValueError):
        return None
