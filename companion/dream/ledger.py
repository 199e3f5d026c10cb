"""`.companion/dreams/ledger.json`: what the dream must remember between nights, in the vault.

- `seen`: for each lesson (by a hash of its normalised text, never the text), the distinct
  sessions and days it came up in, kept 30 days; a lesson seen in `RECURRENCE` (3) sessions or
  days becomes eligible for the injected memory.
- `rejected`: lessons a person undid with `companion dream --undo`; they are not consolidated
  or promoted again.
- `in_memory`: facts seen in MEMORY.md or USER.md after a dream (promoted, or already there),
  kept 30 days: one that is gone at the next dream was deleted by a person (or the agent), and
  is not added back.
- `entries`: for MEMORY.md and USER.md (by target), a hash of each entry and the day a dream
  first saw it in the file; an entry no dream has seen appeared since the last one. Two entries
  on the same subject are reconciled by these days (the newer stays); entries gone from the
  file are forgotten.
- `lines`: for each note, a hash of every line the dream wrote in its content blocks and in
  Home.md's index block (the line's text with its provenance, whitespace collapsed; never the
  text) and the day it was first written. A line of such a block whose hash is not there is not
  the dream's: a person wrote or changed it, and it is theirs (the dream never replaces, moves or
  removes it). A
  ledger from before `lines` existed is rebuilt once from the reports, whose changes hold every
  file before and after each dream.

It lives in the vault (hidden, synced) so the server and the laptop share it, and is rewritten
only when its content changes, so a dream that finds nothing new leaves it alone.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from companion.dream import blocks
from companion.dream.report import DREAMS_DIR, list_reports, write_json_atomic
from companion.dream.text import norm_key

KEEP_DAYS = 30


def fact_id(key: str) -> str:
    return hashlib.sha256(("dream-fact\0" + key).encode("utf-8")).hexdigest()[:20]


_SPACE = re.compile(r"\s+")
_LINK = re.compile(r"!?\[\[[^\[\]\n]*\]\]")


def line_id(line: str) -> str:
    """The ledger's hash of a block line: its whole text (provenance included), whitespace
    collapsed, so a person's change of any word (a value, a word, its source) is seen."""
    norm = _SPACE.sub(" ", line).strip()
    return hashlib.sha256(("dream-line\0" + norm).encode("utf-8")).hexdigest()[:20]


# The blocks whose lines the ledger keeps: notes' content blocks and Home.md's index.
OWNED_KINDS = ("content", "index")


def content_lines(text: str | None, kinds: tuple[str, ...] = ("content",)) -> list[str]:
    """The non-blank lines of `text`'s blocks of `kinds` (content blocks unless told)."""
    if not text:
        return []
    lines = blocks.split_lines(text.replace("\r\n", "\n"))
    return [
        lines[i]
        for b in blocks.find_blocks(lines)
        if b.kind in kinds
        for i in b.body
        if lines[i].strip()
    ]


@dataclass
class Ledger:
    path: Path
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    in_memory: dict[str, str] = field(default_factory=dict)  # fact id -> last day seen there
    # target -> {entry id: day first seen in the file}
    entries: dict[str, dict[str, str]] = field(default_factory=dict)
    # note -> {line id: day first written}; None until loaded or rebuilt from the reports
    lines: dict[str, dict[str, str]] | None = None
    _loaded: str = ""

    @classmethod
    def load(cls, vault: Path) -> Ledger:
        path = Path(vault) / DREAMS_DIR / "ledger.json"
        led = cls(path)
        try:
            raw = path.read_text(encoding="utf-8")
            data = json.loads(raw)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return led
        if isinstance(data, dict):
            if isinstance(data.get("seen"), dict):
                led.seen = {str(k): v for k, v in data["seen"].items() if isinstance(v, dict)}
            if isinstance(data.get("rejected"), dict):
                led.rejected = {str(k): str(v) for k, v in data["rejected"].items()}
            if isinstance(data.get("in_memory"), dict):
                led.in_memory = {str(k): str(v) for k, v in data["in_memory"].items()}
            if isinstance(data.get("entries"), dict):
                led.entries = {
                    str(t): {str(h): str(d) for h, d in ids.items()}
                    for t, ids in data["entries"].items()
                    if isinstance(ids, dict)
                }
            if isinstance(data.get("lines"), dict):
                led.lines = {
                    str(note): {str(h): str(d) for h, d in ids.items()}
                    for note, ids in data["lines"].items()
                    if isinstance(ids, dict)
                }
        led._loaded = led._dump()
        return led

    def _dump(self) -> str:
        out: dict[str, Any] = {"version": 1, "seen": self.seen, "rejected": self.rejected}
        if self.in_memory:
            out["in_memory"] = self.in_memory
        if self.entries:
            out["entries"] = {t: ids for t, ids in self.entries.items() if ids}
        if self.lines is not None:
            out["lines"] = {note: ids for note, ids in self.lines.items() if ids}
        return json.dumps(out, sort_keys=True)

    def observe(self, key: str, sessions: set[str], days: set[str]) -> tuple[int, int]:
        """Add occurrences of a lesson; returns (distinct sessions, distinct days) so far."""
        rec = self.seen.setdefault(fact_id(key), {"sessions": [], "days": []})
        s = set(rec.get("sessions") or []) | {x for x in sessions if x}
        d = set(rec.get("days") or []) | set(days)
        rec["sessions"] = sorted(s)
        rec["days"] = sorted(d)
        return len(s), len(d)

    def prune(self, today: dt.date) -> None:
        cutoff = (today - dt.timedelta(days=KEEP_DAYS)).isoformat()
        for k in list(self.seen):
            days = self.seen[k].get("days") or []
            if days and max(days) < cutoff:
                del self.seen[k]
        for k, day in list(self.in_memory.items()):
            if day < cutoff:
                del self.in_memory[k]

    def saw_in_memory(self, key: str, date: str) -> None:
        self.in_memory[fact_id(key)] = date

    def was_in_memory(self, key: str) -> str | None:
        """The last day the fact was seen in the injected memory, if it was."""
        return self.in_memory.get(fact_id(key))

    def entry_day(self, target: str, entry: str) -> str | None:
        """The day a dream first saw `entry` in the `target` file, if one did."""
        return self.entries.get(target, {}).get(fact_id("entry\0" + norm_key(entry)))

    def saw_entries(self, target: str, entries: list[str], date: str) -> None:
        """The entries of the `target` file after a dream: new ones are dated `date`, those
        gone from the file forgotten."""
        old = self.entries.get(target, {})
        ids = [fact_id("entry\0" + norm_key(e)) for e in entries]
        self.entries[target] = {h: old.get(h, date) for h in ids}

    def reject(self, key: str, date: str) -> None:
        self.rejected[fact_id(key)] = date

    def rejected_on(self, key: str) -> str | None:
        return self.rejected.get(fact_id(key))

    # --- the lines the dream wrote ---------------------------------------------------------

    def _own(self) -> dict[str, dict[str, str]]:
        if self.lines is None:
            self.lines = {}
            self._rebuild()
        return self.lines

    def _rebuild(self) -> None:
        """The lines of every dream so far, from the reports (a ledger written before
        `lines` existed): what each change added to a content block."""
        vault = self.path.parent.parent.parent
        for path in list_reports(vault):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                continue
            changes = data.get("changes") if isinstance(data, dict) else None
            day = str(data.get("date") or "") if isinstance(data, dict) else ""
            for ch in changes if isinstance(changes, list) else []:
                if not isinstance(ch, dict) or not isinstance(ch.get("after"), str):
                    continue
                before = ch.get("before") if isinstance(ch.get("before"), str) else None
                self.wrote(str(ch.get("note")), before, ch["after"], day, prune=False)

    def notes(self) -> list[str]:
        """The notes holding lines the dream wrote."""
        return sorted(note for note, ids in self._own().items() if ids)

    def owns(self, note: str, line: str) -> bool:
        """True when the dream wrote `line` in `note` and nobody changed it since."""
        return line_id(line) in self._own().get(note, {})

    def wrote(
        self, note: str, before: str | None, after: str, day: str, *, prune: bool = True
    ) -> None:
        """Record what a dream changed in `note`: each line added to a content block is the
        dream's, except a line the dream only repaired a link in, which stays whoever's it
        was. With `prune`, hashes of lines in neither text are forgotten."""
        own = self._own()
        ids = dict(own.get(note, {}))
        old = content_lines(before, OWNED_KINDS)
        new = content_lines(after, OWNED_KINDS)
        was, now = set(old), set(new)
        gone = [ln for ln in old if ln not in now]
        for ln in new:
            if ln in was:
                continue
            bare = _LINK.sub("", ln)
            origin = next((g for g in gone if _LINK.sub("", g) == bare), None)
            if origin is not None and line_id(origin) not in ids:
                continue  # a person's line whose link was repaired: still theirs
            ids.setdefault(line_id(ln), day)
        if prune:
            keep = {line_id(ln) for ln in (*old, *new)}
            ids = {h: d for h, d in ids.items() if h in keep}
        own[note] = ids

    @property
    def changed(self) -> bool:
        return self._dump() != self._loaded

    def save(self) -> bool:
        if not self.changed:
            return False
        write_json_atomic(self.path, json.loads(self._dump()))
        self._loaded = self._dump()
        return True
