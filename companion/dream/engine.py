"""`run_dream`: the dream's stages in order, on the server (scheduled) or in the desktop app.

The stages (issue 40; `docs/dream.md`, "The stages"), each decision in one place:

1. read (`_read`): the window, the transcripts and journal days (taint: a quoted or relayed
   line is never a source, `taint.line_taint`), the vault's notes (`topics.NoteCatalog`);
2. distill (`_distill`): candidates, from the rules and, with `llm`, the model;
3. gates (`gates.refusal`): taint, secret, junk, durability, transient before merging
   (`distill_rules.screen`, both distillers), the injection guard after (`gates.guard_screen`):
   each candidate kept, or skipped with the reason;
4. placement (`placement.place`, from `consolidate`): which note, once per candidate;
5. plan, pure: a note's steps (`steps.plan_note`: `Add`, `Merge`, `Supersede`, `Flag`); the
   injected memory's (`promote.plan_promotions` asks `steps.hold` for a `Hold`,
   `proposals.take_proposals` asks `steps.memory_step` for a `Propose`); Home.md's index and
   link repairs (`_represent`), the Dreaming lines (`_record`);
6. apply: the steps become edits of the working copy (`consolidate._write_note` through
   `Plan.write`, where every guardrail is checked), then `_apply` is the only place that
   writes: notes, then the memory files;
7. record what landed (`_landed`): the ledger, the dream's state, the blocked promotions
   (retried next run), the proposals, the day's report; then `_verify` (sync until quiet).

Nothing is written before `_apply`: every edit is planned in memory
(`companion.dream.plan.Plan`), then applied at once: notes (atomic replace, only if unchanged
since read), the injected memory (through `MemoryStore`, under the agent's lock). Nothing here
imports Qt.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from filelock import FileLock, Timeout

from companion.config import Config, load_config
from companion.dream import gates
from companion.dream.consolidate import Consolidated, Explanation, consolidate
from companion.dream.distill_llm import build_units, distill_llm, settings_from_config
from companion.dream.distill_rules import Distilled, merge_candidates, screen
from companion.dream.distill_rules import distill_rules as rules_distiller
from companion.dream.ledger import Ledger
from companion.dream.model import Candidate, JournalEntry, Message
from companion.dream.pending import load_pending, pending_path, save_pending
from companion.dream.plan import Plan
from companion.dream.portable import rename_sources, scrub, source_names, source_roots
from companion.dream.promote import (
    RECURRENCE,
    PromotionPlan,
    apply_promotions,
    lock_free,
    locked_why,
    notes_against_memory,
    plan_promotions,
    stage_promotions,
)
from companion.dream.proposals import for_report, load_book, save_book, take_proposals
from companion.dream.read import (
    Window,
    journal_days,
    not_understood,
    read_journal,
    read_transcripts,
    sources_from_config,
)
from companion.dream.record import RunSummary, journal_tag, record_journal, vault_language
from companion.dream.report import (
    Change,
    DreamReport,
    Skipped,
    last_dream_end,
    load_report,
    report_path,
    write_json_atomic,
)
from companion.dream.represent import Represented, find_orphans, repair_links, update_home
from companion.dream.secretgate import SecretGate
from companion.dream.state import DreamState, EditorInfo, default_editors, vault_key
from companion.dream.taint import Refused
from companion.dream.text import norm_key
from companion.dream.topics import NoteCatalog
from companion.dream.verify import SyncHook, settle
from companion.errors import CompanionError, ConfigError, InputError
from companion.logs import get_logger
from companion.memory import MemoryStore, resolve_home
from companion.memory.home import TARGETS, effective_limits, hermes_memory_settings
from companion.paths import DevicePaths, device_paths
from companion.vault.index import VaultIndex
from companion.vault.vault import Vault

log = get_logger("dream")

LEASE_TTL = 2 * 3600.0
MEMORY_LOCK_WAIT = 10.0  # seconds the dream waits for the agent's memory lock (as Hermes)
MIN_WINDOW, MAX_WINDOW = 24, 48


class DreamSyncError(CompanionError):
    """The dream landed locally but sync did not settle; the report says what is pending."""

    def __init__(self, message: str, report: DreamReport) -> None:
        super().__init__(message)
        self.report = report


def dream_timezone(config: Config) -> ZoneInfo:
    name = config.settings.dream.timezone
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"[dream] timezone: unknown time zone {name!r}") from None


def dream_date(now: dt.datetime, tz: ZoneInfo) -> dt.date:
    return now.astimezone(tz).date()


def _check_window(hours: int) -> int:
    if not MIN_WINDOW <= hours <= MAX_WINDOW:
        raise InputError(
            f"the dream window must be {MIN_WINDOW} to {MAX_WINDOW} hours, got {hours}"
        )
    return hours


@dataclass
class _Run:
    """What the steps of one dream share: its inputs, and what each step leaves for the next.

    Each step is one function taking the run (`_read`, `_distill`, `_consolidate`,
    `_represent`, `_promote`, `_record`, `_apply`, `_landed`, `_verify`); the fields below the
    inputs are filled in step order.
    """

    root: Path
    config: Config
    paths: DevicePaths
    now: dt.datetime
    tz: ZoneInfo
    today: dt.date
    hours: int
    report: DreamReport
    dry_run: bool
    explain: bool
    sync: SyncHook | None
    editors: EditorInfo | None
    renames: Mapping[str, str] | None
    gate: SecretGate
    home: Path  # the Hermes home
    clock: _Clock = field(default_factory=lambda: _Clock())
    why: Explanation = field(default_factory=Explanation)
    # 1. read
    messages: list[Message] = field(default_factory=list)
    source_roots: list[tuple[str, str]] = field(default_factory=list)
    entries: list[JournalEntry] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)  # quoted lines: never sources
    language: str = "en"
    journal_tag: str = "journal"
    catalog: NoteCatalog | None = None
    graph: Any = None
    # distill
    distilled: Distilled = field(default_factory=Distilled)
    ledger: Ledger | None = None
    lessons: list[Candidate] = field(default_factory=list)  # their recurrence is counted
    # 2. consolidate
    existing: DreamReport | None = None
    state: DreamState | None = None
    plan: Plan | None = None
    cons: Consolidated = field(default_factory=Consolidated)
    # 3. represent
    rep: Represented = field(default_factory=Represented)
    # 4. promote
    stores: dict[str, MemoryStore] = field(default_factory=dict)
    pp: PromotionPlan = field(default_factory=PromotionPlan)
    staging: bool = False
    # the changes waiting for the person (companion.dream.proposals): the vault's book, those
    # this run holds, how many of them are new
    book: list[dict[str, Any]] = field(default_factory=list)
    held: list[dict[str, Any]] = field(default_factory=list)
    new_proposals: int = 0
    # 5. record
    skipped: list[Skipped] = field(default_factory=list)
    id_start: int = 1
    # apply: what was written (notes that landed, this run's changes, the memory writes'
    # skipped items, the staged ones), for the record of what landed
    landed: list[Change] = field(default_factory=list)
    run_changes: list[Change] = field(default_factory=list)
    more: list[Skipped] = field(default_factory=list)
    staged: list[Skipped] = field(default_factory=list)

    @property
    def cands(self) -> list[Candidate]:
        return self.distilled.candidates

    def need_plan(self) -> Plan:
        assert self.plan is not None, "consolidate plans the run's edits"
        return self.plan


class _Clock:
    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, step: str) -> None:
        t = time.perf_counter()
        self.times[step] = round(self.times.get(step, 0.0) + t - self._t, 4)
        self._t = t


def run_dream(
    vault: str | Path,
    config: Config | None = None,
    now: dt.datetime | None = None,
    *,
    paths: DevicePaths | None = None,
    window_hours: int | None = None,
    distiller: str | None = None,
    dry_run: bool = False,
    explain: bool = False,
    sync: SyncHook | None = None,
    editors: EditorInfo | None = None,
    ran_on: str | None = None,
    hermes_home: str | Path | None = None,
    since: dt.datetime | None = None,
    renames: Mapping[str, str] | None = None,
) -> DreamReport:
    """Dream over `vault` as of `now` and return the report (also written to
    `.companion/dreams/YYYY-MM-DD.json` unless `dry_run`).

    `since` overrides the window start (default: the last dream, at most `window_hours`
    before `now`). `sync` makes Verify run sync until quiet and take the per-night lease.
    `editors` tells recent human edits (default: file times, ignoring the dream's own writes).
    `renames` maps old vault paths to new ones, for link repair.
    """
    paths = paths or device_paths()
    config = config or load_config(paths)
    root = Path(vault).expanduser()
    if not root.is_dir():
        raise InputError(f"{root} is not a vault folder")
    root = root.resolve()
    tz = dream_timezone(config)
    now = now or dt.datetime.now(dt.UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=tz)
    hours = _check_window(int(window_hours or config.settings.dream.window_hours))
    distiller = distiller or config.settings.dream.distiller
    if distiller not in ("rules", "llm"):
        raise InputError(f"unknown distiller {distiller!r}: use rules or llm")
    today = dream_date(now, tz)
    report = DreamReport(
        date=today.isoformat(),
        ran_on=ran_on or ("server" if config.settings.sync.kind == "agent" else "local"),
        distiller=distiller,
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        dry_run=dry_run,
    )
    lock_path = paths.state_dir / "dream" / f"{vault_key(root)}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(lock_path, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise CompanionError(f"another dream of {root} is running on this device") from None
    run = _Run(
        root=root,
        config=config,
        paths=paths,
        now=now,
        tz=tz,
        today=today,
        hours=hours,
        report=report,
        dry_run=dry_run,
        explain=explain,
        sync=sync,
        editors=editors,
        renames=renames,
        gate=SecretGate(config.settings.secrets.allowlist or ()),
        home=resolve_home(hermes_home, config_home=config.settings.memory.hermes_home or None),
    )
    try:
        return _dream(run, since)
    finally:
        lock.release()


def _dream(run: _Run, since: dt.datetime | None) -> DreamReport:
    report = run.report
    if run.sync is not None and not run.dry_run:
        if not run.sync.acquire_lease(f"dream-{run.today.isoformat()}", LEASE_TTL):
            report.status = "skipped"
            report.warnings.append("another device holds tonight's dream lease; not dreaming")
            return report
        before = settle(run.sync, attempts=1)
        if before["status"] != "synced":
            report.warnings.append(f"sync before the dream did not settle: {before.get('error')}")
    index = _read(run, since)
    try:
        _distill(run)
        _consolidate(run)
        _represent(run)
        _promote(run)
        _record(run)
        _apply(run)
        _landed(run)
    finally:
        if index is not None:
            index.close()
    _verify(run)
    return report


def _read(run: _Run, since: dt.datetime | None) -> VaultIndex | None:
    """Step 1: the window, the transcripts, the journal days and the vault's notes (through
    the full-text index, before anything is created). Returns the open index (or None)."""
    report, config = run.report, run.config
    full_start = run.now - dt.timedelta(hours=run.hours)
    last = last_dream_end(run.root)
    start = since or (max(full_start, last) if last is not None and last < run.now else full_start)
    window = Window(start, run.now)
    report.window = window.to_dict()
    specs, notes = sources_from_config(config, run.home)
    report.warnings.extend(notes)
    transcripts = read_transcripts(specs, window)
    report.warnings.extend(transcripts.problems)
    run.messages = transcripts.messages
    # provenance names no absolute path: a source outside the home folder is named from its
    # root (the Hermes home, the vault, its own folder)
    rename_sources(run.messages, source_names(specs, vault=run.root, hermes_home=run.home))
    run.source_roots = source_roots(specs, vault=run.root, hermes_home=run.home)
    days = journal_days(full_start.astimezone(run.tz).date(), run.today)
    run.entries, journal_texts = read_journal(run.root, days, refused=run.refused)
    for rel, text in journal_texts.items():
        report.warnings.extend(not_understood(rel, text))
    run.refused.extend(transcripts.refused)
    run.language = vault_language(journal_texts.values(), config)
    run.journal_tag = journal_tag(journal_texts.values())
    v = Vault.from_config(run.root, config)
    index: VaultIndex | None
    try:
        index = VaultIndex(v, run.paths.data_dir)
        index.update()
        run.graph = index.graph()
        scan = index.scan
    except CompanionError as exc:
        report.warnings.append(f"the vault index is unavailable ({exc}); matching by names only")
        index = None
        run.graph = v.graph()
        scan = v.scan()
    assert scan is not None
    run.catalog = NoteCatalog.build(
        run.root,
        [*scan.notes, *scan.too_large],
        v.resolver(),
        index,
        stats=scan.notes,
        cache_file=run.paths.data_dir / "dream" / f"{vault_key(run.root)}-aliases.json",
    )
    # the window's journal days are the dream's input, not what the vault knows
    run.catalog.discount(journal_texts.values())
    run.clock.lap("read")
    return index


def _distill(run: _Run) -> None:
    """Candidates: the rules distiller always, the model's grounded proposals with `llm`;
    then each lesson's days so far (the ledger) for recurrence."""
    report = run.report
    run.distilled = rules_distiller(run.entries, run.messages, run.gate)
    if report.distiller == "llm":
        _distill_llm(run)
    run.distilled.skipped.extend(gates.tainted(r, run.gate) for r in run.refused)
    kept, refused, warned = gates.guard_screen(run.cands)  # the one injection guard (issue 40)
    run.distilled.candidates = kept
    run.distilled.skipped.extend(refused)
    report.warnings.extend(warned)
    report.candidates = len(run.cands) + len(run.distilled.skipped)
    run.ledger = Ledger.load(run.root)
    run.lessons = [c for c in run.cands if c.kind == "knowledge"]  # counted after Consolidate
    _retry_blocked(run)
    run.clock.lap("distill")


def _retry_blocked(run: _Run) -> None:
    """Promotions a past dream could not make (the agent held the memory lock) join this
    run's candidates, to be promoted only, even when the window no longer reads their
    source (`companion.dream.pending`)."""
    here = {(c.target, c.key): c for c in run.cands}
    for p in load_pending(pending_path(run.paths.state_dir, run.root)):
        same = here.get((p.target, p.key))
        if same is not None:  # read again in this window: promote it as it was then
            same.promote = same.promote or p.promote
            same.retry_since = p.retry_since
            continue
        run.cands.append(p)
        here[(p.target, p.key)] = p


def _distill_llm(run: _Run) -> None:
    report, gate, distilled = run.report, run.gate, run.distilled
    outcome = distill_llm(
        build_units(run.entries, run.messages, gate), settings_from_config(run.config)
    )
    report.llm = outcome.summary()
    if outcome.failed:
        report.distiller_note = (
            f"the llm distiller failed ({outcome.note}); this dream used the rules distiller only"
        )
        report.distiller = "rules"
    else:
        extra = screen(outcome.candidates, gate)
        distilled.candidates = merge_candidates([*distilled.candidates, *extra.candidates])
        distilled.skipped.extend(extra.skipped)
        report.distiller_note = outcome.describe()
    for s in outcome.rejected:
        if s.text is not None and gate(s.text):
            s.text = None
        distilled.skipped.append(s)


def _consolidate(run: _Run) -> None:
    """Step 2: lessons into `knowledge/`, decisions and state into `projects/` (planned)."""
    assert run.catalog is not None and run.ledger is not None
    run.state = DreamState.for_vault(run.paths.data_dir, run.root)
    existing = None if run.dry_run else load_report(run.root, run.today.isoformat())
    if existing is not None and existing.undone_at:
        existing = None
    run.existing = existing
    run.id_start = 1 + (len(existing.changes) if existing else 0)
    run.plan = Plan(
        root=run.root,
        is_secret=run.gate,
        max_removals=int(run.config.settings.dream.max_removals),
        editors=run.editors or default_editors(run.root, run.state, run.config),
        now=run.now,
        human_window=dt.timedelta(hours=float(run.config.settings.vault.human_edit_window_hours)),
        id_start=run.id_start,
    )
    run.ledger.notes()  # its lines read now (an old ledger's rebuilt): the plan reads no file
    run.cons = consolidate(
        run.cands,
        run.catalog,
        run.plan,
        language=run.language,
        today=run.today,
        explain=run.why,
        rejected=run.ledger.rejected_on,
        owns=run.ledger.owns,
    )
    run.report.contradictions = run.cons.contradictions
    _recurrence(run)
    waiting = [
        c.time for cs in run.cons.waiting.values() for c in cs if c.time and c.sessions
    ]  # transcript lines: the next dream reads them again (journal days are re-read anyway)
    if waiting:
        run.report.resume_from = min(waiting).isoformat()
    run.clock.lap("consolidate")


def _recurrence(run: _Run) -> None:
    """Each lesson's distinct days so far (the ledger), by meaning: a lesson whose source
    joined a dream line saying it in other words counts on that line's key (issue 40)."""
    assert run.ledger is not None
    for c in run.lessons:
        _n_sessions, n_days = run.ledger.observe(c.line_key or c.key, c.sessions, c.days)
        c.seen = n_days  # durability is distinct days, not repetition within one
        if c.promote is None and c.seen >= RECURRENCE:
            c.promote = "recurrence"
    run.ledger.prune(run.today)


def _represent(run: _Run) -> None:
    """Step 3: broken wikilinks, Home.md's index (planned)."""
    assert run.catalog is not None
    plan = run.need_plan()
    repair_links(plan, run.catalog, run.graph.broken, run.rep, run.renames)
    update_home(plan, run.catalog, run.language, run.rep, run.ledger.owns if run.ledger else None)
    run.clock.lap("represent")


def _promote(run: _Run) -> None:
    """Step 4: the every-session facts into Hermes's injected memory (planned)."""
    assert run.ledger is not None
    report, ledger = run.report, run.ledger
    hermes_cfg = hermes_memory_settings(run.home)
    if hermes_cfg.problem:
        report.warnings.append(f"{hermes_cfg.problem}; using Hermes's default memory settings")
    limits = effective_limits(run.config, hermes_cfg)
    run.stores = {
        t: MemoryStore(run.home, t, limits[t], lock_timeout=MEMORY_LOCK_WAIT)
        for t in TARGETS
        if hermes_cfg.enabled[t]
    }
    for t in TARGETS:
        if not hermes_cfg.enabled[t]:
            report.warnings.append(
                f"{TARGETS[t]}: {hermes_cfg.enabled_key(t)} is false in {hermes_cfg.path}, so "
                "the agent does not load it; nothing promoted to it"
            )
    # a file whose lock another writer holds gets nothing now: its facts wait for the next run
    blocked = set() if run.dry_run else {t for t, s in run.stores.items() if not lock_free(s)}

    def dated(target: str, entry: str) -> str:  # first seen; not seen yet: since the last dream
        return ledger.entry_day(target, entry) or run.today.isoformat()

    run.pp = plan_promotions(
        run.cands,
        run.stores,
        run.need_plan(),
        run.why,
        run.ledger.rejected_on,
        edits=run.distilled.memory_edits,
        was_in_memory=run.ledger.was_in_memory,
        blocked=blocked,
        dated=dated,
    )
    report.warnings.extend(run.pp.warnings)
    # the lines a person corrected in the dream's blocks, against the injected entries (issue 40)
    names = {t: s.name for t, s in run.stores.items()}
    run.pp.flagged += notes_against_memory(
        run.pp.simulated, names, ledger.notes(), run.need_plan().read, ledger.owns
    )
    report.contradictions = [*run.cons.contradictions, *run.pp.flagged]
    run.staging = hermes_cfg.write_approval  # the person approves every write: stage only
    _propose(run)
    run.clock.lap("promote")


def _propose(run: _Run) -> None:
    """Risky changes wait for the person (`[dream] apply`): taken out of the night's writes
    and kept, with every undecided one of earlier runs, in the vault's proposals."""
    run.book = load_book(run.root)
    run.held, run.new_proposals = take_proposals(
        run.pp,
        run.stores,
        str(run.config.settings.dream.apply),
        run.book,
        today=run.today.isoformat(),
        explain=run.why,
    )


def _summary(run: _Run) -> RunSummary:
    cons, pp, rep = run.cons, run.pp, run.rep

    def count(kind: str) -> dict[str, int]:
        return {
            n: sum(1 for c in cs if c.kind == kind)
            for n, cs in cons.notes.items()
            if any(c.kind == kind for c in cs)
        }

    return RunSummary(
        review=run.sync is not None,
        lessons=count("knowledge"),
        decisions=count("decision"),
        status=[n for n, cs in cons.notes.items() if any(c.kind == "status" for c in cs)],
        created=cons.created,
        promoted={}
        if run.staging
        else {run.stores[t].name: len(ops) for t, ops in pp.ops.items() if ops},
        replaced=sum(1 for ops in pp.ops.values() for p in ops if p.replaced),
        not_fit=sum(1 for s in pp.skipped if s.code == "over_budget"),
        blocked=len(pp.pending),
        listed=len(rep.listed),
        repaired=len(rep.repaired),
        secrets=sum(1 for s in run.skipped if s.code == "secret"),
        quoted=sum(1 for s in run.skipped if s.code == "quoted"),
        waiting={n: len(cs) for n, cs in cons.waiting.items()},
        waiting_origin={n: run.need_plan().edit_origin(n) for n in cons.waiting},
        contradictions=[c["note"] for c in cons.contradictions if not c.get("edited")],
        memory_notes=[(c["file"], c["note"]) for c in pp.flagged if c.get("entry")],
        memory_pairs=[c["note"] for c in pp.flagged if not c.get("entry")],
        proposed=sum(1 for p in run.book if p.get("state") == "pending"),
        new_proposals=run.new_proposals,
        kept=[
            note
            for note, _line in dict.fromkeys(
                (c["note"], c["line"]) for c in cons.contradictions if c.get("edited")
            )
        ],
    )


def _record(run: _Run) -> None:
    """Step 5: the Dreaming lines in today's journal (planned). Orphans are counted after
    the notes those lines link, so the line and the report say the same."""
    assert run.catalog is not None
    plan = run.need_plan()
    run.skipped = [*run.distilled.skipped, *run.cons.skipped, *run.pp.skipped]
    summary = _summary(run)
    home_rel = next((n for n in run.rep.notes if "/" not in n), "Home.md")
    linked = summary.linked()
    run.report.orphans = [
        o
        for o in find_orphans(
            run.catalog,
            run.graph.inbound,
            bool(run.rep.listed) or home_rel in run.rep.notes,
            run.rep.listed,
            plan.read(home_rel),
        )
        if o not in linked
    ]
    summary.orphans = len(run.report.orphans)
    record_journal(plan, run.today, summary, run.language, tag=run.journal_tag)
    run.clock.lap("record")


def _apply(run: _Run) -> None:
    """Apply: the only stage that writes the vault and the memory files. Everything planned
    is written (notes at once, only if unchanged since read; then the memory files under the
    agent's lock), or, in a dry run, only simulated. What landed is left for `_landed`."""
    plan, pp = run.need_plan(), run.pp
    assert run.state is not None
    counter = [run.id_start + len(plan.changes)]

    def next_id() -> str:
        counter[0] += 1
        return f"c{counter[0] - 1}"

    run.staged = stage_promotions(pp, run.home, dry_run=run.dry_run) if run.staging else []
    if run.staging:
        pp.ops = {}
    if run.dry_run:
        mem_changes, run.more = apply_promotions(pp, run.stores, dry_run=True, next_id=next_id)
        run.landed, run.run_changes = [], [*plan.changes, *mem_changes]
    else:
        run.landed = plan.apply(run.state)
        mem_changes, run.more = apply_promotions(pp, run.stores, dry_run=False, next_id=next_id)
        run.run_changes = [*run.landed, *mem_changes]


def _landed(run: _Run) -> None:
    """Record what landed: the ledger (the lines the dream now owns, the entries in memory),
    the dream's state, the promotions the lock blocked (retried next run), the proposals, and
    the day's report (earlier runs' changes and skipped items kept)."""
    report, plan, pp, ledger = run.report, run.need_plan(), run.pp, run.ledger
    assert ledger is not None and run.state is not None
    more = run.more
    if not run.dry_run:
        _own_lines(ledger, run.landed, run.today)
        try:
            run.state.save()
        except OSError as exc:
            report.warnings.append(f"cannot save the dream's state: {exc}")
        refused = {norm_key(s.text) for s in more if s.text}
        for key in pp.in_memory if not run.staging else []:
            if key not in refused:
                ledger.saw_in_memory(key, run.today.isoformat())
        for t, store in run.stores.items():  # the day each entry was first seen (issue 40)
            try:
                ledger.saw_entries(t, store.read(), run.today.isoformat())
            except CompanionError:
                continue
        ledger.save()
        for c in pp.pending:  # refused at write time: say so, not "promoted"
            store = run.stores[c.target]
            run.why.amend(c, store.name, "promoted", "not promoted", locked_why(store))
        try:
            save_pending(
                pending_path(run.paths.state_dir, run.root), pp.pending, run.today.isoformat()
            )
        except OSError as exc:
            report.warnings.append(f"cannot keep the promotions the memory lock blocked: {exc}")
        if run.book or run.held:
            save_book(run.root, run.book, run.today.isoformat())
    report.proposals = for_report(run.book, run.existing.proposals if run.existing else [])
    run.skipped.extend([*run.staged, *more])
    report.superseded = pp.superseded
    report.run_changes = run.run_changes
    report.changes = [*(run.existing.changes if run.existing else []), *run.run_changes]
    report.skipped = _day_skipped(run.existing.skipped if run.existing else [], run.skipped)
    report.warnings.extend(plan.warnings)
    report.explanations = run.why.items if run.explain else []
    _no_absolute_paths(run)
    report.memory = {}
    for t, store in run.stores.items():
        try:
            entries_now = pp.simulated.get(t) if run.dry_run else None
            report.memory[store.name] = store.usage(entries_now).to_dict()
        except CompanionError:
            continue
    run.clock.lap("apply")  # timed with the writes: the report's timings keep their keys


def _own_lines(ledger: Ledger, landed: list[Change], today: dt.date) -> None:
    """The ledger learns the block lines this dream wrote into each file it changed."""
    per_file: dict[str, list[Change]] = {}
    for c in landed:
        per_file.setdefault(c.note, []).append(c)
    for rel, chs in per_file.items():
        if chs[-1].after is not None:
            ledger.wrote(rel, chs[0].before, chs[-1].after, today.isoformat())


def _no_absolute_paths(run: _Run) -> None:
    """The report's free text names this machine's folders from their roots (`portable`)."""

    def clean(text: str) -> str:
        return scrub(text, vault=run.root, hermes_home=run.home, sources=run.source_roots)

    report = run.report
    report.warnings = [clean(w) for w in report.warnings]
    for s in report.skipped:
        s.reason = clean(s.reason)
    for e in report.explanations:
        e["why"] = clean(str(e["why"]))


def _day_skipped(earlier: list[Skipped], now: list[Skipped]) -> list[Skipped]:
    """The day's skipped items: every earlier run's, then this run's (an item said the same
    way twice is listed once)."""
    out: list[Skipped] = []
    seen: set[str] = set()
    for s in [*earlier, *now]:
        k = repr(sorted(s.to_dict().items()))
        if k not in seen:
            seen.add(k)
            out.append(s)
    return out


def _verify(run: _Run) -> None:
    """Step 6: sync until quiet (a sync copy), then the report itself."""
    report, sync = run.report, run.sync
    if sync is None or run.dry_run:
        report.verify = {"status": "not a sync copy" if sync is None else "dry run"}
    else:
        report.verify = settle(sync)
    run.clock.lap("verify")
    report.timings = dict(run.clock.times)
    report.finished_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if run.dry_run:
        return
    report.runs = [*(run.existing.runs if run.existing else []), report.run_record()]
    write_json_atomic(report_path(run.root, report.date), report.to_dict())
    report.path = report_path(run.root, report.date)
    if sync is not None and report.verify.get("status") == "synced":
        # Verify covered the notes; the report that records it is pushed right after
        pushed = settle(sync, attempts=1)
        if pushed.get("status") != "synced":
            report.verify = {**pushed, "error": f"the report itself: {pushed.get('error')}"}
    if report.verify.get("status") == "failed":
        raise DreamSyncError(
            f"the dream landed on this copy but sync did not settle: {report.verify.get('error')}",
            report,
        )
