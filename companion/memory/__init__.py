"""Injected memory: Hermes Agent's MEMORY.md / USER.md, read and written exactly as Hermes does.

`MemoryStore` is one file with add / replace / remove / all-or-nothing `apply_batch`;
`Snapshot` renders what the agent sees at session start; `resolve_home` finds the files.
"""

from companion.memory.home import DEFAULT_LIMITS, TARGETS, resolve_home
from companion.memory.render import Snapshot, render_block
from companion.memory.store import Change, MemoryRefused, MemoryStore, Op, Result, Usage

__all__ = [
    "DEFAULT_LIMITS",
    "TARGETS",
    "Change",
    "MemoryRefused",
    "MemoryStore",
    "Op",
    "Result",
    "Snapshot",
    "Usage",
    "render_block",
    "resolve_home",
]
