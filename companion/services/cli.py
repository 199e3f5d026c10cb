"""`companion install-service`: write the systemd user units of `companion.services.units`."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from companion.context import AppContext, pass_app
from companion.errors import CompanionError, InputError
from companion.services.units import (
    DREAM_TEMPLATE,
    DREAM_TIMER,
    KINDS,
    RELAY_UNIT,
    WATCH_TEMPLATE,
    _user_name,
    calendar_spec,
    carried_environment,
    companion_command,
    dream_units,
    install_unit_dir,
    instance_unit,
    linger_enabled,
    next_elapse,
    relay_units,
    user_unit_dir,
    watch_units,
    write_units,
)
from companion.vaultpath import which_vault

# ----------------------------------------------------------------------------------------------
# The command
# ----------------------------------------------------------------------------------------------


def _vault_arg(app: AppContext, vault: Path | None) -> Path:
    return which_vault(vault, app.config, hint="name the vault with --vault DIR")


def _sync_ready(app: AppContext, vault: Path) -> bool | None:
    try:
        from companion.sync.state.device import DeviceState
    except ImportError:
        return None
    return DeviceState.exists(app.paths, vault)


@click.command("install-service")
@click.argument("kind", type=click.Choice(KINDS))
@click.option(
    "--vault",
    type=click.Path(file_okay=False, path_type=Path),
    help="watch, dream: the vault folder (default [vault] path).",
)
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    help="relay: its data directory (default: DATA_DIR/relay of this device).",
)
@click.option("--host", help="relay: address to listen on (default 127.0.0.1).")
@click.option("--port", type=click.IntRange(1, 65535), help="relay: port (default 8787).")
@click.option(
    "--forwarded-allow-ips",
    metavar="IPS",
    help="relay: trust X-Forwarded-For from these proxies (default 127.0.0.1 on localhost).",
)
@click.option("--at", "at", metavar="HH:MM", help="dream: time of night (default [dream] time).")
@click.option("--timezone", metavar="TZ", help="dream: IANA time zone (default [dream] timezone).")
@click.option(
    "--unit-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write here instead of ~/.config/systemd/user, or $COMPANION_HOME/systemd/user "
    "when COMPANION_HOME is set (tests, packaging).",
)
@click.option("--dry-run", is_flag=True, help="Print the units and commands; write nothing.")
@click.option("--force", is_flag=True, help="Replace unit files install-service did not write.")
@pass_app
def install_service(
    app: AppContext,
    kind: str,
    vault: Path | None,
    data: Path | None,
    host: str | None,
    port: int | None,
    forwarded_allow_ips: str | None,
    at: str | None,
    timezone: str | None,
    unit_dir: Path | None,
    dry_run: bool,
    force: bool,
) -> None:
    """Write systemd user units that run the relay, the sync daemon or the nightly dream.

    KIND is relay (`companion relay serve` on localhost, for a reverse proxy to publish),
    watch (`companion watch VAULT`, one instance per vault) or dream (`companion dream VAULT`
    every night at [dream] time in [dream] timezone; a night missed while the machine was off
    runs at the next boot). The units start this same installation of the companion, and
    carry COMPANION_HOME, HERMES_HOME and COMPANION_PASSPHRASE_FILE when they are set.
    The units go to ~/.config/systemd/user; with COMPANION_HOME set, under
    $COMPANION_HOME/systemd/user, with the `systemctl --user link` lines that make them
    known. Prints the systemctl lines that enable them; nothing is started for you.

    \b
    Example:
      companion install-service relay --data /srv/relay
      companion install-service watch --vault ~/vault
      companion install-service dream --vault ~/vault --at 02:00 --timezone Europe/Madrid
      companion install-service watch --vault ~/vault --dry-run
    """
    _refuse_foreign_options(kind, vault, data, host, port, forwarded_allow_ips, at, timezone)
    if not sys.platform.startswith("linux") and unit_dir is None and not dry_run:
        raise CompanionError(
            "systemd user units are for Linux; on macOS and Windows the desktop app starts at "
            "login (Settings > Start at login). Use --dry-run to see the units anyway"
        )
    command = companion_command()
    env = carried_environment()
    target_dir = (unit_dir or install_unit_dir()).expanduser()
    enable: list[str] = []
    notes: list[str] = []
    if kind == "relay":
        data_dir = (data or app.paths.data_dir / "relay").expanduser().resolve()
        h = host or "127.0.0.1"
        fwd = forwarded_allow_ips
        if fwd is None and h in ("127.0.0.1", "::1", "localhost"):
            fwd = "127.0.0.1"
        units = relay_units(command, data_dir, h, port or 8787, fwd, env)
        enable = [RELAY_UNIT]
        notes.append(
            f"Invite a device:  companion relay invite --data {shlex.quote(str(data_dir))}"
        )
        if h not in ("127.0.0.1", "::1", "localhost"):
            notes.append(
                f"The relay listens on {h} without TLS: publish it through a reverse proxy "
                "with TLS (docs/server-setup.md), or pass --certfile/--keyfile in a drop-in."
            )
    else:
        root = _vault_arg(app, vault)
        if kind == "watch":
            units = watch_units(command, env)
            enable = [instance_unit(WATCH_TEMPLATE, root)]
        else:
            t = at or app.config.settings.dream.time
            tz = timezone or app.config.settings.dream.timezone
            units = dream_units(command, t, tz, env)
            enable = [instance_unit(DREAM_TIMER, root)]
            when = next_elapse(calendar_spec(t, tz))
            notes.append(
                f"The dream runs every night at {t} {tz}" + (f" (next: {when})." if when else ".")
            )
            once = shlex.quote(instance_unit(DREAM_TEMPLATE, root))
            notes.append(f"Run it once now:  systemctl --user start {once}")
        if _sync_ready(app, root) is False:
            notes.append(
                f"{root} is not set up for sync on this device yet: run `companion init` "
                "(docs/server-setup.md) before enabling the unit."
            )

    if dry_run:
        for u in units:
            click.echo(f"# --- {target_dir / u.name}")
            click.echo(u.text)
    else:
        for u, outcome in zip(units, write_units(units, target_dir, force), strict=True):
            click.echo(f"{outcome}: {target_dir / u.name}")
    quoted = " ".join(shlex.quote(n) for n in enable)
    systemd_dir = user_unit_dir()
    if unit_dir is None and target_dir.resolve() != systemd_dir.resolve():
        click.echo("")
        click.echo(
            f"COMPANION_HOME is set, so the units are in {target_dir}, not where systemd looks "
            f"({systemd_dir}). Link them there first:"
        )
        for u in units:
            click.echo(f"  systemctl --user link {shlex.quote(str(target_dir / u.name))}")
    click.echo("")
    click.echo("Enable and start:" if not dry_run else "To enable and start (after writing):")
    click.echo("  systemctl --user daemon-reload")
    click.echo(f"  systemctl --user enable --now {quoted}")
    service = enable[0].replace(".timer", ".service")
    click.echo("Follow its log:")
    click.echo(f"  journalctl --user -u {shlex.quote(service)} -f")
    for n in notes:
        click.echo(n)
    lingering = linger_enabled()
    if lingering is not True:
        user = _user_name() or "$USER"
        click.echo(
            "On a server, keep your services running after you log out (once, as root):\n"
            f"  sudo loginctl enable-linger {user}"
        )


def _refuse_foreign_options(
    kind: str,
    vault: Path | None,
    data: Path | None,
    host: str | None,
    port: int | None,
    forwarded: str | None,
    at: str | None,
    timezone: str | None,
) -> None:
    given = {
        "--vault": (vault, ("watch", "dream")),
        "--data": (data, ("relay",)),
        "--host": (host, ("relay",)),
        "--port": (port, ("relay",)),
        "--forwarded-allow-ips": (forwarded, ("relay",)),
        "--at": (at, ("dream",)),
        "--timezone": (timezone, ("dream",)),
    }
    for opt, (value, kinds) in given.items():
        if value is not None and kind not in kinds:
            raise InputError(f"{opt} is for {' and '.join(kinds)}, not {kind}")
