"""Step 3, Represent: Home.md's index of notes, broken wikilinks, orphans.

- Home.md keeps, inside its `<!-- dream:begin index -->` block, a list of every note of
  `knowledge/`, `projects/` and other folders (journal days aside) that the person's own part
  of Home.md does not already link, grouped by area. The person's part is never touched. The
  list is rebuilt each dream; lines dropped (a note deleted or renamed) count against the
  removal cap, so a vault that suddenly looks empty (a sync accident) cannot wipe the index.
  When a person edited Home.md recently the index is left as it is and the report says so.
  A line of the index block the dream did not write (the ledger's `owns`: she changed or added
  it) is the person's: it stays byte for byte after the line it followed, is never dropped,
  and a note it links is not listed again. An index the ledger holds no line of (written
  before the ledger kept index lines) is the dream's where its lines have the dream's form.
- A broken wikilink is repaired only when exactly one note matches it by name or alias once
  case, accents and separators are ignored (`[[raspberry-pi Setup]]` -> `[[Raspberry Pi
  setup]]`), or when the sync engine reports the rename; heading, alias and embed are kept.
  Each repaired line counts against the removal cap; notes edited recently are left alone.
- Orphans (notes nothing links to) end up linked from the index; those that cannot be are
  listed in the report.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from companion.dream import blocks
from companion.dream.plan import Plan
from companion.dream.summary import fact
from companion.dream.text import title_key
from companion.dream.topics import NoteCatalog, fast_area
from companion.vault.code import mask_code
from companion.vault.graph import BrokenLink
from companion.vault.layout import HOME, area_of
from companion.vault.links import path_key
from companion.vault.note import parse_note

AREA_ORDER = ("knowledge", "projects", "other")
HEADINGS = {
    "en": {
        "index": "## Index (kept by the dream)",
        "knowledge": "### Knowledge",
        "projects": "### Projects",
        "other": "### Other",
    },
    "es": {
        "index": "## Índice (lo mantiene el sueño)",
        "knowledge": "### Conocimiento",
        "projects": "### Proyectos",
        "other": "### Otras notas",
    },
    "fr": {
        "index": "## Index (tenu par le rêve)",
        "knowledge": "### Connaissances",
        "projects": "### Projets",
        "other": "### Autres notes",
    },
    "de": {
        "index": "## Verzeichnis (vom Traum gepflegt)",
        "knowledge": "### Wissen",
        "projects": "### Projekte",
        "other": "### Weitere Notizen",
    },
    "pt": {
        "index": "## Índice (mantido pelo sonho)",
        "knowledge": "### Conhecimento",
        "projects": "### Projetos",
        "other": "### Outras notas",
    },
    "it": {
        "index": "## Indice (curato dal sogno)",
        "knowledge": "### Conoscenze",
        "projects": "### Progetti",
        "other": "### Altre note",
    },
}
_INDEX_LINK = re.compile(r"^- (\[\[[^\]]+\]\])\s*$")
_HEADINGS = frozenset(h for heads in HEADINGS.values() for h in heads.values())
_ANY_LINK = re.compile(r"!?\[\[([^\[\]\n|#^]*)")


@dataclass
class Represented:
    listed: list[str] = field(default_factory=list)  # notes newly listed in Home.md
    unlisted: list[str] = field(default_factory=list)  # dropped from the index
    repaired: list[tuple[str, str, str]] = field(default_factory=list)  # (note, old, new)
    orphans: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def link_text(path: str, catalog: NoteCatalog) -> str:
    """The shortest link that reaches `path`: its title when unique in the vault, else its
    path without `.md`."""
    name = path.rsplit("/", 1)[-1]
    if catalog.file_name_count(name) <= 1:
        return name[:-3]
    return path[:-3]


def _home_human_links(text: str, catalog: NoteCatalog) -> set[str]:
    note = parse_note(blocks.blank_blocks(text), HOME)
    out = set()
    for link in note.links:
        if link.target:
            dest = catalog.resolve(link.target, HOME)
            if dest:
                out.add(dest)
    return out


def _index_body(entries: Sequence[str], catalog: NoteCatalog, language: str) -> list[str]:
    heads = HEADINGS.get(language, HEADINGS["en"])
    by_area: dict[str, list[str]] = {}
    for p in entries:
        area = fast_area(p)
        by_area.setdefault(area if area in AREA_ORDER else "other", []).append(p)
    body = [heads["index"]]
    for area in AREA_ORDER:
        items = by_area.get(area)
        if not items:
            continue
        body += ["", heads[area]]
        items.sort(key=lambda p: (p.rsplit("/", 1)[-1].casefold(), p))
        body += [f"- [[{link_text(p, catalog)}]]" for p in items]
    return body


def _persons_lines(
    home: str, body: Sequence[str], owns: Callable[[str, str], bool] | None
) -> set[int]:
    """The positions in the index block's `body` of the lines the person wrote or changed."""
    if owns is None:
        return set()
    lines = [i for i, ln in enumerate(body) if ln.strip()]
    if not any(owns(home, body[i]) for i in lines):  # a ledger from before index lines
        return {i for i in lines if not _INDEX_LINK.match(body[i]) and body[i] not in _HEADINGS}
    return {i for i in lines if not owns(home, body[i])}


def _keep_persons(old: Sequence[str], hers: set[int], new: list[str]) -> list[str]:
    """`new` with the person's lines of `old` put back, each after the line it followed (the
    nearest non-blank line before it that the dream still writes), or first."""
    present = {ln for ln in new if ln.strip()}
    after: dict[str, list[str]] = {}
    first: list[str] = []
    for i in sorted(hers):
        anchor = next(
            (old[j] for j in range(i - 1, -1, -1) if j not in hers and old[j] in present), None
        )
        (after.setdefault(anchor, []) if anchor is not None else first).append(old[i])
    out = list(first)
    for ln in new:
        out.append(ln)
        out += after.pop(ln, [])
    return out


def update_home(
    plan: Plan,
    catalog: NoteCatalog,
    language: str,
    out: Represented,
    owns: Callable[[str, str], bool] | None = None,
) -> None:
    home = next(
        (p for p in catalog.paths if "/" not in p and p.casefold() == HOME.casefold()), HOME
    )
    text = plan.read(home)
    if plan.exists(home) and text is None:
        plan.warnings.append(f"{home}: not plain UTF-8 text; the index was not updated")
        return
    if plan.exists(home) and plan.is_recent(home):
        plan.warnings.append(f"{home}: {plan.edit_note(home)}; the index was not updated")
        return
    text = text or ""
    linked = _home_human_links(text, catalog) if text else set()
    wanted = [
        p
        for p in [*catalog.paths, *sorted(catalog.created)]
        if p != home and fast_area(p) not in ("journal", "home", "companion") and p not in linked
    ]
    old_body = blocks.block_body(text, "index")
    if old_body is None and not wanted:
        return  # every note is linked by the person already: no index needed
    old_body = old_body or []
    hers = _persons_lines(home, old_body, owns)
    her_notes = {
        dest
        for i in hers
        for m in _ANY_LINK.finditer(old_body[i])
        if (dest := catalog.resolve(m.group(1).strip(), home))
    }
    wanted = [p for p in wanted if p not in her_notes]
    old_links = {
        m.group(1)
        for i, ln in enumerate(old_body)
        if i not in hers and (m := _INDEX_LINK.match(ln))
    }
    new_body = _index_body(wanted, catalog, language)
    new_links = {m.group(1) for ln in new_body if (m := _INDEX_LINK.match(ln))}
    dropped = sorted(old_links - new_links)
    room = plan.removal_room()
    if len(dropped) > room:
        keep = dropped[room:]
        plan.warnings.append(
            f"{home}: {len(keep)} index line(s) kept although their notes are gone "
            f"(removal cap of {plan.max_removals} reached)"
        )
        kept_paths = []
        for raw in keep:
            kept_paths.append(raw)
        new_body += [f"- {raw}" for raw in kept_paths]
        dropped = dropped[:room]
    if hers:
        new_body = _keep_persons(old_body, hers, new_body)
    after = blocks.replace_block_body(text, "index", new_body)
    if after == text:
        return
    added = sorted(new_links - old_links)
    facts = []
    if added:
        facts.append(fact("index_listed", n=len(added)))
    if dropped:
        facts.append(fact("index_dropped", n=len(dropped)))
    if not facts:
        facts.append(fact("index_reordered"))
    prov = [
        {"source": p, "line": None, "message_id": None, "quote": link_text(p, catalog)}
        for p in wanted
        if f"[[{link_text(p, catalog)}]]" in added
    ]
    change = plan.write(
        home,
        after,
        kind="represented",
        facts=facts,
        provenance=prov,
        removed=len(dropped),
    )
    if change is not None:
        by_link = {f"[[{link_text(p, catalog)}]]": p for p in wanted}
        out.listed = [by_link[a] for a in added if a in by_link]
        out.unlisted = dropped
        out.notes.append(home)


def _rename_target(target: str, catalog: NoteCatalog, renames: Mapping[str, str]) -> str | None:
    for old, new in renames.items():
        if path_key(old[:-3] if old.endswith(".md") else old) == path_key(target) or title_key(
            old
        ) == title_key(target):
            return new
    key = title_key(target)
    if not key:
        return None
    hits = set()
    for names in catalog._names.values():  # noqa: SLF001 - same package
        hits |= names.get(key, set())
    hits = {h for h in hits if area_of(h) != "journal"}
    return next(iter(hits)) if len(hits) == 1 else None


def _replacement(raw: str, new_target: str) -> str | None:
    m = re.fullmatch(r"(!?)\[\[([^\[\]\n]+)\]\]", raw)
    if not m:
        return None
    inner = m.group(2)
    alias = ""
    if "|" in inner:
        inner, _, a = inner.partition("|")
        alias = "|" + a
        if inner.endswith("\\"):
            inner, alias = inner[:-1], "\\" + alias
    sub = ""
    if "#" in inner:
        sub = "#" + inner.partition("#")[2]
    elif "^" in inner:
        sub = "#^" + inner.partition("^")[2]
    return f"{m.group(1)}[[{new_target}{sub}{alias}]]"


def repair_links(
    plan: Plan,
    catalog: NoteCatalog,
    broken: Sequence[BrokenLink],
    out: Represented,
    renames: Mapping[str, str] | None = None,
) -> None:
    per_note: dict[str, list[tuple[str, str, str]]] = {}
    for b in broken:
        if b.raw.startswith("[") and not b.raw.startswith("[["):
            continue  # Markdown links are left to the person
        dest = _rename_target(b.target, catalog, renames or {})
        if dest is None or dest == b.source:
            continue
        new_raw = _replacement(b.raw, link_text(dest, catalog))
        if new_raw is None or new_raw == b.raw:
            continue
        per_note.setdefault(b.source, []).append((b.raw, new_raw, dest))
    for rel, fixes in sorted(per_note.items()):
        if plan.is_recent(rel):
            plan.warnings.append(
                f"{rel}: {len(fixes)} broken link(s) left as they are ({plan.edit_note(rel)})"
            )
            continue
        text = plan.read(rel)
        if text is None:
            continue
        lines = blocks.split_lines(text)
        masked = blocks.split_lines(mask_code(text))
        changed: set[int] = set()
        done: list[tuple[str, str, str]] = []
        for raw, new_raw, dest in dict.fromkeys(fixes):
            for i, (ln, mk) in enumerate(zip(lines, masked, strict=False)):
                if raw in mk and raw in ln:
                    lines[i] = ln.replace(raw, new_raw)
                    changed.add(i)
            done.append((raw, new_raw, dest))
        if not changed:
            continue
        if len(changed) > plan.removal_room():
            plan.warnings.append(f"{rel}: broken links not repaired (removal cap reached)")
            continue
        prov = [{"source": d, "line": None, "message_id": None, "quote": n} for _r, n, d in done]
        change = plan.write(
            rel,
            "\n".join(lines),
            kind="represented",
            facts=[fact("links_repaired", n=len(done))],
            provenance=prov,
            removed=len(changed),
            allow_link_edit=True,
        )
        if change is not None:
            out.repaired.extend((rel, r, n) for r, n, _d in done)
            if rel not in out.notes:
                out.notes.append(rel)


def find_orphans(
    catalog: NoteCatalog,
    inbound: Mapping[str, set[str]],
    listed_in_home: bool,
    home_listed: Sequence[str],
    home_text: str | None,
) -> list[str]:
    """Notes (not journal days, not Home.md) that nothing links to, after this dream."""
    indexed: set[str] = set()
    if home_text:
        body = blocks.block_body(home_text, "index") or []
        for ln in body:
            m = _INDEX_LINK.match(ln)
            if m:
                dest = catalog.resolve(m.group(1)[2:-2], HOME)
                if dest:
                    indexed.add(dest)
    out = []
    for p in [*catalog.paths, *sorted(catalog.created)]:
        if fast_area(p) in ("journal", "home", "companion"):
            continue
        if inbound.get(p) or p in indexed or p in home_listed:
            continue
        if p in catalog.created and listed_in_home:
            continue
        out.append(p)
    return out
