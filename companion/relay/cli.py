"""`companion relay ...`: run a relay and administer its vaults and devices.

The admin commands (`invite`, `revoke`, `devices`, `prune`) open the relay's data directory
directly, so they work whether or not `serve` is running (SQLite serialises the writers).
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from companion.errors import CompanionError, InputError
from companion.relay.auth import ID_RE, InviteTargetError, issue_invite
from companion.relay.backends import DATABASE_ENV, StoreChoice, open_storage
from companion.relay.limits import Limits
from companion.relay.storage import Device, NotFound, RelayStorage, RetentionPolicy
from companion.textsafe import shown

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """'90s', '30m', '24h', '7d' or plain seconds."""
    m = _DURATION.match(text)
    if m is None or float(m.group(1)) <= 0:
        raise InputError(f"not a duration: {text!r} (use e.g. 30m, 24h or 7d)")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _open(choice: StoreChoice, must_exist: bool = True, hint: str = "") -> RelayStorage:
    return open_storage(choice, must_exist=must_exist, hint=hint)


def store_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--data DIR | --database URL [--blobs s3://... --s3-endpoint URL], as one `store`."""

    @click.option(
        "--data", type=click.Path(file_okay=False, path_type=Path),
        help="SQLite store: the relay's data directory (database and blob files).",
    )  # fmt: skip
    @click.option(
        "--database", metavar="URL",
        help=f"PostgreSQL store: postgresql://user@host/db (or {DATABASE_ENV}); several relay "
        "processes can share it.",
    )  # fmt: skip
    @click.option(
        "--blobs", metavar="s3://BUCKET/PREFIX",
        help="With --database: keep blobs in an S3-compatible object store, not in PostgreSQL.",
    )  # fmt: skip
    @click.option("--s3-endpoint", metavar="URL", help="The object store's endpoint (not AWS).")
    @functools.wraps(fn)
    def wrapper(
        data: Path | None, database: str | None, blobs: str | None, s3_endpoint: str | None,
        **kw: Any,
    ) -> Any:  # fmt: skip
        return fn(store=StoreChoice(data, database, blobs, s3_endpoint).resolved(), **kw)

    return wrapper


@click.group()
def relay() -> None:
    """Run the relay that stores your vaults' ciphertext, and manage its devices.

    The relay only ever sees encrypted records and blobs under opaque ids; devices reach it
    with bearer tokens they get by redeeming one-time invite codes.

    \b
    Example:
      companion relay serve --data /srv/relay --port 8787
      companion relay invite --data /srv/relay
    """


@relay.command()
@store_options
@click.option("--migrate", is_flag=True, help="Apply pending schema migrations first.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8787, show_default=True, type=click.IntRange(0, 65535),
    help="Port to listen on; 0 picks a free one (printed).",
)  # fmt: skip
@click.option(
    "--port-file", type=click.Path(dir_okay=False, path_type=Path),
    help="Write the port here once the relay accepts connections.",
)  # fmt: skip
@click.option("--certfile", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="TLS certificate chain (PEM); serve HTTPS.")  # fmt: skip
@click.option("--keyfile", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="TLS private key (PEM) for --certfile.")  # fmt: skip
@click.option(
    "--forwarded-allow-ips", metavar="IPS",
    help="Behind a reverse proxy: trust its X-Forwarded-For from these addresses "
    "(comma-separated, e.g. 127.0.0.1), so rate limits see the real client.",
)  # fmt: skip
@click.option("--keep-days", default=30.0, show_default=True, type=click.FloatRange(0),
              help="Keep every revision of a file this many days...")  # fmt: skip
@click.option("--keep-last", default=10, show_default=True, type=click.IntRange(1),
              help="...and at least this many revisions of each file.")  # fmt: skip
@click.option(
    "--log-level", default="info", show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)  # fmt: skip
@click.option("--no-access-log", is_flag=True, help="Do not log one line per request.")
@click.option("--header-timeout", default=10.0, show_default=True, type=click.FloatRange(0.5, 600),
              help="Seconds a client has to send a request's headers.")  # fmt: skip
@click.option("--idle-timeout", default=30.0, show_default=True, type=click.FloatRange(0.5, 3600),
              help="Seconds a request body may stall before the connection is closed.")  # fmt: skip
@click.option("--max-connections", type=click.IntRange(1), metavar="N",
              help="Connections at once (default: what the open-file limit allows).")  # fmt: skip
@click.option("--max-connections-per-address", type=click.IntRange(1), metavar="N",
              help="Connections at once from one client address (proxies in "
              "--forwarded-allow-ips are exempt; default: half of --max-connections, "
              "at most 256).")  # fmt: skip
@click.option("--agent-records-per-day", type=click.IntRange(0), metavar="N",
              default=Limits.agent_records_per_day, show_default=True,
              help="Records one agent device may commit in a UTC day (0: no limit; "
              "human devices are never limited).")  # fmt: skip
@click.option("--agent-bytes-per-day", type=click.IntRange(0), metavar="N",
              default=Limits.agent_bytes_per_day, show_default=True,
              help="Bytes (records and new blobs) one agent device may store in a UTC day "
              "(0: no limit).")  # fmt: skip
def serve(
    store: StoreChoice,
    migrate: bool,
    host: str,
    port: int,
    port_file: Path | None,
    certfile: Path | None,
    keyfile: Path | None,
    forwarded_allow_ips: str | None,
    keep_days: float,
    keep_last: int,
    log_level: str,
    no_access_log: bool,
    header_timeout: float,
    idle_timeout: float,
    max_connections: int | None,
    max_connections_per_address: int | None,
    agent_records_per_day: int,
    agent_bytes_per_day: int,
) -> None:
    """Serve the relay's HTTP API until interrupted (Ctrl-C / SIGTERM shut down gracefully).

    Prints the URL it listens on. History older than --keep-days beyond the last --keep-last
    revisions, and blobs nothing references, are pruned every few hours. Each agent device
    may add at most --agent-records-per-day records and --agent-bytes-per-day bytes a UTC
    day (429 with Retry-After past them); human devices are never limited.

    \b
    Example:
      companion relay serve --data ~/relay-data
      companion relay serve --data /srv/relay --host 0.0.0.0 --port 8443 \\
          --certfile fullchain.pem --keyfile privkey.pem
      companion relay serve --data /tmp/r --port 0 --port-file /tmp/r/port
    """
    from companion.relay.server import ServeOptions
    from companion.relay.server import serve as run

    if (certfile is None) != (keyfile is None):
        raise InputError("--certfile and --keyfile go together")
    opts = ServeOptions(
        data_dir=store.data,
        database=store.database,
        blobs=store.blobs,
        s3_endpoint=store.s3_endpoint,
        migrate=migrate,
        host=host,
        port=port,
        port_file=port_file,
        certfile=certfile,
        keyfile=keyfile,
        forwarded_allow_ips=forwarded_allow_ips,
        retention=RetentionPolicy(keep_days=keep_days, keep_last=keep_last),
        log_level=log_level,
        access_log=not no_access_log,
        header_timeout=header_timeout,
        idle_timeout=idle_timeout,
        max_connections=max_connections,
        max_connections_per_address=max_connections_per_address,
        limits=Limits(
            agent_records_per_day=agent_records_per_day, agent_bytes_per_day=agent_bytes_per_day
        ),
    )
    try:
        run(opts)
    except OSError as exc:
        raise CompanionError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None


@relay.command()
@store_options
@click.option("--vault", "vault_id", metavar="ID", help="The vault to invite to (several vaults).")
@click.option("--new-vault", is_flag=True, help="Create another vault and invite its first device.")
@click.option("--expires", default="24h", show_default=True, help="Lifetime: e.g. 30m, 24h, 7d.")
@click.option(
    "--kind", type=click.Choice(["human", "agent"]), default="agent", show_default=True,
    help="The device this invite admits: a person's (human) or an AI agent's (agent). Fixed "
    "at join; a human device's edits win conflicts and only it may replace the vault key.",
)  # fmt: skip
@click.option(
    "--create",
    is_flag=True,
    help="Create the relay's data folder if it holds no relay yet (`serve` creates it too).",
)
def invite(
    store: StoreChoice,
    vault_id: str | None,
    new_vault: bool,
    expires: str,
    kind: str,
    create: bool,
) -> None:
    """Print a one-time invite code that admits one device (of --kind) to a vault.

    On a relay with no vault yet, the first invite creates one (the first device to join sets
    its passphrase); with one vault, invites join it; with several, --vault chooses. The kind
    is fixed by the invite: a device cannot claim to be a person's when it was invited as an
    agent.

    \b
    Example:
      companion relay invite --data /srv/relay --kind human
      companion relay invite --data /srv/relay --vault 3f9a0c1d2e4b5a69 --expires 1h
      companion relay invite --data /srv/new-relay --create
    """
    ttl = parse_duration(expires)
    db = _open(store, must_exist=not create, hint=", or pass --create to start a new relay")
    try:
        issued = issue_invite(db, vault_id=vault_id, new_vault=new_vault, ttl=ttl, kind=kind)
    except InviteTargetError as exc:
        raise InputError(str(exc)) from None
    finally:
        db.close()
    note = f"{'new ' if issued.new_vault else ''}vault {issued.vault_id}"
    click.echo(issued.code)
    click.echo(
        f"one-time invite for {'a human' if kind == 'human' else 'an agent'} device to {note}, "
        f"valid until {_when(issued.expires)}",
        err=True,
    )


def _find_device(store: RelayStorage, ref: str) -> Device:
    if ID_RE.match(ref):
        device = store.get_device(ref)
        if device is not None:
            return device
    named = [d for d in store.list_devices() if d.name == ref]
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        ids = ", ".join(d.device_id for d in named)
        raise InputError(f"several devices are named {ref!r}; give the id ({ids})")
    raise InputError(f"no device {ref!r} on this relay (see: companion relay devices)")


@relay.command()
@store_options
@click.argument("device")
def revoke(store: StoreChoice, device: str) -> None:
    """Revoke a device: its token is refused from the next request on.

    DEVICE is a device id or a unique device name (see `companion relay devices`). The device
    can join again only with a new invite.

    \b
    Example:
      companion relay revoke --data /srv/relay 8c1f0e2a9b7d4c36
      companion relay revoke --data /srv/relay old-laptop
    """
    db = _open(store)
    try:
        found = _find_device(db, device)
        try:
            done = db.revoke_device(found.device_id, time.time())
        except NotFound:
            raise InputError(f"no device {device!r} on this relay") from None
    finally:
        db.close()
    click.echo(f"revoked {done.device_id} ({shown(done.name)}, vault {done.vault_id})")


@relay.command()
@store_options
@click.option("--vault", "vault_id", metavar="ID", help="Only this vault's devices.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def devices(store: StoreChoice, vault_id: str | None, as_json: bool) -> None:
    """List the devices that joined this relay (revoked ones too).

    \b
    Example:
      companion relay devices --data /srv/relay
      companion relay devices --data /srv/relay --json
    """
    db = _open(store)
    try:
        rows = db.list_devices(vault_id)
    finally:
        db.close()
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "device_id": d.device_id,
                        "vault_id": d.vault_id,
                        "name": d.name,
                        "kind": d.kind,
                        "created": d.created,
                        "revoked": d.revoked,
                    }
                    for d in rows
                ],
                indent=2,
            )
        )
        return
    if not rows:
        click.echo("no devices yet (invite one with: companion relay invite)")
        return
    click.echo(f"{'DEVICE':16}  {'VAULT':16}  {'KIND':5}  {'JOINED':20}  {'REVOKED':20}  NAME")
    for d in rows:
        click.echo(
            f"{d.device_id:16}  {d.vault_id:16}  {d.kind:5}  {_when(d.created):20}  "
            f"{_when(d.revoked):20}  {shown(d.name)}"
        )


@relay.command()
@store_options
@click.option("--keep-days", default=30.0, show_default=True, type=click.FloatRange(0),
              help="Keep every revision of a file this many days...")  # fmt: skip
@click.option("--keep-last", default=10, show_default=True, type=click.IntRange(1),
              help="...and at least this many revisions of each file.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def prune(store: StoreChoice, keep_days: float, keep_last: int, as_json: bool) -> None:
    """Drop old file revisions beyond the retention policy and blobs nothing references.

    The server does this by itself every few hours; run it by hand to reclaim space now.

    \b
    Example:
      companion relay prune --data /srv/relay
      companion relay prune --data /srv/relay --keep-days 7 --keep-last 3
    """
    db = _open(store)
    try:
        stats = db.prune(RetentionPolicy(keep_days=keep_days, keep_last=keep_last), time.time())
    finally:
        db.close()
    if as_json:
        click.echo(json.dumps(stats.__dict__))
    else:
        click.echo(
            f"pruned {stats.records} old revisions and {stats.blobs} unreferenced blobs "
            f"({stats.blob_bytes / 1e6:.1f} MB)"
        )


@relay.command()
@store_options
def migrate(store: StoreChoice) -> None:
    """Bring the relay store's schema up to date (safe to run twice, or from two hosts at once).

    With several relay processes on one PostgreSQL database, upgrade by running this once,
    then restarting the relays on the new version. SQLite data is migrated on open anyway.

    \b
    Example:
      companion relay migrate --database postgresql://relay@db.internal/relay
      companion relay migrate --data /srv/relay
    """
    from companion.relay.backends import migrate as run

    before, after = run(store)
    where = store.label
    if before == after:
        click.echo(f"{where}: schema {after}, up to date")
    else:
        click.echo(f"{where}: schema {before} -> {after}")


@relay.command("export")
@store_options
@click.option("--to", "dest", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="A new folder to write the export into.")  # fmt: skip
def export_cmd(store: StoreChoice, dest: Path) -> None:
    """Copy everything the relay holds into a folder, to import into another store.

    Only ciphertext, hashes and ids are copied: no vault key is needed or involved. Sequence
    numbers and devices are kept, so devices carry on after an import without resyncing.
    Stop the relays (or accept that commits made during the export are not in it).

    \b
    Example:
      companion relay export --data /srv/relay --to /srv/relay-export
      companion relay export --database postgresql://relay@db/relay --to ./export
    """
    from companion.relay.transfer import export_relay

    db = _open(store)
    try:
        counts = export_relay(db, dest, source=store.label,
                              progress=lambda m: click.echo(m, err=True))  # fmt: skip
    finally:
        db.close()
    click.echo(f"exported {_counts(counts)} to {dest}")


@relay.command("import")
@store_options
@click.option("--from", "src", required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A folder written by `companion relay export`.")  # fmt: skip
def import_cmd(store: StoreChoice, src: Path) -> None:
    """Load an export into an empty store (a new --data folder, or a new, migrated database).

    \b
    Example:
      companion relay migrate --database postgresql://relay@db/relay
      companion relay import --database postgresql://relay@db/relay --from /srv/relay-export
    """
    from companion.relay.transfer import import_relay

    db = _open(store, must_exist=False)
    try:
        counts = import_relay(db, src, progress=lambda m: click.echo(m, err=True))
    finally:
        db.close()
    click.echo(f"imported {_counts(counts)} into {store.label}")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in counts.items())
