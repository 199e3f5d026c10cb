"""The vault as MCP tools for any agent (`companion mcp VAULT`), with the dream's guardrails.

Modules, one job each: `context` (the vault, its index and rules, shared by every tool),
`paths` (which paths a tool may touch), `reading` and `writing` (the tools' logic, free of the
MCP SDK), `memorytool` (Hermes's memory tool over the same files `companion memory` uses),
`writelog` (the record of agent writes the morning review shows), `server` (the SDK wiring),
`snippets` (agent configuration) and `cli`. Only `server` imports the `mcp` SDK, so this
package stays cheap to import (the desktop app reads `writelog`).
"""
