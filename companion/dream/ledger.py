"""`.companion/dreams/ledger.json`: what the dream must remember between nights, in the vault.

- `seen`: for each lesson (by a hash of its normalised text, never the text), the distinct
  sessions and days it came up in, kept 30 days; a lesson seen in `RECURRENCE` (3) sessions or
  days becomes eligible for the injected memory.
- `rejected`: lessons a person undid with `companion dream --undo`; they are not consolidated
  or promoted again.
- `in_memory`: facts seen in MEMORY.md or USER.md after a dream (promoted, or already there),
  kept 30 days: one that is gone at the next dream was deleted by a person (or the agent), and
  is not added back.

It lives in the vault (hidden, synced) so the server and the laptop share it, and is rewritten
only when its content changes, so a dream that finds nothing new leaves it alone.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from companion.dream.report import DREAMS_DIR, write_json_atomic

KEEP_DAYS = 30


def fact_id(key: str) -> str:
    return hashlib.sha256(("dream-fact\0" + key).encode("utf-8")).hexdigest()[:20]


@dataclass
class Ledger:
    path: Path
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    in_memory: dict[str, str] = field(default_factory=dict)  # fact id -> last day seen there
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
        led._loaded = led._dump()
        return led

    def _dump(self) -> str:
        out: dict[str, Any] = {"version": 1, "seen": self.seen, "rejected": self.rejected}
        if self.in_memory:
            out["in_memory"] = self.in_memory
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

    def reject(self, key: str, date: str) -> None:
        self.rejected[fact_id(key)] = date

    def rejected_on(self, key: str) -> str | None:
        return self.rejected.get(fact_id(key))

    @property
    def changed(self) -> bool:
        return self._dump() != self._loaded

    def save(self) -> bool:
        if not self.changed:
            return False
        write_json_atomic(self.path, json.loads(self._dump()))
        self._loaded = self._dump()
        return True
