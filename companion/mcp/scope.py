"""The MCP server keeps its agent to the scope the person granted (`companion.sync.round.scopes`).

The server reads the vault's `.companion/scopes.json` (its own copy, at each call: the person's
change reaches it by sync) and takes the scope of its own device (`agents[<device id>]`, else
`default`). No file: no scope rule, as before.

- **no_read**: a path inside a `no_read` folder is refused for every tool, read or write (an
  agent that cannot read a note must not overwrite it blind), and never listed: search hits,
  `list_notes`, `recent_changes`, backlinks, orphans, broken links and the last dream's changes
  leave such notes out. This holds an agent that reaches the vault through MCP alone; the
  agent device itself holds the vault key and every file sync brings (docs/security.md §3.1).
- **write**: a write outside the scope is a **proposal** on an agent device: it lands in this
  copy and is synced, and the person's devices hold it until the person accepts or refuses it
  (reason "is outside NAME's scope"); the tool result says so (`proposed: true`). On a person's
  device (an MCP server beside the person's own editor) nothing would hold it, so it is refused
  with the scope named. A scopes file that does not parse: every write outside the agent areas
  is a proposal (refused on a person's device), and the message says why.
- **`--agent NAME`** (one server per agent on one device: Hermes and Claude Code each start
  their own): the file's `mcp.NAME` entry limits this server further. A write must be inside
  it too: outside it but inside the device's scope it is refused (no person's device would
  hold it); its `no_read` adds to the device's. A limit as good as the agent's MCP
  configuration, which the person writes: the server cannot tell two agents on one device
  apart by anything else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from companion.logs import get_logger
from companion.mcp.context import ToolRefused
from companion.sync.round.conflicts import HUMAN

if TYPE_CHECKING:
    from companion.mcp.context import VaultContext
    from companion.sync.round.scopes import Scope, Scopes

SCOPES = ".companion/scopes.json"
log = get_logger("mcp")


def vault_scopes(ctx: VaultContext) -> Scopes | None:
    from companion.sync.round.scopes import load_scopes

    return load_scopes(ctx.root)


def own_scope(ctx: VaultContext) -> tuple[Scope, Scopes, Scope | None] | None:
    """This server's scope: its device's, the scopes file, and its `mcp.<name>` limit when it
    was started with `--agent NAME` (None: the vault has no scopes file)."""
    s = vault_scopes(ctx)
    if s is None:
        return None
    extra = s.for_mcp(ctx.scope_name) if ctx.scope_name else None
    if ctx.scope_name and extra is None:
        log.warning("%s names no mcp.%s: only the device's scope applies", SCOPES, ctx.scope_name)
    return s.for_device(ctx.device_id), s, extra


def _name(ctx: VaultContext, scope: Scope) -> str:
    return scope.name or ctx.device_name


def check_read(ctx: VaultContext, rel: str, what: str = "path") -> None:
    """Refuse `rel` when it is inside one of this agent's `no_read` folders."""
    got = own_scope(ctx)
    if got is None:
        return
    for scope, where in ((got[0], "no_read"), (got[2], f"mcp.{ctx.scope_name}.no_read")):
        if scope is not None and not scope.may_read(rel):
            raise ToolRefused(
                f"{what} {rel!r} is in a folder {_name(ctx, scope)} may not read ({where} in "
                f"{SCOPES}, set by the person); nothing was read or written"
            )


def readable(ctx: VaultContext) -> Any:
    """A predicate: may this agent see `rel` (for filtering lists)."""
    got = own_scope(ctx)
    if got is None:
        return lambda _rel: True
    scopes = [sc for sc in (got[0], got[2]) if sc is not None and sc.no_read]
    return lambda rel: all(sc.may_read(rel) for sc in scopes)


def write_scope(ctx: VaultContext, rel: str) -> str | None:
    """None when `rel` is inside this agent's write scope (or there is no scopes file); else the
    line a proposal's result carries. Refused on a person's device."""
    got = own_scope(ctx)
    if got is None:
        return None
    scope, scopes, extra = got
    why = scopes.reason(ctx.device_id, ctx.device_name, [rel])
    if why is None:
        if extra is None or extra.may_write(rel):
            return None
        wrote = ", ".join(extra.write) if extra.write else "nothing"
        raise ToolRefused(
            f"{rel!r} is outside {ctx.scope_name}'s scope (mcp.{ctx.scope_name} in {SCOPES}: "
            f"it may write {wrote}); this device's own scope lets it through, so no person's "
            "device would hold it for approval: nothing was written"
        )
    name = _name(ctx, scope)
    wrote = ", ".join(scope.write) if scope.write else "nothing"
    if ctx.device_kind == HUMAN:
        raise ToolRefused(
            f"{rel!r} {why} ({SCOPES}: {name} may write {wrote}); on this person's device "
            "nothing would hold the change for approval, so nothing was written"
        )
    return (
        f"{rel} {why} ({SCOPES}: {name} may write {wrote}): this is a proposal; the person's "
        "devices hold it until the person accepts or refuses it"
    )
