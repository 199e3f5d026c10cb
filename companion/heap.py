"""Keeping Python's cyclic garbage collector off the objects a process loads at start-up.

A process that has imported the engine holds ~50,000 objects for its whole life (modules,
classes, the relay's wire models). Every full collection walks all of them, and the interpreter
walks them once more at exit. A round builds a few 10,000-entry dicts (the index's stat
keys), which is enough to trigger full collections: in a one-shot `companion sync` of a
10,000-note vault those walks and the exit cost about 90 ms of its ~400 ms.

`freeze_loaded` moves everything alive now into the collector's permanent generation
(`gc.freeze`), which no collection visits; objects made later are collected as usual. Call it
once the heavy imports are done, before the work starts. Whatever is frozen is never reclaimed
by the collector (reference counting still frees it), which is right for what a process loads
to run and keeps until it exits.
"""

from __future__ import annotations

import gc


def freeze_loaded() -> int:
    """Freeze the objects alive now; returns how many are frozen in all (repeat calls add the
    objects created since)."""
    gc.freeze()
    return gc.get_freeze_count()
