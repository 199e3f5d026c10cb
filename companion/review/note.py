"""A review note as Markdown: `render` writes it, `parse` reads its decision lines back.

Layout (docs/review.md): front matter (`review`, `night`, `from`, `to`, `lang`, `tz`), a
title, one line of counts, the two batch lines, then the changes grouped by note, the
disagreements, the proposals and what is still waiting from earlier nights. Each decision is a
task line ending in `` `ID/CODE` ``; a recorded decision follows the id after ` — `. An
outcome starting with `⚠` is a notice (a tick that was ignored), not a decision: the line can
still be ticked. Pure: the same input always gives the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from companion.review import labels
from companion.review.diff import diff_lines, fence_for
from companion.review.model import (
    APPLY,
    DROP,
    FORMAT,
    KEEP,
    REVERT,
    TAKE,
    ChangeItem,
    Line,
    Review,
    night_id,
    note_path,
)

DASH = " — "
NOTICE = "⚠"
LINE_RE = re.compile(
    r"^(?P<lead>\s*[-*+] \[)(?P<mark>[ xX])\] (?P<label>.*?)"
    r"`(?P<id>[cknp]-[0-9a-z]+)/(?P<code>[rktad])`(?P<tail>.*)$"
)
FRONT_RE = re.compile(r"^---\n(?P<body>.*?)\n---\n", re.S)
LABEL_KEYS = {REVERT: "revert", KEEP: "keep", TAKE: "take", APPLY: "apply", DROP: "drop"}

# a line's state carried into a new rendering: (ticked, outcome)
State = tuple[bool, str | None]


def link(path: str) -> str:
    """An Obsidian link to a vault file (Markdown notes without their extension)."""
    target = path[:-3] if path.endswith(".md") else path
    return f"[[{target}]]"


def decision_line(label: str, item_id: str, code: str, state: State | None = None) -> str:
    ticked, outcome = state or (False, None)
    mark = "x" if ticked else " "
    line = f"- [{mark}] {label} `{item_id}/{code}`"
    return line + (DASH + outcome if outcome else "")


def _counts(review: Review, open_keys: set[tuple[str, str]]) -> str:
    lang = review.lang
    if not (review.changes or review.proposals or review.disagreements or review.carried):
        return labels.text(lang, "nothing")
    n_changes = sum(1 for c in review.changes if (c.id, REVERT) in open_keys)
    n_dis = sum(1 for d in review.disagreements if (d.id, KEEP) in open_keys)
    n_prop = sum(1 for p in review.proposals if (p.id, APPLY) in open_keys)
    n_carried = len({c.id for c in review.carried if (c.id, c.code) in open_keys})
    return count_line(lang, n_changes, n_dis, n_prop, n_carried)


def count_line(lang: str, n_changes: int, n_dis: int, n_prop: int, n_carried: int) -> str:
    parts = []
    for key, n in (
        ("n_changes", n_changes),
        ("n_disagreements", n_dis),
        ("n_proposals", n_prop),
        ("n_carried", n_carried),
    ):
        if n:
            parts.append(labels.count(lang, key, n))
    if not parts:
        return labels.text(lang, "decided_all")
    return labels.text(lang, "waiting", counts=labels.join(lang, parts))


def render(review: Review, states: Mapping[tuple[str, str], State] | None = None) -> str:
    """The note for `review`, with the decision lines in `states` as they were (by id/code)."""
    states = dict(states or {})
    lang = review.lang
    word = labels.text

    def line(label_key: str, item_id: str, code: str) -> str:
        return decision_line(word(lang, label_key), item_id, code, states.get((item_id, code)))

    keys: list[tuple[str, str]] = []
    keys += [(c.id, REVERT) for c in review.changes if c.revertible]
    keys += [(d.id, k) for d in review.disagreements for k in (KEEP, TAKE)]
    keys += [(p.id, k) for p in review.proposals for k in (APPLY, DROP)]
    keys += [(c.id, c.code) for c in review.carried]
    open_keys = {k for k in keys if not _final(states.get(k))}

    out = [
        "---",
        f"review: {FORMAT}",
        f"night: {review.night}",
        f"from: {review.from_seq}",
        f"to: {review.to_seq}",
        f"lang: {labels.language(lang)}",
        f"tz: {review.tz}",
        *([f"since: {review.since}"] if review.since is not None else []),
        "---",
        f"# {word(lang, 'title', night=review.night)}",
        "",
    ]
    if review.notice:
        out += [review.notice, ""]
    out += [_counts(review, open_keys), ""]
    nid = night_id(review.night)
    batch = []
    if any(c.revertible for c in review.changes):
        batch.append(line("batch_revert", nid, REVERT))
    if review.proposals:
        batch.append(line("batch_apply", nid, APPLY))
    if batch:
        out += [*batch, "", word(lang, "how"), ""]

    if review.changes:
        out += [f"## {word(lang, 'changes')}", ""]
        for c in review.changes:
            out += _change_block(c, lang, line)
    if review.disagreements:
        out += [f"## {word(lang, 'disagreements')}", ""]
        for d in review.disagreements:
            out += [f"### {link(d.path)}", ""]
            if d.mine is not None:
                out.append(f"- {word(lang, 'your_line')}: {_inline(d.mine)}")
            out += [f"- {word(lang, 'new_value')}: {_inline(d.new)}", ""]
            out += [line("keep", d.id, KEEP), line("take", d.id, TAKE), ""]
    if review.proposals:
        out += [f"## {word(lang, 'proposals')}", ""]
        for p in review.proposals:
            op = word(lang, f"op_{p.op}") if p.op in ("add", "replace", "remove") else p.op
            out += [f"### {p.file} · {op}", ""]
            body = [f"- {x}" for x in _lines(p.old)] + [f"+ {x}" for x in _lines(p.new)]
            fence = fence_for(body)
            out += [f"{fence}diff", *body, fence, ""]
            why_key = f"why_{p.reason}"
            if why_key in labels.table()[labels.language(lang)]:
                out.append(f"- {word(lang, 'why')}: {word(lang, why_key, file=p.file)}")
            if p.quote:
                out.append(f"- {word(lang, 'source')}: “{_inline(p.quote)}”")
            out += ["", line("apply", p.id, APPLY), line("drop", p.id, DROP), ""]
    if review.carried:
        out += [f"## {word(lang, 'carried')}", ""]
        for k in review.carried:
            label = f"{k.label} ({word(lang, 'from_note', link=link(note_path(k.night)))})"
            out.append(decision_line(label, k.id, k.code, states.get((k.id, k.code))))
        out.append("")
    while out and out[-1] == "":
        out.pop()
    if review.changes or review.proposals or review.disagreements or review.carried:
        out += ["", "---", "", _counts(review, open_keys)]  # and again at the end
    return "\n".join(out) + "\n"


def _lines(text: str | None) -> list[str]:
    return [] if text is None else text.split("\n")


def _inline(text: str) -> str:
    return " ".join(text.split())


def _change_block(c: ChangeItem, lang: str, line: object) -> list[str]:
    word = labels.text
    kind = word(lang, "kind_agent" if c.kind == "agent" else "kind_human")
    head = f"### {link(c.path)}"
    what = ""
    if c.before is None and c.before_known:
        what = f" · {word(lang, 'created')}"
    elif c.after is None:
        what = f" · {word(lang, 'deleted')}"
    out = [head, "", f"{c.at} · {word(lang, 'by', device=c.device, kind=kind)}{what}", ""]
    shown, more = diff_lines(c.before if c.before_known else None, c.after)
    if shown:
        fence = fence_for(shown)
        out += [f"{fence}diff", *shown]
        if more:
            out.append(word(lang, "more_lines", n=more))
        out += [fence, ""]
    if c.notes:
        out += [f"- {n}" for n in c.notes] + [""]
    if c.revertible:
        assert callable(line)
        out += [line("revert", c.id, REVERT), ""]
    return out


def _final(state: State | None) -> bool:
    return bool(state and state[1] and not state[1].startswith(NOTICE))


def parse_lines(text: str) -> list[Line]:
    """Every decision line of a note, in order."""
    out: list[Line] = []
    fence: str | None = None
    for i, raw in enumerate(text.replace("\r\n", "\n").split("\n")):
        stripped = raw.lstrip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            marker = stripped[: len(stripped) - len(stripped.lstrip(stripped[0]))]
            if fence is None:
                fence = marker
            elif marker.startswith(fence) and stripped.strip() == marker:
                fence = None
            continue
        if fence is not None:
            continue
        m = LINE_RE.match(raw)
        if not m:
            continue
        tail = m.group("tail")
        outcome = tail.split(DASH, 1)[1].strip() if DASH in tail else None
        final = bool(outcome) and not str(outcome).startswith(NOTICE)
        out.append(
            Line(
                index=i,
                id=m.group("id"),
                code=m.group("code"),
                ticked=m.group("mark") in "xX",
                label=m.group("label").strip(),
                outcome=outcome or None,
                final=final,
            )
        )
    return out


def front_matter(text: str) -> dict[str, str]:
    m = FRONT_RE.match(text.replace("\r\n", "\n"))
    if not m:
        return {}
    out = {}
    for row in m.group("body").split("\n"):
        key, sep, value = row.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def states_of(text: str) -> dict[tuple[str, str], State]:
    return {ln.key: (ln.ticked, ln.outcome) for ln in parse_lines(text)}


def set_outcome(text: str, key: tuple[str, str], outcome: str, *, ticked: bool) -> str:
    """`text` with every decision line `key` marked `ticked` and ending in `outcome`."""
    rows = text.split("\n")
    for ln in parse_lines(text):
        if ln.key != key:
            continue
        raw = rows[ln.index]
        m = LINE_RE.match(raw)
        assert m is not None
        tail = m.group("tail")
        keep = tail.split(DASH, 1)[0] if DASH in tail else tail
        mark = "x" if ticked else " "
        rows[ln.index] = (
            f"{m.group('lead')}{mark}] {m.group('label')}`{ln.id}/{ln.code}`{keep}{DASH}{outcome}"
        )
    return "\n".join(rows)


def set_ticked(text: str, key: tuple[str, str], ticked: bool = True) -> str:
    """`text` with decision line `key` ticked (what a person's tap does); unknown key: same."""
    rows = text.split("\n")
    for ln in parse_lines(text):
        if ln.key == key:
            m = LINE_RE.match(rows[ln.index])
            assert m is not None
            mark = "x" if ticked else " "
            rows[ln.index] = (
                f"{m.group('lead')}{mark}] {m.group('label')}`{ln.id}/{ln.code}`{m.group('tail')}"
            )
    return "\n".join(rows)


def open_lines(lines: Iterable[Line]) -> list[Line]:
    return [ln for ln in lines if not ln.final]


LINK_RE = re.compile(r"\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]")


@dataclass(frozen=True)
class Context:
    """What a decision line refers to, read from the note around it."""

    target: str | None  # the link target of the item's note (no `.md`)
    mine: str | None = None  # a disagreement's "your line"
    new: str | None = None  # a disagreement's "new value"
    night: str | None = None  # a carried line: the night of the note it comes from


def context(text: str, line: Line, lang: str) -> Context:
    rows = text.replace("\r\n", "\n").split("\n")
    label_links = LINK_RE.findall(line.label)
    night = None
    if label_links:  # a carried line: "<label>: [[note]] (from [[review/DAY]])"
        target = label_links[0]
        for x in LINK_RE.findall(rows[line.index]):
            if x.startswith("review/"):
                night = x.split("/", 1)[1]
        return Context(target=target, night=night)
    target = None
    start = 0
    for i in range(line.index, -1, -1):
        if rows[i].startswith("### "):
            found = LINK_RE.findall(rows[i])
            target = found[0] if found else None
            start = i
            break
        if rows[i].startswith("## "):
            break
    mine = new = None
    mine_p = f"- {labels.text(lang, 'your_line')}: "
    new_p = f"- {labels.text(lang, 'new_value')}: "
    for row in rows[start + 1 : line.index]:
        if row.startswith(mine_p):
            mine = row[len(mine_p) :]
        elif row.startswith(new_p):
            new = row[len(new_p) :]
    return Context(target=target, mine=mine, new=new)


def recount(text: str) -> str:
    """`text` with its line of counts saying what is still open (after decisions were
    written on its lines): the first line after the title that is not a notice."""
    lang = front_matter(text).get("lang") or "en"
    lines = parse_lines(text)
    if not lines:
        return text
    open_ = [ln for ln in lines if not ln.final]
    carried = {ln.id for ln in open_ if "[[" in ln.label}
    n_changes = len({ln.id for ln in open_ if ln.id.startswith("c-") and ln.id not in carried})
    n_dis = len({ln.id for ln in open_ if ln.id.startswith("k-") and ln.id not in carried})
    n_prop = len({ln.id for ln in open_ if ln.id.startswith("p-") and ln.id not in carried})
    new = count_line(lang, n_changes, n_dis, n_prop, len(carried))
    rows = text.split("\n")
    title = next((i for i, r in enumerate(rows) if r.startswith("# ")), None)
    if title is None:
        return text
    for i in range(title + 1, len(rows)):
        if not rows[i].strip() or rows[i].startswith(NOTICE):
            continue
        if rows[i].startswith(("- [", "## ")):
            return text
        old = rows[i]
        return "\n".join(new if row == old else row for row in rows)
    return text


def change_blocks(text: str) -> dict[str, tuple[str, ...]]:
    """Per change id: what the note shows of it that the relay's history decides — its
    heading, the line saying when and by which device, and its diff — to compare a note with
    the history (explanations and decision lines left out)."""
    rows = text.replace("\r\n", "\n").split("\n")
    out: dict[str, tuple[str, ...]] = {}
    shown: list[str] = []
    fence: str | None = None
    for row in rows:
        if fence is not None:
            shown.append(row)
            if row.strip() == fence:
                fence = None
            continue
        if row.startswith("#"):
            shown = [row] if row.startswith("### ") else []
            continue
        stripped = row.strip()
        if stripped.startswith("```") and shown:
            fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
            shown.append(row)
            continue
        m = LINE_RE.match(row)
        if m and m.group("id").startswith("c-") and "[[" not in m.group("label") and shown:
            out[m.group("id")] = tuple(shown)
            continue
        if shown and stripped and not stripped.startswith("- "):
            # the "when · by" line, without the time (the relay's clock, not the history's)
            shown.append(row.split(" · ", 1)[1] if " · " in row else row)
    return out
