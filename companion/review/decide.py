"""What a decision does to a note's text (pure): revert a change, keep the person's line, take
the new value. Each returns the new text (None: delete the file) or a refusal code:
`edited` (the file is no longer what the change left), `gone` (the line is no longer there).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from companion.review.model import ChangeItem, Disagreement

FLAG = "⚠"


@dataclass(frozen=True)
class Result:
    ok: bool
    text: str | None = None  # the file's new content (None with ok: delete it)
    refusal: str = ""  # edited | gone


def sha(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def revert(current: str | None, change: ChangeItem) -> Result:
    """Back to what the file was before the change, if it is still what the change left."""
    if not change.before_known:
        return Result(False, refusal="gone")
    if sha(current) != sha(change.after):
        return Result(False, refusal="edited")
    return Result(True, change.before)


SRC_RE = re.compile(r"[ \t]*<!-- src: .*? -->[ \t]*$")
BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
FLAG_RE = re.compile(rf"^{FLAG}\ufe0f? [^\n]*?\(\d{{4}}-\d{{2}}-\d{{2}}\): ")


def statement(row: str) -> str:
    """A note line as a statement: no bullet, no provenance comment, no flag label."""
    text = SRC_RE.sub("", BULLET_RE.sub("", row, count=1)).strip()
    return FLAG_RE.sub("", text, count=1).strip()


def is_flag(row: str) -> bool:
    return bool(FLAG_RE.match(SRC_RE.sub("", BULLET_RE.sub("", row, count=1)).strip()))


def _find_flag(rows: list[str], d: Disagreement) -> int | None:
    for i, row in enumerate(rows):
        if is_flag(row) and " ".join(statement(row).split()) == " ".join(d.new.split()):
            return i
    return None


def keep_mine(current: str | None, d: Disagreement) -> Result:
    """The flagged line goes; the person's line stays as it is."""
    if current is None:
        return Result(False, refusal="gone")
    rows = current.split("\n")
    i = _find_flag(rows, d)
    if i is None:
        return Result(False, refusal="gone")
    return Result(True, "\n".join(rows[:i] + rows[i + 1 :]))


def take_new(current: str | None, d: Disagreement) -> Result:
    """The person's line right above the flag takes the new value (her bullet kept), and the
    flag line goes; with no line of hers next to it, the flag line becomes a plain line."""
    if current is None:
        return Result(False, refusal="gone")
    rows = current.split("\n")
    i = _find_flag(rows, d)
    if i is None:
        return Result(False, refusal="gone")
    if d.mine is not None and i > 0 and not is_flag(rows[i - 1]):
        prev = rows[i - 1]
        if " ".join(statement(prev).split()) == " ".join(d.mine.split()):
            m = BULLET_RE.match(prev)
            lead = m.group(0) if m else ""
            return Result(True, "\n".join([*rows[: i - 1], f"{lead}{d.new}", *rows[i + 1 :]]))
    m = BULLET_RE.match(rows[i])
    lead = m.group(0) if m else ""
    return Result(True, "\n".join([*rows[:i], f"{lead}{d.new}", *rows[i + 1 :]]))
