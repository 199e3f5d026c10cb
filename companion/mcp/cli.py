"""`companion mcp VAULT`: the vault as MCP tools for any agent; `--print-config` for agents;
`companion mcp token VAULT`: the bearer token of its HTTP transport."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from companion.context import AppContext, pass_app
from companion.vaultpath import which_vault


def _vault(app: AppContext, vault: str | None) -> Path:
    return which_vault(vault, app.config, hint="name the vault: companion mcp VAULT")


@click.command("token")
@click.argument("vault", required=False, type=click.Path(file_okay=False))
@click.option("--rotate", is_flag=True, help="Replace the token (the old one stops working).")
@pass_app
def token(app: AppContext, vault: str | None, rotate: bool) -> None:
    """Print the bearer token an agent sends to `companion mcp VAULT --transport http`.

    Generated on first use and kept in the secret store (the keyring, or the owner-only
    file with `[secrets] backend = "file"`), never in the vault or a log. Only the token
    goes to standard output. --rotate replaces it; a running server refuses the old one
    from its next request. Details: docs/mcp.md.

    \b
    Example:
      companion mcp token ~/vault
      claude mcp add --transport http vault http://127.0.0.1:8765/mcp \\
          --header "Authorization: Bearer $(companion mcp token ~/vault)"
      companion mcp token ~/vault --rotate
    """
    from companion.credentials.store import open_store
    from companion.mcp.auth import ensure_token, rotate_token

    root = _vault(app, vault)
    store = open_store(app.config)
    if rotate:
        value = rotate_token(store, app.paths, root)
        click.echo("a new MCP token; update the agents that use it", err=True)
    else:
        value, created = ensure_token(store, app.paths, root)
        if created:
            click.echo("generated this vault's MCP token", err=True)
    click.echo(value)


class _McpCommand(click.Command):
    """`companion mcp VAULT ...` serves; `companion mcp token ...` runs `token` (a vault
    folder named "token" is still reachable as ./token)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args[:1] == ["token"]:
            ctx.meta["companion.mcp.token"] = args[1:]
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        rest = ctx.meta.pop("companion.mcp.token", None)
        if rest is None:
            return super().invoke(ctx)
        verbose = [p for p in self.params if "-v" in getattr(p, "opts", ())]
        if verbose and not any("-v" in getattr(p, "opts", ()) for p in token.params):
            token.params.extend(verbose)  # the global `-v` after the command, as on `mcp`
        # under `companion` itself, so its usage reads `companion mcp token [OPTIONS] [VAULT]`
        parent = ctx.parent or ctx
        name = f"{ctx.info_name} token" if ctx.parent else "token"
        with token.make_context(name, list(rest), parent=parent) as sub:
            return token.invoke(sub)


@click.command("mcp", cls=_McpCommand)
@click.argument("vault", required=False, type=click.Path(file_okay=False))
@click.option("--read-only", is_flag=True, help="Only the read tools (no writes, no memory).")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio (the agent starts the server) or streamable HTTP on 127.0.0.1.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port for --transport http (always on 127.0.0.1; 0 picks a free one, printed).",
)
@click.option(
    "--hermes-home",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Hermes home for the memory tool (default: memory.hermes_home, $HERMES_HOME, ~/.hermes).",
)
@click.option("--profile", metavar="NAME", help="Hermes profile for the memory tool.")
@click.option(
    "--print-config",
    "print_config",
    type=click.Choice(["hermes", "claude", "openclaw"]),
    help="Print the configuration snippet for that agent, then exit.",
)
@click.option("--name", default="vault", show_default=True, help="Server name in the snippet.")
@click.option(
    "--agent",
    "scope_name",
    metavar="NAME",
    help="Also apply the vault's .companion/scopes.json entry mcp.NAME (one server per agent).",
)
@pass_app
def mcp(
    app: AppContext,
    vault: str | None,
    read_only: bool,
    transport: str,
    port: int,
    hermes_home: Path | None,
    profile: str | None,
    print_config: str | None,
    name: str,
    scope_name: str | None,
) -> None:
    """Serve VAULT to an AI agent over MCP (Model Context Protocol), with the vault's rules.

    Tools: search_notes, read_note, list_notes, recent_changes, links, orphans,
    broken_links, last_dream; and unless --read-only: write_note, edit_note,
    append_journal, memory (Hermes's memory tool over MEMORY.md / USER.md). Resources:
    vault://PATH (a note), memory://memory and memory://user. A note the person edited
    recently is never rewritten, secrets are refused, nothing outside the vault or in
    hidden or ignored paths is touched, and every write is recorded for the morning
    review. Runs beside `companion watch`, which syncs what the agent writes. Logs go to
    stderr and the log file; stdout is the protocol. Over HTTP every request needs the
    vault's bearer token (`companion mcp token VAULT` prints it), and a browser page's
    Origin is refused unless [mcp] allowed_origins lists it. Writes are limited per minute
    and per day ([mcp] writes_per_minute, bytes_per_day, new_notes_per_day). Details:
    docs/mcp.md.

    \b
    Example:
      companion mcp ~/vault                         (started by the agent, over stdio)
      companion mcp ~/vault --read-only
      companion mcp ~/vault --agent claude          (its mcp.claude scope applies too)
      companion mcp ~/vault --transport http --port 8765
      companion mcp token ~/vault                   (the HTTP bearer token)
      companion mcp ~/vault --print-config claude   (the snippet to paste)
    """
    root = _vault(app, vault)
    extra: list[str] = []
    if hermes_home is not None:
        extra += ["--hermes-home", str(hermes_home.expanduser().resolve())]
    if profile:
        extra += ["--profile", profile]
    if scope_name:
        extra += ["--agent", scope_name]
    if print_config:
        from companion.mcp.snippets import render

        click.echo(
            render(print_config, root, name=name, read_only=read_only, extra=extra), nl=False
        )
        return
    from companion.memory.home import resolve_home

    home = None
    if hermes_home is not None or profile:
        home = resolve_home(
            hermes_home, config_home=app.config.settings.memory.hermes_home, profile=profile
        )
    from companion.mcp.context import VaultContext
    from companion.mcp.server import log_to_stderr, serve

    log_to_stderr(app.verbose)
    ctx = VaultContext(
        root, app.paths, app.config, read_only=read_only, hermes_home=home, scope_name=scope_name
    )
    serve(ctx, "stdio" if transport == "stdio" else "http", port)
