"""The link graph of a vault: who links to whom, broken links, orphans, notes not in Home.md.

Built in memory from each note's `NoteMeta` (the part of a parsed note the graph needs, which
the index caches so a warm check does not re-read unchanged notes).

Definitions (what `vault check` reports):
- broken link: its target resolves to no file of the vault.
- ambiguous link: several files match; it resolves to one of them (see `links.py`).
- missing anchor: the target note exists but has no such heading or `^block` id.
- orphan: a note no other note links to. Home.md and journal days are never orphans: Home.md
  is the entry point and days are found by date.
- not in Home: a note Home.md does not link to directly (Home.md itself and journal days
  aside). With no Home.md, every such note is listed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from companion.vault.layout import HOME
from companion.vault.links import LinkResolver
from companion.vault.note import Note

_ANCHOR_DROP = re.compile(r"[\W_]+")


def anchor_key(text: str) -> str:
    """Headings are matched loosely: case-folded, punctuation and spaces dropped."""
    return _ANCHOR_DROP.sub("", text.casefold())


@dataclass(slots=True)
class NoteMeta:
    """What the graph and `check` need from a note; cached by the index. Short tuples, not
    sets: a note has a handful of headings, and tuples load faster from the cache."""

    links: Sequence[Sequence[Any]]  # Link tuples
    tags: Sequence[str] = ()
    heading_keys: Sequence[str] = ()
    block_ids: Sequence[str] = ()
    warnings: Sequence[str] = ()

    @classmethod
    def from_note(cls, note: Note) -> NoteMeta:
        return cls(
            links=[tuple(link) for link in note.links],
            tags=tuple(note.tags),
            heading_keys=tuple({anchor_key(h.text): None for h in note.headings}),
            block_ids=tuple({b.casefold(): None for b in note.block_ids}),
            warnings=tuple(note.warnings),
        )

    def to_record(self) -> tuple[Any, ...]:
        """A tuple of plain values (marshal-able)."""
        return (
            tuple(tuple(link) for link in self.links),
            tuple(self.tags),
            tuple(self.heading_keys),
            tuple(self.block_ids),
            tuple(self.warnings),
        )

    @classmethod
    def from_record(cls, rec: Sequence[Any]) -> NoteMeta:
        links, tags, headings, blocks, warnings = rec
        return cls(links, tags, headings, blocks, warnings)


class BrokenLink(NamedTuple):
    source: str
    line: int
    target: str
    raw: str
    embed: bool


class AmbiguousLink(NamedTuple):
    source: str
    line: int
    target: str
    resolved: str
    candidates: tuple[str, ...]


class MissingAnchor(NamedTuple):
    source: str
    line: int
    target: str
    anchor: str


@dataclass
class LinkGraph:
    """`outbound[note]` is the set of files a note links to (itself excluded);
    `inbound[note]` the notes linking to it (computed on first use)."""

    notes: list[str]
    home: str | None
    outbound: dict[str, AbstractSet[str]] = field(default_factory=dict)
    broken: list[BrokenLink] = field(default_factory=list)
    ambiguous: list[AmbiguousLink] = field(default_factory=list)
    missing_anchors: list[MissingAnchor] = field(default_factory=list)
    link_count: int = 0
    _inbound: dict[str, set[str]] | None = field(default=None, repr=False, compare=False)

    @property
    def inbound(self) -> dict[str, set[str]]:
        if self._inbound is None:
            inbound: dict[str, set[str]] = {}
            for src, dests in self.outbound.items():
                for d in dests:
                    s = inbound.get(d)
                    if s is None:
                        inbound[d] = {src}
                    else:
                        s.add(src)
            self._inbound = inbound
        return self._inbound

    def _exempt(self, path: str) -> bool:
        return path == self.home or path[:8].casefold() == "journal/"

    def orphans(self) -> list[str]:
        """Notes with no inbound link from another note (Home.md and journal/ aside)."""
        linked: set[str] = set().union(*self.outbound.values())
        return [p for p in self.notes if p not in linked and not self._exempt(p)]

    def not_in_home(self) -> list[str]:
        """Notes Home.md does not link to (Home.md and journal/ aside)."""
        listed = self.outbound.get(self.home, frozenset()) if self.home else frozenset()
        return [p for p in self.notes if p not in listed and not self._exempt(p)]

    def backlinks(self, path: str) -> set[str]:
        return set(self.inbound.get(path, ()))

    def to_record(self) -> tuple[Any, ...]:
        """Plain values (marshal-able) to store the graph; `notes` is not included."""
        return (
            self.home,
            {src: frozenset(d) for src, d in self.outbound.items()},
            [tuple(b) for b in self.broken],
            [tuple(a) for a in self.ambiguous],
            [tuple(m) for m in self.missing_anchors],
            self.link_count,
        )

    @classmethod
    def from_record(cls, notes: Iterable[str], rec: Sequence[Any]) -> LinkGraph:
        home, outbound, broken, ambiguous, missing, count = rec
        return cls(
            notes=sorted(notes),
            home=home,
            outbound=outbound,
            broken=[BrokenLink(*b) for b in broken],
            ambiguous=[AmbiguousLink(*a) for a in ambiguous],
            missing_anchors=[MissingAnchor(*m) for m in missing],
            link_count=count,
        )


def find_home(paths: Iterable[str]) -> str | None:
    """`Home.md` at the vault root (any case)."""
    best = None
    for p in paths:
        if "/" not in p and p.casefold() == HOME.casefold():
            if p == HOME:
                return p
            best = best or p
    return best


def build_graph(
    notes: Iterable[str],
    metas: Mapping[str, NoteMeta],
    resolver: LinkResolver,
) -> LinkGraph:
    """The graph over `notes` (every note path, read or not) from the metas of those read."""
    note_list = sorted(notes)
    graph = LinkGraph(notes=note_list, home=find_home(note_list))
    outbound = graph.outbound
    broken, ambiguous = graph.broken, graph.ambiguous
    resolve = resolver.resolve_full
    count = 0
    for source in note_list:
        meta = metas.get(source)
        if meta is None:
            continue
        links = meta.links
        if not links:
            continue
        count += len(links)
        out: set[str] = set()
        for link in links:
            target = link[0]
            if target:
                res = resolve(target, source)
                dest = res.path
                if dest is None:
                    broken.append(BrokenLink(source, link[4], target, link[5], link[3]))
                    continue
                if len(res.candidates) > 1:
                    ambiguous.append(AmbiguousLink(source, link[4], target, dest, res.candidates))
                if dest != source:
                    out.add(dest)
            else:
                dest = source  # [[#Heading]]
            if link[1] and dest[-3:].lower() == ".md":
                _check_anchor(graph, metas.get(dest), source, link[4], target, link[1])
        if out:
            outbound[source] = frozenset(out)
    graph.link_count = count
    return graph


def _check_anchor(
    graph: LinkGraph, meta: NoteMeta | None, source: str, line: int, target: str, subpath: str
) -> None:
    if meta is None:  # target not read (too large, unreadable): cannot tell
        return
    if subpath.startswith("^"):
        if subpath[1:].casefold() not in meta.block_ids:
            graph.missing_anchors.append(MissingAnchor(source, line, target, subpath))
        return
    last = subpath.rsplit("#", 1)[-1]
    key = anchor_key(last)
    if key and key not in meta.heading_keys:
        graph.missing_anchors.append(MissingAnchor(source, line, target, subpath))
