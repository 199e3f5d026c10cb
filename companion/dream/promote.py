"""Step 4, Promote: the few facts that apply to every session go into Hermes's injected memory.

Eligible (nothing else ever is): the agent's own memory-tool adds from the window, lessons
marked `always:` / `siempre:`, the person's marked statements about themselves (USER.md), and
lessons that stayed true on at least three distinct days (`RECURRENCE`; saying a thing three
times in one day is repetition, not durability; what is tied to a relative day never gets
this far). Never code, commands, paths to secrets or secrets (`quality.promotion_problem`, the
secret gate before it). The agent's replace and remove calls are followed; a fact a past
dream saw in the file and a person deleted since is not added back.

Writes go through `companion.memory.MemoryStore`, under the same lock the agent takes. The
plan reads no file: `read_memory` reads each file's entries, bytes and time once, then
`plan_memory_writes` plans on them (`plan_promotions` does both).

Supersession by subject, not wording: before adding a fact, an older entry on the same subject
-- `companion.dream.meaning.same_subject`: the same words, or at least three subject words
shared covering 80% of the shorter entry's, with another value (a number, time, address,
version or path) or the opposite polarity -- is replaced instead (or removed, when the fact is
already there). On every dream, even one that promotes nothing, two entries of one file on the
same subject are compared by the day the ledger first saw each (`dated`): the older one goes;
when neither is known to be older, the pair is flagged for the morning (`PromotionPlan.flagged`,
the report's contradictions with a `target`). Every such replacement goes through one function,
`supersede_entry`, which plans it, counts it against the removal cap and records it for the
report's `superseded` list (replacing an injected entry is the risky change a review policy
may turn into a proposal). The
character budget is never exceeded: a fact that does not fit is reported (with the usage),
never dropped silently, and nothing is evicted to make room.

Nothing is lost to the agent's lock: a file whose lock is held when the dream plans
(`lock_free`), or that refuses a write as `locked`, gets nothing this run; its facts are
reported (`locked`, "blocked by the memory lock: will retry at the next dream"), never said to
be promoted, and kept in `PromotionPlan.pending` for `companion.dream.pending`, which hands
them to the next dream.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from companion.dream import blocks
from companion.dream.blocks import Ref
from companion.dream.consolidate import Explanation
from companion.dream.distill_rules import MemoryEdit
from companion.dream.meaning import meaning, same_subject
from companion.dream.model import Candidate, Provenance
from companion.dream.plan import Plan
from companion.dream.quality import promotion_problem
from companion.dream.report import Change, Skipped
from companion.dream.steps import hold, is_flag_line, line_core
from companion.dream.summary import fact, render
from companion.dream.voice import third_person
from companion.memory import MemoryRefused, MemoryStore, Op
from companion.memory import format as fmt
from companion.memory.pending import stage

RECURRENCE = 3  # distinct days
_ORDER = {"memory-tool": 0, "marker": 1, "recurrence": 2}
LOCKED = "blocked by the memory lock: will retry at the next dream"


def locked_why(store: MemoryStore) -> str:
    """Why a fact for `store` waits, without a path (the report names no absolute path)."""
    return f"{LOCKED} ({store.name}.lock is held by the agent or another writer)"


def lock_free(store: MemoryStore) -> bool:
    """True unless another writer holds `store`'s lock for longer than the store waits for it
    (`MemoryStore.lock_timeout`). Nothing is created: a missing folder has no lock held."""
    if not store.lock_path.parent.is_dir():
        return True
    lock = FileLock(store.lock_path, timeout=store.lock_timeout, preserve_lock_file=True)
    try:
        lock.acquire()
    except Timeout:
        return False
    except OSError:
        return True  # cannot even open the lock file: the write will say why
    lock.release()
    return True


@dataclass
class _Planned:
    op: Op
    cand: Candidate
    replaced: str | None = None
    edit: bool = False  # the agent's replace or remove call, followed
    superseded: dict[str, Any] | None = None  # the report's record, once written


@dataclass
class PromotionPlan:
    ops: dict[str, list[_Planned]] = field(default_factory=dict)
    before: dict[str, str | None] = field(default_factory=dict)
    simulated: dict[str, list[str]] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    in_memory: list[str] = field(default_factory=list)  # keys of facts there after the plan
    # facts the agent's memory lock kept out this run: the next dream retries them
    pending: list[Candidate] = field(default_factory=list)
    # entries replaced by a newer one on the same subject, once written: {file, target, old,
    # new, why, source}
    superseded: list[dict[str, Any]] = field(default_factory=list)
    # pairs of entries on the same subject neither known to be the newer: for the morning
    flagged: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class MemoryFile:
    """One injected memory file as the plan sees it, read once before planning
    (`read_memory`): the plan itself reads no file."""

    name: str  # MEMORY.md, USER.md
    limit: int  # its character budget
    entries: list[str] | None  # None: blocked by the lock, or unreadable (`problem`)
    text: str | None = None  # the file as it was (the report's before), None when absent
    mtime: float | None = None
    problem: str | None = None


def read_memory(
    stores: Mapping[str, MemoryStore], blocked: Collection[str] = ()
) -> dict[str, MemoryFile]:
    """Read every injected memory file the plan needs: its entries, bytes and time. A
    blocked file (its lock held by another writer) is not read."""
    out: dict[str, MemoryFile] = {}
    for target, store in stores.items():
        if target in blocked:
            out[target] = MemoryFile(store.name, store.limit, None)
            continue
        try:
            entries = store.read()
        except MemoryRefused as exc:
            out[target] = MemoryFile(store.name, store.limit, None, problem=exc.message)
            continue
        out[target] = MemoryFile(
            store.name, store.limit, entries, _file_text(store), _file_mtime(store)
        )
    return out


def _in_third_person(c: Candidate) -> bool:
    """A statement of the person about themselves, headed for USER.md, in their own words."""
    return c.target == "user" and c.origin != "memory-tool"


def _file_text(store: MemoryStore) -> str | None:
    try:
        return store.path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return None


def _stale_entry(text: str, entries: list[str], fresh: set[str]) -> str | None:
    """The entry this fact makes stale: the same subject (even said with other words around
    it) with another value (a number, time, address, version or path) or the opposite
    polarity (`companion.dream.meaning.same_subject`)."""
    for e in entries:
        if e in fresh or e == text:
            continue
        if same_subject(text, e):
            return e
    return None


def supersede_entry(
    out: PromotionPlan,
    plan: Plan,
    working: dict[str, list[str]],
    *,
    target: str,
    file: str,
    old: str,
    new: str,
    cand: Candidate,
    why: str,
) -> _Planned:
    """Plan replacing the injected entry `old` with the newer `new` on the same subject (a
    `replace`, as Hermes's memory tool does it; a `remove` when `new` is in the file already),
    within the removal cap the caller checked. The one door for this risky change: the record
    it keeps (`superseded`: file, target, old, new, why, source) reaches the report once the
    write lands."""
    entries = working[target]
    if new in entries:
        op = Op("remove", old_text=old)
        working[target] = [e for e in entries if e != old]
    else:
        op = Op("replace", content=new, old_text=old)
        working[target] = fmt.dedupe([new if e == old else e for e in entries])
    plan.removed += 1
    record = {
        "file": file,
        "target": target,
        "old": old,
        "new": new,
        "why": why,
        "source": cand.where(),
    }
    planned = _Planned(op, cand, old, superseded=record)
    out.ops.setdefault(target, []).append(planned)
    return planned


def _entry_cand(target: str, entry: str, file: str) -> Candidate:
    """An entry already in the file, as the candidate a supersession is recorded for."""
    return Candidate(
        "fact",
        entry,
        [Provenance(Ref(file, None, None), entry)],
        "memory",
        target=target,
        consolidate=False,
    )


def reconcile_entries(
    stores: Mapping[str, MemoryStore | MemoryFile],
    working: dict[str, list[str]],
    plan: Plan,
    out: PromotionPlan,
    dated: Callable[[str, str], str],
) -> None:
    """Two entries of one file on the same subject with another value: the one `dated`
    (target, entry) -> day first seen says is newer stays, the other is superseded; when the
    days are the same (neither is known to be older), the pair is flagged for the morning."""
    for target, store in stores.items():
        if target not in working:
            continue
        i = 0
        while i < len(working[target]):
            entries = working[target]
            j = i + 1
            removed = False
            while j < len(entries):
                a, b = entries[i], entries[j]
                how = same_subject(b, a)
                if not how:
                    j += 1
                    continue
                da, db = dated(target, a), dated(target, b)
                if da == db or plan.removal_room() < 1:
                    out.flagged.append(
                        {
                            "note": store.name,
                            "target": target,
                            "line": i + 1,
                            "existing": a,
                            "new": b,
                            "why": how,
                            "edited": False,
                            "days": [da, db],
                        }
                    )
                    j += 1
                    continue
                old, new = (a, b) if da < db else (b, a)
                supersede_entry(
                    out,
                    plan,
                    working,
                    target=target,
                    file=store.name,
                    old=old,
                    new=new,
                    cand=_entry_cand(target, new, store.name),
                    why=f"{how}: the newer entry (first seen {max(da, db)}) stays",
                )
                removed = True
                break
            if not removed:
                i += 1


def _file_mtime(store: MemoryStore) -> float | None:
    try:
        return store.path.stat().st_mtime
    except OSError:
        return None


def _follow_edits(
    edits: Sequence[MemoryEdit],
    stores: Mapping[str, MemoryFile],
    working: dict[str, list[str]],
    plan: Plan,
    out: PromotionPlan,
) -> None:
    """Follow the agent's replace and remove calls: an entry its `old_text` still matches
    (exactly one, as Hermes matches) is replaced or removed, unless the file changed after
    the call (Hermes applied it itself, or a person wrote since: their version stands)."""
    for e in edits:
        store = stores.get(e.target)
        entries = working.get(e.target)
        if store is None or entries is None:
            continue
        hits = list(dict.fromkeys(x for x in entries if e.old_text in x))
        if len(hits) != 1:
            continue  # already applied (no match), or ambiguous: leave it
        mtime = store.mtime
        if mtime is not None and mtime >= e.time.timestamp():
            continue  # the file changed after the call: Hermes applied it, or a person wrote
        if plan.removal_room() < 1:
            out.warnings.append(
                f"{store.name}: the agent's {'replace' if e.content else 'remove'} of "
                f"{hits[0]!r} not followed (removal cap reached)"
            )
            continue
        old = hits[0]
        if e.content:
            trial = fmt.dedupe([e.content if x == old else x for x in entries])
            if fmt.char_count(trial) > store.limit:
                continue
            op = Op("replace", content=e.content, old_text=old)
        else:
            trial = [x for x in entries if x != old]
            op = Op("remove", old_text=old)
        plan.removed += 1
        working[e.target] = trial
        cand = Candidate(
            "fact",
            e.content or old,
            [Provenance(e.ref, e.content or e.old_text, e.time)],
            "memory-tool",
            promote="memory-tool",
            target=e.target,
            consolidate=False,
            time=e.time,
        )
        out.ops.setdefault(e.target, []).append(_Planned(op, cand, old, edit=True))


def plan_promotions(
    cands: list[Candidate],
    stores: Mapping[str, MemoryStore],
    plan: Plan,
    explain: Explanation,
    rejected: Callable[[str], str | None] = lambda _k: None,
    *,
    edits: Sequence[MemoryEdit] = (),
    was_in_memory: Callable[[str], str | None] = lambda _k: None,
    blocked: Collection[str] = (),
    dated: Callable[[str, str], str] | None = None,
) -> PromotionPlan:
    """Plan the writes to the injected memory: the agent's own replace and remove calls
    first, then each eligible fact (see the module docstring). `was_in_memory` tells a fact
    a past dream saw there: gone now, a person (or the agent) deleted it, and it stays out.
    `blocked` names the targets whose lock another writer holds: nothing is planned for them,
    their facts are reported and kept in `pending`. `dated(target, entry)` is the day an entry
    was first seen in its file (the ledger); with it, entries on the same subject are
    reconciled first (`reconcile_entries`)."""
    locked = {t: locked_why(s) for t, s in stores.items() if t in blocked}
    return plan_memory_writes(
        cands,
        read_memory(stores, blocked),
        plan,
        explain,
        rejected,
        edits=edits,
        was_in_memory=was_in_memory,
        blocked=locked,
        dated=dated,
    )


def plan_memory_writes(
    cands: list[Candidate],
    files: Mapping[str, MemoryFile],
    plan: Plan,
    explain: Explanation,
    rejected: Callable[[str], str | None] = lambda _k: None,
    *,
    edits: Sequence[MemoryEdit] = (),
    was_in_memory: Callable[[str], str | None] = lambda _k: None,
    blocked: Mapping[str, str] | None = None,
    dated: Callable[[str, str], str] | None = None,
) -> PromotionPlan:
    """`plan_promotions` on the memory files as read (`read_memory`): no file is read or
    written here. `blocked`: the targets whose lock is held, and why (each fact for them is
    the plan's `Hold`, `steps.hold`). `plan` only counts removals against the cap."""
    out = PromotionPlan()
    working: dict[str, list[str]] = {}
    fresh: dict[str, set[str]] = {}
    locked = dict(blocked or {})
    for target, f in files.items():
        if target in locked:
            continue
        if f.entries is None:
            out.warnings.append(f"{f.name}: {f.problem}; nothing promoted to it")
            continue
        working[target] = list(f.entries)
        out.before[target] = f.text
        fresh[target] = set()
    _follow_edits(edits, files, working, plan, out)
    if dated is not None:
        reconcile_entries(files, working, plan, out, dated)
    eligible = [c for c in cands if c.promote]
    eligible.sort(key=lambda c: (_ORDER.get(c.promote or "", 9), c.time or 0))  # type: ignore[operator]
    for c in eligible:
        found = files.get(c.target)
        held = hold(c, locked)  # the plan's Hold: kept for the next dream
        if found is not None and held is not None:
            explain.add(c, "not promoted", held.why, found.name)
            out.skipped.append(Skipped.of(c, "locked", held.why))
            out.pending.append(c)
            continue
        if c.target not in working or found is None:
            continue
        store = found
        entries = working[c.target]
        said = fmt.normalise_entry(c.entry or c.text)
        # USER.md speaks of the person in the third person, as Hermes writes it; the agent's
        # own entries are already in its words
        content = third_person(said) if _in_third_person(c) else said
        if rejected(c.key):
            explain.add(c, "not promoted", f"undone on {rejected(c.key)}", store.name)
            continue
        problem = promotion_problem(content) or fmt.entry_problem(content)
        if problem:
            explain.add(c, "not promoted", f"{problem}: never injected", store.name)
            out.skipped.append(Skipped.of(c, "not_promotable", f"{problem}: not promoted"))
            continue
        if content in entries or said in entries:  # an older dream's first-person entry
            content = content if content in entries else said
            out.in_memory.append(c.key)
            stale = _stale_entry(content, entries, fresh[c.target])
            if stale is None or plan.removal_room() < 1:
                explain.add(c, "already promoted", f"already in {store.name}", store.name)
                continue
            supersede_entry(
                out,
                plan,
                working,
                target=c.target,
                file=store.name,
                old=stale,
                new=content,
                cand=c,
                why="the same subject with another value: the fact already there stays",
            )
            explain.add(
                c,
                "promoted",
                f"already in {store.name}; removed the stale entry on the same subject",
                store.name,
            )
            continue
        gone = was_in_memory(c.key)
        if gone:
            why = (
                f"was in {store.name} on {gone} and is not any more: deleted since, not added back"
            )
            explain.add(c, "not promoted", why, store.name)
            out.skipped.append(Skipped.of(c, "deleted", why))
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
        why = {
            "memory-tool": "the agent saved it with its memory tool",
            "marker": "marked always/siempre",
            "recurrence": f"came up on {c.seen} distinct days",
        }.get(c.promote or "", c.promote or "")
        if c.retry_since:
            why += f"; retried: the memory lock blocked it on {c.retry_since}"
        if stale:
            why += "; replaces the stale entry on the same subject"
        explain.add(c, "promoted", why, store.name)
        if stale is not None:
            supersede_entry(
                out,
                plan,
                working,
                target=c.target,
                file=store.name,
                old=stale,
                new=content,
                cand=c,
                why="the same subject with another value: the newer fact replaces it",
            )
        else:
            working[c.target] = trial
            out.ops.setdefault(c.target, []).append(_Planned(Op("add", content=content), c))
        fresh[c.target].add(content)
        out.in_memory.append(c.key)
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
            except MemoryRefused as exc:
                if exc.reason == "locked":  # the agent holds it: every fact waits
                    _lock_refused(planned, store, pp, skipped)
                    planned = []
            else:
                done = list(planned) if result.changed else []
                planned = []
        for i, p in enumerate(planned):
            if dry_run:
                done.append(p)
                continue
            try:
                result = store.apply_batch([p.op])
            except MemoryRefused as exc:
                if exc.reason == "locked":
                    _lock_refused(planned[i:], store, pp, skipped)
                    break
                why = (
                    _no_home(exc.message, store)
                    if exc.reason != "over_limit"
                    else (f"does not fit in {store.name} any more ({exc.usage})")
                )
                skipped.append(Skipped.of(p.cand, exc.reason, why))
                continue
            if result.changed:
                done.append(p)
        if not done:
            continue
        pp.superseded.extend(p.superseded for p in done if p.superseded is not None)
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
                removed=reps + rems,
            )
        )
    return changes, skipped


def _lock_refused(
    planned: Sequence[_Planned], store: MemoryStore, pp: PromotionPlan, skipped: list[Skipped]
) -> None:
    """The lock was taken between planning and writing: these facts wait for the next dream."""
    for p in planned:
        if p.edit:  # the agent's own replace or remove: its call, not a fact to carry over
            skipped.append(Skipped.of(p.cand, "locked", f"{store.name} is locked: not followed"))
            continue
        skipped.append(Skipped.of(p.cand, "locked", locked_why(store)))
        pp.pending.append(p.cand)


def _no_home(message: str, store: MemoryStore) -> str:
    """A store's message with its folder written `$HERMES_HOME` (no absolute path)."""
    return message.replace(str(store.home), "$HERMES_HOME")


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


def notes_against_memory(
    entries: Mapping[str, list[str]],
    files: Mapping[str, str],
    notes: Collection[str],
    read: Callable[[str], str | None],
    owns: Callable[[str, str], bool],
) -> list[dict[str, Any]]:
    """The lines of dream blocks a person corrected (or typed in) that an injected entry
    disagrees with -- the same subject, another value (`meaning.same_subject`) -- as the
    report's contradictions with a `target`: `{note, line, existing (her line), entry, file,
    target, why, edited}`. The entry is not changed: the person's line is read, never
    trusted over the agent's memory without her."""
    pool = [(t, e) for t, es in entries.items() for e in es if meaning(e).values]
    if not pool:
        return []
    out: list[dict[str, Any]] = []
    for rel in notes:
        text = read(rel)
        if not text or "dream:begin" not in text:
            continue
        raw = blocks.split_lines(text)
        for dl in blocks.dream_lines(text):
            line = raw[dl.line - 1].rstrip("\r")
            if dl.kind != "content" or is_flag_line(line) or owns(rel, line):
                continue
            core = line_core(line)
            for target, entry in pool:
                how = same_subject(entry, core)
                if how:
                    out.append(
                        {
                            "note": rel,
                            "line": dl.line,
                            "existing": core,
                            "entry": entry,
                            "file": files.get(target, target),
                            "target": target,
                            "why": how,
                            "edited": True,
                        }
                    )
    return out
