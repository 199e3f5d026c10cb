"""Managed blocks: where the dream writes inside a note, and how each line names its source.

A block is a run of lines between two HTML comments, invisible in Obsidian's reading view:

    <!-- dream:begin -->
    - WAL mode needs shared memory: it fails on NFS. <!-- src: journal/2026-11-27.md#L12 -->
    <!-- dream:end -->

`<!-- dream:begin -->` blocks hold consolidated lines, each ending in a provenance comment
`<!-- src: REF | REF ... -->`. `<!-- dream:begin index -->` is Home.md's list of notes (each
line is a link, which is its own provenance) and `<!-- dream:begin log -->` the journal's
`## Dreaming` lines (their provenance is the dream report of that day).

A REF is `SOURCE#FRAGMENT`: SOURCE a vault path (`journal/2026-11-27.md`) or a transcript
(`hermes:~/.hermes/state.db`, `claude:PATH`, `openclaw:PATH`, `jsonl:PATH`); FRAGMENT is
`L<line>`, `id=<message id>` or both joined by `&`. `%`, `|`, `#`, `&` and `>` in a SOURCE or id
are percent-encoded.

Everything outside blocks is the person's text and is never changed by the dream (the one
exception, repairing a broken wikilink, is reported as its own change). A begin marker without
its end marker is not a block: its lines are treated as the person's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, unquote

BEGIN_RE = re.compile(r"^<!-- dream:begin(?: (?P<kind>[a-z]+))? -->[ \t]*$")
END_RE = re.compile(r"^<!-- dream:end -->[ \t]*$")
SRC_RE = re.compile(r"[ \t]*<!-- src: (?P<refs>.*?) -->[ \t]*$")
BEGIN_TEXT = {
    "content": "<!-- dream:begin -->",
    "index": "<!-- dream:begin index -->",
    "log": "<!-- dream:begin log -->",
}
END = "<!-- dream:end -->"
_SAFE = "/:~ ()[],;'!$*+=@{}^`"  # characters left readable in a SOURCE


def _quote_source(source: str) -> str:
    """Percent-encode what would break the comment; inner spaces stay readable."""
    q = quote(source, safe=_SAFE)
    core = q.strip(" ")
    lead = len(q) - len(q.lstrip(" "))
    trail = len(q) - len(q.rstrip(" "))
    return "%20" * lead + core + "%20" * trail if core else "%20" * len(q)


@dataclass(frozen=True)
class Ref:
    """One provenance reference: a source, and a line and/or message id in it."""

    source: str
    line: int | None = None
    message_id: str | None = None

    def format(self) -> str:
        frag = []
        if self.line is not None:
            frag.append(f"L{self.line}")
        if self.message_id is not None:
            frag.append("id=" + quote(self.message_id, safe=_SAFE.replace(" ", "")))
        return _quote_source(self.source) + ("#" + "&".join(frag) if frag else "")

    @classmethod
    def parse(cls, text: str) -> Ref | None:
        text = text.strip()
        if not text:
            return None
        src, _, frag = text.partition("#")
        line: int | None = None
        mid: str | None = None
        for part in frag.split("&") if frag else ():
            if part.startswith("L") and part[1:].isdigit():
                line = int(part[1:])
            elif part.startswith("id="):
                mid = unquote(part[3:])
        return cls(unquote(src), line, mid)


def format_refs(refs: Iterable[Ref]) -> str:
    return f"<!-- src: {' | '.join(r.format() for r in refs)} -->"


def parse_refs(text: str) -> list[Ref]:
    return [r for r in (Ref.parse(p) for p in text.split("|")) if r is not None]


@dataclass(frozen=True)
class Block:
    kind: str  # content, index or log
    begin: int  # 0-based index of the begin marker line
    end: int  # 0-based index of the end marker line

    @property
    def body(self) -> range:
        return range(self.begin + 1, self.end)


@dataclass(frozen=True)
class DreamLine:
    """A line inside a block: its 1-based line number, text without the provenance comment,
    and the references it carries."""

    line: int
    kind: str
    text: str
    refs: tuple[Ref, ...]


def split_lines(text: str) -> list[str]:
    """Lines without their ends (`\\n`; a `\\r` before it stays part of the line)."""
    return text.split("\n")


def find_blocks(lines: list[str]) -> list[Block]:
    """Closed blocks, in order. Markers inside fenced code are still markers (the dream never
    writes code fences, and a person pasting a marker should see it honoured, not broken)."""
    out: list[Block] = []
    open_at: int | None = None
    kind = "content"
    for i, raw in enumerate(lines):
        line = raw.rstrip("\r")
        m = BEGIN_RE.match(line)
        if m:
            open_at, kind = i, m.group("kind") or "content"
            continue
        if open_at is not None and END_RE.match(line):
            out.append(Block(kind, open_at, i))
            open_at = None
    return out


def has_marker(text: str) -> bool:
    return "<!-- dream:" in text


def dream_lines(text: str) -> list[DreamLine]:
    """Every non-blank line inside a block."""
    lines = split_lines(text)
    out = []
    for b in find_blocks(lines):
        for i in b.body:
            raw = lines[i].rstrip("\r")
            if not raw.strip():
                continue
            m = SRC_RE.search(raw)
            refs = tuple(parse_refs(m.group("refs"))) if m else ()
            body = raw[: m.start()] if m else raw
            out.append(DreamLine(i + 1, b.kind, body.rstrip(), refs))
    return out


def blank_blocks(text: str) -> str:
    """`text` with every block (markers included) blanked to empty lines: line numbers stay,
    the dream's own output is gone. Used before reading a note as a source."""
    if not has_marker(text):
        return text
    lines = split_lines(text)
    for b in find_blocks(lines):
        for i in range(b.begin, b.end + 1):
            lines[i] = ""
    return "\n".join(lines)


def render_line(text: str, refs: Iterable[Ref]) -> str:
    return f"- {text} {format_refs(refs)}"


def append_block(text: str, kind: str, body: list[str]) -> str:
    block = "\n".join([BEGIN_TEXT[kind], *body, END]) + "\n"
    if not text:
        return block
    if text.endswith("\n\n"):
        return text + block
    if text.endswith("\n"):
        return text + "\n" + block
    return text + "\n\n" + block


def add_lines(text: str, new: list[str], *, kind: str = "content") -> str:
    """`text` with `new` lines added to its last block of `kind` (before the end marker)."""
    if not new:
        return text
    lines = split_lines(text)
    blocks = [b for b in find_blocks(lines) if b.kind == kind]
    if blocks:
        last = blocks[-1]
        return "\n".join(lines[: last.end] + new + lines[last.end :])
    return append_block(text, kind, new)


def replace_block_body(text: str, kind: str, body: list[str]) -> str:
    """`text` with the body of its last block of `kind` replaced (appended when none)."""
    lines = split_lines(text)
    blocks = [b for b in find_blocks(lines) if b.kind == kind]
    if not blocks:
        return append_block(text, kind, body)
    b = blocks[-1]
    return "\n".join(lines[: b.begin + 1] + body + lines[b.end :])


def block_body(text: str, kind: str) -> list[str] | None:
    """The lines of the last block of `kind`, or None when there is none."""
    lines = split_lines(text)
    blocks = [b for b in find_blocks(lines) if b.kind == kind]
    if not blocks:
        return None
    return [lines[i] for i in blocks[-1].body]
