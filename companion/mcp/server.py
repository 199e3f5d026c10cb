"""The MCP server: the official `mcp` SDK (2.x, `MCPServer`) wired to the vault's tools.

Each tool has a typed schema (its parameters), a docstring the model reads, and read-only /
destructive hints. Unknown arguments are refused (the SDK would drop them silently, and a
misspelt `old_text` must not turn a replace into something else). A refused call is an MCP
error result (`isError`) with one line saying why; nothing was changed. The logic lives in
`reading`, `writing` and `memorytool`; this module only registers and translates.

stdout is the protocol: logging goes to stderr (and the log file), through the log redactor.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, Field

from companion import __version__
from companion.logs import Redactor, get_logger
from companion.mcp import memorytool, reading, writing
from companion.mcp.context import ToolRefused, VaultContext

log = get_logger("mcp.server")

NAME = "vault-companion"

INSTRUCTIONS = """\
The person's Markdown vault (Obsidian-compatible), which is also your long-term memory.
- Search (search_notes) and read (read_note) before you write: extend the note on a topic
  instead of creating a second one. recent_changes shows what changed, the person's edits
  first: they are corrections, learn from them.
- The person's edits win. A note the person edited recently is never rewritten: your text is
  appended, or goes to a sibling note, and the result says so.
- Log the day with append_journal (done / decided / learned), not by rewriting the journal.
- Never put a secret in a note or in memory: it is refused. Ask the person to store it with
  `companion secrets set NAME` and refer to it as keyring:NAME.
- Every write is recorded and shown to the person in the morning review; say why in `reason`.
- The person may grant you a scope: a write outside the folders you may write is a proposal
  that waits for the person's approval (the result says proposed), and folders you may not
  read are refused. Prefer the folders you may write.
- memory(...) is the injected memory (MEMORY.md / USER.md, hard character budgets): only
  facts that matter in every session.
"""

READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

Path_ = Annotated[str, Field(description="Vault-relative path of a note, e.g. knowledge/sqlite.md")]
Reason = Annotated[
    str,
    Field(description="Why you write this (one line, shown to the person in the review)."),
]


def _client_name(mctx: Context | None) -> str:
    with contextlib.suppress(Exception):
        info = mctx.session.client_params.client_info  # type: ignore[union-attr]
        return f"{info.name} {info.version}".strip()
    return ""


def _call(
    ctx: VaultContext, mctx: Context | None, fn: Callable[..., Any], *args: Any,
    as_json: bool = False,
) -> Any:  # fmt: skip
    """Run one tool's logic; a `ToolRefused` becomes an MCP error result with its one line
    (or, `as_json`, its JSON data, as Hermes's memory tool answers). The client's name goes
    into the provenance of what the call writes."""
    ctx.client = _client_name(mctx) or ctx.client
    try:
        return fn(ctx, *args)
    except ToolRefused as exc:
        text = json.dumps(exc.data, ensure_ascii=False) if as_json and exc.data else exc.message
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _strict(tool: Tool) -> Tool:
    """Refuse arguments the tool does not have (the schema says additionalProperties: false)."""
    base = tool.fn_metadata.arg_model
    strict: Any = type(
        base.__name__,
        (base,),
        {
            "model_config": ConfigDict(extra="forbid", arbitrary_types_allowed=True),
            "__module__": base.__module__,
        },
    )
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


Tools = list[tuple[Callable[..., Any], ToolAnnotations]]


def _tools(ctx: VaultContext) -> Tools:
    """The tools this server offers: the read tools, and the write tools unless read-only."""
    return _read_tools(ctx) + ([] if ctx.read_only else _write_tools(ctx))


def _read_tools(ctx: VaultContext) -> Tools:
    def search_notes(
        query: Annotated[
            str,
            Field(
                description='Words to find (all must match, any order; "a phrase", prefix*, '
                "a OR b, -excluded)."
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=50, description="Most results.")] = 10,
        mctx: Context | None = None,
    ) -> dict[str, Any]:
        """Full-text search of the vault's notes, best match first, with the matching line.

        Use it before writing, to find the note that already covers a topic."""
        return _call(ctx, mctx, reading.search_notes, query, limit)

    def read_note(path: Path_, mctx: Context | None = None) -> dict[str, Any]:
        """Read one note: its text, frontmatter, tags, headings, outgoing links (resolved or
        broken), backlinks, and who edited it last (person_editing: true means it will only
        be appended to)."""
        return _call(ctx, mctx, reading.read_note, path)

    def list_notes(
        folder: Annotated[
            str, Field(description='A vault folder, e.g. "projects"; "" for the top level.')
        ] = "",
        limit: Annotated[int, Field(ge=1, le=2000, description="Most notes listed.")] = 200,
        mctx: Context | None = None,
    ) -> dict[str, Any]:
        """List the notes directly in a folder, and its subfolders with their note counts."""
        return _call(ctx, mctx, reading.list_notes, folder, limit)

    def recent_changes(
        since: Annotated[
            str,
            Field(description="How far back: a duration (90m, 24h, 7d, 2w) or an ISO 8601 time."),
        ] = "24h",
        limit: Annotated[int, Field(ge=1, le=500, description="Most changes listed.")] = 50,
        mctx: Context | None = None,
    ) -> dict[str, Any]:
        """Notes that changed recently, the person's edits first (by: person), then other
        edits, then the agent's own. A person's edit to a note you wrote is a correction
        (corrects_agent_write): read it and learn from it before writing again."""
        return _call(ctx, mctx, reading.recent_changes, since, limit)

    def links(path: Path_, mctx: Context | None = None) -> dict[str, Any]:
        """The notes a note links to, its broken links, and the notes that link to it."""
        return _call(ctx, mctx, reading.links, path)

    def orphans(
        limit: Annotated[int, Field(ge=1, le=2000)] = 200, mctx: Context | None = None
    ) -> dict[str, Any]:
        """Notes no other note links to (Home.md and journal days aside): candidates for a
        link from a related note or from Home.md."""
        return _call(ctx, mctx, reading.orphans, limit)

    def broken_links(
        limit: Annotated[int, Field(ge=1, le=2000)] = 200, mctx: Context | None = None
    ) -> dict[str, Any]:
        """Wikilinks that point to no note, with the note and line they are in."""
        return _call(ctx, mctx, reading.broken_links, limit)

    def last_dream(mctx: Context | None = None) -> dict[str, Any]:
        """What the last nightly dream did: consolidated, corrected, promoted and recorded
        changes, what it skipped and why, warnings."""
        return _call(ctx, mctx, reading.last_dream)

    return [
        (search_notes, READ),
        (read_note, READ),
        (list_notes, READ),
        (recent_changes, READ),
        (links, READ),
        (orphans, READ),
        (broken_links, READ),
        (last_dream, READ),
    ]


def _write_tools(ctx: VaultContext) -> Tools:
    def write_note(
        path: Path_,
        text: Annotated[str, Field(description="The whole Markdown text of the note.")],
        reason: Reason = "",
        mctx: Context | None = None,
    ) -> dict[str, Any]:
        """Create a note, or replace the whole text of one. A note the person edited recently
        is not rewritten: the text goes to a sibling note "<name> (agent).md" and the result
        says so. Search first: extend an existing note rather than duplicating it."""
        return _call(ctx, mctx, writing.write_note, path, text, reason)

    def edit_note(
        path: Path_,
        section: Annotated[
            str, Field(description='The heading\'s text, e.g. "Status" (or "Parent#Child").')
        ],
        text: Annotated[str, Field(description="The Markdown text under that heading.")],
        mode: Annotated[
            Literal["replace", "append"],
            Field(description="replace the section's text, or append to it"),
        ] = "replace",
        reason: Reason = "",
        mctx: Context | None = None,
    ) -> dict[str, Any]:
        """Replace or append to one heading's section of a note (a missing section is added
        at the end). In a note the person edited recently nothing is changed: the text is
        added after the last line, and the result says so."""
        return _call(ctx, mctx, writing.edit_note, path, section, text, mode, reason)

    def append_journal(
        section: Annotated[
            str,
            Field(description="done, decided or learned (Hecho, Decidido, Aprendido)."),
        ],
        text: Annotated[str, Field(description="One item per line; each becomes a bullet.")],
        reason: Reason = "",
        mctx: Context | None = None,
    ) -> dict[str, Any]:
        """Add items to today's journal (journal/YYYY-MM-DD.md) under Done, Decided or
        Learned, in the vault's language; the day and its sections are created as needed."""
        return _call(ctx, mctx, writing.append_journal, section, text, reason)

    def memory(
        action: Annotated[
            Literal["add", "replace", "remove"],
            Field(description="add a new entry, replace one, or remove one"),
        ],
        target: Annotated[
            str, Field(description="memory (your notes, MEMORY.md) or user (USER.md)")
        ] = "memory",
        content: Annotated[str, Field(description="The entry's text (add, replace).")] = "",
        old_text: Annotated[
            str, Field(description="A short unique piece of the entry to replace or remove.")
        ] = "",
        operations: Annotated[
            list[dict[str, str]] | None,
            Field(
                description="Several {action, content, old_text} applied all or nothing, "
                "with the budget checked on the result."
            ),
        ] = None,
        mctx: Context | None = None,
    ) -> dict[str, Any]:
        """Your injected memory, loaded into every session (hard budgets: MEMORY.md 2,200,
        USER.md 1,375 characters). Keep only facts that matter in every session; when it is
        full, replace or remove entries (the error lists them) before adding."""
        return _call(
            ctx,
            mctx,
            memorytool.memory,
            action,
            target,
            content,
            old_text,
            operations,
            as_json=True,
        )

    write = ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    )
    edit = ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
    )
    append = ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    )
    return [(write_note, write), (edit_note, edit), (append_journal, append), (memory, edit)]


def build_server(ctx: VaultContext) -> MCPServer:
    tools = [_strict(Tool.from_function(fn, annotations=ann)) for fn, ann in _tools(ctx)]
    server: MCPServer = MCPServer(
        NAME,
        title="Vault Companion",
        instructions=INSTRUCTIONS,
        version=__version__,
        tools=tools,
        log_level="WARNING",
    )

    @server.resource("vault://{+path}", mime_type="text/markdown")
    def note(path: str) -> str:
        """A note of the vault, by its vault-relative path."""
        try:
            return reading.note_text(ctx, path)
        except ToolRefused as exc:
            from mcp.server.mcpserver.exceptions import ResourceError

            raise ResourceError(exc.message) from None

    @server.resource("memory://{target}", mime_type="text/plain")
    def memory_block(target: str) -> str:
        """The injected memory (memory or user) exactly as the agent sees it at session start."""
        try:
            return memorytool.memory_snapshot(ctx, target)
        except ToolRefused as exc:
            from mcp.server.mcpserver.exceptions import ResourceError

            raise ResourceError(exc.message) from None

    return server


def log_to_stderr(verbose: int) -> None:
    """Route every logger (the SDK's too) to stderr through the redactor; stdout is the wire."""
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(Redactor())
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose >= 2 else logging.INFO if verbose else logging.WARNING)


def serve(ctx: VaultContext, transport: str = "stdio", port: int = 8765) -> None:
    """Run until the client goes away (stdio) or the process is stopped (http)."""
    server = build_server(ctx)
    if transport == "stdio":
        ctx.start()
        try:
            server.run("stdio")
        finally:
            ctx.close()
        return
    serve_http(ctx, server, port)


def http_app(ctx: VaultContext, server: MCPServer) -> Any:
    """The streamable-HTTP app behind the gate (`companion.mcp.auth`): the token, unless
    `[mcp] require_token` is off, and only the origins `[mcp] allowed_origins` lists. The SDK's
    own Host check stays (DNS rebinding: loopback names only, any port, as an ssh tunnel's
    local port may differ)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from companion.credentials.store import open_store
    from companion.mcp.auth import HttpGate, TokenSource

    settings = ctx.config.settings.mcp
    origins = tuple(settings.allowed_origins)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=list(origins),
    )
    app = server.streamable_http_app(transport_security=security, host="127.0.0.1")
    tokens = None
    if settings.require_token:
        tokens = TokenSource(open_store(ctx.config), ctx.paths, ctx.root)
        if tokens.generated:
            print(
                "Generated this vault's MCP token; `companion mcp token VAULT` prints it.",
                file=sys.stderr,
                flush=True,
            )
    else:
        log.warning("[mcp] require_token is off: any local process can call this server")
    return HttpGate(app, tokens, origins)


def serve_http(ctx: VaultContext, server: MCPServer, port: int) -> None:
    """Listen on 127.0.0.1:`port` (0: a free port), print the address once the socket listens
    (a supervisor or a test may connect from then on), serve until stopped."""
    import asyncio
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    port = sock.getsockname()[1]
    app = http_app(ctx, server)
    ctx.start()
    try:
        print(
            f"Vault Companion MCP server on http://127.0.0.1:{port}/mcp (Ctrl+C stops)",
            file=sys.stderr,
            flush=True,
        )
        config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
        asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
    finally:
        sock.close()
        ctx.close()
