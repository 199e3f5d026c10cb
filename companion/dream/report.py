"""The dream report: `.companion/dreams/YYYY-MM-DD.json`, one file per dream day.

The one model of a report, for every reader: the dream writes it, `companion dream --undo`
and the desktop app's notification and review window read it (`read_report`, tolerant of
missing optional fields and of fields a newer version adds), and `companion.dream.undo`
reverts from it: each change holds the whole file before and after (with their SHA-256), so
the report is also the snapshot of everything the dream replaced. Several dreams on the same
day add to the same report (`runs` lists them); the top-level fields describe the latest run.
What each change did is kept as structured `facts` (kind, counts, names) that
`companion.dream.summary` words in the reader's language; `summary` is the English wording,
for people reading the JSON. The shape is documented in docs/dream.md.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from companion.errors import CompanionError
from companion.fileio import KEEP, write_text_atomic

if TYPE_CHECKING:
    from companion.dream.model import Candidate

REPORT_VERSION = 1
KINDS = ("consolidated", "corrected", "promoted", "represented", "recorded")
DREAMS_DIR = Path(".companion") / "dreams"
MEMORY_NOTES = ("MEMORY.md", "USER.md")
# A report's file name is its date; other files in the folder (ledger.json) are not reports.
REPORT_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")


class ReportError(CompanionError):
    """A dream report that cannot be read: `path` and, in `detail`, why."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(f"the dream report {path} cannot be read: {detail}")
        self.path = path
        self.detail = detail


def sha256_text(text: str | None) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None


def describe_ref(ref: dict[str, Any]) -> str:
    """Where a provenance reference points: `journal/2026-11-27.md:9`, `hermes:... #4812`."""
    out = str(ref.get("source") or "?")
    if ref.get("line") is not None:
        out += f":{ref['line']}"
    if ref.get("message_id"):
        out += f" #{ref['message_id']}"
    return out


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class Change:
    """One change to one file: `before`/`after` are the whole file (None: absent)."""

    id: str
    kind: str
    note: str  # vault-relative path, or MEMORY.md / USER.md
    before: str | None
    after: str | None
    provenance: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""  # the English wording of `facts`
    keys: list[str] = field(default_factory=list)  # normalised texts of the candidates
    removed: int = 0  # lines or entries this change removed or replaced
    # what the change did, as data: [{"fact": "lessons_added", "n": 2}, ...] (dream.summary)
    facts: list[dict[str, Any]] = field(default_factory=list)
    # the SHA-256 the file recorded (None: not recorded, or a change made in this process)
    recorded_before_sha256: str | None = field(default=None, repr=False, compare=False)
    recorded_after_sha256: str | None = field(default=None, repr=False, compare=False)

    @property
    def before_sha256(self) -> str | None:
        return sha256_text(self.before)

    @property
    def after_sha256(self) -> str | None:
        return sha256_text(self.after)

    @property
    def expected_after_sha256(self) -> str | None:
        """What the file must hold for this change to count as still applied."""
        return self.recorded_after_sha256 or self.after_sha256

    def snapshot_intact(self) -> bool:
        """The `before` snapshot still matches the checksum recorded with it."""
        return self.recorded_before_sha256 in (None, self.before_sha256)

    def diff_lines(self, context: int = 3) -> list[str]:
        """Unified diff of before/after (lines without trailing newlines)."""
        return list(
            difflib.unified_diff(
                (self.before or "").splitlines(),
                (self.after or "").splitlines(),
                fromfile=f"a/{self.note}" if self.before is not None else "/dev/null",
                tofile=f"b/{self.note}" if self.after is not None else "/dev/null",
                n=context,
                lineterm="",
            )
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "note": self.note,
            "before_sha256": self.before_sha256,
            "after_sha256": self.after_sha256,
            "before": self.before,
            "after": self.after,
            "provenance": self.provenance,
            "summary": self.summary,
            "facts": self.facts,
            "keys": self.keys,
            "removed": self.removed,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], default_id: str = "") -> Change:
        return cls(
            id=str(d.get("id") or default_id),
            kind=str(d.get("kind") or "changed"),
            note=str(d.get("note") or ""),
            before=_opt_str(d.get("before")),
            after=_opt_str(d.get("after")),
            provenance=[p for p in d.get("provenance") or [] if isinstance(p, dict)],
            summary=str(d.get("summary") or ""),
            keys=[str(k) for k in d.get("keys") or []],
            removed=_opt_int(d.get("removed")) or 0,
            facts=[f for f in d.get("facts") or [] if isinstance(f, dict) and f.get("fact")],
            recorded_before_sha256=_opt_str(d.get("before_sha256")),
            recorded_after_sha256=_opt_str(d.get("after_sha256")),
        )


@dataclass
class Skipped:
    """A candidate the dream did not write, and why. `text` is None when it held a secret:
    then only its location is reported."""

    code: str
    reason: str
    text: str | None = None
    kind: str | None = None
    refs: list[dict[str, Any]] = field(default_factory=list)

    @staticmethod
    def _refs(c: Candidate) -> list[dict[str, Any]]:
        return [{"source": r.source, "line": r.line, "message_id": r.message_id} for r in c.refs()]

    @classmethod
    def of(cls, c: Candidate, code: str, reason: str) -> Skipped:
        return cls(code, reason, None if c.secret else c.text, c.kind, cls._refs(c))

    @classmethod
    def secret(cls, c: Candidate) -> Skipped:
        c.secret = True
        return cls(
            "secret", "the secret scanner flagged it: never written", None, c.kind, cls._refs(c)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "reason": self.reason,
            "text": self.text,
            "kind": self.kind,
            "refs": self.refs,
        }

    def where(self) -> str:
        return describe_ref(self.refs[0]) if self.refs else "?"


@dataclass
class DreamReport:
    """What one dream did (and, in `changes`, everything dreamt that day)."""

    date: str
    ran_on: str = "local"
    distiller: str = "rules"
    distiller_note: str | None = None
    window: dict[str, str] | None = None
    started_at: str = ""
    finished_at: str = ""
    status: str = "ok"  # ok, skipped (another dreamer has the night), failed
    changes: list[Change] = field(default_factory=list)  # the whole day
    run_changes: list[Change] = field(default_factory=list)  # this run only
    skipped: list[Skipped] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)
    verify: dict[str, Any] = field(default_factory=dict)
    candidates: int = 0
    dry_run: bool = False
    runs: list[dict[str, Any]] = field(default_factory=list)
    undone_at: str | None = None
    explanations: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None

    loaded_nothing_changed: bool | None = None  # from a report read back from disk
    timings: dict[str, float] = field(default_factory=dict)
    # issue 16: a new line against the person's line ({note, line, existing, new, why}); the
    # model distiller's exchange ({batches, answered, failed: [...], proposals, kept, ...});
    # the oldest transcript time of lines waiting for a note being edited (the next dream
    # reads from there)
    contradictions: list[dict[str, Any]] = field(default_factory=list)
    # issue 40: injected entries replaced by a newer one on the same subject ({file, target,
    # old, new, why, source})
    superseded: list[dict[str, Any]] = field(default_factory=list)
    llm: dict[str, Any] | None = None
    resume_from: str | None = None
    # issue 40: the changes to MEMORY.md / USER.md waiting for the person, and those decided
    # since ({id, target, op, old, new, quote, why, state, decision, ...}: dream.proposals)
    proposals: list[dict[str, Any]] = field(default_factory=list)

    @property
    def nothing_changed(self) -> bool:
        """True when this run changed nothing but (at most) its "Nothing changed" line."""
        if not self.run_changes and self.loaded_nothing_changed is not None:
            return self.loaded_nothing_changed
        return all(c.kind == "recorded" for c in self.run_changes)

    def change(self, change_id: str) -> Change | None:
        return next((c for c in self.changes if c.id == change_id), None)

    @property
    def counts(self) -> dict[str, int]:
        out = {k: 0 for k in KINDS}
        for c in self.changes:
            out[c.kind] = out.get(c.kind, 0) + 1
        out["skipped"] = len(self.skipped)
        out["candidates"] = self.candidates
        if self.llm is not None and self.llm.get("status") in ("failed", "partial"):
            # batches of the model distiller that failed (all of them when it failed whole)
            failed = len(self.llm.get("failed") or []) or int(self.llm.get("status") == "failed")
            if failed:
                out["llm_failed"] = failed
        return out

    def run_record(self) -> dict[str, Any]:
        return {
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "ran_on": self.ran_on,
            "distiller": self.distiller,
            "distiller_note": self.distiller_note,
            "window": self.window,
            "status": self.status,
            "changes": [c.id for c in self.run_changes],
            "nothing_changed": self.nothing_changed,
            "timings": self.timings,
            **({"resume_from": self.resume_from} if self.resume_from else {}),
        }

    def to_dict(self, *, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": REPORT_VERSION,
            "date": self.date,
            "ran_on": self.ran_on,
            "distiller": self.distiller,
            "distiller_note": self.distiller_note,
            "status": self.status,
            "window": self.window,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "nothing_changed": self.nothing_changed,
            "dry_run": self.dry_run,
            "counts": self.counts,
            "changes": [c.to_dict() for c in self.changes],
            "skipped": [s.to_dict() for s in self.skipped],
            "orphans": self.orphans,
            "warnings": self.warnings,
            "memory": self.memory,
            "verify": self.verify,
            "runs": self.runs,
            "undone_at": self.undone_at,
            "contradictions": self.contradictions,
            "superseded": self.superseded,
        }
        if self.llm is not None:
            out["llm"] = self.llm
        if self.proposals:
            out["proposals"] = self.proposals
        if explain:
            out["explanations"] = self.explanations
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | None = None) -> DreamReport:
        rep = cls(date=str(d.get("date") or (path.stem if path else "")))
        rep.ran_on = str(d.get("ran_on") or "local")
        rep.distiller = str(d.get("distiller") or "rules")
        rep.distiller_note = d.get("distiller_note")
        rep.window = d.get("window") if isinstance(d.get("window"), dict) else None
        rep.started_at = str(d.get("started_at") or "")
        rep.finished_at = str(d.get("finished_at") or "")
        rep.status = str(d.get("status") or "ok")
        rep.changes = [  # a change without the note it touched cannot be shown or reverted
            Change.from_dict(c, f"change-{i + 1}")
            for i, c in enumerate(d.get("changes") or [])
            if isinstance(c, dict) and isinstance(c.get("note"), str) and c["note"]
        ]
        rep.skipped = [
            Skipped(
                str(s.get("code") or ""),
                str(s.get("reason") or ""),
                s.get("text"),
                s.get("kind"),
                list(s.get("refs") or []),
            )
            for s in d.get("skipped") or []
            if isinstance(s, dict)
        ]
        rep.orphans = [str(o) for o in d.get("orphans") or []]
        rep.warnings = [str(w) for w in d.get("warnings") or []]
        memory, verify = d.get("memory"), d.get("verify")
        rep.memory = memory if isinstance(memory, dict) else {}
        rep.verify = verify if isinstance(verify, dict) else {}
        rep.runs = [r for r in d.get("runs") or [] if isinstance(r, dict)]
        rep.undone_at = d.get("undone_at")
        rep.contradictions = [c for c in d.get("contradictions") or [] if isinstance(c, dict)]
        rep.superseded = [c for c in d.get("superseded") or [] if isinstance(c, dict)]
        llm = d.get("llm")
        rep.llm = llm if isinstance(llm, dict) else None
        rep.proposals = [p for p in d.get("proposals") or [] if isinstance(p, dict)]
        rep.loaded_nothing_changed = bool(d.get("nothing_changed", False))
        counts = d.get("counts")
        rep.candidates = _opt_int(counts.get("candidates")) or 0 if isinstance(counts, dict) else 0
        rep.path = path
        return rep


def report_path(vault: Path, date: str) -> Path:
    return Path(vault) / DREAMS_DIR / f"{date}.json"


def read_report(path: Path) -> DreamReport:
    """The report in `path`: the one loader (the dream, undo, the desktop app)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(path, "no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(path, " ".join(str(exc).split())) from None
    if not isinstance(data, dict):
        raise ReportError(path, "not a dream report (expected a JSON object)")
    return DreamReport.from_dict(data, path)


def load_report(vault: Path, date: str) -> DreamReport | None:
    """The report of `date` in `vault`, or None when that day has none."""
    path = report_path(vault, date)
    if not path.exists():
        return None
    return read_report(path)


def is_report_name(name: str) -> bool:
    return REPORT_NAME.match(name) is not None


def list_reports(vault: Path) -> list[Path]:
    """The vault's dream reports, oldest first (ledger.json and other files left out)."""
    folder = Path(vault) / DREAMS_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.json") if p.is_file() and is_report_name(p.name))


def last_dream_end(vault: Path) -> dt.datetime | None:
    """End of the window of the newest real (not dry-run, not undone) dream in the vault."""
    for path in reversed(list_reports(vault)):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if not isinstance(data, dict) or data.get("undone_at"):
            continue
        # a run that left lines waiting (a note being edited) is read again from there
        ends = [
            r.get("resume_from") or r.get("window", {}).get("end")
            for r in data.get("runs") or []
            if isinstance(r, dict)
            and isinstance(r.get("window"), dict)
            and r.get("status", "ok") == "ok"
        ]
        best = None
        for e in ends:
            try:
                t = dt.datetime.fromisoformat(str(e))
            except ValueError:
                continue
            if best is None or t > best:
                best = t
        if best is not None:
            return best
    return None


def write_json_atomic(path: Path, data: Any) -> None:
    """A JSON document (reports, the ledger, the dream state), written with `fileio`."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    write_text_atomic(path, text, mode=KEEP, make_parents=True)
