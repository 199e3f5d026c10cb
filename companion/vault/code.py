"""Which parts of a note are code, so links, tags, headings and block ids there are ignored.

Every mask returns the text with the code replaced by spaces (same length, same line breaks),
so offsets and line numbers still match the original.

- `mask_blocks`: code *blocks*. Fenced blocks (``` or ~~~, also inside lists and quotes) run to
  a closing fence of the same character and at least the same length, or to the end of the
  note; as before, the fence may sit at any indentation. Indented code blocks follow
  CommonMark: a line four columns past its container's content (tabs to multiples of four),
  not continuing a paragraph (an indented block cannot interrupt one, so a paragraph's next
  lines stay text however deep), where the container is the list item whose content starts at
  that column (`- x` at 2, `1. x` at 3, `10) x` at 4) or a block quote. A fence inside an
  indented code block is code, not a fence.
- `mask_code`: code blocks and inline code spans, except a span inside a link: Obsidian reads
  ``[[#`move`|move]]`` as a link to the heading `` `move` ``, and ``[`f()`](Note.md)`` as a
  link. Which construct starts first wins: `` `[[x]]` `` is code, ``[[a `b` c]]`` a link.
- `mask_all_code`: code blocks and every inline code span, links or not (for tags and block
  ids: ``[[x|`#y`]]`` has no tag).

Headings are found in `mask_blocks` output: ``### `hasTag()` `` is a heading.

Nested block quotes are read as one level, and HTML blocks, tables and setext headings as
paragraphs; each of these errs towards reading a line as text.
"""

from __future__ import annotations

import re

# A fenced code block, up to its closing fence or to the end of the text when unclosed.
_FENCE = re.compile(
    r"^[ \t>]*(?P<f>(?P<c>[`~])(?P=c){2,})[^\n]*(?:\n|\Z)"
    r"(?:.*?^[ \t>]*(?P=f)(?P=c)*[ \t]*$|.*\Z)",
    re.M | re.S,
)
_FENCE_OPEN = re.compile(r"[ \t>]*((?P<c>[`~])(?P=c){2,})")
_FENCE_CLOSE = re.compile(r"[ \t>]*(`{3,}|~{3,})[ \t]*$")
# A code span: a run of backticks (not preceded by one) to the next run of the same length.
# Written to start with a literal backtick, which the regex engine can skip ahead to (five
# times faster than starting with the lookbehind).
_INLINE = r"`(?<!``)(?P<rest>`*)(?!`)[^\n]+?(?<!`)`(?P=rest)(?!`)"
_INLINE_CODE = re.compile(_INLINE)
# The link shapes note.py reads; a link that starts before any code span keeps its text.
_LINK_OR_CODE = re.compile(r"(?P<link>\[\[[^\[\]\n]+\]\]|\[[^\[\]\n]*\]\([^()\n]*\))|" + _INLINE)
_LINK_WITH_TICK = re.compile(
    r"\[\[[^\[\]\n]*`[^\[\]\n]*\]\]"
    r"|\[[^\[\]\n]*`[^\[\]\n]*\]\([^()\n]*\)|\[[^\[\]\n]*\]\([^()\n]*`[^()\n]*\)"
)
# Indented code needs a line indented four columns right after a line that leaves no paragraph
# open (a blank line, a heading, a fence, a thematic break, an empty list item, the start of
# the text), or inside a block quote. Only then does the line scanner run.
_BREAK_LINE = r"[ \t>]*(?:[#`~][^\n]*|[-*_=+][-*_=+ \t]*|\d{1,9}[.)][ \t]*)?\n"
_START_INDENTED = re.compile(r"(?:" + _BREAK_LINE + r")?[ \t>]*(?: {4}|\t)")
_AFTER_BREAK = re.compile(r"\n" + _BREAK_LINE + r"[ \t>]*(?: {4}|\t)")
_QUOTE_INDENTED = re.compile(r"\n {0,3}>[ >]*(?: {4}|\t)")  # the first line: _START_INDENTED
_LIST_MARKER = re.compile(r"(?:[-+*]|(\d{1,9})[.)])(?=[ \t]|$)")
_THEMATIC = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT = re.compile(r"=+[ \t]*$")
_HEADING = re.compile(r"#{1,6}(?:[ \t]|$)")
_NOT_NL = re.compile(r"[^\n]")
# The first characters of a line that may be anything but paragraph text at column 0.
_MAY_START_BLOCK = frozenset(" \t>#-*+_=`~<0123456789")
_BLOCK_START = frozenset(">#-*+_`~0123456789")  # of a line (its indentation aside)
_MARKER_START = frozenset("-+*0123456789")


def _blank(m: re.Match[str]) -> str:
    s = m.group()
    return " " * len(s) if "\n" not in s else _NOT_NL.sub(" ", s)


def _blank_code(m: re.Match[str]) -> str:
    return m.group() if m.group("link") is not None else " " * (m.end() - m.start())


def fence_mask(text: str) -> str:
    """`text` with fenced code blocks blanked (nothing else)."""
    if "```" in text or "~~~" in text:
        return _FENCE.sub(_blank, text)
    return text


def mask_blocks(text: str) -> str:
    """`text` with fenced and indented code blocks blanked."""
    if _may_have_indented_code(text):
        return scan_code_blocks(text)
    return fence_mask(text)


def _may_have_indented_code(text: str) -> bool:
    """A quick test (the cheapest first) that skips no text with indented code."""
    if _START_INDENTED.match(text):
        return True
    if ("\n    " in text or "\t" in text) and _AFTER_BREAK.search(text):
        return True
    return ">" in text and _QUOTE_INDENTED.search(text) is not None


def mask_code(text: str, blocks_masked: bool = False) -> str:
    """`text` with code blocks and inline code spans blanked; links keep their text
    (`blocks_masked`: the code blocks are blanked already)."""
    if not blocks_masked:
        text = mask_blocks(text)
    return inline_masks(text)[0]


def mask_all_code(text: str, blocks_masked: bool = False) -> str:
    """`text` with code blocks and every inline code span blanked (`blocks_masked`: the code
    blocks are blanked already)."""
    if not blocks_masked:
        text = mask_blocks(text)
    return inline_masks(text)[1]


def inline_masks(text: str) -> tuple[str, str]:
    """(`text` with the code spans outside links blanked, `text` with every code span
    blanked), for text whose code blocks are blanked already.

    A code span (CommonMark, within one line): a run of n backticks up to the next run of
    exactly n; a run with no such partner on its line is literal. The two differ only where
    a link holds a backtick (a code span or half of one)."""
    if "`" not in text:
        return text, text
    plain = _INLINE_CODE.sub(_blank, text)
    if "[" not in text:
        return plain, plain
    parts: list[str] = []
    done = 0  # code spans never cross a line: read again only the lines with such a link
    for m in _LINK_WITH_TICK.finditer(text):
        if m.start() < done:
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        parts.append(plain[done:start])
        parts.append(_LINK_OR_CODE.sub(_blank_code, text[start:end]))
        done = end
    if not parts:
        return plain, plain
    parts.append(plain[done:])
    return "".join(parts), plain


def _columns(lead: str) -> int:
    """Width of leading whitespace, tabs to the next multiple of four."""
    if "\t" not in lead:
        return len(lead)
    col = 0
    for ch in lead:
        col = col + 4 - col % 4 if ch == "\t" else col + 1
    return col


class _Container:
    """The state of one level of blocks: the content columns of the open list items, and
    whether a paragraph is open (its next lines are text, however indented)."""

    __slots__ = ("items", "para")

    def __init__(self) -> None:
        self.items: list[int] = []
        self.para = False

    def is_code(self, content: str) -> bool:
        """Read one non-blank line of this container: True when it is indented code."""
        body = content.lstrip(" \t")
        lead = len(content) - len(body)
        ind = lead if "\t" not in content[:lead] else _columns(content[:lead])
        first = body[0]
        items = self.items
        keep = len(items)  # the items this line is indented enough to stay in
        while keep and ind < items[keep - 1]:
            keep -= 1
        rel = ind - (items[keep - 1] if keep else 0)
        marker = _LIST_MARKER.match(body) if rel < 4 and first in _MARKER_START else None
        if self.para and (rel >= 4 or not _starts_block(body, marker, keep < len(items))):
            if first == "=" and _SETEXT.match(body):
                self.para = False
            return False  # paragraph continuation text, lazy or not
        del items[keep:]
        if rel >= 4:
            self.para = False
            return True
        if marker is not None and not _THEMATIC.match(body):
            end = marker.end()
            rest = body[end:]
            after = rest.lstrip(" \t")
            width = _columns(body[:end] + rest[: len(rest) - len(after)]) - _columns(body[:end])
            if not after or width > 4:
                width = 1  # empty item, or the item starts with indented code
            items.append(ind + end + width)
            self.para = bool(after)
            return False
        self.para = first not in "#*-_" or not (_HEADING.match(body) or _THEMATIC.match(body))
        return False


def _starts_block(body: str, marker: re.Match[str] | None, outside: bool) -> bool:
    """Whether a line (indented less than four) ends an open paragraph instead of continuing
    it. `outside`: the line is not indented enough for the paragraph's list item."""
    if body[0] not in _BLOCK_START:
        return False
    if _HEADING.match(body) or _THEMATIC.match(body) or body.startswith(">"):
        return True
    if _FENCE_OPEN.match(body):
        return True
    if marker is None:
        return False
    if not body[marker.end() :].strip():
        return False  # an empty list item cannot interrupt a paragraph
    number = marker.group(1)
    return number is None or number == "1" or outside


def scan_code_blocks(text: str) -> str:
    """`mask_blocks` for any text: one pass over the lines (the regex of `fence_mask` alone
    when no line is indented)."""
    lines = text.split("\n")
    top = _Container()
    quote: _Container | None = None
    fence: tuple[str, int] | None = None
    changed = False
    for i, line in enumerate(lines):
        if fence is not None:
            m = _FENCE_CLOSE.match(line)
            if m and m[1][0] == fence[0] and len(m[1]) >= fence[1]:
                fence = None
            if line:
                lines[i] = " " * len(line)
                changed = True
            continue
        if line and line[0] not in _MAY_START_BLOCK:  # text at column 0: most lines
            if quote is not None:
                if quote.para:
                    continue  # lazy continuation of the quote's paragraph
                quote = None
            if not top.para:
                top.items.clear()
                top.para = True
            continue  # (a paragraph's next line keeps its list items: lazy continuation)
        if not line.strip(" \t"):
            top.para = False
            quote = None
            continue
        lead = len(line) - len(line.lstrip(" "))
        if lead <= 3 and line.startswith(">", lead):
            # a block quote: its content is read as a container of its own
            top.para = False
            top.items[:] = [c for c in top.items if c <= lead]
            if quote is None:
                quote = _Container()
            j = lead
            while j < len(line) and line[j] == ">":
                j += 1
                if line.startswith(" ", j):
                    j += 1
                k = j
                while k < len(line) and line[k] == " " and k - j < 3:
                    k += 1
                if line.startswith(">", k):
                    j = k
            ctx, content = quote, line[j:]
            if not content.strip(" \t"):
                quote.para = False
                continue
        elif quote is not None and quote.para and not _lazy_breaks(line):
            ctx, content = None, line  # lazy continuation of the quote's paragraph
        else:
            quote = None
            ctx, content = top, line
        if ctx is not None and ctx.is_code(content):
            lines[i] = line[: len(line) - len(content)] + " " * len(content)
            changed = True
            continue
        m = _FENCE_OPEN.match(content)
        if m:  # a fence opens wherever it stands (the forgiving rule of `fence_mask`)
            fence = (m[1][0], len(m[1]))
            (ctx or quote or top).para = False
            lines[i] = " " * len(line)
            changed = True
    return "\n".join(lines) if changed else text


def _lazy_breaks(line: str) -> bool:
    """Whether a line without `>` ends a quoted paragraph (instead of continuing it lazily)."""
    body = line.lstrip(" \t")
    if _columns(line[: len(line) - len(body)]) >= 4:
        return False
    return _starts_block(body, _LIST_MARKER.match(body), True)
