"""What Hermes Agent's threat scanner (``tools/threat_patterns.py``, strict scope) flags.

Hermes scans every memory write with its strict pattern set and refuses a match; when it loads
MEMORY.md / USER.md it replaces any entry that matches with a ``[BLOCKED: ...]`` placeholder in
the system prompt. So an entry Hermes flags is worse than useless to store: the agent never
sees it. The companion therefore refuses at least what Hermes refuses (`companion.memory.guard`
calls `scan` first) and renders the snapshot exactly as Hermes does (`companion.memory.render`).

This module is our own statement of that behaviour, pinned to the Hermes release named in
``.ci/hermes-agent.txt``: rule ids and their order are Hermes's (the placeholder lists them),
matching is case-insensitive on the NFKC form of the first 65,536 characters, and invisible
characters are looked for in the raw text. ``tests/test_interop_hermes_guard.py`` runs Hermes's
own scanner on the same texts, so any drift upstream fails a test.
"""

from __future__ import annotations

import re
import unicodedata

MAX_SCAN_CHARS = 65_536
_W = r"(?:\w+\s+){0,8}"  # up to eight filler words between key words, as Hermes allows

# (rule id, pattern), in Hermes's order. Hermes's "all", "context" and "strict" scopes all
# apply to memory, so every one of its rules is here.
RULES: tuple[tuple[str, str], ...] = (
    ("prompt_injection", rf"ignore\s+{_W}(?:previous|all|above|prior)\s+{_W}instructions"),
    ("sys_prompt_override", r"system\s+prompt\s+override"),
    (
        "disregard_rules",
        rf"disregard\s+{_W}(?:your|all|any)\s+{_W}(?:instructions|rules|guidelines)",
    ),
    (
        "bypass_restrictions",
        rf"act\s+as\s+(?:if|though)\s+{_W}you\s+{_W}(?:have\s+no|don't\s+have)\s+{_W}"
        r"(?:restrictions|limits|rules)",
    ),
    (
        "html_comment_injection",
        r"<!--[^>]{0,512}(?:ignore|override|system|secret|hidden)[^>]{0,512}-->",
    ),
    ("hidden_div", r"<\s*div\s+style\s*=\s*[\"'][^>]{0,2048}display\s*:\s*none"),
    (
        "translate_execute",
        r"translate\s+[^\n]{0,512}\s+into\s+[^\n]{0,512}\s+and\s+(?:execute|run|eval)",
    ),
    ("deception_hide", rf"do\s+not\s+{_W}tell\s+{_W}the\s+user"),
    ("role_hijack", rf"you\s+are\s+{_W}now\s+(?:a|an|the)\s+"),
    ("role_pretend", rf"pretend\s+{_W}(?:you\s+are|to\s+be)\s+"),
    ("leak_system_prompt", rf"output\s+{_W}(?:system|initial)\s+prompt"),
    (
        "remove_filters",
        rf"(?:respond|answer|reply)\s+without\s+{_W}(?:restrictions|limitations|filters|safety)",
    ),
    ("fake_update", rf"you\s+have\s+been\s+{_W}(?:updated|upgraded|patched)\s+to"),
    ("identity_override", r"\bname\s+yourself\s+\w+"),
    ("c2_node_registration", r"register\s+(?:as\s+)?a?\s*node"),
    ("c2_heartbeat", r"(?:heartbeat|beacon|check[\s\-]?in)\s+(?:to|with)\s+"),
    ("c2_task_pull", r"pull\s+(?:down\s+)?(?:new\s+)?task(?:ing|s)?\b"),
    ("c2_network_connect", r"connect\s+to\s+the\s+network\b"),
    ("forced_action", r"you\s+must\s+(?:\w+\s+){0,3}(?:register|connect|report|beacon)\b"),
    ("anti_forensic_oneliner", r"only\s+use\s+one[\s\-]?liners?\b"),
    ("anti_forensic_disk", rf"never\s+{_W}(?:create|write)\s+{_W}(?:script|file)\s+{_W}disk"),
    ("env_var_unset_agent", r"unset\s+\w*(?:CLAUDE|CODEX|HERMES|AGENT|OPENAI|ANTHROPIC)\w*"),
    ("known_c2_framework", r"\b(?:cobalt\s*strike|sliver|havoc|mythic|metasploit|brainworm)\b"),
    ("c2_explicit", r"\bc2\s+(?:server|channel|infrastructure|beacon)\b"),
    ("c2_explicit_long", r"\bcommand\s+and\s+control\b"),
    ("exfil_curl", r"curl\s+[^\n]{0,2048}\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)"),
    ("exfil_wget", r"wget\s+[^\n]{0,2048}\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)"),
    ("read_secrets", r"cat\s+[^\n]{0,2048}(?:\.env|credentials|\.netrc|\.pgpass|\.npmrc|\.pypirc)"),
    ("send_to_url", r"(?:send|post|upload|transmit)\s+[^\n]{0,2048}\s+(?:to|at)\s+https?://"),
    (
        "context_exfil",
        rf"(?:include|output|print|share)\s+{_W}(?:conversation|chat\s+history|previous\s+messages|"
        r"full\s+context|entire\s+context)",
    ),
    ("ssh_backdoor", r"authorized_keys"),
    ("ssh_access", r"\$HOME/\.ssh|~/\.ssh"),
    ("hermes_env", r"\$HOME/\.hermes/\.env|~/\.hermes/\.env"),
    (
        "agent_config_mod",
        r"(?:update|modify|edit|write|change|append|add\s+to)\s+[^\n]{0,2048}"
        r"(?:AGENTS\.md|CLAUDE\.md|\.cursorrules|\.clinerules)",
    ),
    (
        "hermes_config_mod",
        r"(?:update|modify|edit|write|change|append|add\s+to)\s+[^\n]{0,2048}"
        r"\.hermes/(?:config\.yaml|SOUL\.md)",
    ),
    (
        "hardcoded_secret",
        r"(?:api[_-]?key|token|secret|password)\s*[=:]\s*[\"'][A-Za-z0-9+/=_-]{20,}",
    ),
)

# The invisible characters Hermes refuses (its INVISIBLE_CHARS).
INVISIBLE = frozenset(
    "\u200b\u200c\u200d\u2060\u2062\u2063\u2064\ufeff"
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)

_COMPILED = tuple((rid, re.compile(rx, re.IGNORECASE)) for rid, rx in RULES)


def scan(text: str) -> list[str]:
    """Hermes's finding ids for `text`, in its order: ``invisible_unicode_U+XXXX`` first (in
    code point order; Hermes lists several in set order, which varies), then rule ids."""
    if not text:
        return []
    text = text[:MAX_SCAN_CHARS]
    found = [f"invisible_unicode_U+{ord(ch):04X}" for ch in sorted(set(text) & INVISIBLE)]
    folded = unicodedata.normalize("NFKC", text)
    found.extend(rid for rid, rx in _COMPILED if rx.search(folded))
    return found


def blocked_placeholder(filename: str, findings: list[str]) -> str:
    """The text Hermes puts in the system prompt instead of an entry it flags at load time."""
    return (
        f"[BLOCKED: {filename} entry contained threat pattern(s): {', '.join(findings)}. "
        "Removed from system prompt; use memory(action=remove) to delete the original.]"
    )


def for_snapshot(entries: list[str], filename: str) -> list[str]:
    """`entries` as Hermes injects them: each flagged one replaced by its placeholder (an entry
    already starting with ``[BLOCKED:`` passes through, as in Hermes)."""
    out = []
    for e in entries:
        findings = [] if (not e or e.startswith("[BLOCKED:")) else scan(e)
        out.append(blocked_placeholder(filename, findings) if findings else e)
    return out
