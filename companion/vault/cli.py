"""`companion vault init|check|search`: create, check and search a Markdown vault."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from companion.context import AppContext, pass_app
from companion.vaultpath import which_vault

if TYPE_CHECKING:
    from companion.vault.vault import Vault


def _open_vault(app: AppContext, directory: str) -> Vault:
    from companion.vault.vault import Vault

    return Vault.from_config(which_vault(directory, None), app.config)


def _echo(text: str) -> None:
    """Print text that may carry undecodable file names without crashing the command."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    safe = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    click.echo(safe.encode(encoding, "replace").decode(encoding, "replace"))


@click.group()
def vault() -> None:
    """Create, check and search a Markdown vault (Obsidian-compatible).

    \b
    Example:
      companion vault init ~/vault
      companion vault check ~/vault
      companion vault search ~/vault "docker compose"
    """


@vault.command("init")
@click.argument("directory", type=click.Path(file_okay=True, dir_okay=True))
@pass_app
def init(app: AppContext, directory: str) -> None:
    """Create the vault layout in DIRECTORY: Home.md, knowledge/, projects/, journal/.

    Whatever already exists is left exactly as it is; only missing parts are created.
    The Home.md it writes is this device's own, not a person's edit: the dream keeps its
    index from the first night.

    \b
    Example:
      companion vault init ~/vault
    """
    from companion.dream.state import record_command_writes
    from companion.vault.layout import HOME, init_vault

    result = init_vault(directory)
    if HOME in result.created:
        record_command_writes(app.paths.data_dir, result.root, [HOME])
    for item in result.created:
        click.echo(f"created  {item}")
    for item in result.kept:
        click.echo(f"kept     {item}")
    click.echo(f"Vault ready at {result.root}")


@vault.command("check")
@click.argument("directory", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (shape above).")
@click.option("--strict", is_flag=True, help="Fail on warnings too (exit status 1).")
@pass_app
@click.pass_context
def check(ctx: click.Context, app: AppContext, directory: str, as_json: bool, strict: bool) -> None:
    """Check DIRECTORY's links the way Obsidian reads them.

    \b
    Errors:   broken links, links to a missing heading or ^block, unreadable notes.
    Warnings: orphans (no note links to them), notes not listed in Home.md, a missing
              Home.md, ambiguous links, files read with a caveat (broken frontmatter,
              non-UTF-8 text, over vault.max_file_mb, symlinks not followed, odd names).

    Journal days are never orphans. Links in code (fenced, indented or inline) do not count.
    The vault is only read; an index is kept under the data folder and updated incrementally.

    Exit status: 0 when there is no error (warnings allowed), 1 when there is an error (with
    --strict, also a warning), 2 for a bad DIRECTORY.

    \b
    JSON (--json) has "format": 2 and the keys: vault, ok, strict, problems {errors,
    warnings}, severity {kind: "error"|"warning"}, counts, home, broken_links [{source, line,
    target, raw, embed}], missing_anchors [{source, line, target, anchor}], unreadable
    [{path, reason}], orphans [path], not_in_home [path], ambiguous_links [{source, line,
    target, resolved, candidates (the first 5), candidate_count}], warnings [{path,
    message}], index.

    \b
    Example:
      companion vault check ~/vault
      companion vault check ~/vault --strict
      companion vault check ~/vault --json | jq .problems
    """
    from companion.vault.check import run_check

    v = _open_vault(app, directory)
    report = run_check(v, app.paths.data_dir, strict=strict)
    if as_json:
        _echo(report.to_json())
    else:
        _echo(report.render_text())
    if not report.ok:
        ctx.exit(1)


@vault.command("search")
@click.argument("directory", type=click.Path())
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--limit",
    default=20,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Most results to show.",
)
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON.")
@pass_app
def search(
    app: AppContext, directory: str, query: tuple[str, ...], limit: int, as_json: bool
) -> None:
    """Full-text search of the notes in DIRECTORY; prints path:line: snippet, best first.

    All words must match, in any order, ignoring case and accents. "quoted words" match a
    phrase, word* a prefix, `a OR b` either, -word or NOT word excludes (quote a query that
    starts with -, or put it after --). The index is brought up to date
    first (only changed notes are read). Exit status 0, also when nothing matches; 2 for a bad
    DIRECTORY or a query with no word in it.

    \b
    JSON (--json): {"query": str, "results": [{"path", "line", "snippet", "score"}]}.

    \b
    Example:
      companion vault search ~/vault docker compose
      companion vault search ~/vault '"nightly dream"' --json
      companion vault search ~/vault "docker -swarm"
    """
    from companion.vault.index import VaultIndex

    text = " ".join(query)
    v = _open_vault(app, directory)
    with VaultIndex(v, app.paths.data_dir) as index:
        index.update()
        hits = index.search(text, limit)
    if as_json:
        payload = {"query": text, "results": [h._asdict() for h in hits]}
        _echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    if not hits:
        click.echo("No matches.", err=True)
        return
    for h in hits:
        _echo(f"{h.path}:{h.line}: {h.snippet}")
    sys.stdout.flush()
