"""The record of agent writes: `.companion/agent/YYYY-MM-DD.<device>.jsonl`, one JSON object a line.

Every note or memory write an agent makes through the MCP server is appended here with its
provenance (tool, client, device, the agent's stated reason) and a compact diff, so the morning
review shows what the agent wrote beside what the dream did. The folder is inside the vault's
`.companion/` (synced, hidden in Obsidian), so the record reaches the person's devices like the
dream reports do. One file per day and device: two devices never write the same file, so the
record never conflicts. Days are UTC dates; readers filter by time.

A line (format 1; readers ignore keys they do not know):

    {"v": 1, "id": "5f0c...", "time": "2026-11-28T09:14:03Z", "tool": "write_note",
     "path": "knowledge/x.md", "requested": "knowledge/x.md", "action": "created",
     "message": "...", "reason": "...", "client": "claude-code 2.1", "device": "server",
     "before_sha256": null, "after_sha256": "...", "diff": "--- ...", "diff_truncated": false,
     "size": 1234, "new": true}

`size` (bytes of text the write carried) and `new` (it created the note) are what the write
limits count (`companion.mcp.quota`).

`action` is one of created, replaced, section_replaced, section_appended, appended, sibling,
journal, memory_add, memory_replace, memory_remove. The diff never copies a line that holds a
secret (such a line of the person's text is shown as a placeholder). Writes are atomic
replaces (`companion.sync.local.atomic`); a concurrent writer on this device is retried.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import difflib
import json
import re
import secrets
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT = 1
FOLDER = ".companion/agent"
MAX_DIFF_CHARS = 20_000
SECRET_LINE = "[a line that holds a secret: not copied]"
_DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.[A-Za-z0-9._-]+\.jsonl$")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def iso(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> dt.datetime | None:
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def device_slug(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return slug[:40] or "device"


@dataclass
class AgentWrite:
    """One write an agent made; `path` is vault-relative, or MEMORY.md / USER.md."""

    tool: str
    path: str
    action: str
    message: str
    time: str = ""
    reason: str = ""
    requested: str = ""
    client: str = ""
    device: str = ""
    before_sha256: str | None = None
    after_sha256: str | None = None
    diff: str = ""
    diff_truncated: bool = False
    id: str = field(default_factory=lambda: secrets.token_hex(6))
    size: int | None = None  # bytes of text the write carried (None: memory, or unknown)
    new: bool = False  # the write created the note

    def to_dict(self) -> dict[str, Any]:
        return {"v": FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AgentWrite | None:
        if not isinstance(d, dict) or not d.get("path") or not d.get("tool"):
            return None

        def s(key: str) -> str:
            v = d.get(key)
            return v if isinstance(v, str) else ""

        def h(key: str) -> str | None:
            v = d.get(key)
            return v if isinstance(v, str) else None

        return cls(
            tool=s("tool"),
            path=s("path"),
            action=s("action"),
            message=s("message"),
            time=s("time"),
            reason=s("reason"),
            requested=s("requested"),
            client=s("client"),
            device=s("device"),
            before_sha256=h("before_sha256"),
            after_sha256=h("after_sha256"),
            diff=s("diff"),
            diff_truncated=bool(d.get("diff_truncated")),
            id=s("id") or secrets.token_hex(6),
            size=d["size"] if isinstance(d.get("size"), int) else None,
            new=d.get("new") is True,
        )

    @property
    def when(self) -> dt.datetime | None:
        return parse_time(self.time)


def make_diff(
    path: str, before: str | None, after: str | None, has_secret: Callable[[str], bool]
) -> tuple[str, bool]:
    """A unified diff (one line of context) of a write, secret lines masked; (diff, truncated)."""

    def lines(text: str | None) -> list[str]:
        return [SECRET_LINE if has_secret(x) else x for x in (text or "").split("\n")]

    diff = "\n".join(
        difflib.unified_diff(
            lines(before),
            lines(after),
            fromfile=f"a/{path}" if before is not None else "/dev/null",
            tofile=f"b/{path}" if after is not None else "/dev/null",
            n=1,
            lineterm="",
        )
    )
    if len(diff) > MAX_DIFF_CHARS:
        return diff[:MAX_DIFF_CHARS].rsplit("\n", 1)[0], True
    return diff, False


class WriteLog:
    """Appends this device's records under the vault at `root`."""

    def __init__(self, root: str | Path, device: str, *, clock: Callable[[], dt.datetime] = _now):
        self.root = Path(root)
        self.device = device
        self.clock = clock
        self._lock = threading.Lock()

    def rel_for(self, day: dt.date) -> str:
        return f"{FOLDER}/{day.isoformat()}.{device_slug(self.device)}.jsonl"

    def record(self, write: AgentWrite) -> AgentWrite:
        """Stamp and append `write`; returns it. Raises OSError when the vault is unwritable."""
        from companion.sync.local.atomic import ChangedSinceScan, atomic_write
        from companion.sync.local.filestate import current_state
        from companion.sync.local.pathsafe import resolve_inside

        now = self.clock()
        write.time = write.time or iso(now)
        write.device = write.device or self.device
        rel = self.rel_for(now.astimezone(dt.UTC).date())
        line = json.dumps(write.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            for _attempt in range(5):
                target = resolve_inside(self.root, rel)
                state = current_state(target)
                old = target.read_bytes() if state is not None else b""
                if old and not old.endswith(b"\n"):
                    old += b"\n"  # a torn last line stays its own (unreadable) line
                try:
                    atomic_write(self.root, rel, old + line.encode("utf-8"), state)
                    return write
                except ChangedSinceScan:
                    continue  # another server on this device appended meanwhile
            raise OSError(f"{rel} kept changing while the write was recorded")


def day_files(root: str | Path) -> list[tuple[dt.date, Path]]:
    folder = Path(root) / FOLDER
    out = []
    with contextlib.suppress(OSError):
        for p in folder.iterdir():
            m = _DAY_FILE.match(p.name)
            if m and p.is_file():
                with contextlib.suppress(ValueError):
                    out.append((dt.date.fromisoformat(m[1]), p))
    return sorted(out)


def _lines(path: Path) -> Iterable[AgentWrite]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for raw in text.splitlines():
        try:
            w = AgentWrite.from_dict(json.loads(raw))
        except (json.JSONDecodeError, TypeError):
            continue
        if w is not None:
            yield w


def read_writes(
    root: str | Path, start: dt.datetime | None = None, end: dt.datetime | None = None
) -> list[AgentWrite]:
    """Every recorded write with `start <= time < end` (either may be None), oldest first."""
    out = []
    for day, path in day_files(root):
        if start is not None and day < start.astimezone(dt.UTC).date():
            continue
        if end is not None and day > end.astimezone(dt.UTC).date():
            continue
        for w in _lines(path):
            t = w.when
            if t is None or (start is not None and t < start) or (end is not None and t >= end):
                continue
            out.append(w)
    out.sort(key=lambda w: w.time)
    return out


def last_writes_by_path(root: str | Path, since: dt.datetime) -> dict[str, AgentWrite]:
    """The newest recorded write of each path since `since`."""
    out: dict[str, AgentWrite] = {}
    for w in read_writes(root, since):
        out[w.path] = w
    return out
