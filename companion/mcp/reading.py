"""The read tools: search, read, list, recent changes, links, orphans, broken links, last dream.

Each function takes the server's `VaultContext` and returns a JSON-able dict, or raises
`ToolRefused` with a one-line reason. Nothing here writes to the vault. Notes the vault's ignore
rules exclude, or inside hidden folders, are neither listed nor read (`companion.mcp.paths`).
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import re
from collections.abc import Callable
from typing import Any

from companion.errors import CompanionError
from companion.mcp.context import ToolRefused, VaultContext
from companion.mcp.paths import folder_path, note_path
from companion.mcp.writelog import iso, last_writes_by_path
from companion.sync.round.conflicts import AGENT, HUMAN
from companion.vault.note import parse_note
from companion.vault.reader import read_note_text

MAX_READ_CHARS = 200_000
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$", re.I)
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 604800}


def _title(rel: str) -> str:
    name = rel.rpartition("/")[2]
    return name[:-3] if name.lower().endswith(".md") else name


def _visible(ctx: VaultContext, rel: str) -> bool:
    return not any(s.startswith(".") for s in rel.split("/")) and not ctx.ignore.is_ignored(rel)


def _visibility(ctx: VaultContext) -> Callable[[str], bool]:
    """`_visible`, and outside this agent's `no_read` folders (read once per call)."""
    from companion.mcp.scope import readable

    may = readable(ctx)
    return lambda rel: _visible(ctx, rel) and may(rel)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))


def _when(ns: int) -> str:
    return iso(dt.datetime.fromtimestamp(ns / 1e9, dt.UTC))


def search_notes(ctx: VaultContext, query: str, limit: int) -> dict[str, Any]:
    if len(query) > ctx.limits.query_chars:
        raise ToolRefused(f"the query is longer than {ctx.limits.query_chars} characters")
    vis = _visibility(ctx)
    with ctx.locked():
        index = ctx.index()
        try:
            hits = index.search(query, limit)
            visible = [h for h in hits if vis(h.path)]
            if len(visible) < len(hits):  # ignored notes matched: look a little further
                hits = index.search(query, limit * 3 + 20)
                visible = [h for h in hits if vis(h.path)]
        except CompanionError as exc:
            raise ToolRefused(str(exc)) from None
    results = [
        {"path": h.path, "title": _title(h.path), "line": h.line, "snippet": h.snippet,
         "score": h.score}
        for h in visible[:limit]
    ]  # fmt: skip
    return {"query": query, "count": len(results), "results": results}


def _read_text(ctx: VaultContext, rel: str) -> str:
    rr = read_note_text(ctx.root / rel, rel, ctx.vault.max_file_bytes)
    if rr.issue is not None:
        if "cannot open" in rr.issue.message and not (ctx.root / rel).exists():
            with ctx.locked():
                known = ctx.index().paths()
            close = difflib.get_close_matches(rel, known, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ToolRefused(f"no note at {rel}{hint}")
        raise ToolRefused(f"{rel}: {rr.issue.message}")
    assert rr.text is not None
    return rr.text


def writer_info(ctx: VaultContext, rel: str) -> dict[str, Any]:
    ctx.sync_index()
    w = ctx.editors.last_writer(rel)
    return {
        "by": "person" if w.kind == HUMAN else w.kind,
        "device": w.device,
        "at": iso(w.when) if w.when else None,
        "person_editing": ctx.edited_recently(rel),
    }


def read_note(ctx: VaultContext, path: str) -> dict[str, Any]:
    rel = note_path(ctx, path)
    text = _read_text(ctx, rel)
    note = parse_note(text, rel)
    with ctx.locked():
        graph = ctx.graph()
        vis = _visibility(ctx)
        backlinks = sorted(b for b in graph.backlinks(rel) if vis(b))
        outgoing = []
        for link in note.links:
            resolved = ctx.vault.resolve_link(link.target, rel) if link.target else rel
            outgoing.append(
                {"target": link.target or rel, "heading": link.subpath or None, "line": link.line,
                 "resolved": resolved, "broken": resolved is None, "embed": link.embed}
            )  # fmt: skip
    truncated = len(text) > MAX_READ_CHARS
    return {
        "path": rel,
        "title": note.title,
        "frontmatter": _jsonable(note.frontmatter),
        "tags": list(note.tags),
        "headings": [{"level": h.level, "text": h.text, "line": h.line} for h in note.headings],
        "text": text[:MAX_READ_CHARS],
        "truncated": truncated,
        "chars": len(text),
        "outgoing_links": outgoing,
        "backlinks": backlinks,
        "last_edit": writer_info(ctx, rel),
        "warnings": list(note.warnings),
    }


def note_text(ctx: VaultContext, path: str) -> str:
    """The text of a note, for the `vault://` resource."""
    rel = note_path(ctx, path)
    return _read_text(ctx, rel)[:MAX_READ_CHARS]


def list_notes(ctx: VaultContext, folder: str, limit: int) -> dict[str, Any]:
    base = folder_path(ctx, folder)
    prefix = base + "/" if base else ""
    with ctx.locked():
        index = ctx.index()
        scan = index.scan
        stats = dict(scan.notes) if scan is not None else {}
    vis = _visibility(ctx)
    rels = sorted(p for p in stats if p.startswith(prefix) and vis(p))
    if base and not rels and not (ctx.root / base).is_dir():
        raise ToolRefused(f"no folder {base!r} in the vault")
    folders: dict[str, int] = {}
    direct = []
    for p in rels:
        rest = p[len(prefix) :]
        if "/" in rest:
            top = rest.split("/", 1)[0]
            folders[top] = folders.get(top, 0) + 1
        else:
            direct.append(p)
    notes = [
        {"path": p, "title": _title(p), "size": stats[p].size, "modified": _when(stats[p].mtime_ns)}
        for p in direct[:limit]
    ]
    return {
        "folder": base,
        "notes": notes,
        "count": len(direct),
        "truncated": len(direct) > limit,
        "folders": [{"folder": prefix + f, "notes": n} for f, n in sorted(folders.items())],
    }


def parse_since(ctx: VaultContext, since: str) -> dt.datetime:
    """`since` as a UTC time: a duration back from now (`90m`, `24h`, `7d`, `2w`) or an ISO
    8601 time (one without an offset is in the `[dream] timezone`)."""
    now = ctx.now()
    m = _DURATION.match(since or "")
    if m:
        return now - dt.timedelta(seconds=float(m[1]) * _UNITS[m[2].lower()])
    try:
        t = dt.datetime.fromisoformat(since.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ToolRefused(
            f"since {since!r} is neither a duration (90m, 24h, 7d, 2w) nor an ISO 8601 time"
        ) from None
    if t.tzinfo is None:
        from zoneinfo import ZoneInfo

        try:
            t = t.replace(tzinfo=ZoneInfo(ctx.config.settings.dream.timezone))
        except (KeyError, ValueError):
            t = t.replace(tzinfo=dt.UTC)
    return t.astimezone(dt.UTC)


def recent_changes(ctx: VaultContext, since: str, limit: int) -> dict[str, Any]:
    start = parse_since(ctx, since)
    start_ns = int(start.timestamp() * 1e9)
    with ctx.locked():
        index = ctx.index()
        scan = index.scan
        notes = dict(scan.notes) if scan is not None else {}
    paths = {p for p, st in notes.items() if st.mtime_ns >= start_ns}
    sync = ctx.sync_index()
    if sync is not None:
        for e in sync.files.entries_since(start_ns):
            if e.path.lower().endswith(".md"):
                paths.add(e.path)
    agent_writes = last_writes_by_path(ctx.root, start - dt.timedelta(days=30))
    rows = []
    vis = _visibility(ctx)
    for rel in paths:
        if not vis(rel):
            continue
        w = ctx.editors.last_writer(rel)
        when = w.when
        if when is None and rel in notes:
            when = dt.datetime.fromtimestamp(notes[rel].mtime_ns / 1e9, dt.UTC)
        if when is None or when < start:
            continue
        by = "person" if w.kind == HUMAN else w.kind
        row: dict[str, Any] = {
            "path": rel,
            "title": _title(rel),
            "by": by,
            "device": w.device,
            "at": iso(when),
            "change": "deleted" if w.deleted else "changed",
        }
        mine = agent_writes.get(rel)
        if by != AGENT and mine is not None and mine.when is not None and mine.when <= when:
            row["corrects_agent_write"] = {
                "at": mine.time,
                "tool": mine.tool,
                "action": mine.action,
            }
        rows.append(row)
    order = {"person": 0, "unknown": 1, AGENT: 2}
    ordered = sorted(rows, key=lambda r: r["at"], reverse=True)  # newest first ...
    ordered.sort(key=lambda r: order.get(r["by"], 1))  # ... within: person, unknown, agent
    return {
        "since": iso(start),
        "count": len(ordered),
        "person_edits": sum(1 for r in ordered if r["by"] == "person"),
        "truncated": len(ordered) > limit,
        "changes": ordered[:limit],
        "note": "The person's edits come first: read them before writing; a note a person "
        "edited recently is only ever appended to.",
    }


def links(ctx: VaultContext, path: str) -> dict[str, Any]:
    rel = note_path(ctx, path)
    if not (ctx.root / rel).is_file():
        raise ToolRefused(f"no note at {rel}")
    with ctx.locked():
        g = ctx.graph()
        out = sorted(g.outbound.get(rel, ()))
        broken = [
            {"line": b.line, "target": b.target, "raw": b.raw} for b in g.broken if b.source == rel
        ]
        vis = _visibility(ctx)
        back = sorted(b for b in g.backlinks(rel) if vis(b))
    return {"path": rel, "outgoing": out, "broken": broken, "backlinks": back}


def orphans(ctx: VaultContext, limit: int) -> dict[str, Any]:
    vis = _visibility(ctx)
    with ctx.locked():
        items = [p for p in ctx.graph().orphans() if vis(p)]
    return {"count": len(items), "truncated": len(items) > limit, "orphans": items[:limit]}


def broken_links(ctx: VaultContext, limit: int) -> dict[str, Any]:
    vis = _visibility(ctx)
    with ctx.locked():
        items = [
            {"source": b.source, "line": b.line, "target": b.target, "raw": b.raw}
            for b in sorted(ctx.graph().broken)
            if vis(b.source)
        ]
    return {"count": len(items), "truncated": len(items) > limit, "broken_links": items[:limit]}


def last_dream(ctx: VaultContext) -> dict[str, Any]:
    from companion.dream.report import list_reports, load_report
    from companion.mcp.scope import readable

    may = readable(ctx)
    for path in reversed(list_reports(ctx.root)):
        try:
            rep = load_report(ctx.root, path.stem)
        except CompanionError as exc:
            raise ToolRefused(str(exc)) from None
        if rep is None:
            continue
        return {
            "found": True,
            "date": rep.date,
            "status": rep.status,
            "ran_on": rep.ran_on,
            "finished_at": rep.finished_at,
            "nothing_changed": rep.nothing_changed,
            "undone": bool(rep.undone_at),
            "counts": rep.counts,
            "changes": [
                {"kind": c.kind, "note": c.note, "summary": c.summary}
                for c in rep.changes
                if not c.note or may(c.note)
            ],
            "skipped": [{"code": s.code, "reason": s.reason} for s in rep.skipped],
            "warnings": rep.warnings,
            "orphans": len(rep.orphans),
            "report": path.relative_to(ctx.root).as_posix(),
        }
    return {"found": False, "message": "no dream has run on this vault yet"}
