"""The review's after-round hook, cheap when there is nothing to do (docs/review.md).

Every settled sync round asks it; most rounds find no new dream report and no review note
that changed since it was last looked at. That check is a directory listing and a hash of a
few small notes, against what `rounds` keeps in the engine's folder (`review-seen.json`), so a
quiet one-shot `companion sync` does not import the review's modules at all; `rounds` comes in
when there is work.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from companion.sync.round.engine import SyncEngine
    from companion.sync.round.report import RoundReport

FOLDER = "review"
REPORTS = Path(".companion") / "dreams"
SEEN_FILE = "review-seen.json"
RECENT_DAYS = 3  # a report this much older than the newest gets no note (an upgrade's backlog)


def install(engine: SyncEngine) -> None:
    """Run the review's work after each round of `engine` that settles (one `rounds.Device`
    kept across rounds, made when there is first work)."""
    from companion.sync.state.device import vault_dir

    root = engine.core.root
    seen_file = vault_dir(engine.paths, root) / SEEN_FILE
    kept: dict[str, Any] = {}

    def hook(engine: SyncEngine, report: RoundReport) -> set[str]:
        dev = kept.get("dev")
        seen = dev.seen if dev is not None else _load(seen_file)
        if not work_waits(root, seen):
            return set()
        from companion.review import rounds

        if dev is None:
            dev = kept["dev"] = rounds.device_for(engine)
        result: set[str] = rounds.after_round(dev)
        return result

    engine.after_round.append(hook)


def _load(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _day(name: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(name)
    except ValueError:
        return None


def work_waits(root: Path, seen: dict[str, str]) -> bool:
    """Whether a recent dream report has no review note yet, or a review note changed since
    it was last looked at."""
    folder = root / FOLDER
    notes = {p.stem: p for p in folder.glob("*.md")} if folder.is_dir() else {}
    days = [d for d in (_day(p.stem) for p in (root / REPORTS).glob("*.json")) if d]
    if days:
        newest = max(days)
        for d in days:
            if (newest - d).days <= RECENT_DAYS and d.isoformat() not in notes:
                return True
    for path in notes.values():
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            continue
        if seen.get(f"{FOLDER}/{path.name}") != digest:
            return True
    return False
