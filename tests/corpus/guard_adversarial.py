"""Long, repetitive texts built to make a pattern-matching guard slow (backtracking): the
guard must answer them like any other text. Their times are printed by
`python bench/bench_guard.py` (a benchmark, not a test: no timed assertions in tests)."""

from __future__ import annotations

# (name, text, where): `where` None for `guard.check`, else a `check_write` place
ADVERSARIAL: list[tuple[str, str, str | None]] = [
    ("ignore", "ignore " * 3000 + "x", None),
    ("curl", "curl " + "a " * 5000, None),
    ("comment", "<!--" + " system" * 3000, None),
    ("send", "send " + "token " * 3000, None),
    ("do-not", "do not " * 3000 + "tell", None),
    ("one-sentence", "word " * 20_000, "mcp:note"),
    ("spelled", "a b " * 25_000, "mcp:note"),
    ("base64", "QUJD" * 25_000, "mcp:note"),
    ("url-encoded", "%41" * 30_000, "mcp:note"),
]
