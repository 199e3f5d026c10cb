"""Agents with scopes: which folders each agent may write, and which it may not read.

More than one agent can write to one vault (Hermes and Claude Code on the same server). The
person grants each agent device a scope in the vault's `.companion/scopes.json`:

```json
{"v": 1,
 "default": {"write": ["knowledge/", "projects/", "journal/", "Home.md"], "no_read": []},
 "agents": {"<device id>": {"name": "hermes", "write": ["knowledge/"], "no_read": ["private/"]}}}
```

- `write`: the folders (`"knowledge/"`) or files (`"Home.md"`) the agent may change. Anything
  else is **propose**: on a person's device the agent's change there is held (the mechanism of
  `companion.sync.round.holds`, reason "is outside NAME's scope") until the person accepts or
  refuses it (`companion held`, the plugin's held changes). A rename needs both of its paths
  inside the scope; a deletion is a change like any other.
- `no_read`: folders the agent's MCP server never lists, searches or reads (`companion.mcp`).
  Sync cannot keep them from the agent's device, which holds the vault key: only an agent that
  reaches the vault through MCP alone is kept out of them (docs/security.md §3.1).
- `mcp`: `{"<name>": {"write": [...], "no_read": [...]}}`, a further limit for the MCP server
  started with `companion mcp --agent NAME` (Hermes and Claude Code on one server device, each
  with its own server): a write must be inside both the device's scope and this one (outside
  this one but inside the device's it is refused, since no person's device would hold it),
  and both `no_read` lists apply. Only the MCP server reads it (the hold rule never does).
- An agent device without an entry in `agents` gets `default`; an entry without `write` or
  `no_read` takes that part of `default`; a file without `default` takes `DEFAULT_WRITE`.
- Always writable, whatever the scope: the companion's agent areas (`ALWAYS_WRITABLE`: the
  dream's reports, the agent-write log, the device keys) and the morning review's notes
  (`review/`, which a person's device checks against the relay's history anyway,
  docs/review.md). Everything else under `.companion/` is held by the hold rules before the
  scope is even looked at, the scopes file itself included: an agent cannot widen its own
  scope unnoticed.

Matching is the hold rules': case-insensitive and NFC (`hold_fold`), an entry matches the path
itself or anything under it (`"knowledge"`, `"knowledge/"` and `"/knowledge/"` are one entry;
`""` or `"/"` is the whole vault).

Opt-in by the file's presence: a vault without `.companion/scopes.json` has no scope rule (as
before issue 44). `companion scopes init` writes the default, and a new vault gets it from the
person's device that creates it (`companion init`, the desktop app's join, the plugin's join,
`companion demo`'s laptop; `new_vault_scopes`); `companion vault init` does not (it may run on
the agent's server, whose copy of the file would only be held). A file that
is there but does not parse (a typo) does not switch the rule off: every agent's change
outside the always-writable areas is then held, and the reason says why.

Only a person's device reads the file for the hold rules, and it reads its own copy, which
holds what the person wrote or accepted (an agent's version of the file is held, never
written there). Pure parsing and matching here, pinned for both clients (this one and the
plugin's `src/sync/scopes.ts`) by `tests/vectors/scopes_v1.json`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from companion.sync.round.holds import hold_fold

SCOPES_FILE = ".companion/scopes.json"
VERSION = 1
DEFAULT_WRITE = ("knowledge/", "projects/", "journal/", "Home.md")
ALWAYS_WRITABLE = (".companion/agent/", ".companion/dreams/", ".companion/keys/", "review/")
MAX_BYTES = 1 << 20
OUTSIDE = "is outside {name}'s scope"  # the hold reason
UNREADABLE = " (.companion/scopes.json is not valid: {why})"


MCP_BASE_WRITE = ("",)  # an `mcp.<name>` entry without `write` adds no limit to the device's


class ScopesInvalid(ValueError):
    """The scopes file is not what `parse_scopes` reads."""


def _entry(e: str) -> str:
    return hold_fold(e.strip("/"))


def prefix_match(path: str, entries: Iterable[str]) -> bool:
    """Whether `path` is one of `entries` or inside one (folded, whole segments)."""
    f = hold_fold(path)
    for e in entries:
        k = _entry(e)
        if k == "" or f == k or f.startswith(k + "/"):
            return True
    return False


def always_writable(path: str) -> bool:
    f = hold_fold(path)
    return any(f.startswith(a) for a in ALWAYS_WRITABLE)


@dataclass(frozen=True)
class Scope:
    """One agent's grant. `name`: what the file calls it ("" when it does not)."""

    write: tuple[str, ...] = DEFAULT_WRITE
    no_read: tuple[str, ...] = ()
    name: str = ""

    def may_write(self, path: str) -> bool:
        return always_writable(path) or prefix_match(path, self.write)

    def may_read(self, path: str) -> bool:
        return not prefix_match(path, self.no_read)


@dataclass(frozen=True)
class Scopes:
    """The vault's scopes file, parsed. `invalid`: why it could not be (then every agent's
    scope is empty: each change outside the always-writable areas is held)."""

    default: Scope = field(default_factory=Scope)
    agents: Mapping[str, Scope] = field(default_factory=dict)
    invalid: str | None = None
    # `mcp.<name>`: a further limit for one MCP server (`companion mcp --agent NAME`); only
    # the MCP server reads it, so a mistake there never changes the hold rule
    mcp: Mapping[str, Scope] = field(default_factory=dict)
    mcp_invalid: str | None = None

    def for_mcp(self, name: str) -> Scope | None:
        """The `mcp.<name>` limit (None: not listed); a broken `mcp` part: nothing writable."""
        if self.invalid is not None or self.mcp_invalid is not None:
            return Scope(write=(), no_read=(), name=name)
        return self.mcp.get(name)

    def for_device(self, device_id: str | None) -> Scope:
        if self.invalid is not None:
            return Scope(write=(), no_read=())
        got = self.agents.get(device_id or "")
        return got if got is not None else self.default

    def reason(self, device_id: str | None, author_name: str, paths: Iterable[str]) -> str | None:
        """Why an agent's change touching `paths` waits for the person (None: inside scope)."""
        scope = self.for_device(device_id)
        if all(scope.may_write(p) for p in paths):
            return None
        why = OUTSIDE.format(name=scope.name or author_name)
        return why + (UNREADABLE.format(why=self.invalid) if self.invalid is not None else "")


MCP_BASE = Scope(write=MCP_BASE_WRITE, no_read=())


def _strings(obj: Mapping[str, object], key: str, where: str) -> tuple[str, ...] | None:
    if key not in obj:
        return None
    v = obj[key]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ScopesInvalid(f"{where}.{key} is not a list of folders")
    return tuple(v)


def _scope(obj: object, where: str, base: Scope) -> Scope:
    if not isinstance(obj, dict):
        raise ScopesInvalid(f"{where} is not an object")
    name = obj.get("name", "")
    if not isinstance(name, str):
        raise ScopesInvalid(f"{where}.name is not a string")
    write = _strings(obj, "write", where)
    no_read = _strings(obj, "no_read", where)
    return Scope(
        write=base.write if write is None else write,
        no_read=base.no_read if no_read is None else no_read,
        name=name,
    )


def parse_scopes(text: str) -> Scopes:
    """The scopes file's text, parsed; raises `ScopesInvalid`."""
    try:
        obj = json.loads(text)
    except ValueError:
        raise ScopesInvalid("not JSON") from None
    if not isinstance(obj, dict):
        raise ScopesInvalid("not a JSON object")
    v = obj.get("v")
    if isinstance(v, bool) or v != VERSION:
        raise ScopesInvalid(f"its version is not {VERSION}")
    default = _scope(obj["default"], "default", Scope()) if "default" in obj else Scope()
    agents = obj.get("agents", {})
    if not isinstance(agents, dict):
        raise ScopesInvalid("agents is not an object")
    out = {str(k): _scope(v, f"agents.{k}", default) for k, v in agents.items()}
    mcp: dict[str, Scope] = {}
    mcp_invalid = None
    raw = obj.get("mcp", {})
    try:
        if not isinstance(raw, dict):
            raise ScopesInvalid("mcp is not an object")
        mcp = {str(k): _scope(v, f"mcp.{k}", MCP_BASE) for k, v in raw.items()}
    except ScopesInvalid as exc:
        mcp_invalid = str(exc)
    return Scopes(default=default, agents=out, mcp=mcp, mcp_invalid=mcp_invalid)


def read_scopes(text: str) -> Scopes:
    """Like `parse_scopes`, but a file that does not parse is an `invalid` `Scopes`."""
    try:
        return parse_scopes(text)
    except ScopesInvalid as exc:
        return Scopes(invalid=str(exc))


def load_scopes(root: Path) -> Scopes | None:
    """The vault's scopes (None: it has no scopes file, so no scope rule)."""
    path = root / SCOPES_FILE
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Scopes(invalid=f"unreadable ({exc.strerror or exc.__class__.__name__})")
    if len(data) > MAX_BYTES:
        return Scopes(invalid="larger than 1 MB")
    return read_scopes(data.decode("utf-8", errors="replace"))


# ------------------------------------------------------------------ writing (the person's)


def default_document() -> dict[str, object]:
    return {
        "v": VERSION,
        "default": {"write": list(DEFAULT_WRITE), "no_read": []},
        "agents": {},
    }


def render(doc: Mapping[str, object]) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_default(root: Path) -> bool:
    """Write the default scopes file when the vault has none; True when it wrote it."""
    path = root / SCOPES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as f:
        f.write(render(default_document()))
    return True


def new_vault_scopes(root: Path) -> str | None:
    """A new vault's first person's device writes the default scopes; the line that says so
    (None: a scopes file was there already)."""
    if not write_default(root):
        return None
    return (
        f"wrote {SCOPES_FILE}: agents write {', '.join(DEFAULT_WRITE)}; their changes "
        "elsewhere wait for you (`companion scopes`)"
    )


def set_agent(
    root: Path,
    device_id: str,
    *,
    name: str | None = None,
    write: Iterable[str] | None = None,
    no_read: Iterable[str] | None = None,
    section: str = "agents",
) -> dict[str, object]:
    """Set one agent's entry (parts left None are kept) in `section` ("agents", by device id,
    or "mcp", by the name of `companion mcp --agent NAME`); returns the new document. The file
    must parse, its `mcp` part too (a broken one is the person's to fix, never overwritten)."""
    from companion.fileio import write_atomic

    path = root / SCOPES_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        doc: dict[str, object] = default_document()
    else:
        _check_whole(text)
        doc = json.loads(text)
    agents = doc.setdefault(section, {})
    assert isinstance(agents, dict)
    entry = agents.setdefault(device_id, {})
    if name is not None:
        entry["name"] = name
    if write is not None:
        entry["write"] = list(write)
    if no_read is not None:
        entry["no_read"] = list(no_read)
    _check_whole(json.dumps(doc))
    write_atomic(path, render(doc), mode=0o644, make_parents=True)
    return doc


def _check_whole(text: str) -> None:
    s = parse_scopes(text)
    if s.mcp_invalid is not None:
        raise ScopesInvalid(s.mcp_invalid)
