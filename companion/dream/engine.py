"""`run_dream`: the six steps in order, on the server (scheduled) or in the desktop app.

Read -> distill -> Consolidate -> Represent -> Promote -> Record are planned in memory
(`companion.dream.plan.Plan`), then applied at once: notes (atomic replace, only if unchanged
since read), the injected memory (through `MemoryStore`, under the agent's lock), the day's
report, the ledger, the dream's private state. Verify runs sync until quiet when the vault is a
sync copy. Nothing here imports Qt.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from filelock import FileLock, Timeout

from companion.config import Config, load_config
from companion.dream.consolidate import Explanation, consolidate
from companion.dream.distill_llm import build_units, distill_llm, settings_from_config
from companion.dream.distill_rules import Distilled, merge_candidates, screen
from companion.dream.distill_rules import distill_rules as rules_distiller
from companion.dream.ledger import Ledger
from companion.dream.plan import Plan
from companion.dream.promote import (
    RECURRENCE,
    apply_promotions,
    plan_promotions,
    stage_promotions,
)
from companion.dream.read import (
    Window,
    journal_days,
    read_journal,
    read_transcripts,
    sources_from_config,
)
from companion.dream.record import RunSummary, detect_language, record_journal
from companion.dream.report import (
    Change,
    DreamReport,
    last_dream_end,
    load_report,
    report_path,
    write_json_atomic,
)
from companion.dream.represent import Represented, find_orphans, repair_links, update_home
from companion.dream.secretgate import SecretGate
from companion.dream.state import DreamState, EditorInfo, MtimeEditors, vault_key
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
MIN_WINDOW, MAX_WINDOW = 24, 48


class DreamSyncError(CompanionError):
    """The dream landed locally but sync did not settle; the report says what is pending."""

    def __init__(self, message: str, report: DreamReport) -> None:
        super().__init__(message)
        self.report = report


def dream_timezone(config: Config) -> ZoneInfo:
    name = config.get("dream", "timezone")
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
    hours = _check_window(int(window_hours or config.get("dream", "window_hours")))
    distiller = distiller or config.get("dream", "distiller")
    if distiller not in ("rules", "llm"):
        raise InputError(f"unknown distiller {distiller!r}: use rules or llm")
    today = dream_date(now, tz)
    report = DreamReport(
        date=today.isoformat(),
        ran_on=ran_on or ("server" if config.get("sync", "kind") == "agent" else "local"),
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
    try:
        return _dream(
            root,
            config,
            paths,
            now,
            tz,
            today,
            hours,
            report,
            dry_run=dry_run,
            explain=explain,
            sync=sync,
            editors=editors,
            hermes_home=hermes_home,
            since=since,
            renames=renames,
        )
    finally:
        lock.release()


def _dream(
    root: Path,
    config: Config,
    paths: DevicePaths,
    now: dt.datetime,
    tz: ZoneInfo,
    today: dt.date,
    hours: int,
    report: DreamReport,
    *,
    dry_run: bool,
    explain: bool,
    sync: SyncHook | None,
    editors: EditorInfo | None,
    hermes_home: str | Path | None,
    since: dt.datetime | None,
    renames: Mapping[str, str] | None,
) -> DreamReport:
    clock = _Clock()
    if sync is not None and not dry_run:
        if not sync.acquire_lease(f"dream-{today.isoformat()}", LEASE_TTL):
            report.status = "skipped"
            report.warnings.append("another device holds tonight's dream lease; not dreaming")
            return report
        before = settle(sync, attempts=1)
        if before["status"] != "synced":
            report.warnings.append(f"sync before the dream did not settle: {before.get('error')}")
    # --- 1. Read ------------------------------------------------------------------------------
    full_start = now - dt.timedelta(hours=hours)
    last = last_dream_end(root)
    start = since or (max(full_start, last) if last is not None and last < now else full_start)
    window = Window(start, now)
    report.window = window.to_dict()
    home = resolve_home(hermes_home, config_home=config.get("memory", "hermes_home") or None)
    specs, notes = sources_from_config(config, home)
    report.warnings.extend(notes)
    transcripts = read_transcripts(specs, window)
    report.warnings.extend(transcripts.problems)
    days = journal_days(full_start.astimezone(tz).date(), today)
    entries, journal_texts = read_journal(root, days)
    language = detect_language(journal_texts.values(), config.get("dream", "language"))
    v = Vault.from_config(root, config)
    index: VaultIndex | None
    try:
        index = VaultIndex(v, paths.data_dir)
        index.update()
        graph = index.graph()
        scan = index.scan
    except CompanionError as exc:
        report.warnings.append(f"the vault index is unavailable ({exc}); matching by names only")
        index = None
        graph = v.graph()
        scan = v.scan()
    assert scan is not None
    catalog = NoteCatalog.build(
        root,
        [*scan.notes, *scan.too_large],
        v.resolver(),
        index,
        stats=scan.notes,
        cache_file=paths.data_dir / "dream" / f"{vault_key(root)}-aliases.json",
    )
    clock.lap("read")
    try:
        return _distill_and_write(
            root,
            config,
            paths,
            now,
            today,
            report,
            transcripts.messages,
            entries,
            language,
            catalog,
            graph,
            home,
            clock,
            dry_run=dry_run,
            explain=explain,
            sync=sync,
            editors=editors,
            renames=renames,
        )
    finally:
        if index is not None:
            index.close()


def _distill_and_write(
    root: Path,
    config: Config,
    paths: DevicePaths,
    now: dt.datetime,
    today: dt.date,
    report: DreamReport,
    messages: list[Any],
    entries: list[Any],
    language: str,
    catalog: NoteCatalog,
    graph: Any,
    home: Path,
    clock: _Clock,
    *,
    dry_run: bool,
    explain: bool,
    sync: SyncHook | None,
    editors: EditorInfo | None,
    renames: Mapping[str, str] | None,
) -> DreamReport:
    gate = SecretGate(config.get("secrets", "allowlist") or ())
    # --- distill ------------------------------------------------------------------------------
    distilled: Distilled = rules_distiller(entries, messages, gate)
    if report.distiller == "llm":
        outcome = distill_llm(build_units(entries, messages, gate), settings_from_config(config))
        if outcome.failed:
            report.distiller_note = (
                f"the llm distiller failed ({outcome.note}); this dream "
                "used the rules distiller only"
            )
            report.distiller = "rules"
        else:
            extra = screen(outcome.candidates, gate)
            distilled.candidates = merge_candidates([*distilled.candidates, *extra.candidates])
            distilled.skipped.extend(extra.skipped)
            report.distiller_note = outcome.note or (
                f"llm: {outcome.batches_done} batch(es), about {outcome.tokens} tokens"
            )
        for s in outcome.rejected:
            if s.text is not None and gate(s.text):
                s.text = None
            distilled.skipped.append(s)
    cands = distilled.candidates
    report.candidates = len(cands) + len(distilled.skipped)
    ledger = Ledger.load(root)
    for c in cands:
        if c.kind != "knowledge":
            continue
        n_sessions, n_days = ledger.observe(c.key, c.sessions, c.days)
        c.seen = max(n_sessions, n_days)
        if c.promote is None and c.seen >= RECURRENCE:
            c.promote = "recurrence"
    ledger.prune(today)
    clock.lap("distill")
    # --- 2. Consolidate ----------------------------------------------------------------------
    state = DreamState.for_vault(paths.data_dir, root)
    existing = None if dry_run else load_report(root, today.isoformat())
    if existing is not None and existing.undone_at:
        existing = None
    id_start = 1 + (len(existing.changes) if existing else 0)
    plan = Plan(
        root=root,
        is_secret=gate,
        max_removals=int(config.get("dream", "max_removals")),
        editors=editors or MtimeEditors(root, state),
        now=now,
        human_window=dt.timedelta(hours=float(config.get("vault", "human_edit_window_hours"))),
        id_start=id_start,
    )
    why = Explanation()
    cons = consolidate(
        cands,
        catalog,
        plan,
        language=language,
        today=today,
        explain=why,
        rejected=ledger.rejected_on,
    )
    clock.lap("consolidate")
    # --- 3. Represent --------------------------------------------------------------------------
    rep = Represented()
    repair_links(plan, catalog, graph.broken, rep, renames)
    update_home(plan, catalog, language, rep)
    home_rel = next((n for n in rep.notes if "/" not in n), "Home.md")
    report.orphans = find_orphans(
        catalog,
        graph.inbound,
        bool(rep.listed) or home_rel in rep.notes,
        rep.listed,
        plan.read(home_rel),
    )
    clock.lap("represent")
    # --- 4. Promote ------------------------------------------------------------------------------
    hermes_cfg = hermes_memory_settings(home)
    if hermes_cfg.problem:
        report.warnings.append(f"{hermes_cfg.problem}; using Hermes's default memory settings")
    limits = effective_limits(config, hermes_cfg)
    stores = {t: MemoryStore(home, t, limits[t]) for t in TARGETS if hermes_cfg.enabled[t]}
    for t in TARGETS:
        if not hermes_cfg.enabled[t]:
            report.warnings.append(
                f"{TARGETS[t]}: {hermes_cfg.enabled_key(t)} is false in {hermes_cfg.path}, so "
                "the agent does not load it; nothing promoted to it"
            )
    pp = plan_promotions(cands, stores, plan, why, ledger.rejected_on)
    report.warnings.extend(pp.warnings)
    staging = hermes_cfg.write_approval  # the person approves every write: stage, never write
    clock.lap("promote")
    # --- 5. Record ----------------------------------------------------------------------------
    skipped = [*distilled.skipped, *cons.skipped, *pp.skipped]
    summary = RunSummary(
        lessons={
            n: sum(1 for c in cs if c.kind == "knowledge")
            for n, cs in cons.notes.items()
            if any(c.kind == "knowledge" for c in cs)
        },
        decisions={
            n: sum(1 for c in cs if c.kind == "decision")
            for n, cs in cons.notes.items()
            if any(c.kind == "decision" for c in cs)
        },
        status=[n for n, cs in cons.notes.items() if any(c.kind == "status" for c in cs)],
        created=cons.created,
        appended_recent=cons.appended_recent,
        promoted={} if staging else {stores[t].name: len(ops) for t, ops in pp.ops.items() if ops},
        replaced=sum(1 for ops in pp.ops.values() for p in ops if p.replaced),
        not_fit=sum(1 for s in pp.skipped if s.code == "over_budget"),
        listed=len(rep.listed),
        repaired=len(rep.repaired),
        orphans=len(report.orphans),
        secrets=sum(1 for s in skipped if s.code == "secret"),
    )
    record_journal(plan, today, summary, language)
    clock.lap("record")
    # --- apply ---------------------------------------------------------------------------------
    counter = [id_start + len(plan.changes)]

    def next_id() -> str:
        counter[0] += 1
        return f"c{counter[0] - 1}"

    staged = stage_promotions(pp, home, dry_run=dry_run) if staging else []
    if staging:
        pp.ops = {}
    if dry_run:
        mem_changes, more = apply_promotions(pp, stores, dry_run=True, next_id=next_id)
        mem_skipped = [*staged, *more]
        run_changes: list[Change] = [*plan.changes, *mem_changes]
    else:
        landed = plan.apply(state)
        mem_changes, more = apply_promotions(pp, stores, dry_run=False, next_id=next_id)
        mem_skipped = [*staged, *more]
        run_changes = [*landed, *mem_changes]
        try:
            state.save()
        except OSError as exc:
            report.warnings.append(f"cannot save the dream's state: {exc}")
        ledger.save()
    skipped.extend(mem_skipped)
    report.run_changes = run_changes
    report.changes = [*(existing.changes if existing else []), *run_changes]
    report.skipped = skipped
    report.warnings.extend(plan.warnings)
    report.explanations = why.items if explain else []
    report.memory = {}
    for t, store in stores.items():
        try:
            entries_now = pp.simulated.get(t) if dry_run else None
            report.memory[store.name] = store.usage(entries_now).to_dict()
        except CompanionError:
            continue
    clock.lap("apply")
    # --- 6. Verify -----------------------------------------------------------------------------
    if sync is None or dry_run:
        report.verify = {"status": "not a sync copy" if sync is None else "dry run"}
    else:
        report.verify = settle(sync)
    clock.lap("verify")
    report.timings = dict(clock.times)
    report.finished_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if not dry_run:
        report.runs = [*(existing.runs if existing else []), report.run_record()]
        write_json_atomic(report_path(root, report.date), report.to_dict())
        report.path = report_path(root, report.date)
        if sync is not None and report.verify.get("status") == "synced":
            # Verify covered the notes; the report that records it is pushed right after
            pushed = settle(sync, attempts=1)
            if pushed.get("status") != "synced":
                report.verify = {**pushed, "error": f"the report itself: {pushed.get('error')}"}
        if report.verify.get("status") == "failed":
            raise DreamSyncError(
                f"the dream landed on this copy but sync did not settle: "
                f"{report.verify.get('error')}",
                report,
            )
    return report
