"""`companion scopes show|init|set`: which folders each agent may write, and may not read.

The scopes live in the vault (`.companion/scopes.json`, `companion.sync.round.scopes`), so every
device of the person reads the same grant; sync carries them. Only a person's device writes
them here: on an agent device `init` and `set` are refused (an agent's own change to the file
would be held on the person's devices anyway, as any change to `.companion/`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from companion.context import AppContext, pass_app
from companion.errors import CompanionError, InputError


def _root(app: AppContext, vault: Path | None) -> Path:
    from companion.sync.commands.cli import _vault

    return _vault(app, vault)


def _device(app: AppContext, root: Path) -> Any:
    """This device's sync state, or None for a folder not set up for sync."""
    from companion.sync.state.device import DeviceState, NotInitialised

    try:
        return DeviceState.load(app.paths, root)
    except NotInitialised:
        return None


def _refuse_on_agent(app: AppContext, root: Path) -> Any:
    from companion.sync.round.conflicts import HUMAN
    from companion.sync.round.model import device_kind

    state = _device(app, root)
    if state is not None and device_kind(state.kind) != HUMAN:
        raise InputError(
            f"this is an agent device ({state.device_name}): only a person's device grants "
            "scopes; run this on your laptop (an agent's change to .companion/scopes.json is "
            "held for the person anyway)"
        )
    return state


def _agent_devices(app: AppContext, state: Any) -> list[tuple[str, str]]:
    """(device id, name) of the vault's agent devices, as the relay lists them; [] when it
    cannot be asked (not set up for sync, offline)."""
    if state is None:
        return []
    from companion.credentials.store import open_store
    from companion.relayclient.client import RelayClient
    from companion.relayclient.errors import RelayError

    try:
        token = state.load_token(open_store(app.config))
        with RelayClient(
            state.relay_url,
            token,
            state.vault_id,
            timeout=10,
            verify=state.verify,
            insecure_http=state.insecure_http,
        ) as client:
            devices = client.devices()
    except (CompanionError, RelayError):
        return []
    return [(d.device_id, d.name) for d in devices if d.kind != "human" and d.revoked is None]


@click.group()
def scopes() -> None:
    """Which folders each agent may write, and which it may not read.

    An agent's change outside the folders it may write is held on the person's devices until
    the person accepts or refuses it (`companion held`); `--no-read` folders are kept from the
    agent's MCP server. No .companion/scopes.json: no scope rule.

    \b
    Example:
      companion scopes show ~/vault
      companion scopes init ~/vault
      companion scopes set ~/vault server --write knowledge/ --write projects/
      companion scopes set ~/vault server --no-read private/
    """


@scopes.command()
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the scopes as JSON.")
@pass_app
def show(app: AppContext, vault: Path | None, as_json: bool) -> None:
    """Print the scopes file and the scope each agent device gets.

    \b
    Example:
      companion scopes show ~/vault
    """
    from companion.sync.round.scopes import SCOPES_FILE, load_scopes

    root = _root(app, vault)
    s = load_scopes(root)
    agents = _agent_devices(app, _device(app, root))
    if as_json:
        out: dict[str, Any] = {"file": SCOPES_FILE, "present": s is not None}
        if s is not None:
            out["invalid"] = s.invalid
            out["default"] = {"write": list(s.default.write), "no_read": list(s.default.no_read)}
            ids = {*s.agents, *(i for i, _ in agents)}
            names = dict(agents)
            out["agents"] = {
                i: {
                    "name": s.for_device(i).name or names.get(i, ""),
                    "write": list(s.for_device(i).write),
                    "no_read": list(s.for_device(i).no_read),
                    "listed": i in s.agents,
                }
                for i in sorted(ids)
            }
            out["mcp_invalid"] = s.mcp_invalid
            out["mcp"] = {
                n: {"write": list(sc.write), "no_read": list(sc.no_read)}
                for n, sc in sorted(s.mcp.items())
            }
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    if s is None:
        click.echo(
            f"no {SCOPES_FILE}: no scope rule (agents' changes are held only by the hold "
            "rules); `companion scopes init` writes the default"
        )
        return
    if s.invalid is not None:
        click.echo(
            f"{SCOPES_FILE} is not valid ({s.invalid}): every agent's change outside its own "
            "areas is held until you fix it"
        )
        return

    def line(label: str, write: tuple[str, ...], no_read: tuple[str, ...]) -> None:
        w = ", ".join(write) if write else "nothing (every change is proposed)"
        click.echo(f"{label}\n  write: {w}\n  propose: everywhere else")
        if no_read:
            click.echo(f"  no read (MCP): {', '.join(no_read)}")

    line("default (any agent not listed)", s.default.write, s.default.no_read)
    names = dict(agents)
    for i in sorted({*s.agents, *names}):
        sc = s.for_device(i)
        label = sc.name or names.get(i, "")
        tag = "" if i in s.agents else " (default)"
        line(f"{label} [{i}]{tag}" if label else f"[{i}]{tag}", sc.write, sc.no_read)
    if s.mcp_invalid is not None:
        click.echo(f"mcp: not valid ({s.mcp_invalid}): a server with --agent writes nothing")
    for n, sc in sorted(s.mcp.items()):
        w = "as its device's scope" if sc.write == ("",) else ", ".join(sc.write) or "nothing"
        click.echo(f"MCP server --agent {n} (within its device's scope)\n  write: {w}")
        if sc.no_read:
            click.echo(f"  no read: {', '.join(sc.no_read)}")


@scopes.command()
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@pass_app
def init(app: AppContext, vault: Path | None) -> None:
    """Write the default scopes file (agents write knowledge/, projects/, journal/ and Home.md;
    everything else is proposed). An existing file is kept.

    \b
    Example:
      companion scopes init ~/vault
    """
    from companion.sync.round.scopes import DEFAULT_WRITE, SCOPES_FILE, write_default

    root = _root(app, vault)
    _refuse_on_agent(app, root)
    if write_default(root):
        click.echo(f"wrote {SCOPES_FILE}: agents write {', '.join(DEFAULT_WRITE)}; "
                   "everything else is proposed")  # fmt: skip
    else:
        click.echo(f"{SCOPES_FILE} is already there; kept (`companion scopes show`)")


@scopes.command(name="set")
@click.argument("vault", type=click.Path(file_okay=False, path_type=Path))
@click.argument("device")
@click.option(
    "--write",
    "write",
    multiple=True,
    metavar="FOLDER",
    help="A folder (or file) the agent may write; repeat it. Replaces the list.",
)
@click.option("--no-write", is_flag=True, help="The agent may write nowhere: it only proposes.")
@click.option(
    "--no-read",
    "no_read",
    multiple=True,
    metavar="FOLDER",
    help="A folder the agent's MCP server may not read; repeat it. Replaces the list.",
)
@click.option("--read-all", is_flag=True, help="Empty the agent's --no-read list.")
@click.option("--name", help="What the scope calls the agent (held changes name it).")
@click.option(
    "--mcp",
    "mcp",
    is_flag=True,
    help="DEVICE is the NAME of `companion mcp --agent NAME`: set its mcp entry.",
)
@pass_app
def set_(app: AppContext, vault: Path, device: str, write: tuple[str, ...], no_write: bool,
         no_read: tuple[str, ...], read_all: bool, name: str | None,
         mcp: bool) -> None:  # fmt: skip
    """Set an agent device's scope. DEVICE is its name (as `companion status` lists it) or its
    device id; with --mcp, the name one MCP server is started with (`companion mcp --agent
    NAME`), whose entry limits that server further.

    \b
    Example:
      companion scopes set ~/vault server --write knowledge/ --write projects/
      companion scopes set ~/vault server --no-read private/ --no-read health/
      companion scopes set ~/vault claude --mcp --write knowledge/
    """
    from companion.sync.round.scopes import SCOPES_FILE, ScopesInvalid, set_agent

    if write and no_write:
        raise InputError("--write and --no-write together: pick one")
    if no_read and read_all:
        raise InputError("--no-read and --read-all together: pick one")
    if not (write or no_write or no_read or read_all or name):
        raise InputError("nothing to set: give --write, --no-write, --no-read, --read-all, --name")
    root = _root(app, vault)
    state = _refuse_on_agent(app, root)
    agents = [] if mcp else _agent_devices(app, state)
    by_name = [(i, n) for i, n in agents if n == device]
    if len(by_name) > 1:
        ids = ", ".join(i for i, _ in by_name)
        raise InputError(f"{len(by_name)} agent devices are called {device!r}: give the id ({ids})")
    device_id, shown = by_name[0] if by_name else (device, None)
    if name is None and shown is not None:
        name = shown
    try:
        set_agent(
            root, device_id, name=name,
            write=() if no_write else (write or None),
            no_read=() if read_all else (no_read or None), section="mcp" if mcp else "agents",
        )  # fmt: skip
    except ScopesInvalid as exc:
        raise InputError(f"{SCOPES_FILE} is not valid ({exc}); fix it first") from None
    click.echo(f"set the scope of {name or device_id} in {SCOPES_FILE}; your next sync carries it")
