"""The guard's second corpus (issue 44, finding 2; issue 40): hostile memory entries and ordinary
look-alikes in eleven languages, each labelled, split into a development and a held-out part.

    from tests.corpus.guard_v2 import ENTRIES, dev, held_out

The split is by a stable hash of the entry (see README.md): an entry is held out when the first
four bytes of SHA-256("<language>|<category>|<text>"), read as a big-endian integer, are
< 30 % of 2**32. Adding an entry never moves another one between splits.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from tests.corpus.guard_v2.benign import BENIGN
from tests.corpus.guard_v2.hostile import HOSTILE

HELD_OUT_SHARE = 0.30


@dataclass(frozen=True)
class Entry:
    hostile: bool
    lang: str
    # hostile: run, conceal, exfil, role, persist, ask_secret, disable; benign: look-alike
    category: str
    form: str  # plain, polite, indirect, encoded, obfuscated
    text: str

    @property
    def held_out(self) -> bool:
        key = f"{self.lang}|{self.category}|{self.text}".encode()
        return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") < HELD_OUT_SHARE * 2**32

    @property
    def split(self) -> str:
        return "held-out" if self.held_out else "dev"


ENTRIES: list[Entry] = [Entry(True, *row) for row in HOSTILE] + [
    Entry(False, *row) for row in BENIGN
]


def dev() -> list[Entry]:
    return [e for e in ENTRIES if not e.held_out]


def held_out() -> list[Entry]:
    return [e for e in ENTRIES if e.held_out]
