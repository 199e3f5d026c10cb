"""Step 4, Promote: the few facts that apply to every session go into Hermes's injected memory.

Eligible (nothing else ever is): the agent's own memory-tool adds from the window, lessons
marked `always:` / `siempre:`, and lessons recurring across at least three distinct sessions or
three distinct days (`RECURRENCE`). Never code, commands, paths to secrets or secrets
(`quality.promotion_problem`, the secret gate before it).

Writes go through `companion.memory.MemoryStore`, under the same lock the agent takes. Before
adding a fact, a stale entry on the same subject -- the same words (overlap of `SAME_SUBJECT`
or more) with another value: a number, time, address, version or path -- is replaced instead
(or removed, when the fact is already there), which counts against the removal cap. The
character budget is never exceeded: a fact that does not fit is reported (with the usage),
never dropped silently, and nothing is evicted to make room.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from companion.dream.consolidate import Explanation
from companion.dream.model import Candidate
from companion.dream.plan import Plan
from companion.dream.quality import promotion_problem
from companion.dream.report import Change, Skipped
from companion.dream.summary import fact, render
from companion.dream.text import jaccard, words
from companion.memory import MemoryRefused, MemoryStore, Op
from companion.memory import format as fmt
from companion.memory.pending import stage

RECURRENCE = 3
SAME_SUBJECT = 0.8
_ORDER = {"memory-tool": 0, "marker": 1, "recurrence": 2}


@dataclass
class _Planned:
    op: Op
    cand: Candidate
    replaced: str | None = None


@dataclass
class PromotionPlan:
    ops: dict[str, list[_Planned]] = field(default_factory=dict)
    before: dict[str, str | None] = field(default_factory=dict)
    simulated: dict[str, list[str]] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _file_text(store: MemoryStore) -> str | None:
    try:
        return store.path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return None


_VALUE = re.compile(r"[\d@/\\]|\w\.\w")


def _core_and_values(text: str) -> tuple[set[str], set[str]]:
    """Informative words that are not values, and the value-like tokens (numbers, times,
    addresses, versions, paths) of `text`."""
    core, values = [], set()
    for tok in text.split():
        t = tok.strip(".,;:!?()[]\"'")
        if t and _VALUE.search(t):
            values.add(t.casefold())
        else:
            core.append(t)
    return words(" ".join(core)), values


def _stale_entry(text: str, entries: list[str], fresh: set[str]) -> str | None:
    """The entry saying the same thing about the same subject with another value (a number,
    time, address, version or path): its other words overlap by `SAME_SUBJECT` or more."""
    core, values = _core_and_values(text)
    if len(core) < 2:
        return None
    best, best_score = None, 0.0
    for e in entries:
        if e in fresh or e == text:
            continue
        ecore, evalues = _core_and_values(e)
        score = jaccard(core, ecore)
        if score >= SAME_SUBJECT and evalues != values and score > best_score:
            best, best_score = e, score
    return best


def plan_promotions(
    cands: list[Candidate],
    stores: Mapping[str, MemoryStore],
    plan: Plan,
    explain: Explanation,
    rejected: Callable[[str], str | None] = lambda _k: None,
) -> PromotionPlan:
    out = PromotionPlan()
    working: dict[str, list[str]] = {}
    fresh: dict[str, set[str]] = {}
    for target, store in stores.items():
        try:
            working[target] = store.read()
        except MemoryRefused as exc:
            out.warnings.append(f"{store.name}: {exc.message}; nothing promoted to it")
            continue
        out.before[target] = _file_text(store)
        fresh[target] = set()
    eligible = [c for c in cands if c.promote]
    eligible.sort(key=lambda c: (_ORDER.get(c.promote or "", 9), c.time or 0))  # type: ignore[operator]
    for c in eligible:
        found = stores.get(c.target)
        if c.target not in working or found is None:
            continue
        store = found
        entries = working[c.target]
        content = fmt.normalise_entry(c.entry or c.text)
        if rejected(c.key):
            explain.add(c, "not promoted", f"undone on {rejected(c.key)}", store.name)
            continue
        problem = promotion_problem(content) or fmt.entry_problem(content)
        if problem:
            explain.add(c, "not promoted", f"{problem}: never injected", store.name)
            out.skipped.append(Skipped.of(c, "not_promotable", f"{problem}: not promoted"))
            continue
        if content in entries:
            stale = _stale_entry(content, entries, fresh[c.target])
            if stale is None or plan.removal_room() < 1:
                explain.add(c, "already promoted", f"already in {store.name}", store.name)
                continue
            working[c.target] = [e for e in entries if e != stale]
            plan.removed += 1
            explain.add(
                c,
                "promoted",
                f"already in {store.name}; removed the stale entry on the same subject",
                store.name,
            )
            out.ops.setdefault(c.target, []).append(
                _Planned(Op("remove", old_text=stale), c, stale)
            )
            continue
        stale = _stale_entry(content, entries, fresh[c.target])
        if stale is not None and plan.removal_room() < 1:
            explain.add(
                c, "not promoted", "would replace an entry: removal cap reached", store.name
            )
            out.skipped.append(Skipped.of(c, "cap", "the removal cap is reached"))
            continue
        trial = [content if e == stale else e for e in entries] if stale else [*entries, content]
        trial = fmt.dedupe(trial)
        usage = fmt.char_count(trial)
        if usage > store.limit:
            now = fmt.char_count(entries)
            why = (
                f"does not fit in {store.name} ({now:,}/{store.limit:,} chars; needs "
                f"{usage - now:,} more)"
            )
            explain.add(c, "not promoted", why, store.name)
            out.skipped.append(Skipped.of(c, "over_budget", why))
            continue
        if stale is not None:
            op = Op("replace", content=content, old_text=stale)
            plan.removed += 1
        else:
            op = Op("add", content=content)
        why = {
            "memory-tool": "the agent saved it with its memory tool",
            "marker": "marked always/siempre",
            "recurrence": f"came up in {c.seen} distinct sessions or days",
        }.get(c.promote or "", c.promote or "")
        if stale:
            why += "; replaces the stale entry on the same subject"
        explain.add(c, "promoted", why, store.name)
        working[c.target] = trial
        fresh[c.target].add(content)
        out.ops.setdefault(c.target, []).append(_Planned(op, c, stale))
    out.simulated = working
    return out


def apply_promotions(
    pp: PromotionPlan,
    stores: Mapping[str, MemoryStore],
    *,
    dry_run: bool,
    next_id: Callable[[], str],
) -> tuple[list[Change], list[Skipped]]:
    """Write the planned operations (one batch per fact, so one refusal does not block the
    others). Returns one `promoted` change per file, and the facts refused at write time."""
    changes: list[Change] = []
    skipped: list[Skipped] = []
    for target, planned in pp.ops.items():
        store = stores[target]
        before = _file_text(store) if not dry_run else pp.before.get(target)
        done: list[_Planned] = []
        if not dry_run and len(planned) > 1:
            # One locked write for the whole plan; if the store refuses it (the agent wrote
            # meanwhile), fall back to one batch per fact so one refusal blocks nothing else.
            try:
                result = store.apply_batch([p.op for p in planned])
            except MemoryRefused:
                pass
            else:
                done = list(planned) if result.changed else []
                planned = []
        for p in planned:
            if dry_run:
                done.append(p)
                continue
            try:
                result = store.apply_batch([p.op])
            except MemoryRefused as exc:
                why = (
                    exc.message
                    if exc.reason != "over_limit"
                    else (f"does not fit in {store.name} any more ({exc.usage})")
                )
                skipped.append(Skipped.of(p.cand, exc.reason, why))
                continue
            if result.changed:
                done.append(p)
        if not done:
            continue
        after = fmt.serialise(pp.simulated[target]) if dry_run else _file_text(store)
        adds = sum(1 for p in done if p.op.action == "add")
        reps = sum(1 for p in done if p.op.action == "replace")
        rems = sum(1 for p in done if p.op.action == "remove")
        facts = []
        if adds:
            facts.append(fact("facts_added", n=adds))
        if reps:
            facts.append(fact("entries_replaced", n=reps))
        if rems:
            facts.append(fact("entries_removed", n=rems))
        with contextlib.suppress(MemoryRefused):
            usage = store.usage(pp.simulated[target]) if dry_run else store.usage()
            facts.append(
                fact(
                    "memory_usage",
                    file=store.name,
                    current=usage.current,
                    limit=usage.limit,
                    percent=usage.percent,
                )
            )
        changes.append(
            Change(
                id=next_id(),
                kind="promoted",
                note=store.name,
                before=before,
                after=after,
                provenance=[q.to_dict() for p in done for q in p.cand.provenance],
                summary=render(facts),
                facts=facts,
                keys=[p.cand.key for p in done],
                removed=reps,
            )
        )
    return changes, skipped


def stage_promotions(pp: PromotionPlan, home: Path, *, dry_run: bool) -> list[Skipped]:
    """With Hermes's ``memory.write_approval`` on: leave each planned write in Hermes's pending
    store for the person to approve (``/memory pending``), and write nothing."""
    out: list[Skipped] = []
    for target, planned in pp.ops.items():
        for p in planned:
            where = "would be staged" if dry_run else f"staged as {stage(home, target, p.op)}"
            out.append(
                Skipped.of(
                    p.cand,
                    "staged",
                    f"{where} for your approval in Hermes (memory.write_approval is on): "
                    "review it with /memory pending",
                )
            )
    return out
