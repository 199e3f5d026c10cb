"""The diff a review shows: the lines between the common head and tail, removed then added.

Deliberately simple, so both engines draw the same lines from the same texts (the plugin has
the same function): no heuristics, no context lines, capped at `MAX_LINES`.
"""

from __future__ import annotations

MAX_LINES = 40


def lines_of(text: str | None) -> list[str]:
    if not text:
        return []
    return (
        text.replace("\r\n", "\n").split("\n")[:-1]
        if text.endswith("\n")
        else (text.replace("\r\n", "\n").split("\n"))
    )


def hunk(before: str | None, after: str | None) -> tuple[list[str], list[str]]:
    """(removed, added): the differing middle of the two texts' lines."""
    a, b = lines_of(before), lines_of(after)
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return a[head : len(a) - tail], b[head : len(b) - tail]


def diff_lines(before: str | None, after: str | None) -> tuple[list[str], int]:
    """The `-`/`+` lines shown (at most `MAX_LINES`) and how many more there were."""
    removed, added = hunk(before, after)
    out = [f"- {x}" if x else "-" for x in removed] + [f"+ {x}" if x else "+" for x in added]
    return out[:MAX_LINES], max(0, len(out) - MAX_LINES)


def fence_for(lines: list[str]) -> str:
    """A code fence longer than any run of backticks in `lines`."""
    longest = 0
    for line in lines:
        run = 0
        for ch in line:
            run = run + 1 if ch == "`" else 0
            longest = max(longest, run)
    return "`" * max(3, longest + 1)
