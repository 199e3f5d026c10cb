"""The `memory` tool: Hermes Agent's memory tool, over the files `companion memory` uses.

Same calls and the same answers as Hermes's own tool, so an agent moves between the two
without relearning: `action` add | replace | remove, `target` memory | user, `content`,
`old_text` (a unique piece of the entry), or `operations` for an all-or-nothing batch checked
against the final budget. The rules are `companion.memory.store.MemoryStore`'s -- budgets,
substring matching, the injection guard, the lock shared with Hermes, the drift guard -- this
module only shapes the result as Hermes does:

- success: ``{"success": true, "done": true, "target", "usage": "67% — 1,474/2,200 chars",
  "entry_count", "message", "note"}`` (the entries are not echoed: that invites repeats);
- failure: ``{"success": false, "error", ...}``; an overflow, a missing match or a missing
  `old_text` also carries ``current_entries`` (entries the guard would refuse are shown as a
  ``[BLOCKED: ...]`` placeholder, never verbatim) and ``usage``, so the agent can consolidate
  in the same turn.
Each landed change is recorded in the agent-write log for the morning review.
"""

from __future__ import annotations

import hashlib
from typing import Any

from companion.errors import InputError
from companion.mcp.context import ToolRefused, VaultContext
from companion.mcp.writelog import AgentWrite, make_diff
from companion.memory import format as fmt
from companion.memory import guard
from companion.memory.home import TARGETS, limits_from_config, resolve_home
from companion.memory.store import MemoryRefused, MemoryStore, Result

_WITH_ENTRIES = {"over_limit", "no_match"}
DONE_NOTE = "Saved. This change is complete; do not repeat it."


def store_for(ctx: VaultContext, target: str) -> MemoryStore:
    if target not in TARGETS:
        raise ToolRefused(
            f"Invalid target {target!r}. Use 'memory' or 'user'.",
            {"success": False, "error": f"Invalid target {target!r}. Use 'memory' or 'user'."},
        )
    home = ctx.hermes_home or resolve_home(config_home=ctx.config.settings.memory.hermes_home)
    return MemoryStore(home, target, limits_from_config(ctx.config)[target])


def shown_entries(store: MemoryStore) -> list[str]:
    """The live entries as an error may echo them: a poisoned one becomes a placeholder."""
    try:
        entries = store.read()
    except MemoryRefused:
        return []
    out = []
    for e in entries:
        finding = guard.check(e)
        out.append(
            e
            if finding is None
            else f"[BLOCKED: {store.name} entry refused by rule {finding.rule}; remove it with "
            "memory(action='remove')]"
        )
    return out


def _refused(store: MemoryStore, message: str, *, entries: bool, **extra: Any) -> ToolRefused:
    data: dict[str, Any] = {"success": False, "error": message, **extra}
    if entries:
        data["current_entries"] = shown_entries(store)
        data["usage"] = str(store.usage())
    return ToolRefused(message, data)


def memory(
    ctx: VaultContext,
    action: str,
    target: str,
    content: str,
    old_text: str,
    operations: list[dict[str, str]] | None,
) -> dict[str, Any]:
    if ctx.read_only:
        raise ToolRefused("this server is read-only (started with --read-only)")
    store = store_for(ctx, target)
    with ctx.quota.hold():  # the limit's check, the change and its record: one at a time
        try:
            ctx.quota.check()
        except ToolRefused as exc:
            raise _refused(store, exc.message, entries=False) from None
        return _apply(ctx, store, action, content, old_text, operations)


def _apply(
    ctx: VaultContext,
    store: MemoryStore,
    action: str,
    content: str,
    old_text: str,
    operations: list[dict[str, str]] | None,
) -> dict[str, Any]:
    if not operations:
        if action == "add" and not content.strip():
            raise _refused(store, "Content is required for 'add' action.", entries=False)
        if action in ("replace", "remove") and not old_text.strip():
            raise _refused(
                store,
                f"'{action}' needs old_text: a short unique piece of the entry to {action}. "
                "Retry with old_text set to part of one of the current_entries.",
                entries=True,
            )
        if action == "replace" and not content.strip():
            raise _refused(
                store, "content is required for 'replace' (use 'remove' to delete).", entries=False
            )
        if action not in ("add", "replace", "remove"):
            raise _refused(
                store, f"Unknown action {action!r}. Use: add, replace, remove", entries=False
            )
    try:
        before = store.read()
        if operations:
            result = store.apply_batch(operations)
        elif action == "add":
            result = store.add(content)
        elif action == "replace":
            result = store.replace(old_text, content)
        else:
            result = store.remove(old_text)
    except MemoryRefused as exc:
        extra: dict[str, Any] = {}
        if exc.matches:
            extra["matches"] = list(exc.matches)
        if exc.backup is not None:
            extra["drift_backup"] = str(exc.backup)
        if exc.rule:
            extra["rule"] = exc.rule
        raise _refused(store, exc.message, entries=exc.reason in _WITH_ENTRIES, **extra) from None
    except InputError as exc:
        raise _refused(store, str(exc), entries=False) from None
    if result.changed:
        _record(ctx, store, before, result, "batch" if operations else action)
    return {
        "success": True,
        "done": True,
        "target": result.target,
        "usage": result.usage.describe(),
        "entry_count": len(result.entries),
        "message": result.message,
        "note": DONE_NOTE,
    }


def _record(
    ctx: VaultContext, store: MemoryStore, before: list[str], result: Result, action: str
) -> None:
    old, new = fmt.serialise(before), fmt.serialise(result.entries)
    diff, truncated = make_diff(store.name, old, new, ctx.has_secret)
    write = AgentWrite(
        tool="memory",
        path=store.name,
        action=f"memory_{action}",
        message=f"{result.message} {store.name}: {result.usage.describe()}",
        client=ctx.client,
        before_sha256=hashlib.sha256(old.encode()).hexdigest(),
        after_sha256=hashlib.sha256(new.encode()).hexdigest(),
        diff=diff,
        diff_truncated=truncated,
    )
    try:
        ctx.log.record(write)
    except OSError:
        pass  # the memory write landed; the review only misses it


def memory_snapshot(ctx: VaultContext, target: str) -> str:
    """The block the agent sees at session start for `target` (the `memory://` resource)."""
    from companion.memory.render import render_block

    store = store_for(ctx, target)
    return render_block(target, store.read(), store.limit)
