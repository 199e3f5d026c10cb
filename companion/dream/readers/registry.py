"""Which reader reads which kind of transcript source: Hermes's `state.db` its own way, every
other kind as a `JsonlFormat` (a kind without a format of its own is read as the generic
one)."""

from __future__ import annotations

from companion.dream.model import Message
from companion.dream.readers import claude, generic, hermes, openclaw
from companion.dream.readers.files import JsonlFormat, find_jsonl, read_jsonl_source
from companion.dream.readers.source import SourceSpec, Window

SOURCE_KINDS = ("hermes", "claude", "openclaw", "jsonl")
JSONL_FORMATS: dict[str, JsonlFormat] = {
    "claude": claude.FORMAT,
    "openclaw": openclaw.FORMAT,
    "jsonl": generic.FORMAT,
}


def jsonl_format(kind: str) -> JsonlFormat:
    return JSONL_FORMATS.get(kind, generic.FORMAT)


def read_source(spec: SourceSpec, window: Window, problems: list[str]) -> list[Message]:
    """The messages of one source inside the window (a file of it that cannot be read is
    named in `problems`; a source that cannot be read at all raises OSError, sqlite3.Error
    or ValueError)."""
    if spec.kind == "hermes":
        return hermes.read_hermes(spec, window)
    return read_jsonl_source(spec, jsonl_format(spec.kind), window, problems)


def find_in_source(spec: SourceSpec, ids: set[str]) -> dict[str, Message] | None:
    """The messages with these ids in one source, any time; None when it is not there."""
    if spec.kind == "hermes":
        return hermes.find_hermes(spec, ids)
    return find_jsonl(spec, jsonl_format(spec.kind), ids)
