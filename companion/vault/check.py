"""`vault check`: the health report of a vault, for people (text) and scripts (JSON).

Each kind of finding has a severity. **Errors** are what Obsidian itself would show as wrong:
broken links, links to a heading or block the note does not have, notes that cannot be read.
**Warnings** are worth a look but normal in an ordinary vault: orphans (no note links to them),
notes Home.md does not list, a missing Home.md, ambiguous links (several files match; the link
still resolves), and notes read with a caveat (bad frontmatter, non-UTF-8 text, files over the
size cap, symlinks not followed, odd names). The check fails (`ok` false, exit status 1) on an
error; with `strict`, on a warning too.

JSON shape (stable; `"format": 2`; lists sorted by path, then line):

    {
      "format": 2,
      "vault": "/abs/path",
      "ok": true,                       # exit status 0: no error (with strict: no warning)
      "strict": false,
      "problems": {"errors": 0, "warnings": 2},
      "severity": {"broken_links": "error", "missing_anchors": "error", "unreadable": "error",
                   "missing_home": "warning", "orphans": "warning", "not_in_home": "warning",
                   "ambiguous_links": "warning", "warnings": "warning"},
      "counts": {"notes": 0, "files": 0, "links": 0, "broken_links": 0, "missing_anchors": 0,
                 "unreadable": 0, "missing_home": 0, "orphans": 0, "not_in_home": 0,
                 "ambiguous_links": 0, "warnings": 0},
      "home": "Home.md",                # null when the vault has no Home.md
      "broken_links":   [{"source": "a.md", "line": 3, "target": "Gone", "raw": "[[Gone]]",
                          "embed": false}],
      "missing_anchors":[{"source": "a.md", "line": 5, "target": "B", "anchor": "Nope"}],
      "unreadable":     [{"path": "b.md", "reason": "binary file (contains NUL bytes)"}],
      "orphans":        ["knowledge/x.md"],
      "not_in_home":    ["knowledge/x.md"],   # empty when there is no Home.md
      "ambiguous_links":[{"source": "a.md", "line": 4, "target": "Dup", "resolved": "Dup.md",
                          "candidates": ["Dup.md", "x/Dup.md"],  # the first 5
                          "candidate_count": 2}],
      "warnings":       [{"path": "c.md", "message": "frontmatter is not valid YAML ..."}],
      "index": {"path": "...sqlite", "parsed": 0, "unchanged": 0, "removed": 0,
                "helper_parsed": 0, "seconds": 0.0}
    }

Format 1 (before issue 21) had no `strict`, `problems` or `severity`, and its `ok` failed on
orphans, notes not in Home.md and a missing Home.md but not on missing headings or blocks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from companion.vault.graph import AmbiguousLink, LinkGraph
from companion.vault.index import UpdateStats, VaultIndex
from companion.vault.vault import Vault

JSON_FORMAT = 2
REVIEW_FOLDER = "review/"  # the morning review's notes (companion.review)

ERROR, WARNING = "error", "warning"
# Every kind of finding, errors first, with its severity and its name in the text report.
SEVERITY: dict[str, str] = {
    "broken_links": ERROR,
    "missing_anchors": ERROR,
    "unreadable": ERROR,
    "missing_home": WARNING,
    "orphans": WARNING,
    "not_in_home": WARNING,
    "ambiguous_links": WARNING,
    "warnings": WARNING,
}
_NAMES = {  # (singular, plural) in the summary line
    "broken_links": ("broken link", "broken links"),
    "missing_anchors": ("missing heading or block", "missing headings or blocks"),
    "unreadable": ("unreadable", "unreadable"),
    "missing_home": ("Home.md missing", "Home.md missing"),
    "orphans": ("orphan", "orphans"),
    "not_in_home": ("not listed in Home.md", "not listed in Home.md"),
    "ambiguous_links": ("ambiguous link", "ambiguous links"),
    "warnings": ("file warning", "file warnings"),
}


MAX_CANDIDATES = 5  # of an ambiguous link's candidates, how many the report shows


def _n(count: int, singular: str, plural: str) -> str:
    return f"{count} {singular if count == 1 else plural}"


def _ambiguous_rows(links: Sequence[AmbiguousLink]) -> list[str]:
    """One row per link target and the file it reaches, with where it is written: a vault
    of copied folders has thousands of such links to a handful of names."""
    groups: dict[tuple[str, str, tuple[str, ...]], list[AmbiguousLink]] = {}
    for a in sorted(links):
        groups.setdefault((a.target, a.resolved, a.candidates), []).append(a)
    rows = []
    for (target, resolved, cands), items in groups.items():
        where = ", ".join(f"{a.source}:{a.line}" for a in items[:3])
        if len(items) > 3:
            where += f" and {len(items) - 3} more"
        others = [c for c in cands if c != resolved]
        also = ", ".join(others[: MAX_CANDIDATES - 1])
        if len(others) > MAX_CANDIDATES - 1:
            also += f" and {len(others) - MAX_CANDIDATES + 1} more"
        rows.append(f"[[{target}]] -> {resolved} (also {also}): {where}")
    return rows


@dataclass
class CheckReport:
    vault: Vault
    graph: LinkGraph
    index_path: Path
    stats: UpdateStats
    unreadable: list[tuple[str, str]]
    warnings: list[tuple[str, str]]
    files: int

    strict: bool = False

    @cached_property
    def orphans(self) -> list[str]:
        return self.graph.orphans()

    @cached_property
    def not_in_home(self) -> list[str]:
        """Notes Home.md does not list; none when there is no Home.md (that is one warning)."""
        return self.graph.not_in_home() if self.graph.home is not None else []

    def counts(self) -> dict[str, int]:
        """How many findings of each kind (the keys of `SEVERITY`)."""
        g = self.graph
        return {
            "broken_links": len(g.broken),
            "missing_anchors": len(g.missing_anchors),
            "unreadable": len(self.unreadable),
            "missing_home": int(g.home is None),
            "orphans": len(self.orphans),
            "not_in_home": len(self.not_in_home),
            "ambiguous_links": len(g.ambiguous),
            "warnings": len(self.warnings),
        }

    def problems(self) -> dict[str, int]:
        """{"errors": n, "warnings": m}: the findings summed by severity."""
        out = {"errors": 0, "warnings": 0}
        for kind, n in self.counts().items():
            out["errors" if SEVERITY[kind] == ERROR else "warnings"] += n
        return out

    @property
    def ok(self) -> bool:
        """No error (and with `strict`, no warning): exit status 0."""
        p = self.problems()
        return not p["errors"] and not (self.strict and p["warnings"])

    def to_dict(self) -> dict[str, Any]:
        g = self.graph
        counts = self.counts()
        return {
            "format": JSON_FORMAT,
            "vault": str(self.vault.root),
            "ok": self.ok,
            "strict": self.strict,
            "problems": self.problems(),
            "severity": dict(SEVERITY),
            "counts": {
                "notes": len(g.notes),
                "files": self.files,
                "links": g.link_count,
                **counts,
            },
            "home": g.home,
            "broken_links": [
                {
                    "source": b.source,
                    "line": b.line,
                    "target": b.target,
                    "raw": b.raw,
                    "embed": bool(b.embed),
                }
                for b in sorted(g.broken)
            ],
            "missing_anchors": [
                {"source": m.source, "line": m.line, "target": m.target, "anchor": m.anchor}
                for m in sorted(g.missing_anchors)
            ],
            "unreadable": [{"path": p, "reason": r} for p, r in self.unreadable],
            "orphans": self.orphans,
            "not_in_home": self.not_in_home,
            "ambiguous_links": [
                {
                    "source": a.source,
                    "line": a.line,
                    "target": a.target,
                    "resolved": a.resolved,
                    "candidates": list(a.candidates[:MAX_CANDIDATES]),
                    "candidate_count": len(a.candidates),
                }
                for a in sorted(g.ambiguous)
            ],
            "warnings": [{"path": p, "message": m} for p, m in self.warnings],
            "index": {
                "path": str(self.index_path),
                "parsed": self.stats.parsed,
                "unchanged": self.stats.unchanged,
                "removed": self.stats.removed,
                "helper_parsed": self.stats.helper_parsed,
                "seconds": round(self.stats.seconds, 3),
            },
        }

    def to_json(self) -> str:
        """`to_dict()` as JSON text, one line per key. (Each value is compact: `indent` would
        take the pure-Python encoder, ten times slower on a report of 40,000 findings.)"""
        enc = json.JSONEncoder(ensure_ascii=False).encode
        items = [f"  {enc(k)}: {enc(v)}" for k, v in self.to_dict().items()]
        return "{\n" + ",\n".join(items) + "\n}"

    def _rows(self, kind: str) -> tuple[str, list[str]]:
        """The title and the lines of one kind of finding in the text report."""
        g = self.graph
        if kind == "broken_links":
            return "Broken links", [f"{b.source}:{b.line}  {b.raw}" for b in sorted(g.broken)]
        if kind == "missing_anchors":
            rows = [
                f"{m.source}:{m.line}  [[{m.target}#{m.anchor}]]" for m in sorted(g.missing_anchors)
            ]
            return "Missing headings or blocks", rows
        if kind == "unreadable":
            return "Unreadable", [f"{p}: {r}" for p, r in self.unreadable]
        if kind == "missing_home":
            rows = ["run `companion vault init` to create it"] if g.home is None else []
            return "Home.md is missing", rows
        if kind == "orphans":
            return "Orphans (no note links to them)", self.orphans
        if kind == "not_in_home":
            return "Not listed in Home.md", self.not_in_home
        if kind == "ambiguous_links":
            return "Ambiguous links (several files match; each link reaches the one shown)", (
                _ambiguous_rows(g.ambiguous)
            )
        return "File warnings", [f"{p}: {m}" for p, m in self.warnings]

    def render_text(self) -> str:
        g = self.graph
        out: list[str] = [
            f"Vault {self.vault.root}: {len(g.notes)} notes, {self.files} other files, "
            f"{g.link_count} links"
        ]
        counts, problems = self.counts(), self.problems()
        for severity, title in ((ERROR, "Errors"), (WARNING, "Warnings")):
            total = problems["errors" if severity == ERROR else "warnings"]
            if not total:
                continue
            out.append("")
            out.append(f"{title} ({total}):")
            for kind, sev in SEVERITY.items():
                if sev != severity or not counts[kind]:
                    continue
                name, rows = self._rows(kind)
                out.append(
                    f"  {name} ({counts[kind]}):" if kind != "missing_home" else f"  {name}:"
                )
                out.extend(f"    {r}" for r in rows)

        def summary(severity: str) -> str:
            key = "errors" if severity == ERROR else "warnings"
            total = problems[key]
            if not total:
                return f"no {key}"
            parts = [
                _n(counts[k], *_NAMES[k]) if k != "missing_home" else "Home.md missing"
                for k, sev in SEVERITY.items()
                if sev == severity and counts[k]
            ]
            return f"{_n(total, key[:-1], key)} ({', '.join(parts)})"

        errors, warnings = summary(ERROR), summary(WARNING)
        joined = f"{errors}, {warnings}" if not problems["warnings"] else f"{errors}; {warnings}"
        if problems["errors"] and not problems["warnings"]:
            joined = errors
        label = (
            "OK" if self.ok else ("Problems (--strict)" if not problems["errors"] else "Problems")
        )
        out.append("")
        out.append(f"{label}: {joined}")
        return "\n".join(out)


def run_check(vault: Vault, data_dir: str | os.PathLike[str], strict: bool = False) -> CheckReport:
    """Update the vault's index and build the report. Reads the vault, never writes to it.
    `strict`: warnings fail the check too."""
    with VaultIndex(vault, data_dir) as index:
        stats = index.update(fulltext=False)  # the links are enough; search adds the text
        graph = index.graph()
        note_warnings = index.note_warnings()
    unreadable: list[tuple[str, str]] = []
    warnings: list[tuple[str, str]] = [("(index)", w) for w in index.warnings]
    for issue in index.issues:
        (unreadable if issue.kind == "unreadable" else warnings).append((issue.path, issue.message))
    warnings.extend(note_warnings)
    # a review note (docs/review.md) is a record of what changed: it names notes a revert or
    # the agent removed since, so its dangling links are worth a look, not an error
    gone = [b for b in graph.broken if b.source.startswith(REVIEW_FOLDER)]
    if gone:
        graph.broken[:] = [b for b in graph.broken if not b.source.startswith(REVIEW_FOLDER)]
        warnings += [(b.source, f"names {b.raw}, which is gone (line {b.line})") for b in gone]
    unreadable.sort()
    warnings.sort()
    scan = index.scan
    files = len(scan.files) if scan else 0
    return CheckReport(vault, graph, index.path, stats, unreadable, warnings, files, strict)
