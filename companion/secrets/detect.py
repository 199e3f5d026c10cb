"""Find credentials in notes: our high-signal rules plus detect-secrets, on candidate lines only.

`scan_text` is the core: a cheap prefilter (`rules.candidate_offsets`, four regex passes over
the whole text) finds the few lines that could hold a credential; on each of those, one gate
pass (`gates.Gate`) picks the rules and detect-secrets plugins worth running, overlapping
findings are resolved (the most specific rule wins), and silenced lines and allow-listed values
are dropped.

A `Finding` never shows its secret: `repr`, `str` and `to_dict` give the masked form and a
fingerprint (a domain-separated SHA-256, for "report once" dedupe). The value itself is kept in a
slot that only `companion.secrets.move` reads.

Silencing a false positive:
- on the line: `companion:allow-secret` anywhere (e.g. `<!-- companion:allow-secret -->`), or
  detect-secrets' `pragma: allowlist secret`; `pragma: allowlist nextline secret` on the line
  before also works;
- in the config: `[secrets] allowlist = ["regex", ...]`, each searched in the secret value.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from companion.errors import ConfigError
from companion.secrets import ds
from companion.secrets.gates import Gate
from companion.secrets.rules import (
    BLOCK_LITERALS,
    RULES,
    TRAILING,
    candidate_offsets,
    match_private_key,
)

ALLOW_MARKERS = ("companion:allow-secret", "pragma: allowlist secret")
NEXTLINE_MARKER = "pragma: allowlist nextline secret"
_TRIMMED_KINDS = {"secret-assignment", "password", "api-key", "bearer-token"}
_PEM_PRIORITY = 0.5  # after the GCP service-account rule (index 0), before everything else
_DS_PRIORITY = 1000.0
NOTE_SUFFIXES = (".md", ".markdown", ".txt", ".canvas")
_PRUNED_DIRS = {".git", ".trash", ".obsidian", ".hg", ".svn", "node_modules"}

Allowlist = Sequence[re.Pattern[str]]

_GATE = Gate(
    [n for r in RULES for n in r.needs]
    + [n for g in ds.GATES.values() for n in g[0]]
    + list(BLOCK_LITERALS)
)
_GATE_LOWER = Gate(
    [n for r in RULES for n in r.needs_lower] + [n for g in ds.GATES.values() for n in g[1]]
)
_RULES_BY_LITERAL: dict[str, set[int]] = {}
_RULES_BY_LOWER: dict[str, set[int]] = {}
for _i, _rule in enumerate(RULES):
    for _lit in _rule.needs:
        _RULES_BY_LITERAL.setdefault(_lit, set()).add(_i)
    for _lit in _rule.needs_lower:
        _RULES_BY_LOWER.setdefault(_lit, set()).add(_i)
_UNGATED_RULES = {i for i, r in enumerate(RULES) if not r.needs and not r.needs_lower}


def _rules_for(present: set[str], present_lower: set[str]) -> list[int]:
    idx = set(_UNGATED_RULES)
    for lit in present:
        idx |= _RULES_BY_LITERAL.get(lit, set())
    for lit in present_lower:
        idx |= _RULES_BY_LOWER.get(lit, set())
    return sorted(idx)


def mask(secret: str) -> str:
    """First 4 and last 2 characters of a long secret, stars between; short ones fully masked."""
    if len(secret) < 16:
        return "*" * 8
    head, tail = secret[:4], secret[-2:]
    shown = (head + tail).replace("\n", " ").replace("\r", " ")
    return shown[:4] + "*" * min(len(secret) - 6, 16) + shown[4:]


def fingerprint(secret: str) -> str:
    """Stable id of a secret for dedupe; domain-separated so it matches no plain-hash table."""
    return hashlib.sha256(b"vault-companion/secret/v1\0" + secret.encode("utf-8")).hexdigest()


class Finding:
    """One credential found in a text: where, what kind, masked. Never holds it in plain view."""

    __slots__ = (
        "path",
        "line",
        "column",
        "kind",
        "masked",
        "fingerprint",
        "detector",
        "file_sha256",
        "_value",
        "_start",
        "_end",
    )

    def __init__(
        self,
        *,
        path: str | None,
        line: int,
        column: int,
        kind: str,
        value: str,
        start: int,
        end: int,
        detector: str,
        file_sha256: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.column = column
        self.kind = kind
        self.masked = mask(value)
        self.fingerprint = fingerprint(value)
        self.detector = detector
        self.file_sha256 = file_sha256
        self._value = value
        self._start = start
        self._end = end

    @property
    def span(self) -> tuple[int, int]:
        """Character offsets of the secret in the scanned text."""
        return (self._start, self._end)

    def reveal(self) -> str:
        """The secret itself. Only `move` calls this; never print or log it."""
        return self._value

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "kind": self.kind,
            "masked": self.masked,
            "fingerprint": self.fingerprint,
            "detector": self.detector,
        }

    def _key(self) -> tuple[Any, ...]:
        return (self.path, self.line, self.column, self.kind, self.fingerprint)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Finding) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"Finding(path={self.path!r}, line={self.line}, column={self.column}, "
            f"kind={self.kind!r}, masked={self.masked!r})"
        )

    def __str__(self) -> str:
        return f"{self.path or '<text>'}:{self.line}:{self.column}  {self.kind}  {self.masked}"

    def __reduce__(self) -> Any:  # pickling keeps the value (process pools); never persisted
        return (
            _rebuild,
            (
                self.path,
                self.line,
                self.column,
                self.kind,
                self._value,
                self._start,
                self._end,
                self.detector,
                self.file_sha256,
            ),
        )


def _rebuild(path, line, column, kind, value, start, end, detector, sha):  # type: ignore[no-untyped-def]
    return Finding(
        path=path,
        line=line,
        column=column,
        kind=kind,
        value=value,
        start=start,
        end=end,
        detector=detector,
        file_sha256=sha,
    )


def compile_allowlist(patterns: Iterable[str] | None) -> tuple[re.Pattern[str], ...]:
    """Compile `[secrets] allowlist`; a bad regex is a configuration error (exit 2)."""
    out = []
    for i, pat in enumerate(patterns or ()):
        if not isinstance(pat, str):
            raise ConfigError(f"[secrets] allowlist entry {i + 1} must be a string")
        try:
            out.append(re.compile(pat))
        except re.error as exc:
            raise ConfigError(
                f"[secrets] allowlist entry {i + 1} is not a valid regex: {exc}"
            ) from None
    return tuple(out)


def _line_allowed(text: str, start: int, end: int) -> bool:
    line = text[start:end]
    if any(m in line for m in ALLOW_MARKERS):
        return True
    if start > 0:
        prev = text[text.rfind("\n", 0, start - 1) + 1 : start - 1]
        return NEXTLINE_MARKER in prev
    return False


def _line_hits(text: str, start: int, end: int) -> list[tuple[float, int, int, str, str]]:
    """(priority, start, end, kind, detector) of every candidate on one line (absolute offsets)."""
    line = text[start:end]
    present = _GATE.present(line)
    present_lower = _GATE_LOWER.present(line.lower())
    hits: list[tuple[float, int, int, str, str]] = []
    if "BEGIN" in present or "PuTTY-User-Key-File" in present:
        span = match_private_key(text, start, end)
        if span is not None:
            hits.append((_PEM_PRIORITY, span[0], span[1], "private-key", "companion"))
    for i in _rules_for(present, present_lower):
        rule = RULES[i]
        at = 0
        while (m := rule.regex.search(line, at)) is not None:
            s, e = m.span(rule.group)
            value = line[s:e]
            if rule.kind in _TRIMMED_KINDS:
                if value.endswith(("...", "…")):  # a truncated example, not a secret
                    value = ""
                value = value.rstrip(TRAILING)
                e = s + len(value)
            if not value or (rule.check is not None and not rule.check(value, m)):
                # a rejected match may hide a good one that starts inside its value
                # (`alerts: \`TOKEN=...\``), never one inside its name or prefix
                at = max(m.start(rule.group), m.start() + 1)
                continue
            hits.append((float(i), start + s, start + e, rule.kind, "companion"))
            at = max(m.end(), m.start() + 1)
    for j, hit in enumerate(ds.scan_line(line, present, present_lower)):
        hits.append(
            (
                _DS_PRIORITY + j,
                start + hit.start,
                start + hit.end,
                hit.kind,
                f"detect-secrets:{hit.plugin}",
            )
        )
    return hits


def _resolve(
    hits: list[tuple[float, int, int, str, str]],
) -> list[tuple[float, int, int, str, str]]:
    kept: list[tuple[float, int, int, str, str]] = []
    for hit in sorted(hits):
        if all(hit[2] <= k[1] or hit[1] >= k[2] for k in kept):
            kept.append(hit)
    return sorted(kept, key=lambda h: h[1])


def iter_findings(
    text: str, path: str | None = None, *, allowlist: Allowlist = (), file_sha256: str | None = None
) -> Iterator[Finding]:
    """Findings in `text`, in order, computed lazily line by line."""
    n = len(text)
    pos = 0
    line_no = 1
    counted_to = 0
    for offset in candidate_offsets(text):
        if offset < pos:
            continue  # this line (or block) was already examined
        start = text.rfind("\n", 0, offset) + 1
        end = text.find("\n", offset)
        if end == -1:
            end = n
        line_no += text.count("\n", counted_to, start)
        counted_to = start
        pos = end + 1
        if _line_allowed(text, start, end):
            continue
        for _prio, s, e, kind, detector in _resolve(_line_hits(text, start, end)):
            if e > pos:  # a multi-line block: continue after it
                pos = text.find("\n", e)
                pos = n + 1 if pos == -1 else pos + 1
            value = text[s:e]
            if any(p.search(value) for p in allowlist):
                continue
            yield Finding(
                path=path,
                line=line_no,
                column=s - start + 1,
                kind=kind,
                value=value,
                start=s,
                end=e,
                detector=detector,
                file_sha256=file_sha256,
            )


def scan_text(
    text: str, path: str | None = None, *, allowlist: Allowlist = (), file_sha256: str | None = None
) -> list[Finding]:
    """Every credential in `text` (one finding per occurrence)."""
    return list(iter_findings(text, path, allowlist=allowlist, file_sha256=file_sha256))


def contains_secret(text: str, *, allowlist: Allowlist = ()) -> bool:
    """Fast check for the dream and the sync daemon: stops at the first finding."""
    return next(iter_findings(text, allowlist=allowlist), None) is not None


def read_note(path: Path) -> tuple[str, str] | None:
    """(text, sha256 of the bytes) of a text file, or None for a binary file."""
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace"), hashlib.sha256(data).hexdigest()


def scan_file(
    path: str | os.PathLike[str], *, allowlist: Allowlist = (), display_path: str | None = None
) -> list[Finding]:
    """Findings in one file; each carries the SHA-256 of the bytes that were scanned."""
    p = Path(path)
    got = read_note(p)
    if got is None:
        return []
    text, sha = got
    return scan_text(text, display_path or str(p), allowlist=allowlist, file_sha256=sha)


@dataclass
class VaultScan:
    vault: Path
    files: int = 0
    findings: list[Finding] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)


def iter_note_paths(vault: Path) -> Iterator[Path]:
    """Text notes of a vault, skipping .git, .obsidian, .trash and other hidden folders
    (the companion's own `.companion/` is scanned: dream reports must stay clean too)."""
    for root, dirs, files in os.walk(vault):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _PRUNED_DIRS and (not d.startswith(".") or d == ".companion")
        )
        for name in sorted(files):
            if name.lower().endswith(NOTE_SUFFIXES):
                yield Path(root, name)


PARALLEL_MIN_FILES = 2000  # below this, starting worker processes costs more than it saves
_CHUNK = 400


def _scan_chunk(
    root: str, rels: list[str], allowlist: Allowlist, max_file_bytes: int | None
) -> tuple[int, list[Finding], list[tuple[str, str]]]:
    files = 0
    findings: list[Finding] = []
    skipped: list[tuple[str, str]] = []
    for rel in rels:
        p = Path(root, rel)
        try:
            if max_file_bytes is not None and p.stat().st_size > max_file_bytes:
                skipped.append((rel, "larger than vault.max_file_mb"))
                continue
            got = read_note(p)
        except OSError as exc:
            skipped.append((rel, f"cannot read: {exc.strerror or exc}"))
            continue
        if got is None:
            skipped.append((rel, "binary"))
            continue
        files += 1
        text, sha = got
        findings.extend(iter_findings(text, rel, allowlist=allowlist, file_sha256=sha))
    return files, findings, skipped


def _default_jobs(n_files: int) -> int:
    if n_files < PARALLEL_MIN_FILES:
        return 1
    return max(1, min(os.cpu_count() or 1, 4))


def scan_vault(
    vault: str | os.PathLike[str],
    *,
    allowlist: Allowlist = (),
    max_file_bytes: int | None = None,
    jobs: int | None = None,
) -> VaultScan:
    """Scan every note of a vault; paths in findings are vault-relative, with `/`.

    `jobs`: worker processes. None (default) scans in this process, which already meets the
    10,000-notes-in-3-s target on one core; 0 picks one per core (up to 4) for vaults of more
    than PARALLEL_MIN_FILES notes. This process scans chunks too, from the end, while the
    workers start; results keep the vault's sorted order.
    """
    root = Path(vault)
    rels = [p.relative_to(root).as_posix() for p in iter_note_paths(root)]
    chunks = [rels[i : i + _CHUNK] for i in range(0, len(rels), _CHUNK)]
    jobs = 1 if jobs is None else _default_jobs(len(rels)) if jobs == 0 else max(1, jobs)
    results: list[tuple[int, list[Finding], list[tuple[str, str]]] | None] = [None] * len(chunks)
    args = (str(root), allowlist, max_file_bytes)
    if jobs > 1 and len(chunks) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn, not fork: the desktop app and the daemon have threads
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs - 1, mp_context=ctx) as pool:
            futures = [pool.submit(_scan_chunk, args[0], c, args[1], args[2]) for c in chunks]
            for i in range(len(chunks) - 1, -1, -1):
                if futures[i].cancel():  # not started by a worker yet: do it here
                    results[i] = _scan_chunk(args[0], chunks[i], args[1], args[2])
            for i, fut in enumerate(futures):
                if results[i] is None:
                    results[i] = fut.result()
    else:
        for i, c in enumerate(chunks):
            results[i] = _scan_chunk(args[0], c, args[1], args[2])
    out = VaultScan(root)
    for r in results:
        assert r is not None
        out.files += r[0]
        out.findings.extend(r[1])
        out.skipped.extend(r[2])
    return out
