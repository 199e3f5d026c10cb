"""`companion held` and `companion quarantine`: what waits for the person, and their decisions.

Both record the decision in the sync index, then run a round to carry it out; when another
engine owns the copy (`companion watch`, the desktop app) they ask that engine for the round
and wait for it (`sync/service/requests.py`), so the decision is carried out when the command
returns.
Exit status as `companion sync`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from companion.context import AppContext, pass_app
from companion.errors import InputError
from companion.textsafe import shown


def _root(app: AppContext, vault: Path | None) -> str:
    from companion.sync.commands.cli import _vault

    return os.path.realpath(_vault(app, vault))


def _index(app: AppContext, root: str) -> Any:
    from companion.sync.state.device import DeviceState, sync_index_path
    from companion.sync.state.index import SyncIndex

    DeviceState.load(app.paths, root)  # NotInitialised with the init hint
    return SyncIndex(sync_index_path(app.paths, root))


def _carry_out(app: AppContext, root: str) -> None:
    """Run a round here, or ask the engine that owns the copy to run one."""
    from companion.sync.commands.cli import _print_report, run_round

    _print_report(run_round(app, Path(root)))


# ------------------------------------------------------------------------------------ held


@click.group()
def held() -> None:
    """Changes from agent devices held for your approval (settings, plugins, code).

    On a device of kind human, a change an agent device made to `.companionignore`, the
    companion's settings in `.companion/`, an Obsidian config folder (plugins, themes,
    snippets, settings), a script or an executable file, or a note holding code a plugin runs
    (Templater, DataviewJS...), is not applied until you accept it. Refusing keeps this
    device's version and sends it to every device.

    \b
    Example:
      companion held list ~/vault
      companion held accept ~/vault .obsidian/app.json
      companion held refuse ~/vault --all
    """


def _held_rows(app: AppContext, root: str) -> list[dict[str, Any]]:
    with _index(app, root) as index:
        return [
            {"path": r.path, "rev": r.rev, "reason": r.reason, "author": r.author,
             "since": r.since_ns / 1e9, "decision": r.decision}
            for r in index.held.rows()
        ]  # fmt: skip


@held.command("list")
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_app
def held_list(app: AppContext, vault: Path | None, as_json: bool) -> None:
    """List the held changes of VAULT.

    \b
    Example:
      companion held list ~/vault --json
    """
    rows = _held_rows(app, _root(app, vault))
    if as_json:
        click.echo(json.dumps(rows, indent=2, sort_keys=True))
        return
    if not rows:
        click.echo("nothing is held")
        return
    for r in rows:
        pending = f" [{r['decision']} recorded]" if r["decision"] else ""
        click.echo(
            f"{shown(r['path'])}: {r['reason']} (from {shown(r['author'] or 'an agent')}, "
            f"rev {r['rev']}){pending}"
        )


def _decide_held(app: AppContext, vault: Path | None, paths: tuple[str, ...], all_: bool,
                 decision: str) -> None:  # fmt: skip
    from companion.sync.commands.cli import _relative
    from companion.sync.round.decisions import record_held

    root = _root(app, vault)
    if not paths and not all_:
        raise InputError("name the held paths, or pass --all (see `companion held list`)")
    rels = None if all_ else [_relative(Path(root), p) for p in paths]
    with _index(app, root) as index:
        done = record_held(index, rels, decision)
    if not done:
        click.echo("nothing is held")
        return
    verb = "accepted" if decision == "accept" else "refused"
    for path in done:
        click.echo(f"{verb}: {shown(path)}")
    _carry_out(app, root)


@held.command("accept")
@click.argument("vault", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("paths", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every held change.")
@pass_app
def held_accept(app: AppContext, vault: Path, paths: tuple[str, ...], all_: bool) -> None:
    """Apply the held changes at PATHS (relative to VAULT).

    \b
    Example:
      companion held accept ~/vault .obsidian/plugins/dataview/main.js
    """
    _decide_held(app, vault, paths, all_, "accept")


@held.command("refuse")
@click.argument("vault", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("paths", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every held change.")
@pass_app
def held_refuse(app: AppContext, vault: Path, paths: tuple[str, ...], all_: bool) -> None:
    """Refuse the held changes at PATHS: keep this device's version, on every device.

    \b
    Example:
      companion held refuse ~/vault .obsidian/community-plugins.json
    """
    _decide_held(app, vault, paths, all_, "refuse")


# ------------------------------------------------------------------------------------ quarantine


@click.group()
def quarantine() -> None:
    """Files whose newest record on the relay cannot be opened or verified.

    Such a record (damaged, forged by a device without the vault key, or claiming another
    device's identity) is never applied; only its file waits, and the rest of the vault keeps
    syncing both ways. On a human device, `supersede` commits this device's version of the file
    over it, and the file heals on every device.

    \b
    Example:
      companion quarantine list ~/vault
      companion quarantine supersede ~/vault knowledge/git.md
    """


@quarantine.command("list")
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_app
def quarantine_list(app: AppContext, vault: Path | None, as_json: bool) -> None:
    """List the quarantined files of VAULT.

    \b
    Example:
      companion quarantine list ~/vault --json
    """
    root = _root(app, vault)
    with _index(app, root) as index:
        rows = [
            {"path": r.path, "file_id": r.file_id, "rev": r.rev, "reason": r.reason,
             "author": r.author, "since": r.since_ns / 1e9, "decision": r.decision}
            for r in index.quarantine.rows()
        ]  # fmt: skip
    if as_json:
        click.echo(json.dumps(rows, indent=2, sort_keys=True))
        return
    if not rows:
        click.echo("nothing is quarantined")
        return
    for r in rows:
        name = shown(r["path"]) if r["path"] else f"(unknown file, id {r['file_id'][:16]})"
        click.echo(f"{name}: rev {r['rev']}: {shown(r['reason'])}")


def _decide_quarantine(
    app: AppContext, vault: Path, targets: tuple[str, ...], decision: str
) -> None:
    from companion.credentials.store import open_store
    from companion.crypto import file_id
    from companion.sync.commands.cli import _relative
    from companion.sync.round.decisions import record_quarantine
    from companion.sync.state.device import DeviceState

    root = _root(app, vault)
    if not targets:
        raise InputError("name the quarantined files (see `companion quarantine list`)")
    state = DeviceState.load(app.paths, root)
    key = state.load_key(open_store(app.config))
    names = [t if len(t) >= 8 and all(c in "0123456789abcdef" for c in t.lower())
             else _relative(Path(root), t) for t in targets]  # fmt: skip
    with _index(app, root) as index:
        done = record_quarantine(index, lambda p: file_id(key, p), names, decision, state.kind)
    for name in done:
        click.echo(f"{decision}: {shown(name)}")
    _carry_out(app, root)


@quarantine.command("supersede")
@click.argument("vault", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("targets", nargs=-1)
@pass_app
def quarantine_supersede(app: AppContext, vault: Path, targets: tuple[str, ...]) -> None:
    """Commit this device's version of each quarantined file over the unreadable record
    (human devices only).

    \b
    Example:
      companion quarantine supersede ~/vault knowledge/git.md
    """
    _decide_quarantine(app, vault, targets, "supersede")


@quarantine.command("dismiss")
@click.argument("vault", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("targets", nargs=-1)
@pass_app
def quarantine_dismiss(app: AppContext, vault: Path, targets: tuple[str, ...]) -> None:
    """Forget the report of quarantined files (by path or file id); nothing is committed.

    \b
    Example:
      companion quarantine dismiss ~/vault 3f9a0c1d2e4b5a69
    """
    _decide_quarantine(app, vault, targets, "dismiss")
