"""The review's items as data, for `companion review list`, the desktop app and scripts.

Read from the review notes (the decision lines and what they refer to); a change's before and
after come from the relay's history (`rounds._attested_change`), never from the note's text,
and who decided a line from the note's own history (`blame`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from companion.review import blame, labels
from companion.review import note as notes
from companion.review.model import NAMES, REVERT, Line
from companion.review.rounds import Device, _attested_change, _path_of, _revisions, note_files

KINDS = {"c": "change", "k": "disagreement", "p": "proposal", "n": "night"}


@dataclass
class Item:
    id: str
    kind: str
    note: str  # the review note
    file: str | None  # the vault file (or MEMORY.md / USER.md) it is about
    decisions: list[str] = field(default_factory=list)
    state: str = "open"  # open | ticked | decided | ignored
    outcome: str | None = None
    decided_by: str | None = None  # the device whose revision ticked it
    decided_by_kind: str | None = None
    label: str = ""
    before: str | None = None
    after: str | None = None
    explanation: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def newest_note(dev: Device, night: str | None = None) -> tuple[str, str] | None:
    files = note_files(dev.root)
    if night is not None:
        files = [f for f in files if f[0] == night]
    return files[-1] if files else None


def items(dev: Device, rel: str, *, with_history: bool = True) -> list[Item]:
    """Every item of review note `rel`, in the note's order."""
    text = dev.read(rel) or ""
    lang = notes.front_matter(text).get("lang") or "en"
    who: dict[tuple[str, str], blame.Tick] = {}
    if with_history:
        who = blame.ticks(_revisions(dev, rel))
    out: dict[str, Item] = {}
    for ln in notes.parse_lines(text):
        item = out.get(ln.id)
        if item is None:
            item = _item(dev, text, rel, ln, lang, with_history)
            out[ln.id] = item
        item.decisions.append(NAMES[ln.code])
        _state(item, ln, who.get(ln.key))
    return list(out.values())


def _item(dev: Device, text: str, rel: str, ln: Line, lang: str, with_history: bool) -> Item:
    ctx = notes.context(text, ln, lang)
    kind = KINDS.get(ln.id[0], "change")
    item = Item(ln.id, kind, rel, _path_of(dev.root, ctx.target), label=ln.label)
    if ctx.night:
        item.note = rel
    if kind == "disagreement":
        item.before, item.after = ctx.mine, ctx.new
    elif kind == "change" and ln.code == REVERT and item.file and with_history:
        change = _attested_change(dev, item.file, ln.id)
        if change is not None:
            item.before, item.after = change.before, change.after
            item.explanation = list(change.notes)
    elif kind == "proposal":
        _proposal(dev, item)
    return item


def _proposal(dev: Device, item: Item) -> None:
    from companion.dream.proposals import load_book
    from companion.review.model import proposal_item_id

    for p in load_book(dev.root):
        if proposal_item_id(str(p["id"])) == item.id:
            item.file = str(p.get("file") or p.get("target"))
            old, new = p.get("old"), p.get("new")
            item.before = old if isinstance(old, str) else None
            item.after = new if isinstance(new, str) else None
            if isinstance(p.get("quote"), str):
                item.explanation = [str(p["quote"])]


def _state(item: Item, ln: Line, tick: blame.Tick | None) -> None:
    if ln.final:
        item.state, item.outcome = "decided", ln.outcome
    elif ln.outcome:  # a notice: an agent's tick was ignored
        if item.state == "open":
            item.state, item.outcome = "ignored", ln.outcome
    elif ln.ticked and item.state in ("open", "ignored"):
        item.state = "ticked"
    if tick is not None and (ln.final or ln.ticked):
        item.decided_by, item.decided_by_kind = tick.device, tick.kind


def find_line(text: str, item_id: str, code: str) -> Line | None:
    for ln in notes.parse_lines(text):
        if ln.id == item_id and ln.code == code:
            return ln
    return None


def counts(all_items: Iterable[Item]) -> dict[str, int]:
    out: dict[str, int] = {}
    for it in all_items:
        if it.state in ("open", "ignored") and it.kind != "night":
            out[it.kind] = out.get(it.kind, 0) + 1
    return out


def summary(lang: str, c: dict[str, int]) -> str:
    keys = {"change": "n_changes", "disagreement": "n_disagreements", "proposal": "n_proposals"}
    parts = [labels.count(lang, keys[k], n) for k, n in c.items() if k in keys and n]
    return labels.join(lang, parts)
