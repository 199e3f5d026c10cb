"""Drive `python -m companion mcp VAULT` with the MCP SDK's own client over stdio."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

PASSED_ENV = ("PYTHONPATH", "COMPANION_HOME", "HERMES_HOME", "COMPANION_TEST_WEAK_KDF")


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    env.update(extra or {})
    return env


def run_session(
    vault: Path,
    body: Callable[[Client], Awaitable[Any]],
    *,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    log: Path | None = None,
) -> Any:
    """Start a server on `vault`, run `body(client)`, stop the server; returns what body does."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "companion", "mcp", str(vault), *args],
        env=server_env(env),
    )
    log = log or vault.parent / f"{vault.name}-mcp-stderr.log"

    async def main() -> Any:
        with open(log, "a", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as c:
                return await body(c)

    return anyio.run(main)


def payload(result: Any) -> Any:
    """The JSON a tool answered (or its text when it is not JSON)."""
    text = "".join(getattr(c, "text", "") for c in result.content)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def call(c: Client, name: str, **arguments: Any) -> tuple[bool, Any]:
    """(is_error, answer) of one tool call."""
    r = await c.call_tool(name, arguments)
    return bool(r.is_error), payload(r)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the vault, bytes, the companion's own folder included."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def write_old(root: Path, rel: str, text: str, days: float = 3) -> Path:
    """A note last edited `days` ago: outside the person's edit window."""
    import time

    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    t = time.time() - days * 86400
    os.utime(p, (t, t))
    return p
