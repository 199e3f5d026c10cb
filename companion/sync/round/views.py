"""What `companion status`, the round's status file and the desktop app show of the index: held
changes, quarantined files, problems and the conflict copies in the vault (JSON-able dicts)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from companion.sync.round.conflicts import is_kept_copy
from companion.sync.state.held import HeldRow
from companion.sync.state.inbox import InboxRow
from companion.sync.state.quarantine import QuarantineRow


def held_view(row: HeldRow) -> dict[str, Any]:
    return {
        "path": row.path,
        "rev": row.rev,
        "reason": row.reason,
        "author": row.author,
        "since": row.since_ns / 1e9,
        "decision": row.decision,
    }


def quarantine_view(row: QuarantineRow) -> dict[str, Any]:
    return {
        "path": row.path,
        "file_id": row.file_id,
        "rev": row.rev,
        "reason": row.reason,
        "author": row.author,
        "since": row.since_ns / 1e9,
        "decision": row.decision,
    }


def problem_views(rows: Iterable[InboxRow]) -> list[dict[str, Any]]:
    """Remote changes that cannot apply here (kept queued, retried each round)."""
    return [{"path": r.path, "reason": r.problem} for r in rows if r.problem]


def copy_paths(paths: Iterable[str]) -> list[str]:
    """The conflict copies and kept names among `paths` (`FileStore.kept_copy_candidates`)."""
    return sorted(p for p in paths if is_kept_copy(p.rsplit("/", 1)[-1]))


def conflict_views(
    copies: Sequence[str], recent: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The conflict copies in the vault, each with what this device knows of it: the details
    of the round that made it, when this device detected it, else what its name says."""
    known = {str(c.get("copy")): dict(c) for c in recent if c.get("copy")}
    out = []
    for copy in copies:
        item = known.get(copy)
        if item is None:
            item = {
                "path": _original(copy),
                "copy": copy,
                "kept": "",
                "moved": _device_in(copy),
                "outcome": "",
                "message": f"{copy} holds another version of {_original(copy)}",
                "time": None,
            }
        out.append(item)
    return out


_COPY_NAME = re.compile(
    r"^(?P<stem>.+) \((?:conflict (?P<device>.+) \d{4}-\d{2}-\d{2} \d{4}"
    r"|(?:case|unicode) conflict)(?: \d+)?\)(?P<ext>\.[^.]*)?$"
)


def _original(copy: str) -> str:
    folder, _, name = copy.rpartition("/")
    m = _COPY_NAME.match(name)
    if m is None:
        return copy
    name = m.group("stem") + (m.group("ext") or "")
    return f"{folder}/{name}" if folder else name


def _device_in(copy: str) -> str:
    m = _COPY_NAME.match(copy.rsplit("/", 1)[-1])
    return (m.group("device") or "") if m else ""
