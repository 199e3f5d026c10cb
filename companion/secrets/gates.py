"""Per-line gates: which rules and plugins are worth running on a candidate line.

Each rule (and each detect-secrets plugin) names literals one of which must be in the line, as
is or lower-cased. One regex pass per line finds the literals present; a rule runs only if it
shares one with the line. That keeps the per-line cost to a few regex calls even on the many
candidate lines that hold a hash, a UUID or a long URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


class Gate:
    """Finds which of a set of literals occur in a string, in one regex pass."""

    def __init__(self, literals: Iterable[str]) -> None:
        lits = sorted(set(literals), key=len, reverse=True)
        self._regex = re.compile("|".join(re.escape(x) for x in lits)) if lits else None
        # a match of a long literal also means the literals it contains are present
        self._closure = {x: frozenset(y for y in lits if y in x) for x in lits}

    def present(self, text: str) -> set[str]:
        out: set[str] = set()
        if self._regex is not None:
            for m in self._regex.findall(text):
                out |= self._closure[m]
        return out
