"""`companion mcp --print-config hermes|claude|openclaw`: the exact snippet for each agent.

The command in a snippet is absolute (an agent starts stdio servers with a bare environment,
so a bare `companion` may not be found), and the vault path is absolute. `COMPANION_HOME`, when
set, goes into the server's environment so it finds this device's configuration and indexes.
Formats (see docs/mcp.md):
- Hermes Agent: `~/.hermes/config.yaml`, `mcp_servers.<name>: {command, args, env, tools}`;
  Hermes has its own `memory` tool over the same MEMORY.md / USER.md, so ours is excluded.
- Claude Code: `claude mcp add --scope user <name> -- <command> <args...>`, or the project's
  `.mcp.json`: `{"mcpServers": {<name>: {command, args, env}}}`.
- OpenClaw: `openclaw mcp set <name> '<json>'`, which stores `mcp.servers.<name>` in
  `~/.openclaw/openclaw.json`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

TARGETS = ("hermes", "claude", "openclaw")


def server_command(vault: Path, *, read_only: bool, extra: list[str] | None = None) -> list[str]:
    exe = shutil.which("companion")
    base = [os.path.realpath(exe)] if exe else [sys.executable, "-m", "companion"]
    args = ["mcp", str(vault)]
    if read_only:
        args.append("--read-only")
    return [*base, *args, *(extra or [])]


def _env() -> dict[str, str]:
    home = os.environ.get("COMPANION_HOME")
    return {"COMPANION_HOME": str(Path(home).expanduser().resolve())} if home else {}


def _yaml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a valid YAML scalar


def render(
    target: str, vault: Path, *, name: str = "vault", read_only: bool = False,
    extra: list[str] | None = None,
) -> str:  # fmt: skip
    cmd = server_command(vault, read_only=read_only, extra=extra)
    env = _env()
    if target == "hermes":
        lines = [
            "# ~/.hermes/config.yaml (then /reload-mcp in Hermes)",
            "mcp_servers:",
            f"  {name}:",
            f"    command: {_yaml_str(cmd[0])}",
            f"    args: [{', '.join(_yaml_str(a) for a in cmd[1:])}]",
        ]
        if env:
            lines.append("    env:")
            lines += [f"      {k}: {_yaml_str(v)}" for k, v in env.items()]
        lines += [
            "    tools:",
            "      exclude: [memory]  # Hermes's own memory tool already edits the same files",
        ]
        return "\n".join(lines) + "\n"
    if target == "claude":
        env_flags = " ".join(f"--env {k}={shlex.quote(v)}" for k, v in env.items())
        add = f"claude mcp add --scope user {env_flags + ' ' if env_flags else ''}{name} -- "
        entry: dict[str, object] = {"command": cmd[0], "args": cmd[1:]}
        if env:
            entry["env"] = env
        project = json.dumps({"mcpServers": {name: entry}}, indent=2, ensure_ascii=False)
        return (
            "# Claude Code, for every project:\n"
            f"{add}{shlex.join(cmd)}\n\n"
            "# or for one project: .mcp.json at its root\n"
            f"{project}\n"
        )
    if target == "openclaw":
        entry = {"command": cmd[0], "args": cmd[1:]}
        if env:
            entry["env"] = env
        text = json.dumps(entry, ensure_ascii=False)
        shaped = json.dumps({"mcp": {"servers": {name: entry}}}, indent=2, ensure_ascii=False)
        return (
            "# OpenClaw (stored under mcp.servers in ~/.openclaw/openclaw.json):\n"
            f"openclaw mcp set {name} {shlex.quote(text)}\n\n"
            "# or by hand in ~/.openclaw/openclaw.json:\n"
            f"{shaped}\n"
        )
    raise ValueError(f"unknown agent {target!r}")
