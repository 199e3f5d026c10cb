"""Step 6, Verify, and `companion dream --verify`.

Sync: when the vault is a sync copy, the sync engine hands the dream a `SyncHook`. The dream
takes a per-night lease through the relay before it starts (a second dreamer that can reach the
relay sees the lease and stands down), syncs before reading, and after writing runs sync until
nothing is pending, a bounded number of times; then it fails clearly. Without a hook, the report
says "not a sync copy".

`verify_vault` checks every dream-written line of the vault against its source:
- content lines (`<!-- dream:begin -->` blocks): at least one reference must resolve and hold
  the line's text -- a vault line still saying it (at the cited line: "ok"; elsewhere in the
  file: "moved"), or a transcript message with that id whose text or memory-tool call contains
  it. Lines written by the `llm` distiller may restate their source; they resolve through the
  quote recorded for them in the day's report, and only while the line keeps that quote's
  values, negations and hedges (`companion.dream.meaning.grounding_problem`, the check the
  distiller made). A transcript that is not on this machine is
  "unreachable", not a failure;
  A content line the ledger does not hold as the dream's (`companion.dream.ledger`: a person
  wrote or changed it) is the person's: "edited", reported as "edited by a person", never a
  failure;
- index lines of Home.md: the link resolves to a note;
- Dreaming lines: the report they cite exists.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from companion.dream import blocks
from companion.dream.blocks import Ref
from companion.dream.consolidate import line_core
from companion.dream.ledger import Ledger
from companion.dream.meaning import grounding_problem
from companion.dream.read import find_messages
from companion.dream.report import list_reports
from companion.dream.text import contains_quote, squash
from companion.vault.code import mask_code
from companion.vault.note import extract_links
from companion.vault.vault import Vault

SYNC_ROUNDS = 5
SYNC_ATTEMPTS = 3


class SyncHook(Protocol):
    """What the sync engine offers the dream (implemented by companion.sync)."""

    def sync_until_quiet(self, max_rounds: int) -> int:
        """Sync until no change is pending or `max_rounds` rounds ran; returns what is
        still pending (0 when converged)."""
        ...

    def acquire_lease(self, name: str, ttl: float) -> bool:
        """Take the relay lease `name` for `ttl` seconds; False when another device holds it."""
        ...


def settle(
    hook: SyncHook, rounds: int = SYNC_ROUNDS, attempts: int = SYNC_ATTEMPTS
) -> dict[str, Any]:
    """Run sync until quiet, `attempts` times at most; the Verify record of the report."""
    pending = -1
    for attempt in range(1, attempts + 1):
        try:
            pending = int(hook.sync_until_quiet(rounds))
        except Exception as exc:  # noqa: BLE001 - reported, never a traceback
            pending = -1
            last_error = f"{type(exc).__name__}: {exc}"
            if attempt == attempts:
                return {
                    "status": "failed",
                    "pending": None,
                    "attempts": attempt,
                    "error": last_error,
                }
            continue
        if pending == 0:
            return {"status": "synced", "pending": 0, "attempts": attempt}
    return {
        "status": "failed",
        "pending": pending,
        "attempts": attempts,
        "error": f"{pending} change(s) still pending after {attempts} x {rounds} rounds",
    }


@dataclass
class LineCheck:
    note: str
    line: int
    text: str
    status: str  # ok, moved, unresolved, unreachable, edited (a person's line)
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "note": self.note,
            "line": self.line,
            "text": self.text,
            "status": self.status,
            "detail": self.detail,
        }


@dataclass
class VerifyResult:
    checks: list[LineCheck] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        out = {"ok": 0, "moved": 0, "unresolved": 0, "unreachable": 0, "edited": 0}
        for c in self.checks:
            out[c.status] = out.get(c.status, 0) + 1
        return out

    @property
    def ok(self) -> bool:
        return self.counts["unresolved"] == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "counts": self.counts,
            "problems": [c.to_dict() for c in self.checks if c.status != "ok"],
        }


def _report_quotes(vault: Path) -> dict[tuple[str, int | None, str | None], list[tuple[str, str]]]:
    """(source, line, message id) -> (line text written, quote) of model-written lines, from
    the dream reports."""
    out: dict[tuple[str, int | None, str | None], list[tuple[str, str]]] = {}
    for path in list_reports(vault):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        for ch in data.get("changes") or [] if isinstance(data, dict) else []:
            for p in ch.get("provenance") or [] if isinstance(ch, dict) else []:
                if (
                    isinstance(p, dict)
                    and isinstance(p.get("quote"), str)
                    and isinstance(p.get("written"), str)
                ):
                    key = (str(p.get("source")), p.get("line"), p.get("message_id"))
                    out.setdefault(key, []).append((p["written"], p["quote"]))
    return out


class _Sources:
    """Reads sources once per verify run."""

    def __init__(self, vault: Path, labels: Mapping[str, Path] | None = None) -> None:
        self.vault = vault
        self.labels = labels
        self.files: dict[str, list[str] | None] = {}
        self.messages: dict[str, dict[str, Any] | None] = {}

    def vault_lines(self, rel: str) -> list[str] | None:
        if rel not in self.files:
            try:
                text = (self.vault / rel).read_text(encoding="utf-8", errors="replace")
                self.files[rel] = blocks.blank_blocks(text.replace("\r\n", "\n")).split("\n")
            except OSError:
                self.files[rel] = None
        return self.files[rel]

    def prefetch(self, refs: Iterable[Ref]) -> None:
        wanted: dict[str, set[str]] = {}
        for r in refs:
            if ":" in r.source.split("/", 1)[0] and r.message_id is not None:
                wanted.setdefault(r.source, set()).add(r.message_id)
        for src, ids in wanted.items():
            found = find_messages(src, ids, self.labels)
            if found is None:
                self.messages[src] = None
                continue
            table = self.messages.setdefault(src, {}) or {}
            table.update(found)
            self.messages[src] = table

    def message_texts(self, ref: Ref) -> list[str] | None:
        table = self.messages.get(ref.source)
        if table is None:
            return None
        msg = table.get(ref.message_id or "")
        if msg is None:
            return []
        texts = [msg.text]
        for call in msg.tool_calls:
            texts.extend(str(v) for v in call.arguments.values() if isinstance(v, str))
        return texts


def _check_content(
    core: str,
    refs: tuple[Ref, ...],
    src: _Sources,
    quotes: dict[tuple[str, int | None, str | None], list[tuple[str, str]]],
) -> tuple[str, str]:
    unreachable = False
    changed: str | None = None
    for r in refs:
        is_transcript = ":" in r.source.split("/", 1)[0]
        recorded = quotes.get((r.source, r.line, r.message_id), [])
        wanted = [core]
        for w, q in recorded:
            if squash(w) != squash(core):
                continue
            problem = grounding_problem(core, q)  # the same check the distiller made
            if problem is None:
                wanted.append(q)
            else:
                changed = changed or problem
        if is_transcript:
            texts = src.message_texts(r)
            if texts is None:
                unreachable = True
                continue
            if any(contains_quote(t, w) for t in texts for w in wanted):
                return "ok", r.format()
            continue
        lines = src.vault_lines(r.source)
        if lines is None:
            continue
        if r.line is not None and 1 <= r.line <= len(lines):
            item = [lines[r.line - 1]]
            for nxt in lines[r.line : r.line + 20]:  # an item's indented continuation lines
                if not nxt[:1].isspace() or not nxt.strip() or nxt.lstrip()[:2] in ("- ", "* "):
                    break
                item.append(nxt)
            near = "\n".join(item)
            if any(contains_quote(near, w) for w in wanted):
                return "ok", r.format()
        whole = "\n".join(lines)
        if any(contains_quote(whole, w) for w in wanted):
            return "moved", f"{r.source}: no longer at line {r.line}"
    if unreachable:
        return "unreachable", "the transcript is not on this machine"
    if changed:
        return "unresolved", f"the line changes what its quote says: {changed}"
    return "unresolved", "no reference holds this text"


def verify_vault(vault: Path, labels: Mapping[str, Path] | None = None) -> VerifyResult:
    """Every dream-written line of `vault` against its sources. `labels` maps the labels of
    sources outside the home folder (`jsonl:@lab`) to their paths (`read.source_labels` of
    `[dream] sources`); a labelled source without one is unreachable."""
    v = Vault(vault)
    result = VerifyResult()
    quotes = _report_quotes(Path(vault))
    src = _Sources(Path(vault), labels)
    ledger = Ledger.load(Path(vault))
    found: list[tuple[str, blocks.DreamLine]] = []
    persons: set[tuple[str, int]] = set()  # (note, line) of content lines a person changed
    for rel in v.note_paths():
        try:
            text = (Path(vault) / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if not blocks.has_marker(text):
            continue
        text = text.replace("\r\n", "\n")
        raw = text.split("\n")
        for dl in blocks.dream_lines(text):
            found.append((rel, dl))
            if dl.kind == "content" and not ledger.owns(rel, raw[dl.line - 1]):
                persons.add((rel, dl.line))
    src.prefetch(r for _rel, dl in found for r in dl.refs)
    for rel, dl in found:
        if dl.kind == "index":
            links = [ln for ln in extract_links(mask_code(dl.text)) if ln.target]
            if not links:
                continue  # a heading of the index
            ok = all(v.resolve_link(ln.target, rel) for ln in links)
            result.checks.append(
                LineCheck(
                    rel,
                    dl.line,
                    dl.text,
                    "ok" if ok else "unresolved",
                    "" if ok else "the linked note is gone",
                )
            )
            continue
        if dl.kind == "log":
            if dl.text.lstrip().startswith("#"):
                continue
            ok = any((Path(vault) / r.source).is_file() for r in dl.refs)
            result.checks.append(
                LineCheck(
                    rel,
                    dl.line,
                    dl.text,
                    "ok" if ok else "unresolved",
                    "" if ok else "its dream report is missing",
                )
            )
            continue
        if (rel, dl.line) in persons:
            result.checks.append(LineCheck(rel, dl.line, dl.text, "edited", "edited by a person"))
            continue
        if not dl.refs:
            result.checks.append(
                LineCheck(rel, dl.line, dl.text, "unresolved", "no provenance on the line")
            )
            continue
        status, detail = _check_content(line_core(dl.text), dl.refs, src, quotes)
        result.checks.append(LineCheck(rel, dl.line, dl.text, status, detail))
    return result
