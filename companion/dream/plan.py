"""The dream's working copy: every edit is planned in memory, checked, then applied at once.

`Plan.write` is the single door through which the dream changes a vault file. Before it accepts
an edit it checks the guardrails that must hold whatever step asks:
- the person's text is untouched: every removed line was inside a dream block, every added
  line is blank, a block marker or inside a block; the one exception is a wikilink repair,
  where a line may differ only inside its `[[...]]` links;
- every added line of a content block carries a provenance comment;
- no added line holds a secret, and a file that holds a secret is never edited (its text would
  be copied into the report);
- the removal cap: lines and entries removed or replaced by one dream stay within
  `[dream] max_removals`;
- a file that is not UTF-8 or mixes line endings is never rewritten.
A refused edit is reported as a warning and the dream goes on without it.

`Plan.apply` writes each changed file with an atomic replace, but only if the file still holds
the bytes read at the start of the dream; a file edited meanwhile is left alone and reported.
"""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from companion.dream import blocks, injection
from companion.dream import summary as summary_text
from companion.dream.report import Change
from companion.dream.state import DreamState, EditorInfo, edit_note, edit_origin, edited_recently
from companion.fileio import KEEP, fsync_dir, write_atomic
from companion.logs import get_logger

log = get_logger("dream.plan")


class EditRefused(Exception):
    """An edit that would break a guardrail; the message says which."""


@dataclass
class _File:
    rel: str
    original: bytes | None
    text: str | None  # current planned text, "\n" line ends
    crlf: bool = False
    readable: bool = True
    why_unreadable: str = ""
    has_secret: bool | None = None


def _decode(data: bytes) -> tuple[str | None, bool, str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, False, "not valid UTF-8"
    crlf = "\r\n" in text
    if crlf:
        if text.replace("\r\n", "").count("\n") or text.replace("\r\n", "").count("\r"):
            return None, False, "mixes line endings"
        text = text.replace("\r\n", "\n")
    elif "\r" in text:
        return None, False, "uses old Mac line endings"
    return text, crlf, ""


def _without_links(line: str) -> str:
    import re  # noqa: PLC0415

    return re.sub(r"!?\[\[[^\[\]\n]*\]\]", "", line)


def _block_ranges(lines: list[str]) -> tuple[set[int], set[int]]:
    """(indexes of lines inside any block or on its markers, indexes inside content blocks)."""
    inside: set[int] = set()
    content: set[int] = set()
    for b in blocks.find_blocks(lines):
        inside.update(range(b.begin, b.end + 1))
        if b.kind == "content":
            content.update(b.body)
    return inside, content


def check_edit(before: str | None, after: str, *, allow_link_edit: bool = False) -> None:
    """Raise EditRefused unless `after` only adds dream lines to `before` (see module doc)."""
    a = blocks.split_lines(before) if before else []
    b = blocks.split_lines(after)
    a_in, _ = _block_ranges(a)
    b_in, b_content = _block_ranges(b)
    new_file = not before
    fm_end = -1
    if new_file and b and b[0] == "---":
        fm_end = next((i for i in range(1, len(b)) if b[i] == "---"), -1)
        if fm_end >= 0 and fm_end + 1 < len(b) and b[fm_end + 1].startswith("# "):
            fm_end += 1  # a new note's title (H1) belongs to its head
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        if op in ("delete", "replace"):
            gone = [i for i in range(i1, i2) if a[i].strip()]
            human = [i for i in gone if i not in a_in]
            if human:
                if not (
                    allow_link_edit
                    and op == "replace"
                    and i2 - i1 == j2 - j1
                    and all(
                        _without_links(a[i1 + k]) == _without_links(b[j1 + k])
                        for k in range(i2 - i1)
                    )
                ):
                    raise EditRefused(f"would change the person's line {human[0] + 1}")
                continue
        for j in range(j1, j2):
            line = b[j]
            if not line.strip() or j in b_in or j <= fm_end:
                continue
            raise EditRefused(f"would add a line outside a dream block (line {j + 1})")
    for j in b_content:
        if b[j].strip() and not blocks.SRC_RE.search(b[j]) and j not in _unchanged(sm, b):
            raise EditRefused(f"line {j + 1} has no provenance")


def _unchanged(sm: difflib.SequenceMatcher[str], b: list[str]) -> set[int]:
    out: set[int] = set()
    for op, _i1, _i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            out.update(range(j1, j2))
    return out


@dataclass
class Plan:
    root: Path
    is_secret: Callable[[str], bool]
    max_removals: int
    editors: EditorInfo
    now: dt.datetime
    human_window: dt.timedelta
    files: dict[str, _File] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    removed: int = 0
    warnings: list[str] = field(default_factory=list)
    id_start: int = 1
    _recent: dict[str, bool] = field(default_factory=dict)

    # --- reading ------------------------------------------------------------------------------

    def _load(self, rel: str) -> _File:
        f = self.files.get(rel)
        if f is None:
            path = self.root / rel
            try:
                data: bytes | None = path.read_bytes()
            except FileNotFoundError:
                data = None
            except OSError as exc:
                f = _File(rel, None, None, readable=False, why_unreadable=str(exc.strerror))
                self.files[rel] = f
                return f
            if data is None:
                f = _File(rel, None, None)
            else:
                text, crlf, why = _decode(data)
                f = _File(rel, data, text, crlf, readable=text is not None, why_unreadable=why)
            self.files[rel] = f
        return f

    def read(self, rel: str) -> str | None:
        """The planned text of `rel` ("\\n" line ends), None when absent or unreadable."""
        return self._load(rel).text

    def exists(self, rel: str) -> bool:
        f = self._load(rel)
        return f.original is not None or f.text is not None

    def is_recent(self, rel: str) -> bool:
        """True when a person edited `rel` within the human-edit window (or the edit time
        is in the future of `now`, which can only be read as "just now")."""
        hit = self._recent.get(rel)
        if hit is None:
            f = self._load(rel)
            if f.original is None:
                hit = False
            else:
                hit = edited_recently(self.editors, rel, self.now, self.human_window)
            self._recent[rel] = hit
        return hit

    def edit_origin(self, rel: str) -> str:
        """What is known of who made the edit `is_recent` saw (`companion.dream.state`)."""
        return edit_origin(self.editors, rel)

    def edit_note(self, rel: str) -> str:
        """Why `rel` is left alone, saying only what is known ("edited by a person recently",
        "changed on this server outside the dream recently")."""
        return edit_note(self.edit_origin(rel))

    def removal_room(self) -> int:
        return max(0, self.max_removals - self.removed)

    # --- writing ------------------------------------------------------------------------------

    def _file_text(self, f: _File, text: str | None) -> str | None:
        if text is None:
            return None
        return text.replace("\n", "\r\n") if f.crlf else text

    def write(
        self,
        rel: str,
        new_text: str,
        *,
        kind: str,
        summary: str = "",
        facts: list[dict[str, Any]] | None = None,
        provenance: list[dict[str, Any]] | None = None,
        keys: list[str] | None = None,
        removed: int = 0,
        allow_link_edit: bool = False,
    ) -> Change | None:
        """Plan `rel` to become `new_text`. Returns the change, or None when refused (a
        warning says why) or when nothing changes. `facts` say what it did (dream.summary);
        `summary` defaults to their English wording."""
        facts = list(facts or [])
        summary = summary or summary_text.render(facts)
        f = self._load(rel)
        if not f.readable:
            self.warnings.append(f"{rel}: left alone ({f.why_unreadable}; never rewritten)")
            return None
        before = f.text
        if before == new_text:
            return None
        try:
            check_edit(before, new_text, allow_link_edit=allow_link_edit)
            if f.has_secret is None:
                f.has_secret = f.original is not None and self.is_secret(f.original.decode("utf-8"))
            if f.has_secret:
                raise EditRefused("it holds a secret (run `companion secrets scan`)")
            old = set(blocks.split_lines(before or ""))
            for line in blocks.split_lines(new_text):
                if line not in old and self.is_secret(line):
                    raise EditRefused("a new line holds a secret")
                if line not in old and (refused := injection.line_problem(rel, line)):
                    raise EditRefused(refused)
            if removed and self.removed + removed > self.max_removals:
                raise EditRefused(f"the removal cap ({self.max_removals} per dream) is reached")
        except EditRefused as exc:
            self.warnings.append(f"{rel}: {summary or kind} not written: {exc}")
            log.info("refused an edit of %s: %s", rel, exc)
            return None
        self.removed += removed
        f.text = new_text
        last = next((c for c in reversed(self.changes) if c.note == rel), None)
        if last is not None and last.kind == kind and self.changes[-1] is last:
            last.after = self._file_text(f, new_text)
            last.provenance.extend(provenance or [])
            last.keys.extend(k for k in keys or [] if k not in last.keys)
            last.removed += removed
            if facts:
                summary_text.merge(last.facts, facts)
                last.summary = summary_text.render(last.facts)
            elif summary and summary not in last.summary:
                last.summary = f"{last.summary}; {summary}" if last.summary else summary
            return last
        change = Change(
            id=f"c{self.id_start + len(self.changes)}",
            kind=kind,
            note=rel,
            before=self._file_text(f, before),
            after=self._file_text(f, new_text),
            provenance=list(provenance or []),
            summary=summary,
            facts=facts,
            keys=list(keys or []),
            removed=removed,
        )
        self.changes.append(change)
        return change

    # --- applying -----------------------------------------------------------------------------

    def apply(self, state: DreamState) -> list[Change]:
        """Write every planned file; returns the changes that landed."""
        landed: list[Change] = []
        folders: set[Path] = set()
        for rel in dict.fromkeys(c.note for c in self.changes):
            f = self.files[rel]
            path = self.root / rel
            try:
                now_bytes: bytes | None = path.read_bytes()
            except FileNotFoundError:
                now_bytes = None
            mine = [c for c in self.changes if c.note == rel]
            if now_bytes != f.original:
                self.warnings.append(f"{rel}: changed on disk during the dream; left alone")
                continue
            final = mine[-1].after
            assert final is not None
            data = final.encode("utf-8")
            try:
                write_atomic(path, data, mode=KEEP, sync_dir=False, make_parents=True)
            except OSError as exc:
                self.warnings.append(f"{rel}: cannot write ({exc.strerror or exc})")
                continue
            folders.add(path.parent)
            state.record_write(rel, data)
            landed.extend(mine)
        for folder in folders:  # once per folder, not once per file
            fsync_dir(folder)
        return landed
