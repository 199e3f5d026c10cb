"""`companion memory`: read and edit the agent's injected memory (Hermes MEMORY.md / USER.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from companion.context import AppContext, pass_app
from companion.memory.home import (
    TARGETS,
    effective_limits,
    hermes_memory_settings,
    resolve_home,
)
from companion.memory.render import Snapshot, render_block
from companion.memory.store import MemoryRefused, MemoryStore, Result


def _location_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--profile",
        metavar="NAME",
        help="Use the Hermes profile NAME (<home>/profiles/NAME).",
    )(f)
    f = click.option(
        "--home",
        type=click.Path(file_okay=False, path_type=Path),
        metavar="DIR",
        help="Hermes home (default: config memory.hermes_home, $HERMES_HOME, ~/.hermes).",
    )(f)
    return f


def _write_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--json", "as_json", is_flag=True, help="Machine-readable result.")(f)
    f = _location_options(f)
    f = click.option(
        "--target",
        type=click.Choice(sorted(TARGETS)),
        default="memory",
        show_default=True,
        help="MEMORY.md (the agent's notes) or USER.md (the user's profile).",
    )(f)
    return f


def _home(app: AppContext, home: Path | None, profile: str | None) -> Path:
    return resolve_home(home, config_home=app.config.settings.memory.hermes_home, profile=profile)


def _limits(app: AppContext, hermes_home: Path) -> dict[str, int]:
    """The companion's limits, never above those in Hermes's own config.yaml."""
    return effective_limits(app.config, hermes_memory_settings(hermes_home))


def _store(app: AppContext, target: str, home: Path | None, profile: str | None) -> MemoryStore:
    hermes_home = _home(app, home, profile)
    settings = hermes_memory_settings(hermes_home)
    if not settings.enabled[target]:
        click.echo(
            f"note: {settings.enabled_key(target)} is false in {settings.path}: the agent does "
            f"not load {TARGETS[target]} until it is turned on",
            err=True,
        )
    return MemoryStore(hermes_home, target, effective_limits(app.config, settings)[target])


def _run(store: MemoryStore, as_json: bool, action: Callable[[], Result]) -> None:
    """Run one write; print its result, or (with --json) the refusal before failing."""
    try:
        result = action()
    except MemoryRefused as exc:
        if as_json:
            click.echo(json.dumps(exc.to_dict(), ensure_ascii=False, indent=2))
        raise
    if as_json:
        out = result.to_dict()
        out["file"] = str(store.path)
        click.echo(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        n = len(result.entries)
        click.echo(
            f"{result.message} {store.name}: {result.usage.describe()}, "
            f"{n} entr{'y' if n == 1 else 'ies'}."
        )


def _text_arg(value: str) -> str:
    """`-` reads the text from standard input (for multi-line entries)."""
    return sys.stdin.read() if value == "-" else value


@click.group()
def memory() -> None:
    """Read and edit the agent's injected memory (Hermes MEMORY.md and USER.md).

    Entries are separated by lines holding only '§'; MEMORY.md may hold 2,200 characters and
    USER.md 1,375 (config memory.memory_char_limit / memory.user_char_limit, never above the
    limits in Hermes's own config.yaml). A write that
    would overflow, match several entries, or carry injected instructions is refused with
    exit status 1 and nothing changes. Writes take the same lock as Hermes Agent.

    \b
    Example:
      companion memory show
      companion memory add "User prefers pnpm over npm" --target user
    """


@memory.command("show")
@click.option(
    "--target",
    type=click.Choice([*sorted(TARGETS), "all"]),
    default="all",
    show_default=True,
    help="Which store to show.",
)
@_location_options
@click.option("--json", "as_json", is_flag=True, help="Entries, usage and the rendered text.")
@pass_app
def show(
    app: AppContext, target: str, home: Path | None, profile: str | None, as_json: bool
) -> None:
    """Print memory exactly as the agent sees it at session start (empty stores print nothing).

    \b
    Example:
      companion memory show --target user
      companion memory show --home ~/.hermes --profile work --json
    """
    hermes_home = _home(app, home, profile)
    limits = _limits(app, hermes_home)
    targets = sorted(TARGETS) if target == "all" else [target]
    if as_json:
        out: dict[str, Any] = {"home": str(hermes_home), "targets": {}}
        for t in targets:
            store = MemoryStore(hermes_home, t, limits[t])
            entries = store.read()
            usage = store.usage(entries)
            out["targets"][t] = {
                "file": str(store.path),
                "entries": entries,
                "usage": usage.describe(),
                "usage_detail": usage.to_dict(),
                "rendered": render_block(t, entries, limits[t]),
            }
        click.echo(json.dumps(out, ensure_ascii=False, indent=2))
        return
    snap = Snapshot.capture(hermes_home, limits)
    text = snap.text() if target == "all" else snap.block(target)
    if text:
        click.echo(text)


@memory.command("add")
@click.argument("content")
@_write_options
@pass_app
def add(
    app: AppContext,
    content: str,
    target: str,
    home: Path | None,
    profile: str | None,
    as_json: bool,
) -> None:
    """Add CONTENT as a new entry ('-' reads it from standard input).

    An entry that already exists is not added twice (success). An entry that would take the
    file over its limit is refused: replace or remove entries first.

    \b
    Example:
      companion memory add "Project X deploys with make release"
      printf 'line one\\nline two' | companion memory add - --target user
    """
    store = _store(app, target, home, profile)
    text = _text_arg(content)
    _run(store, as_json, lambda: store.add(text))


@memory.command("replace")
@click.argument("old")
@click.argument("new")
@_write_options
@pass_app
def replace(
    app: AppContext,
    old: str,
    new: str,
    target: str,
    home: Path | None,
    profile: str | None,
    as_json: bool,
) -> None:
    """Replace the whole entry containing OLD with NEW ('-' reads NEW from standard input).

    OLD is a short piece of the entry; text found in several different entries (even when
    one of them equals it) is refused with a preview of each, as Hermes does.

    \b
    Example:
      companion memory replace "uses npm" "User prefers pnpm over npm" --target user
    """
    store = _store(app, target, home, profile)
    text = _text_arg(new)
    _run(store, as_json, lambda: store.replace(old, text))


@memory.command("remove")
@click.argument("old")
@_write_options
@pass_app
def remove(
    app: AppContext, old: str, target: str, home: Path | None, profile: str | None, as_json: bool
) -> None:
    """Remove the entry containing OLD (text found in several different entries is refused).

    \b
    Example:
      companion memory remove "old staging server"
    """
    store = _store(app, target, home, profile)
    _run(store, as_json, lambda: store.remove(old))
