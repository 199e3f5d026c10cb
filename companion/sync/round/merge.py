"""Three-way merge of text files against their last common version (with `merge3`).

A merge is *clean* when every region changed on only one side, or identically on both; then
the result holds both sides' edits. Any region changed differently on both sides (including
two insertions at the same place) makes the merge not clean, and no conflict markers are ever
produced: the caller keeps one version in the note and the other in a conflict copy.

Line endings: when each input uses one line-ending style, the merge works on ``\\n`` and the
result is written in the local ("ours") style, so a CRLF note stays CRLF even if the other side
saved LF. A missing newline at the end of the file is handled as its own tiny three-way choice,
so appending to a file that lacks a final newline does not conflict with an edit elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from companion.sync.local.filestate import is_text

__all__ = ["MergeResult", "derives_from", "is_text", "merge_bytes", "merge_text"]


@dataclass(frozen=True, slots=True)
class MergeResult:
    """`text` is the merged text when `clean`, else None. `conflicts` counts clashing regions."""

    clean: bool
    text: str | None
    conflicts: int = 0


def _eol_style(text: str) -> str | None:
    """'\\r\\n' or '\\n' when the text uses one style (or has no line break), None when mixed."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    if cr:
        return None
    if crlf and lf:
        return None
    return "\r\n" if crlf else "\n"


def _split(text: str) -> list[str]:
    """Lines with their ``\\n`` kept (only ``\\n`` separates lines; other breaks are content)."""
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _pick(base: bool, ours: bool, theirs: bool) -> bool:
    """Three-way merge of one boolean: a side that changed it wins (both changed: same value)."""
    return theirs if ours == base else ours


def merge_text(base: str, ours: str, theirs: str) -> MergeResult:
    """Merge `ours` and `theirs`, both derived from `base`. See the module docstring."""
    if ours == theirs:
        return MergeResult(True, ours)
    if ours == base:
        return MergeResult(True, theirs)
    if theirs == base:
        return MergeResult(True, ours)

    styles = [_eol_style(t) for t in (base, ours, theirs)]
    out_eol = None
    if None not in styles:
        has_break = [("\n" in t) for t in (base, ours, theirs)]
        out_eol = styles[1] if has_break[1] else styles[2] if has_break[2] else styles[0]
        base, ours, theirs = (t.replace("\r\n", "\n") for t in (base, ours, theirs))

    # the final newline as a separate decision: compare lines all ending in a newline
    finals = [t.endswith("\n") or t == "" for t in (base, ours, theirs)]
    want_final = _pick(*finals)
    lines = [
        _split(t if f else t + "\n") for t, f in zip((base, ours, theirs), finals, strict=True)
    ]

    from merge3 import Merge3  # merging is rare: a quiet round never loads it

    m = Merge3(lines[0], lines[1], lines[2])
    out: list[str] = []
    conflicts = 0
    for region in m.merge_regions():
        what = region[0]
        if what == "unchanged":
            out.extend(lines[0][region[1] : region[2]])
        elif what in ("a", "same"):
            out.extend(lines[1][region[1] : region[2]])
        elif what == "b":
            out.extend(lines[2][region[1] : region[2]])
        else:
            conflicts += 1
    if conflicts:
        return MergeResult(False, None, conflicts)
    text = "".join(out)
    if not want_final and text.endswith("\n"):
        text = text[:-1]
    if out_eol == "\r\n":
        text = text.replace("\n", "\r\n")
    return MergeResult(True, text)


def merge_bytes(base: bytes, ours: bytes, theirs: bytes) -> MergeResult:
    """`merge_text` over UTF-8 bytes; not clean when any input is not text (see `is_text`)."""
    if not (is_text(base) and is_text(ours) and is_text(theirs)):
        return MergeResult(False, None, 1)
    return merge_text(base.decode("utf-8"), ours.decode("utf-8"), theirs.decode("utf-8"))


def derives_from(prev: bytes, head: bytes, local: bytes) -> bool:
    """Whether `local` may have been written from `prev` without having seen `head` (all
    three derive from `prev`): the stale-save test. False only when `local` visibly holds
    `head`'s version: it equals `head`, or it carries one of the changes `head` made to `prev`
    (`_carries`: an edit of the new version, even right next to `head`'s change). A `local`
    that changed the same lines as `head` differently, with none of `head`'s new lines, cannot
    tell, and counts as derived from `prev`: the caller then reconciles it (a merge or a
    conflict copy) rather than overwrite `head` silently. Binary contents: equality only."""
    if local == prev:
        return True
    if local == head or not (is_text(prev) and is_text(head) and is_text(local)):
        return False
    base, ours, theirs = (
        _split(t.decode("utf-8").replace("\r\n", "\n")) for t in (prev, local, head)
    )
    return not any(_carries(*run) for run in _changed_runs(base, ours, theirs))


def _changed_runs(
    base: list[str], ours: list[str], theirs: list[str]
) -> Iterator[tuple[list[str], list[str], list[str]]]:
    """The stretches between the lines all three share, as (base, ours, theirs) line lists.
    Unlike `Merge3.merge_regions`, a stretch both sides deleted alike is listed too."""
    from merge3 import Merge3

    iz = ia = ib = 0
    for zmatch, zend, amatch, aend, bmatch, bend in Merge3(base, ours, theirs).find_sync_regions():
        if zmatch > iz or amatch > ia or bmatch > ib:
            yield base[iz:zmatch], ours[ia:amatch], theirs[ib:bmatch]
        iz, ia, ib = zend, aend, bend


def _carries(base: list[str], ours: list[str], theirs: list[str]) -> bool:
    """Whether `ours` carries one of the changes `theirs` made to `base` in one stretch: the
    same change (a deletion included); lines `theirs` added, one of them new, kept in a row
    among what `ours` put there (a line typed right after the one `theirs` added, or the line
    next to it edited); or lines `theirs` deleted that `ours` dropped too, with nothing put in
    their place. A stretch holds every line changed side by side, so `theirs`'s change is
    looked for hunk by hunk (issue 42.3: an edit next to a line just received)."""
    if theirs == base:
        return False
    if ours == theirs:
        return True
    from difflib import SequenceMatcher  # a stale save is rare: a quiet round never loads it

    hunks = SequenceMatcher(None, base, theirs, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in hunks:
        if tag == "equal":
            continue
        added = theirs[j1:j2]
        if added:
            if all(line in base for line in added):
                continue  # moved or repeated lines: nothing only `theirs` could have made
            n = len(added)
            if any(ours[i : i + n] == added for i in range(len(ours) - n + 1)):
                return True
        elif _drops(base, ours, i1, i2):
            return True
    return False


def _drops(base: list[str], ours: list[str], i1: int, i2: int) -> bool:
    """Whether `ours` deleted `base[i1:i2]` with nothing in its place: none of those lines is
    left, and `ours` is no longer than `base` without them (a line typed in their place, or
    the deleted line edited, keeps the length: no sign of the deletion)."""
    gone = base[i1:i2]
    return not any(line in ours for line in gone) and len(ours) <= len(base) - len(gone)
