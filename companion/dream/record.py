"""Step 5, Record: two or three lines under `## Dreaming` in today's journal.

The lines sit in a `<!-- dream:begin log -->` block (with the `## Dreaming` heading inside it,
in the vault's language, unless the journal's last section already is the dream's), in the
vault's language (one with a catalogue in `companion/locale/`, else English), each pointing to
the day's report, plus one line for what needs the person (lines waiting for a note being
edited, contradictions to check) when there is any. A dream that changed nothing writes
"Nothing changed." -- once: a later dream the same day that again changes nothing leaves the
journal as it is, so a repeated dream over the same inputs changes no file at all. A dream that
changed something adds its lines to the day's block; lines already there are never rewritten.
Today's journal is not written while a person edits it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from companion.dream import blocks, langdetect
from companion.dream.blocks import Ref
from companion.dream.plan import Plan
from companion.dream.report import DREAMS_DIR
from companion.dream.state import HERE, PERSON, UNKNOWN
from companion.dream.summary import fact
from companion.dream.text import fold
from companion.l10n import WRITTEN, nsay, say
from companion.vault.journal import SECTIONS, section_key
from companion.vault.layout import new_journal_text
from companion.vault.note import load_frontmatter, split_frontmatter

if TYPE_CHECKING:
    from companion.config import Config

_HEADING = re.compile(r"^#{1,6}[ \t]+(.*?)[ \t#]*$")


def writing_language(lang: str) -> str:
    """`lang` when the dream has a catalogue to write it in, else English."""
    return lang if lang in WRITTEN else "en"


def detect_language(texts: Iterable[str], configured: str = "auto", fallback: str = "en") -> str:
    """The language the dream writes the vault in (one of `WRITTEN`): the configured language,
    else the journal's section names (`companion.vault.journal.SECTIONS`), else its words
    (`companion.dream.langdetect`), else (nothing to go by) `fallback`; a language without a
    catalogue is written in English."""
    if configured and configured != "auto":
        return writing_language(configured)
    texts = list(texts)
    names = {
        lang: {_fold_heading(n) for ns in table.values() for n in ns}
        for lang, table in SECTIONS.items()
    }
    votes = dict.fromkeys(SECTIONS, 0)
    for text in texts:
        for line in text.split("\n"):
            m = _HEADING.match(line.strip())
            if not m:
                continue
            parts = {_fold_heading(p) for p in re.split(r"[/|·,]", m.group(1))}
            for lang, ns in names.items():
                if parts & ns:
                    votes[lang] += 1
    top = max(votes.values())
    tied = [lang for lang, v in votes.items() if v == top]
    if top and len(tied) == 1:
        return writing_language(tied[0])
    by_words = langdetect.scores("\n".join(texts))
    candidates = tied if top else list(langdetect.LANGUAGES)
    best = max(candidates, key=lambda lang: by_words.get(lang, 0.0))
    if by_words.get(best, 0.0) > 0:
        return writing_language(best)
    if top:
        return writing_language(tied[0])
    return writing_language(fallback)


def _fold_heading(text: str) -> str:
    return re.sub(r"[\W_]+", "", fold(text))


def vault_language(texts: Iterable[str], config: Config) -> str:
    """The language the journal is written in, by the dream and by the MCP server's
    `append_journal` alike: `[dream] language` when set; else what the journal's days say;
    with nothing to go by (a new vault), this device's interface language (`[gui] language`,
    else the system locale), so a Spanish setup starts its journal in Spanish."""
    from companion.language import interface_language

    return detect_language(
        texts, config.settings.dream.language, fallback=interface_language(config)
    )


@dataclass
class RunSummary:
    lessons: dict[str, int] = field(default_factory=dict)  # note -> lessons added
    review: bool = False  # a sync copy: its devices write the night's review note (docs/review.md)
    decisions: dict[str, int] = field(default_factory=dict)
    status: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    promoted: dict[str, int] = field(default_factory=dict)  # MEMORY.md -> facts
    replaced: int = 0
    not_fit: int = 0
    blocked: int = 0  # facts the agent's memory lock kept out: the next dream retries them
    listed: int = 0
    repaired: int = 0
    orphans: int = 0
    secrets: int = 0
    quoted: int = 0  # marked lines quoted or relayed from a tool result: never sources
    waiting: dict[str, int] = field(default_factory=dict)  # note being edited -> lines waiting
    # note being edited -> what is known of who changed it (companion.dream.state: person,
    # here, unknown); a note not listed is a person's
    waiting_origin: dict[str, str] = field(default_factory=dict)
    contradictions: list[str] = field(default_factory=list)  # notes to check
    # one note per line of the person's inside a block that a new line disagrees with
    kept: list[str] = field(default_factory=list)
    # (MEMORY.md or USER.md, note): an injected entry disagrees with a line the person
    # corrected in that note; and the files holding two entries of unknown age on one subject
    memory_notes: list[tuple[str, str]] = field(default_factory=list)
    memory_pairs: list[str] = field(default_factory=list)
    # changes to MEMORY.md / USER.md waiting for the person (all of them), and how many of
    # those this run proposed (companion.dream.proposals)
    proposed: int = 0
    new_proposals: int = 0

    def linked(self) -> set[str]:
        """The notes the Dreaming lines link (so they are nobody's orphan)."""
        out: set[str] = set()
        for group in (self.lessons, self.decisions, self.status):
            out.update(list(group)[:LIST_LIMIT])
        for _origin, notes in self.waiting_groups():
            out.update(notes[:LIST_LIMIT])
        out.update(list(dict.fromkeys(self.contradictions))[:LIST_LIMIT])
        out.update(list(dict.fromkeys(self.kept))[:LIST_LIMIT])
        for file in dict.fromkeys(f for f, _n in self.memory_notes):
            notes = [n for f, n in dict.fromkeys(self.memory_notes) if f == file]
            out.update(notes[:LIST_LIMIT])
        return out

    def waiting_groups(self) -> list[tuple[str, list[str]]]:
        """The notes lines wait for, by what is known of who changed them (person first)."""
        groups: dict[str, list[str]] = {PERSON: [], HERE: [], UNKNOWN: []}
        for note in self.waiting:
            groups.setdefault(self.waiting_origin.get(note, PERSON), []).append(note)
        return [(origin, notes) for origin, notes in groups.items() if notes]

    @property
    def empty(self) -> bool:
        return not (
            self.lessons
            or self.decisions
            or self.status
            or self.promoted
            or self.listed
            or self.repaired
        )


def _link(rel: str) -> str:
    return f"[[{rel.rsplit('/', 1)[-1][:-3]}]]"


LIST_LIMIT = 3  # notes named in one Dreaming line before "N more"


def _join(items: Sequence[str], lang: str, limit: int = LIST_LIMIT) -> str:
    shown = list(items[:limit])
    rest = len(items) - len(shown)
    if rest:
        shown.append(say(lang, "{n} more", n=rest))
    if len(shown) == 1:
        return shown[0]
    return say(lang, "{items} and {last}", items=", ".join(shown[:-1]), last=shown[-1])


def _sentence(parts: Sequence[str]) -> str:
    line = "; ".join(parts)
    return line[:1].upper() + line[1:] + "."


def dreaming_lines(s: RunSummary, lang: str) -> list[str]:
    """The journal lines (without provenance) for one run, in the vault's language."""
    if s.empty:
        line = say(lang, "Nothing changed.")
        extra = []
        if s.not_fit:
            extra.append(
                nsay(lang, "{n} fact did not fit in memory", "{n} facts did not fit in memory",
                     s.not_fit)
            )  # fmt: skip
        if s.secrets:
            extra.append(_withheld(s.secrets, lang))
        if s.quoted:
            extra.append(_quoted(s.quoted, lang))
        if extra:
            line = line[:-1] + " (" + "; ".join(extra) + ")."
        return _with_attention([line], s, lang)
    out = []
    parts = []
    if s.lessons:
        n = sum(s.lessons.values())
        notes = _join([_link(p) for p in s.lessons], lang)
        parts.append(
            nsay(lang, "consolidated {n} lesson into {notes}",
                 "consolidated {n} lessons into {notes}", n, notes=notes)
        )  # fmt: skip
    if s.created:
        parts.append(nsay(lang, "{n} new note", "{n} new notes", len(s.created)))
    if s.decisions:
        n = sum(s.decisions.values())
        notes = _join([_link(p) for p in s.decisions], lang)
        parts.append(
            nsay(lang, "{n} decision into {notes}", "{n} decisions into {notes}", n, notes=notes)
        )
    if s.status:
        notes = _join([_link(p) for p in s.status], lang)
        parts.append(say(lang, "updated the status of {notes}", notes=notes))
    if parts:
        out.append(_sentence(parts))
    if s.promoted or s.not_fit:
        bits = []
        for name, n in s.promoted.items():
            bits.append(
                nsay(lang, "promoted {n} fact to {name}", "promoted {n} facts to {name}", n,
                     name=name)
            )  # fmt: skip
        if s.replaced:
            bits.append(
                nsay(lang, "{n} stale entry replaced", "{n} stale entries replaced", s.replaced)
            )
        if s.not_fit:
            bits.append(
                nsay(lang, "{n} fact did not fit (see the report)",
                     "{n} facts did not fit (see the report)", s.not_fit)
            )  # fmt: skip
        out.append(_sentence(bits))
    bits = []
    if s.listed:
        bits.append(nsay(lang, "listed {n} note in [[Home]]", "listed {n} notes in [[Home]]",
                         s.listed))  # fmt: skip
    if s.repaired:
        bits.append(nsay(lang, "repaired {n} broken link", "repaired {n} broken links", s.repaired))
    if s.orphans:
        bits.append(
            nsay(lang, "{n} orphan note in the report", "{n} orphan notes in the report",
                 s.orphans)
        )  # fmt: skip
    if s.secrets:
        bits.append(_withheld(s.secrets, lang))
    if s.quoted:
        bits.append(_quoted(s.quoted, lang))
    if bits:
        out.append(_sentence(bits))
    return _with_attention(out[:3], s, lang)


def _withheld(n: int, lang: str) -> str:
    return nsay(lang, "{n} candidate withheld (secrets)", "{n} candidates withheld (secrets)", n)


def _quoted(n: int, lang: str) -> str:
    return nsay(lang, "{n} quoted line ignored", "{n} quoted lines ignored", n)


def _with_attention(lines: list[str], s: RunSummary, lang: str) -> list[str]:
    """`lines` plus what needs the person, still at most three lines."""
    extra = _attention(s, lang)
    if not extra:
        return lines
    if len(lines) < 3:
        return [*lines, *extra]
    last = extra[0]
    return [*lines[:2], lines[2][:-1] + "; " + last[:1].lower() + last[1:]]


def _attention(s: RunSummary, lang: str) -> list[str]:
    """One line for what needs the person: lines waiting for a note being edited, and
    contradictions between a new line and the person's."""
    bits = []
    for origin, waiting in s.waiting_groups():  # saying only what is known of who changed them
        n = sum(s.waiting[p] for p in waiting)
        notes = _join([_link(p) for p in waiting], lang)
        if origin == PERSON:
            bits.append(
                nsay(lang, "{n} line waits until you finish editing {notes}",
                     "{n} lines wait until you finish editing {notes}", n, notes=notes)
            )  # fmt: skip
        elif origin == HERE:
            bits.append(
                nsay(lang, "{n} line waits: {notes} changed on this server outside the dream",
                     "{n} lines wait: {notes} changed on this server outside the dream", n,
                     notes=notes)
            )  # fmt: skip
        else:
            bits.append(
                nsay(lang, "{n} line waits: {notes} changed outside the dream",
                     "{n} lines wait: {notes} changed outside the dream", n, notes=notes)
            )  # fmt: skip
    if s.kept:
        notes = _join([_link(p) for p in dict.fromkeys(s.kept)], lang)
        bits.append(
            nsay(lang, "kept your line in {notes}; a session disagrees",
                 "kept your {n} lines in {notes}; sessions disagree", len(s.kept), notes=notes)
        )  # fmt: skip
    for file in dict.fromkeys(f for f, _n in s.memory_notes):
        notes = _join([_link(n) for f, n in dict.fromkeys(s.memory_notes) if f == file], lang)
        bits.append(say(lang, "{file} disagrees with your line in {notes}", file=file, notes=notes))
    for file in dict.fromkeys(s.memory_pairs):
        n = s.memory_pairs.count(file)
        bits.append(
            nsay(lang, "{n} pair of entries in {file} disagree: check which is current",
                 "{n} pairs of entries in {file} disagree: check which are current", n,
                 file=file)
        )  # fmt: skip
    if s.blocked:
        bits.append(
            nsay(lang, "{n} fact waits for the agent's memory lock: the next dream promotes it",
                 "{n} facts wait for the agent's memory lock: the next dream promotes them",
                 s.blocked)
        )  # fmt: skip
    if s.proposed:
        bits.append(nsay(lang, "{n} change waits for you", "{n} changes wait for you", s.proposed))
    if s.contradictions:
        notes = _join([_link(p) for p in dict.fromkeys(s.contradictions)], lang)
        n = len(s.contradictions)
        bits.append(
            nsay(lang, "{n} contradiction to check in {notes} (see the report)",
                 "{n} contradictions to check in {notes} (see the report)", n, notes=notes)
        )  # fmt: skip
    if not bits:
        return []
    return [_sentence(bits)]


def dreaming_heading(lang: str) -> str:
    """The heading of the dream's section in the journal, in the vault's language."""
    # TRANSLATORS: the journal section the dream writes its lines under (a heading)
    return "## " + say(lang, "Dreaming")


def _last_section_is_dreaming(text: str) -> bool:
    last = None
    for line in blocks.split_lines(blocks.blank_blocks(text)):
        m = _HEADING.match(line.strip())
        if m and line.lstrip().startswith("#"):
            last = m.group(1)
    return last is not None and section_key(last) == "dreaming"


def _log_blocks(text: str) -> int:
    return sum(1 for b in blocks.find_blocks(blocks.split_lines(text)) if b.kind == "log")


def journal_tag(texts: Iterable[str], default: str = "journal") -> str:
    """The tag the vault's journal days share (`diario` in a vault that uses it): the one
    tag every day read carries, else the first tag of the newest, else `default`."""
    tag_lists: list[list[str]] = []
    for text in texts:
        yaml_text = split_frontmatter(text)[0]
        data = load_frontmatter(yaml_text)[0] if yaml_text else None
        raw = data.get("tags") if isinstance(data, dict) else None
        tags = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
        names = [str(t).strip() for t in tags if str(t).strip()]
        if names:
            tag_lists.append(names)
    if not tag_lists:
        return default
    common = [t for t in tag_lists[-1] if all(t in ts for ts in tag_lists)]
    tag = (common or tag_lists[-1])[0]
    return tag if re.fullmatch(r"[\w/-]+", tag) else default


def record_journal(
    plan: Plan, today: dt.date, s: RunSummary, lang: str, *, tag: str = "journal"
) -> bool:
    """Add this run's lines to today's journal (created, when missing, with the vault's own
    journal `tag`). Returns False when nothing was written."""
    rel = f"journal/{today.isoformat()}.md"
    text = plan.read(rel)
    if plan.exists(rel) and text is None:
        plan.warnings.append(f"{rel}: not plain UTF-8 text; the Dreaming lines were not written")
        return False
    has_block = text is not None and blocks.block_body(text, "log") is not None
    if s.empty and has_block and not s.new_proposals:
        return False  # this day already says what the dream did; nothing new to add
    ref = Ref((DREAMS_DIR / f"{today.isoformat()}.json").as_posix())
    lines = [blocks.render_line(x, [ref]) for x in dreaming_lines(s, lang)]
    review = f"review/{today.isoformat()}"
    if s.review and not s.empty and f"[[{review}" not in (text or ""):
        # TRANSLATORS: the last Dreaming line: a link to the night's review note
        lines.append(
            blocks.render_line(say(lang, "Review the night: [[{note}]]", note=review), [ref])
        )
    if text is not None and plan.is_recent(rel):
        plan.warnings.append(f"{rel}: {plan.edit_note(rel)}; the Dreaming lines are in the report")
        return False
    base = text if text is not None else new_journal_text(today, tag)
    if has_block:
        after = blocks.add_lines(base, lines, kind="log")
        if _log_blocks(after) > _log_blocks(base):  # appended a fresh block: give it a heading
            after = blocks.append_block(base, "log", [dreaming_heading(lang), "", *lines])
    else:
        heading = [] if _last_section_is_dreaming(base) else [dreaming_heading(lang), ""]
        after = blocks.append_block(base, "log", [*heading, *lines])
    change = plan.write(
        rel,
        after,
        kind="recorded",
        facts=[fact("journal_logged")],
        provenance=[
            {"source": ref.source, "line": None, "message_id": None, "quote": "## Dreaming"}
        ],
    )
    return change is not None
