"""`vault check`: the health report of a vault, for people (text) and scripts (JSON).

JSON shape (stable; `"format": 1`; lists sorted by path, then line):

    {
      "format": 1,
      "vault": "/abs/path",
      "ok": false,                      # true when there is no problem (exit status 0)
      "counts": {"notes": 0, "files": 0, "links": 0, "broken_links": 0, "orphans": 0,
                 "not_in_home": 0, "unreadable": 0, "ambiguous_links": 0,
                 "missing_anchors": 0, "warnings": 0},
      "home": "Home.md",                # null when the vault has no Home.md
      "broken_links":   [{"source": "a.md", "line": 3, "target": "Gone", "raw": "[[Gone]]",
                          "embed": false}],
      "orphans":        ["knowledge/x.md"],
      "not_in_home":    ["knowledge/x.md"],
      "unreadable":     [{"path": "b.md", "reason": "binary file (contains NUL bytes)"}],
      "ambiguous_links":[{"source": "a.md", "line": 4, "target": "Dup", "resolved": "Dup.md",
                          "candidates": ["Dup.md", "x/Dup.md"]}],
      "missing_anchors":[{"source": "a.md", "line": 5, "target": "B", "anchor": "Nope"}],
      "warnings":       [{"path": "c.md", "message": "frontmatter is not valid YAML ..."}],
      "index": {"path": "...sqlite", "parsed": 0, "unchanged": 0, "removed": 0,
                "helper_parsed": 0, "seconds": 0.0}
    }

Problems (they make `ok` false and the exit status 1): broken links, orphans, notes not in
Home.md, a missing Home.md, unreadable notes. Ambiguous links, missing headings/blocks and
warnings (bad frontmatter, non-UTF-8 text, files over the size cap, symlinks not followed,
odd names) are reported but do not fail the check.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from companion.vault.graph import LinkGraph
from companion.vault.index import UpdateStats, VaultIndex
from companion.vault.vault import Vault

JSON_FORMAT = 1


@dataclass
class CheckReport:
    vault: Vault
    graph: LinkGraph
    index_path: Path
    stats: UpdateStats
    unreadable: list[tuple[str, str]]
    warnings: list[tuple[str, str]]
    files: int

    @property
    def orphans(self) -> list[str]:
        return self.graph.orphans()

    @property
    def not_in_home(self) -> list[str]:
        return self.graph.not_in_home()

    @property
    def ok(self) -> bool:
        g = self.graph
        return not (
            g.broken or self.orphans or self.not_in_home or self.unreadable or g.home is None
        )

    def to_dict(self) -> dict[str, Any]:
        g = self.graph
        orphans, not_in_home = self.orphans, self.not_in_home
        return {
            "format": JSON_FORMAT,
            "vault": str(self.vault.root),
            "ok": self.ok,
            "counts": {
                "notes": len(g.notes),
                "files": self.files,
                "links": g.link_count,
                "broken_links": len(g.broken),
                "orphans": len(orphans),
                "not_in_home": len(not_in_home),
                "unreadable": len(self.unreadable),
                "ambiguous_links": len(g.ambiguous),
                "missing_anchors": len(g.missing_anchors),
                "warnings": len(self.warnings),
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
            "orphans": orphans,
            "not_in_home": not_in_home,
            "unreadable": [{"path": p, "reason": r} for p, r in self.unreadable],
            "ambiguous_links": [
                {
                    "source": a.source,
                    "line": a.line,
                    "target": a.target,
                    "resolved": a.resolved,
                    "candidates": list(a.candidates),
                }
                for a in sorted(g.ambiguous)
            ],
            "missing_anchors": [
                {"source": m.source, "line": m.line, "target": m.target, "anchor": m.anchor}
                for m in sorted(g.missing_anchors)
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

    def render_text(self) -> str:
        g = self.graph
        out: list[str] = [
            f"Vault {self.vault.root}: {len(g.notes)} notes, {self.files} other files, "
            f"{g.link_count} links"
        ]

        def section(title: str, rows: list[str]) -> None:
            if rows:
                out.append("")
                out.append(f"{title} ({len(rows)}):")
                out.extend(f"  {r}" for r in rows)

        if g.home is None:
            out.append("")
            out.append("Home.md is missing: run `companion vault init` to create it.")
        section("Broken links", [f"{b.source}:{b.line}  {b.raw}" for b in sorted(g.broken)])
        section("Orphans (no note links to them)", self.orphans)
        section("Not listed in Home.md", self.not_in_home if g.home else [])
        section("Unreadable", [f"{p}: {r}" for p, r in self.unreadable])
        section(
            "Ambiguous links (resolved to the first)",
            [
                f"{a.source}:{a.line}  [[{a.target}]] -> {', '.join(a.candidates)}"
                for a in sorted(g.ambiguous)
            ],
        )
        section(
            "Missing headings or blocks",
            [f"{m.source}:{m.line}  [[{m.target}#{m.anchor}]]" for m in sorted(g.missing_anchors)],
        )
        section("Warnings", [f"{p}: {m}" for p, m in self.warnings])
        d = self.to_dict()["counts"]
        summary = (
            f"{d['broken_links']} broken links, {d['orphans']} orphans, "
            f"{d['not_in_home']} not in Home.md, {d['unreadable']} unreadable, "
            f"{d['warnings']} warnings"
        )
        out.append("")
        out.append(("OK: " if self.ok else "Problems: ") + summary)
        return "\n".join(out)


def run_check(vault: Vault, data_dir: str | os.PathLike[str]) -> CheckReport:
    """Update the vault's index and build the report. Reads the vault, never writes to it."""
    with VaultIndex(vault, data_dir) as index:
        stats = index.update(fulltext=False)  # the links are enough; search adds the text
        graph = index.graph()
        note_warnings = index.note_warnings()
    unreadable: list[tuple[str, str]] = []
    warnings: list[tuple[str, str]] = [("(index)", w) for w in index.warnings]
    for issue in index.issues:
        (unreadable if issue.kind == "unreadable" else warnings).append((issue.path, issue.message))
    warnings.extend(note_warnings)
    unreadable.sort()
    warnings.sort()
    scan = index.scan
    files = len(scan.files) if scan else 0
    return CheckReport(vault, graph, index.path, stats, unreadable, warnings, files)
