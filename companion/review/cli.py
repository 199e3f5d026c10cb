"""`companion review list | decide`: the morning review from the command line.

The same as the review note and the plugin's `dist/cli.js review ...`: `decide` ticks the line
(what a tap in Obsidian does); the decision is carried out at this device's next sync round
(`companion sync VAULT`, or the running `watch` / desktop app), or by the agent's server for
proposals.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from companion.context import AppContext, pass_app
from companion.errors import InputError

DECISIONS = ("revert", "keep", "take", "apply", "drop")


@click.group()
def review() -> None:
    """The night's review: what the agent changed, its proposals, your decisions.

    \b
    Examples:
      companion review list ~/vault
      companion review decide ~/vault c-4f2a9b1e3d revert
      companion sync ~/vault      # carries the decision out
    """


@review.command("list")
@click.argument("vault", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--night", metavar="YYYY-MM-DD", help="That night's note (default: the newest).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_app
def list_cmd(app: AppContext, vault: Path, night: str | None, as_json: bool) -> None:
    """List the items of the newest review note: id, kind, file, state, decisions.

    Changes' before and after come from the relay's history (the relay must be reachable),
    and who decided a line from the note's own history.

    \b
    Example:
      companion review list ~/vault --json
    """
    from companion.review.listing import items, newest_note
    from companion.sync.commands.cli import _open_engine

    with _open_engine(app, vault) as engine:
        from companion.review.rounds import device_for

        dev = device_for(engine)
        found = newest_note(dev, night)
        if found is None:
            if as_json:
                click.echo(json.dumps({"note": None, "items": []}, indent=2))
                return
            raise InputError(
                "no review note" + (f" for {night}" if night else "") + f" in {vault}/review/"
            )
        rel = found[1]
        rows = items(dev, rel)
    if as_json:
        out = {"note": rel, "items": [r.to_dict() for r in rows]}
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    click.echo(rel)
    for r in rows:
        state = r.state + (f" ({r.outcome})" if r.outcome else "")
        by = f" by {r.decided_by} ({r.decided_by_kind})" if r.decided_by else ""
        click.echo(f"  {r.id:<14} {r.kind:<12} {r.file or '-'}")
        click.echo(f"  {'':<14} {'/'.join(r.decisions)}: {state}{by}")


@review.command()
@click.argument("vault", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("item_id", metavar="ID")
@click.argument("decision", type=click.Choice(DECISIONS))
@click.option("--night", metavar="YYYY-MM-DD", help="Tick it in that night's note.")
@pass_app
def decide(app: AppContext, vault: Path, item_id: str, decision: str, night: str | None) -> None:
    """Tick the line deciding ID (as a tap on it in Obsidian would).

    The newest note listing ID open is ticked. Nothing else changes until this device's next
    sync round carries it out (proposals: the agent's server, at its next round).

    \b
    Example:
      companion review decide ~/vault p-1a2b3c4d5e apply
    """
    from companion.review import desk

    done = desk.tick(vault, item_id, decision, night=night)
    if done.status in (desk.TICKED, desk.ALREADY):
        click.echo(f"ticked {item_id} {decision} in {done.note}")
        return
    if done.status == desk.UNKNOWN:
        raise InputError(f"no review line has the id {item_id!r} (see `companion review list`)")
    click.echo(f"{item_id}: no open {decision!r} line (already decided, or not offered)", err=True)
    click.get_current_context().exit(1)
