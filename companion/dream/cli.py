"""`companion dream`: the nightly consolidation, on demand, scheduled, verified or undone."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import click

from companion.context import AppContext, pass_app
from companion.dream.report import DreamReport
from companion.dream.summary import change_text
from companion.errors import InputError
from companion.language import interface_language
from companion.vaultpath import Need, which_vault

_WINDOW = re.compile(r"^\s*(\d+)\s*(h|hours?|d|days?)?\s*$", re.I)


def parse_window(text: str) -> int:
    """`48h`, `36`, `2d` -> hours."""
    m = _WINDOW.match(text)
    if not m:
        raise InputError(f"--window: expected hours such as 48h or 36h, got {text!r}")
    n = int(m.group(1))
    unit = (m.group(2) or "h").lower()
    return n * 24 if unit.startswith("d") else n


def parse_now(text: str, tz: Any) -> dt.datetime:
    try:
        t = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"--now: not an ISO-8601 time: {text!r}") from None
    return t if t.tzinfo is not None else t.replace(tzinfo=tz)


def _vault(app: AppContext, vault: Path | None) -> Path:
    return which_vault(vault, app.config, need=Need.VAULT, paths=app.paths)


def _diff(rep: DreamReport) -> list[str]:
    return [line for c in rep.run_changes for line in c.diff_lines()]


def _print_report(rep: DreamReport, *, dry_run: bool, lang: str = "en") -> None:
    w = rep.window or {}
    head = f"Dream of {rep.date} ({rep.distiller} distiller, {rep.ran_on})"
    if w:
        head += f", window {w.get('start', '?')[:16]} to {w.get('end', '?')[:16]}"
    click.echo(head)
    if rep.distiller_note:
        click.echo(f"  note: {rep.distiller_note}")
    if rep.status == "skipped":
        for line in rep.warnings:
            click.echo(f"  {line}")
        return
    if rep.nothing_changed:
        click.echo("  Nothing changed." + (" (dry run)" if dry_run else ""))
    for c in rep.run_changes:  # the summaries in the interface's language ([gui] language)
        click.echo(f"  {c.kind:<12} {c.note}: {change_text(c, lang)}")
    if rep.skipped:
        by: dict[str, int] = {}
        for s in rep.skipped:
            by[s.code] = by.get(s.code, 0) + 1
        click.echo(
            "  skipped: "
            + ", ".join(f"{n} {code}" for code, n in sorted(by.items()))
            + " (--explain says why)"
        )
    if rep.orphans:
        click.echo(
            f"  orphan notes: {', '.join(rep.orphans[:5])}"
            + (f" and {len(rep.orphans) - 5} more" if len(rep.orphans) > 5 else "")
        )
    for line in rep.warnings:
        click.echo(f"  warning: {line}")
    v = rep.verify or {}
    if v.get("status") and v.get("status") != "not a sync copy":
        click.echo(f"  sync: {v.get('status')}")
    if dry_run:
        click.echo("Dry run: nothing was written.")
    elif rep.path is not None:
        click.echo(f"Report: {rep.path}")


def _print_explain(rep: DreamReport) -> None:
    if not rep.explanations and not rep.skipped:
        click.echo("No candidates in the window.")
        return
    click.echo("Candidates:")
    for e in rep.explanations:
        text = e["text"] if e["text"] is not None else "[withheld: it holds a secret]"
        where = f" -> {e['note']}" if e.get("note") else ""
        click.echo(f"  [{e['decision']}] {text}\n      {e['why']}{where} (from {e['source']})")
    for s in rep.skipped:
        text = s.text if s.text is not None else "[withheld: it holds a secret]"
        click.echo(f"  [skipped: {s.code}] {text}\n      {s.reason} (from {s.where()})")


class DreamGroup(click.Group):
    """`companion dream VAULT [options]` dreams; `companion dream proposals ...` is a
    subcommand: a first argument that names a subcommand is that subcommand, anything else is
    the vault (write `./proposals` for a vault folder of that name)."""

    allow_interspersed_args = True  # options after VAULT, as a plain command has them

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in self.commands:
            click.Command.parse_args(self, ctx, [])  # the dream's own options stay defaults
            ctx._protected_args, ctx.args = [args[0]], list(args[1:])
            return ctx.args
        rest = click.Command.parse_args(self, ctx, args)
        if rest:
            ctx.fail(f"Got unexpected extra argument ({' '.join(rest)})")
        return []


@click.group("dream", cls=DreamGroup, invoke_without_command=True)
@click.argument("vault", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--now",
    "now_text",
    metavar="ISO-8601",
    help="Dream as of this time (a time without offset is in [dream] timezone).",
)
@click.option(
    "--window",
    "window_text",
    metavar="HOURS",
    help="Transcript window, 24h to 48h (default [dream] window_hours).",
)
@click.option("--dry-run", is_flag=True, help="Print the diff the dream would make; write nothing.")
@click.option(
    "--explain",
    is_flag=True,
    help="Say for each candidate why it was or was not consolidated or promoted.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--verify",
    is_flag=True,
    help="Check that every dream-written line still resolves to its source.",
)
@click.option(
    "--undo",
    "undo_date",
    metavar="DATE",
    help="Restore, byte for byte, every file the dreams of DATE changed.",
)
@click.option(
    "--distiller",
    type=click.Choice(["rules", "llm"]),
    help="rules (offline, default) or llm ([llm] endpoint, falls back to rules).",
)
@click.option(
    "--schedule",
    is_flag=True,
    help="Stay running and dream nightly at [dream] time (catches up a missed night).",
)
@pass_app
def dream(
    app: AppContext,
    vault: Path | None,
    now_text: str | None,
    window_text: str | None,
    dry_run: bool,
    explain: bool,
    as_json: bool,
    verify: bool,
    undo_date: str | None,
    distiller: str | None,
    schedule: bool,
) -> None:
    """Consolidate what the agent learned into the vault and its injected memory.

    Reads the transcripts since the last dream (at most the window), the journal and the
    notes; adds lessons to knowledge/, decisions and state to projects/, keeps Home.md's
    index, promotes every-session facts to MEMORY.md / USER.md within their budgets, and
    records what it did under "## Dreaming" in today's journal and in
    .companion/dreams/YYYY-MM-DD.json. Every line it writes names its source.

    \b
    Examples:
      companion dream ~/vault                       dream now
      companion dream ~/vault --dry-run --explain   show what it would do, and why
      companion dream ~/vault --now 2026-11-28T02:00 --window 36h
      companion dream ~/vault --verify              every dream line still has its source
      companion dream ~/vault --undo 2026-11-28     put back what that night changed
      companion dream ~/vault --schedule            nightly at 02:00 Europe/Madrid
      companion dream proposals ~/vault             the changes to memory waiting for you
    """
    if click.get_current_context().invoked_subcommand:
        return  # `companion dream proposals ...`
    modes = [
        name
        for name, on in (
            ("--verify", verify),
            ("--undo", undo_date is not None),
            ("--schedule", schedule),
        )
        if on
    ]
    if len(modes) > 1:
        raise InputError(f"{' and '.join(modes)} cannot be combined")
    if modes and dry_run:
        raise InputError(f"--dry-run cannot be combined with {modes[0]}")
    root = _vault(app, vault)
    if verify:
        _verify(app, root, as_json)
    elif undo_date is not None:
        _undo(app, root, undo_date, as_json)
    elif schedule:
        _schedule(app, root)
    else:
        _run(app, root, now_text, window_text, dry_run, explain, as_json, distiller)


def _verify(app: AppContext, root: Path, as_json: bool) -> None:
    """`--verify`: every dream-written line still resolves to its source."""
    from companion.dream.read import labels_from_config  # noqa: PLC0415
    from companion.dream.verify import verify_vault  # noqa: PLC0415
    from companion.memory import resolve_home  # noqa: PLC0415

    config = app.config
    home = resolve_home(None, config_home=config.settings.memory.hermes_home or None)
    result = verify_vault(root, labels_from_config(config, home))
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        c = result.counts
        click.echo(
            f"{sum(c.values())} dream-written lines: {c['ok']} ok, {c['moved']} "
            f"moved, {c['unreachable']} with an unreachable source, "
            f"{c['edited']} edited by a person, {c['unresolved']} unresolved"
        )
        for chk in result.checks:
            if chk.status != "ok":
                click.echo(f"  {chk.status}: {chk.note}:{chk.line}: {chk.text}  ({chk.detail})")
    if not result.ok:
        click.get_current_context().exit(1)


def _undo(app: AppContext, root: Path, undo_date: str, as_json: bool) -> None:
    """`--undo DATE`: put back what that night changed."""
    from companion.dream.state import DreamState  # noqa: PLC0415
    from companion.dream.undo import undo_dream  # noqa: PLC0415
    from companion.memory import resolve_home  # noqa: PLC0415

    config = app.config
    home = resolve_home(None, config_home=config.settings.memory.hermes_home or None)
    state = DreamState.for_vault(app.paths.data_dir, root)  # restored files are the dream's
    res = undo_dream(root, undo_date, home / "memories", state=state)
    if as_json:
        out = {"date": res.date, "restored": res.restored, "removed": res.removed,
               "elsewhere": res.elsewhere}  # fmt: skip
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(
        f"Undid the dream of {res.date}: restored {len(res.restored)} file(s), "
        f"removed {len(res.removed)} the dream had created."
    )
    for p in res.restored:
        click.echo(f"  restored {p}")
    for p in res.removed:
        click.echo(f"  removed  {p}")
    for p in res.elsewhere:
        click.echo(f"  {p} is not on this device: run the same undo where the agent runs")


def _schedule(app: AppContext, root: Path) -> None:
    """`--schedule`: stay running and dream nightly."""
    from companion.dream.schedule import build_scheduler, dream_time  # noqa: PLC0415

    config = app.config
    sched = build_scheduler(root.resolve(), config, app.paths, blocking=True, run=scheduled_dream)
    at = dream_time(config)
    click.echo(
        f"Dreaming {root} nightly at {at:%H:%M} {config.settings.dream.timezone}; Ctrl+C stops."
    )
    try:
        sched.start()
    except (KeyboardInterrupt, SystemExit):
        pass


def dream_copy(
    root: Path,
    config: Any,
    paths: Any,
    *,
    now: Any = None,
    window_hours: int | None = None,
    distiller: str | None = None,
    dry_run: bool = False,
    explain: bool = False,
) -> Any:
    """One dream of `root` as the nightly unit runs it: on a sync copy Verify syncs until quiet
    (through a running `watch` when one owns the copy) and the per-night lease keeps one
    dreamer; who changed a note the dream leaves alone comes from the sync index. The one path
    of `companion dream` and of `--schedule` (#39: the scheduler dreamt with no sync at all)."""
    from companion.dream.engine import run_dream  # noqa: PLC0415
    from companion.sync.service.dreamhook import dream_sync_hook  # noqa: PLC0415
    from companion.sync.state.editors import editors_for_dream  # noqa: PLC0415

    hook_ctx = contextlib.nullcontext(None) if dry_run else dream_sync_hook(root, paths, config)
    with hook_ctx as hook, editors_for_dream(root, paths, config) as editors:
        return run_dream(
            root, config, now, paths=paths, window_hours=window_hours, distiller=distiller,
            dry_run=dry_run, explain=explain, sync=hook, editors=editors,
        )  # fmt: skip


def scheduled_dream(vault: Path, config: Any, paths: Any) -> Any:
    """The runner `--schedule` gives its scheduler: tonight's dream, exactly as the unit's."""
    return dream_copy(vault, config, paths)


def _run(
    app: AppContext,
    root: Path,
    now_text: str | None,
    window_text: str | None,
    dry_run: bool,
    explain: bool,
    as_json: bool,
    distiller: str | None,
) -> None:
    """One dream now (or a dry run of it)."""
    from companion.dream.engine import DreamSyncError, dream_timezone  # noqa: PLC0415

    config = app.config
    tz = dream_timezone(config)
    now = parse_now(now_text, tz) if now_text else None
    hours = parse_window(window_text) if window_text else None
    try:
        rep = dream_copy(
            root, config, app.paths, now=now, window_hours=hours, distiller=distiller,
            dry_run=dry_run, explain=explain,
        )  # fmt: skip
    except DreamSyncError as exc:
        _print_report(exc.report, dry_run=False, lang=interface_language(config))
        raise
    if as_json:
        data = rep.to_dict(explain=explain)
        data["run_changes"] = [c.id for c in rep.run_changes]
        if dry_run:
            data["changes"] = [c.to_dict() for c in rep.run_changes]
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if dry_run:
        for line in _diff(rep):
            click.echo(line)
    _print_report(rep, dry_run=dry_run, lang=interface_language(config))
    if explain:
        _print_explain(rep)


def _proposal_line(p: dict[str, Any]) -> str:
    what = {"add": "add", "replace": "replace", "remove": "remove"}.get(str(p.get("op")), "?")
    out = [f"{p['id']}  {p.get('state')}  {what} in {p.get('file')}"]
    if p.get("old"):
        out.append(f"    old: {p['old']}")
    if p.get("new"):
        out.append(f"    new: {p['new']}")
    if p.get("quote"):
        out.append(f"    said: {p['quote']}")
    out.append(f"    why it waits: {p.get('why')}")
    for a in p.get("attempts") or []:
        out.append(f"    tried to {a.get('action')} on {a.get('at')}: {a.get('why')}")
    return "\n".join(out)


@dream.command("proposals")
@click.argument("vault", type=click.Path(path_type=Path, file_okay=False))
@click.argument("action", required=False, type=click.Choice(["apply", "drop"]))
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--all", "every", is_flag=True, help="Every undecided proposal.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@pass_app
def proposals(
    app: AppContext,
    vault: Path,
    action: str | None,
    ids: tuple[str, ...],
    every: bool,
    as_json: bool,
) -> None:
    """List, apply or drop the changes to MEMORY.md / USER.md that wait for you.

    The dream proposes instead of applying ([dream] apply, default propose-risky) a fact
    only an assistant message says, any replacement or removal of an entry, and what the
    guard is unsure of. A proposal waits until you decide it. Applying writes through the
    agent's memory lock: a held lock, or an entry changed since, leaves it waiting.

    \b
    Examples:
      companion dream proposals ~/vault                 what waits, and why
      companion dream proposals ~/vault --json          the same, for scripts
      companion dream proposals ~/vault apply p1a2b3c4  write it to MEMORY.md / USER.md
      companion dream proposals ~/vault drop --all      drop every undecided one
    """
    from filelock import FileLock, Timeout  # noqa: PLC0415

    from companion.dream import proposals as props  # noqa: PLC0415
    from companion.dream.state import vault_key  # noqa: PLC0415
    from companion.memory.home import memory_stores  # noqa: PLC0415

    root = _vault(app, vault).resolve()
    if action is None:
        if ids or every:
            raise InputError("give apply or drop before an ID or --all")
        waiting = props.pending(props.load_book(root))
        if as_json:
            click.echo(json.dumps({"proposals": waiting}, indent=2, ensure_ascii=False))
        elif not waiting:
            click.echo("No changes wait for you.")
        else:
            for p in waiting:
                click.echo(_proposal_line(p))
        return
    if bool(ids) == every:
        raise InputError(f"{action}: give one or more IDs, or --all")
    config = app.config
    stores = memory_stores(config)
    lock_path = app.paths.state_dir / "dream" / f"{vault_key(root)}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(lock_path, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise InputError(f"a dream of {root} is running on this device; try again") from None
    try:
        outcomes = props.decide(
            root, stores, action, None if every else ids, device=props.device_name(config)
        )
    finally:
        lock.release()
    if as_json:
        click.echo(json.dumps([vars(o) for o in outcomes], indent=2, ensure_ascii=False))
    else:
        for o in outcomes:
            click.echo(f"{o.id}: {o.result}" + (f" ({o.why})" if o.why else ""))
        if not outcomes:
            click.echo("No changes wait for you.")
    if not all(o.ok for o in outcomes):
        click.get_current_context().exit(1)
