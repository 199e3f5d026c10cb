"""Promotions the agent's memory lock blocked, kept on this device until a dream lands them.

A dream that finds `MEMORY.md.lock` / `USER.md.lock` held (the agent writing, or stuck) does
not promote to that file and must not lose the fact: the next dream's window starts after the
fact's source, so reading it again is not enough. The blocked candidates are kept in
`<state dir>/dream/<vault>-pending.json` (the state of this device, like the memory files
themselves) and every later dream adds them to its own candidates, to be promoted only: their
note lines were written by the dream that was blocked. A candidate leaves the file once a dream
has decided it otherwise (promoted, already there, over budget, deleted by the person...).

Only the run holding the dream's lock reads and writes the file.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from companion.dream.blocks import Ref
from companion.dream.model import Candidate, Provenance
from companion.dream.report import write_json_atomic
from companion.dream.state import vault_key

VERSION = 1


def pending_path(state_dir: Path, vault: Path) -> Path:
    return Path(state_dir) / "dream" / f"{vault_key(vault)}-pending.json"


def _time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


def _day(value: Any) -> dt.date | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        return None


def to_dict(c: Candidate, since: str) -> dict[str, Any]:
    return {
        "kind": c.kind,
        "text": c.text,
        "entry": c.entry,
        "target": c.target,
        "promote": c.promote,
        "origin": c.origin,
        "topic": c.topic,
        "day": c.day.isoformat() if c.day else None,
        "time": c.time.isoformat() if c.time else None,
        "seen": c.seen,
        "since": since,
        "provenance": [
            {
                **p.to_dict(),
                "time": p.time.isoformat() if p.time else None,
                "session": p.session,
                "role": p.role,
            }
            for p in c.provenance
        ],
    }


def from_dict(d: dict[str, Any]) -> Candidate | None:
    text, promote = d.get("text"), d.get("promote")
    if not isinstance(text, str) or not text or not isinstance(promote, str):
        return None
    provs = []
    for p in d.get("provenance") or []:
        if not isinstance(p, dict) or not isinstance(p.get("source"), str):
            continue
        line = p.get("line")
        mid = p.get("message_id")
        ref = Ref(
            p["source"],
            line if isinstance(line, int) and not isinstance(line, bool) else None,
            str(mid) if mid is not None else None,
        )
        session, role = p.get("session"), p.get("role")
        provs.append(
            Provenance(
                ref,
                str(p.get("quote") or text),
                _time(p.get("time")),
                session if isinstance(session, str) else None,
                role if isinstance(role, str) else None,
            )
        )
    if not provs:
        return None
    entry, topic = d.get("entry"), d.get("topic")
    seen = d.get("seen")
    return Candidate(
        str(d.get("kind") or "fact"),
        text,
        provs,
        str(d.get("origin") or "journal"),
        topic=topic if isinstance(topic, str) else None,
        promote=promote,
        target="user" if d.get("target") == "user" else "memory",
        consolidate=False,
        day=_day(d.get("day")),
        time=_time(d.get("time")),
        seen=seen if isinstance(seen, int) and not isinstance(seen, bool) else 0,
        entry=entry if isinstance(entry, str) else None,
        retry_since=str(d.get("since") or "") or None,
    )


def load_pending(path: Path) -> list[Candidate]:
    """The blocked promotions waiting in `path` (none when it is missing or unreadable)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    items = data.get("pending") if isinstance(data, dict) else None
    out = []
    for item in items or []:
        c = from_dict(item) if isinstance(item, dict) else None
        if c is not None:
            out.append(c)
    return out


def save_pending(path: Path, cands: Iterable[Candidate], today: str) -> None:
    """Keep `cands` (blocked this run) for the next dream; an empty list removes the file."""
    items = []
    seen: set[tuple[str, str]] = set()
    for c in cands:
        k = (c.target, c.key)
        if k in seen:
            continue
        seen.add(k)
        items.append(to_dict(c, c.retry_since or today))
    path = Path(path)
    if not items:
        path.unlink(missing_ok=True)
        return
    write_json_atomic(path, {"version": VERSION, "pending": items})
