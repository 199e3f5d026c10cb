"""What the JSONL transcript formats share: the files of a source (a file, or a folder
searched for `*.jsonl`), the files untouched since before the window left unread, the lines
of a file, and the per-file provenance name. Each format (`claude`, `openclaw`, `generic`)
is a `JsonlFormat`: which more files it reads, which it skips, and its messages of a file."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from companion.dream.model import Message
from companion.dream.readers.message import parse_time
from companion.dream.readers.source import SourceSpec, Window

# (line number, object) of each JSON object line of a file
Lines = list[tuple[int, dict[str, Any]]]


def _no_more_files(_root: Path) -> Iterable[Path]:
    return ()


def _skip_none(_path: Path, _root: Path) -> bool:
    return False


@dataclass(frozen=True)
class JsonlFormat:
    """A JSONL transcript format. `messages(spec, session, lines)` reads one file's lines
    (`spec` names the file, `session` is its name up to `.jsonl`)."""

    messages: Callable[[SourceSpec, str, Lines], Iterator[Message]]
    # files read besides `*.jsonl` under a source folder
    more_files: Callable[[Path], Iterable[Path]] = _no_more_files
    # (path, source folder): a file under the folder that is not a conversation to read
    skip_file: Callable[[Path, Path], bool] = _skip_none


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


def jsonl_files(spec: SourceSpec, fmt: JsonlFormat, since: dt.datetime | None) -> list[Path]:
    root = spec.real_path
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise FileNotFoundError(f"{spec.name}: {root} does not exist")
    files = []
    found = set(root.rglob("*.jsonl"))
    found |= set(fmt.more_files(root))
    for p in sorted(found):
        if fmt.skip_file(p, root):
            continue
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


def read_jsonl_file(
    spec: SourceSpec, fmt: JsonlFormat, file: Path, problems: list[str]
) -> Iterator[Message]:
    fspec = _file_source(spec, file)
    session = file.name.split(".jsonl")[0]
    lines = list(_iter_jsonl(file, problems))
    yield from fmt.messages(fspec, session, lines)


def read_jsonl_source(
    spec: SourceSpec, fmt: JsonlFormat, window: Window, problems: list[str]
) -> list[Message]:
    out: list[Message] = []
    for file in jsonl_files(spec, fmt, window.start):
        try:
            out.extend(m for m in read_jsonl_file(spec, fmt, file, problems) if m.time in window)
        except OSError as exc:
            problems.append(f"{spec.name}: cannot read {file}: {exc.strerror or exc}")
    return out


def find_jsonl(spec: SourceSpec, fmt: JsonlFormat, ids: set[str]) -> dict[str, Message] | None:
    """The messages with these ids in the source's files (any time); None when the source is
    not there."""
    if not spec.real_path.exists():
        return None
    found: dict[str, Message] = {}
    for file in jsonl_files(spec, fmt, None):
        for msg in read_jsonl_file(spec, fmt, file, []):
            if msg.id in ids:
                found[msg.id] = msg
    return found
