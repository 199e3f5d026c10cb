"""Taking back only the dream's own lines from a file a person edited since the dream.

Undo restores a file byte for byte when it still holds what the dream wrote. When a person
wrote in it afterwards -- typically in today's journal, which the dream created for its
`## Dreaming` lines -- restoring the old bytes would lose their words, and refusing would leave
the dream's lines in place forever. `revert_own_lines` does the third thing: it removes the
lines the dream added and keeps everything else as the person left it.

It applies only when the dream's change was purely additive (every line it wrote is new; it
removed or rewrote nothing) and the person did not touch any of those lines; otherwise it
returns None and undo refuses, as before. In a file the dream created, the frontmatter it wrote
stays when the person wrote something below it (their day keeps its date and tags).
"""

from __future__ import annotations

import difflib

from companion.vault.note import split_frontmatter


def revert_own_lines(before: str | None, after: str, current: str) -> str | None:
    """`current` without the lines the dream added (`before` -> `after`), or None when that
    cannot be done without touching what the person wrote."""
    a = after.split("\n")
    b = (before or "").split("\n") if before else []
    c = current.split("\n")
    added: set[int] = set()
    for op, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "delete":
            added.update(range(i1, i2))
        elif op != "equal":
            return None  # the dream also removed or rewrote lines: not ours to merge
    if not added:
        return None
    keep_head: set[int] = set()
    if before is None:
        yaml_text, body_start, body_line, _w = split_frontmatter(after)
        if yaml_text is not None:
            keep_head = set(range(body_line - 1))
    mapped: dict[int, int] = {}  # after line -> current line, where the person left it alone
    for op, i1, i2, j1, _j2 in difflib.SequenceMatcher(None, a, c, autojunk=False).get_opcodes():
        if op == "equal":
            for k in range(i2 - i1):
                mapped[i1 + k] = j1 + k
    if any(i not in mapped for i in added if a[i].strip()):
        return None  # the person changed one of the dream's lines: theirs now
    drop = {mapped[i] for i in added if i in mapped and i not in keep_head}
    out = [line for j, line in enumerate(c) if j not in drop]
    if before is None and not any(ln.strip() for j, ln in enumerate(out) if j >= len(keep_head)):
        return None
    return "\n".join(out)
