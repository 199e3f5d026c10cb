"""Which changes the relay's history vouches for: the review's list, never the agent's word.

Every record in the relay's change feed names the device that committed it; `RemoteVault`
opens and verifies it, and its author counts as a person only when the relay's record of the
committing device and the sealed record both say human. So the list of what agent devices
changed between two points of the feed (`from_seq`, `to_seq`] is the relay's, checked by the
vault key: an agent that empties or forges its own write log, or writes the review note
itself, changes nothing in it. The dream's report and the agent's MCP log only add
explanations to a change the history holds.

A span is one file's consecutive agent revisions (a person's revision of the same file in
between starts a new span). Its `before` is the file at the revision the span started from,
its `after` the file at its last revision, both fetched from the relay and verified.
Internal files (`.companion/`) and the review notes themselves are not listed.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from companion.review import decide, labels
from companion.review.model import (
    ChangeItem,
    Disagreement,
    change_id,
    disagreement_id,
)
from companion.review.note import link

if TYPE_CHECKING:
    from companion.sync.remote.vault import RemoteChange, RemoteVault

EXCLUDED_PREFIXES = (".companion/", "review/")
PAGE = 5000


POINTER_RE = re.compile(r"<!-- review:begin -->\n.*?<!-- review:end -->\n\n?", re.S)


def _unpointed(text: str | None) -> str | None:
    """`text` without Home.md's link to the newest review (`rounds.point_home`)."""
    return None if text is None else POINTER_RE.sub("", text)


def excluded(path: str) -> bool:
    return path.startswith(EXCLUDED_PREFIXES)


@dataclass
class Span:
    path: str
    file_id: str
    first: RemoteChange
    last: RemoteChange


@dataclass
class Feed:
    """What the relay's feed held in a range: the agent spans, and what could not be opened."""

    spans: list[Span] = field(default_factory=list)
    unverifiable: int = 0
    last_seq: int = 0


def agent_spans(
    remote: RemoteVault,
    from_seq: int,
    to_seq: int,
    *,
    not_before: float | None = None,
    include: Callable[[RemoteChange], bool] | None = None,
) -> Feed:
    """The spans of revisions committed by agent devices with `from_seq < seq <= to_seq`
    (and, when given, committed at or after `not_before`, relay time). `include` may admit
    a person's device's revisions too (a dream run on a laptop)."""
    from companion.sync.remote.vault import AGENT, Refused

    feed = Feed(last_seq=from_seq)
    open_spans: dict[str, Span] = {}
    since = from_seq
    while since < to_seq:
        page = remote.client.changes_page(since, 0, limit=PAGE)
        for rec in page.records:
            if rec.seq is None or rec.seq > to_seq:
                return feed
            feed.last_seq = rec.seq
            opened = remote.try_open(rec)
            if isinstance(opened, Refused):
                feed.unverifiable += 1
                continue
            if excluded(opened.path):
                continue
            if not_before is not None and (opened.committed_at or 0) < not_before:
                continue
            if opened.author_kind == AGENT or (include is not None and include(opened)):
                span = open_spans.get(opened.file_id)
                if span is not None and span.path == opened.path:
                    span.last = opened
                else:
                    span = Span(opened.path, opened.file_id, opened, opened)
                    open_spans[opened.file_id] = span
                    feed.spans.append(span)
            else:
                open_spans.pop(opened.file_id, None)
        if not page.more or page.seq <= since:
            break
        since = page.seq
    return feed


def first_human_seq(remote: RemoteVault, to_seq: int) -> int | None:
    """The seq of the first record a person's device committed (None: none yet). What agent
    devices wrote before a person ever took part is the vault's initial content, not a night's
    change: the first review starts there."""
    from companion.sync.remote.vault import HUMAN, Refused

    since = 0
    while since < to_seq:
        page = remote.client.changes_page(since, 0, limit=PAGE)
        for rec in page.records:
            if rec.seq is None or rec.seq > to_seq:
                return None
            opened = remote.try_open(rec)
            if not isinstance(opened, Refused) and opened.author_kind == HUMAN:
                return rec.seq
        if not page.more or page.seq <= since:
            break
        since = page.seq
    return None


def zone(name: str) -> dt.tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return dt.UTC


def clock(ts: float | None, tz: str) -> str:
    if ts is None:
        return "--:--"
    return dt.datetime.fromtimestamp(ts, zone(tz)).strftime("%H:%M")


Contents = list[tuple[str | None, bool, str | None]]


def contents(remote: RemoteVault, spans: Sequence[Span]) -> Contents:
    """(before, before_known, after) of each span, fetched and verified in one batch."""
    befores: list[Any] = []
    for s in spans:
        if s.first.parent_rev <= 0:
            befores.append(None)
            continue
        try:
            befores.append(remote.record(s.path, s.first.parent_rev) or False)
        except Exception:  # a pruned or unreadable revision: shown, never revertible
            befores.append(False)
    metas = [s.last.meta for s in spans if not s.last.deleted]
    metas += [b.meta for b in befores if b not in (None, False) and not b.deleted]
    got = remote.fetch(metas) if metas else {}

    def text(meta: Any) -> str | None:
        if meta.deleted:
            return None
        return got[meta.sha256].decode("utf-8", errors="replace")

    out: Contents = []
    for s, b in zip(spans, befores, strict=True):
        after = text(s.last.meta)
        if b is None:
            out.append((None, True, after))
        elif b is False:
            out.append((None, False, after))
        else:
            out.append((text(b.meta), True, after))
    return out


def changes(
    remote: RemoteVault, feed: Feed, tz: str, explain: Callable[[Span, str | None], Sequence[str]]
) -> list[ChangeItem]:
    items = []
    for span, (before, known, after) in zip(feed.spans, contents(remote, feed.spans), strict=True):
        if known and _unpointed(before) == _unpointed(after):
            continue  # changed and changed back, or only Home.md's link to the review
        last = span.last
        items.append(
            ChangeItem(
                id=change_id(span.file_id, span.first.parent_rev, last.rev),
                path=span.path,
                file_id=span.file_id,
                from_rev=span.first.parent_rev,
                to_rev=last.rev,
                before=before,
                after=after,
                device=last.author_name,
                kind=last.author_kind,
                at=clock(last.committed_at, tz),
                before_known=known,
                notes=tuple(explain(span, after)),
            )
        )
    items.sort(key=lambda c: (c.path, c.to_rev))
    return items


def disagreements(items: Iterable[ChangeItem]) -> list[Disagreement]:
    """The flag lines a change added (`⚠ Disagrees with your line`), with the person's line
    right above each when there is one."""
    out = []
    for c in items:
        if c.after is None:
            continue
        had = set((c.before or "").split("\n"))
        rows = c.after.split("\n")
        for i, row in enumerate(rows):
            if row in had or not decide.is_flag(row):
                continue
            mine = None
            if i > 0 and not decide.is_flag(rows[i - 1]) and decide.statement(rows[i - 1]):
                mine = decide.statement(rows[i - 1])
            out.append(
                Disagreement(
                    id=disagreement_id(c.path, row),
                    path=c.path,
                    flag=row,
                    new=decide.statement(row),
                    mine=mine,
                )
            )
    return out


# ---------------------------------------------------------------- explanations


def report_notes(vault: Path, night: str, lang: str) -> dict[str, list[str]]:
    """Per vault path: what the night's dream report says of its change (its sources)."""
    path = vault / ".companion" / "dreams" / f"{night}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    out: dict[str, list[str]] = {}
    changes = data.get("changes") if isinstance(data, dict) else None
    for ch in changes if isinstance(changes, list) else []:
        if not isinstance(ch, dict) or not isinstance(ch.get("note"), str):
            continue
        lines = out.setdefault(ch["note"], [])
        why = _why(ch, lang)
        if why and len(lines) < 3:
            lines.append(f"{labels.text(lang, 'why')}: {why}")
        for ref in ch.get("provenance") or []:
            if not isinstance(ref, dict) or not isinstance(ref.get("quote"), str):
                continue
            quote = " ".join(ref["quote"].split())[:200]
            source = str(ref.get("source") or "")
            if source.startswith(".companion/"):
                continue  # the dream's own report: not a source worth showing
            where = link(source) if source.endswith(".md") and "/" in source else source
            line = f"{labels.text(lang, 'source')}: “{quote}”" + (f" — {where}" if where else "")
            if line not in lines and len(lines) < 3:
                lines.append(line)
    return out


def _why(change: dict[str, Any], lang: str) -> str:
    """What the dream says the change did, in the vault's language (its facts)."""
    from companion.dream.report import Change
    from companion.dream.summary import change_text

    try:
        text = change_text(Change.from_dict(change), lang)
    except Exception:  # a report of another version: no explanation rather than none at all
        return ""
    return " ".join(text.split())[:200]


def log_notes(vault: Path, lang: str) -> Callable[[Span], list[str]]:
    """What the agent's MCP log says of a span's writes (its stated reasons): only ever
    attached to a change the relay's history holds."""
    from companion.mcp.writelog import parse_time, read_writes

    try:
        writes = read_writes(vault)
    except Exception:
        writes = []

    def notes(span: Span) -> list[str]:
        lo = (span.first.committed_at or 0) - 600
        hi = (span.last.committed_at or 0) + 60
        out: list[str] = []
        for w in writes:
            t = parse_time(w.time)
            if w.path != span.path or t is None or not (lo <= t.timestamp() <= hi):
                continue
            if w.reason:
                line = f"{labels.text(lang, 'agent_said')}: “{' '.join(w.reason.split())[:200]}”"
                if line not in out and len(out) < 2:
                    out.append(line)
        return out

    return notes
