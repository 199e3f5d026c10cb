"""Risky changes to the injected memory are proposed, not applied (issue 40).

`[dream] apply` says which MEMORY.md / USER.md changes the dream makes itself and which wait for
the person:

- `auto`: none wait (the dream before this rule);
- `propose-risky` (default): a change `is_risky` names -- an add whose only source is an
  assistant message, any replacement or removal of an injected entry, and text the injection
  guard is unsure of;
- `propose-all`: every change to MEMORY.md / USER.md, the person's own `remember:` included.

Who said it. The person's words are a user message or the journal. The agent's memory-tool add is
the agent's own conclusion, saved on purpose (and Hermes has normally applied it already): not
risky by its source. An `always:` line in an assistant message that no user message or journal
line says too is the agent's remark, not a decision to remember it: risky.

The guard's doubt. `companion.memory.guard.unsure(text) -> why | None` is the guard's third
verdict: no clear injection, but the shape of one (an order or an action with an outside
address, a command run as root or piped into a shell, most of an attack phrase, an encoded run
that reads as text). `guard_unsure(text)` calls it. A text the guard refuses never gets this far.

A proposal is never lost. The planned operation is taken out of the night's writes (nothing it
holds reaches the memory files) and kept in `.companion/dreams/proposals.json` (in the vault:
every device sees it), with a stable id (a hash of target, operation, old and new text, so the
same change proposed again by a later run is the same proposal), and listed in the night's
report under `proposals`. Undecided proposals are carried to every later run and night until the
person applies or drops them (`companion dream proposals VAULT apply ID|--all`, `drop
ID|--all`); a decided one is not proposed again. Applying goes through `MemoryStore` under the
agent's lock: a held lock keeps the proposal pending; an entry that changed since it was proposed
refuses it, with why, and it stays pending until the person decides. Each decision, with its time
and device, is written into the reports that list the proposal.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import socket
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from companion.dream.consolidate import Explanation
from companion.dream.model import Candidate
from companion.dream.promote import PromotionPlan
from companion.dream.report import DREAMS_DIR, list_reports, write_json_atomic
from companion.dream.steps import Propose, memory_step
from companion.memory import MemoryRefused, MemoryStore, Op
from companion.memory import format as fmt
from companion.memory.home import TARGETS

MODES = ("auto", "propose-risky", "propose-all")
PENDING, APPLIED, DROPPED = "pending", "applied", "dropped"
VERSION = 1
KEEP_DECIDED_DAYS = 30  # a decided proposal is remembered this long (the window is 48 h)

WHY = {
    "assistant_only": "only an assistant message says it: the person never did",
    "replaces": "replaces an entry already in {file}",
    "removes": "removes an entry from {file}",
    "unsure": "the injection guard is unsure of it ({detail})",
    "propose_all": "[dream] apply = propose-all: every change to {file} waits for you",
}


@dataclass(frozen=True)
class MemoryChange:
    """One planned change to MEMORY.md / USER.md, as the classifier sees it.

    `voices` says who said it, one per source: `user` (a user message), `journal` (the
    person's journal), `assistant` (an assistant message's text). `memory_tool` is True when
    the agent saved it with its memory tool (its own conclusion).
    """

    target: str  # memory or user
    op: str  # add, replace or remove
    old: str | None
    new: str | None
    voices: tuple[str, ...] = ()
    memory_tool: bool = False


def guard_unsure(text: str) -> str | None:
    """Why the injection guard is unsure of `text`, or None (`guard.unsure`)."""
    from companion.memory import guard  # noqa: PLC0415

    verdict = getattr(guard, "unsure", None)
    if not callable(verdict):
        return None
    why = verdict(text)
    return str(why) if why else None


def is_risky(
    change: MemoryChange, *, unsure: Callable[[str], str | None] = guard_unsure
) -> str | None:
    """Why `change` must wait for the person under `propose-risky` (a reason code of `WHY`),
    or None. Pure apart from the guard's hook."""
    if change.op == "replace":
        return "replaces"
    if change.op == "remove":
        return "removes"
    if not change.memory_tool and change.voices and all(v == "assistant" for v in change.voices):
        return "assistant_only"
    if change.new and unsure(change.new):
        return "unsure"
    return None


def needs_proposal(
    change: MemoryChange,
    mode: str,
    *,
    unsure: Callable[[str], str | None] = guard_unsure,
) -> str | None:
    """The reason `change` is proposed under `[dream] apply = mode`, or None (applied)."""
    if mode == "auto":
        return None
    if mode == "propose-all":
        return is_risky(change, unsure=unsure) or "propose_all"
    return is_risky(change, unsure=unsure)


def voices(c: Candidate) -> tuple[str, ...]:
    return tuple(p.role if p.role in ("user", "assistant") else "journal" for p in c.provenance)


def proposal_id(target: str, op: str, old: str | None, new: str | None) -> str:
    raw = "\0".join((target, op, old or "", new or ""))
    return "p" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:8]


def why_text(reason: str, target: str, detail: str = "") -> str:
    return WHY.get(reason, reason).format(file=TARGETS.get(target, target), detail=detail)


# --- the book: every proposal, in the vault ------------------------------------------------


def book_path(vault: Path) -> Path:
    return Path(vault) / DREAMS_DIR / "proposals.json"


def load_book(vault: Path) -> list[dict[str, Any]]:
    """Every proposal kept in the vault (undecided ones, and decided ones for a while)."""
    try:
        data = json.loads(book_path(vault).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    items = data.get("proposals") if isinstance(data, dict) else None
    return [
        p
        for p in items or []
        if isinstance(p, dict) and isinstance(p.get("id"), str) and p.get("target") in TARGETS
    ]


def save_book(vault: Path, items: Sequence[dict[str, Any]], today: str) -> None:
    cutoff = (dt.date.fromisoformat(today) - dt.timedelta(days=KEEP_DECIDED_DAYS)).isoformat()
    kept = [
        p
        for p in items
        if p.get("state") == PENDING or str((p.get("decision") or {}).get("at", ""))[:10] >= cutoff
    ]
    write_json_atomic(book_path(vault), {"version": VERSION, "proposals": kept})


def pending(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in items if p.get("state") == PENDING]


# --- the dream: take the proposed operations out of the night's writes -----------------------


def _replay(entries: list[str], ops: Sequence[Op]) -> list[str]:
    """The entries after `ops`, as the store would leave them (for a dry run's diff)."""
    out = list(entries)
    for op in ops:
        if op.action == "add":
            out = fmt.dedupe([*out, op.content])
        elif op.action == "replace":
            hits = [e for e in out if op.old_text in e]
            out = fmt.dedupe([op.content if e == hits[0] else e for e in out]) if hits else out
        elif op.action == "remove":
            out = [e for e in out if op.old_text not in e]
    return out


def take_proposals(
    pp: PromotionPlan,
    stores: Mapping[str, MemoryStore],
    mode: str,
    book: list[dict[str, Any]],
    *,
    today: str,
    explain: Explanation,
    unsure: Callable[[str], str | None] = guard_unsure,
) -> tuple[list[dict[str, Any]], int]:
    """Move the operations `mode` proposes out of `pp` into `book` (in place). Returns the
    proposals this run holds (new or already waiting) and how many are new."""
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    by_id = {p["id"]: p for p in book}
    held: list[dict[str, Any]] = []
    new = 0
    if mode == "auto":
        return held, new
    for target, planned in list(pp.ops.items()):
        store = stores[target]
        kept = []
        for p in planned:
            old = p.op.old_text or p.replaced or None
            content = p.op.content or None
            step = memory_step(target, p.op.action, old, content, p.cand, mode, unsure=unsure)
            if not isinstance(step, Propose):  # the plan's Add or Supersede: written tonight
                kept.append(p)
                continue
            reason = step.reason
            if p.op.action != "remove" and p.cand.key in pp.in_memory:
                pp.in_memory.remove(p.cand.key)  # not there until the person applies it
            pid = proposal_id(target, p.op.action, old, content)
            known = by_id.get(pid)
            if known is not None and known.get("state") != PENDING:
                decided = known.get("decision") or {}
                why = f"{known['state']} by you on {str(decided.get('at', '?'))[:10]}"
                explain.amend(p.cand, store.name, "promoted", "not promoted", why)
                continue
            detail = (unsure(content or "") or "") if reason == "unsure" else ""
            why = why_text(reason, target, detail)
            explain.amend(p.cand, store.name, "promoted", "proposed", f"waits for you: {why}")
            if p.edit:
                explain.add(p.cand, "proposed", f"waits for you: {why}", store.name)
            if known is None:
                known = {
                    "id": pid,
                    "target": target,
                    "file": store.name,
                    "op": p.op.action,
                    "old": old,
                    "new": content,
                    "key": p.cand.key,
                    "quote": p.cand.provenance[0].quote if p.cand.provenance else None,
                    "provenance": [q.to_dict() for q in p.cand.provenance],
                    "reason": reason,
                    "why": why,
                    "night": today,
                    "proposed_at": now,
                    "state": PENDING,
                    "decision": None,
                    "attempts": [],
                }
                book.append(known)
                by_id[pid] = known
                new += 1
            known["last_night"] = today
            if known not in held:
                held.append(known)
        pp.ops[target] = kept
        entries = fmt.parse(pp.before[target] or "") if pp.before.get(target) else []
        pp.simulated[target] = _replay(entries, [p.op for p in kept])
    pp.ops = {t: ops for t, ops in pp.ops.items() if ops}
    return held, new


def for_report(
    book: Sequence[dict[str, Any]], earlier: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The night report's `proposals`: every one still waiting, and those the day's report
    already listed (as they stand now: decided since, or not)."""
    ids = {p.get("id") for p in earlier}
    return [p for p in book if p.get("state") == PENDING or p.get("id") in ids]


# --- the person's decision ------------------------------------------------------------------


@dataclass
class Outcome:
    id: str
    action: str  # apply or drop
    result: str  # applied, dropped, locked, refused, unknown
    why: str = ""

    @property
    def ok(self) -> bool:
        return self.result in (APPLIED, DROPPED)


def device_name(config: Any) -> str:
    name = getattr(getattr(config, "settings", None), "sync", None)
    return str(getattr(name, "device_name", "") or socket.gethostname() or "device")


def _apply_one(p: dict[str, Any], store: MemoryStore) -> tuple[str, str]:
    """Write one proposal through the store: (result, why)."""
    op, old, new = p.get("op"), p.get("old"), p.get("new")
    try:
        entries = store.read()
    except MemoryRefused as exc:
        return "refused", exc.message
    if op in ("replace", "remove"):
        if not isinstance(old, str) or old not in entries:
            return "refused", (
                f"the entry changed since it was proposed: {fmt.preview(str(old))!r} is no "
                f"longer in {store.name}"
            )
        batch = [
            Op("replace", content=str(new), old_text=old)
            if op == "replace"
            else Op("remove", old_text=old)
        ]
    elif op == "add" and isinstance(new, str):
        batch = [Op("add", content=new)]
    else:
        return "refused", "not a change the dream can make"
    try:
        store.apply_batch(batch)
    except MemoryRefused as exc:
        if exc.reason == "locked":
            return "locked", (
                f"{store.name}.lock is held by the agent or another writer: it stays "
                "pending, try again"
            )
        return "refused", exc.message.replace(str(store.home), "$HERMES_HOME")
    return APPLIED, ""


def decide(
    vault: Path,
    stores: Mapping[str, MemoryStore],
    action: str,
    ids: Collection[str] | None,
    *,
    device: str,
    now: dt.datetime | None = None,
) -> list[Outcome]:
    """Apply or drop the proposals `ids` (None: every undecided one). A proposal applied
    through a held lock, or refused (its entry changed since), stays pending, with the
    attempt recorded."""
    at = (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds")
    book = load_book(vault)
    by_id = {p["id"]: p for p in book}
    wanted = [p["id"] for p in pending(book)] if ids is None else list(ids)
    out: list[Outcome] = []
    touched: list[dict[str, Any]] = []
    for pid in wanted:
        p = by_id.get(pid)
        if p is None or p.get("state") != PENDING:
            state = "no such proposal" if p is None else f"already {p.get('state')}"
            out.append(Outcome(pid, action, "unknown", state))
            continue
        if action == "drop":
            result, why = DROPPED, ""
        else:
            store = stores.get(p["target"])
            if store is None:
                result, why = "refused", f"{TARGETS[p['target']]} is not loaded by the agent"
            else:
                result, why = _apply_one(p, store)
        record = {"action": action, "at": at, "device": device, "result": result}
        if why:
            record["why"] = why
        if result in (APPLIED, DROPPED):
            p["state"], p["decision"] = result, record
        else:
            p.setdefault("attempts", []).append(record)
        touched.append(p)
        out.append(Outcome(pid, action, result, why))
    if touched:
        save_book(vault, book, at[:10])
        _into_reports(vault, touched)
    return out


def _into_reports(vault: Path, touched: Sequence[dict[str, Any]]) -> None:
    """Each report that lists a decided (or attempted) proposal gets it as it stands now."""
    nights = min(str(p.get("night") or "") for p in touched)
    by_id = {p["id"]: p for p in touched}
    for path in list_reports(vault):
        if path.stem < nights:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        items = data.get("proposals") if isinstance(data, dict) else None
        if not isinstance(items, list):
            continue
        ids = [q.get("id") for q in items if isinstance(q, dict)]
        if not set(ids) & set(by_id):
            continue
        data["proposals"] = [by_id.get(q.get("id"), q) if isinstance(q, dict) else q for q in items]
        write_json_atomic(path, data)
