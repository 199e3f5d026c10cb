"""`companion config`: show the configuration, its defaults, and where it lives."""

from __future__ import annotations

import json

import click

from companion.config import describe_schema
from companion.context import AppContext, pass_app


@click.group()
def config() -> None:
    """Show the configuration file and its documented keys.

    \b
    Example:
      companion config show --defaults
    """


@config.command("show")
@click.option("--defaults", is_flag=True, help="Print every documented key with its default.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_app
def show(app: AppContext, defaults: bool, as_json: bool) -> None:
    """Print the effective configuration (validated), or the documented defaults.

    \b
    Example:
      companion config show --json
    """
    if defaults:
        click.echo(describe_schema())
        return
    cfg = app.config
    if as_json:
        click.echo(json.dumps({"file": str(cfg.file), "values": cfg.values}, indent=2))
    else:
        click.echo(f"# {cfg.file}")
        import tomlkit

        click.echo(tomlkit.dumps(cfg.values))


@config.command("path")
@pass_app
def path(app: AppContext) -> None:
    """Print where the config file, data, logs and state live.

    \b
    Example:
      COMPANION_HOME=/tmp/dev1 companion config path
    """
    p = app.paths
    click.echo(f"config  {p.config_file}")
    click.echo(f"data    {p.data_dir}")
    click.echo(f"logs    {p.log_file}")
    click.echo(f"state   {p.state_dir}")
