"""Stage a memory write for the person's approval, in Hermes's own pending store.

With ``memory.write_approval: true`` in Hermes's config.yaml, the person has asked that nothing
be written to MEMORY.md / USER.md without their approval. The dream obeys: instead of writing,
it leaves each write where Hermes keeps the agent's staged ones,
``<home>/pending/memory/<id>.json``, in the same record shape, so ``/memory pending`` lists it
and ``/memory approve <id>`` applies it through Hermes's own store (its limits, its scanner).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

from companion.fileio import write_text_atomic
from companion.memory.store import Op

ORIGIN = "companion-dream"


def pending_dir(home: str | os.PathLike[str]) -> Path:
    return Path(home) / "pending" / "memory"


def stage(home: str | os.PathLike[str], target: str, op: Op) -> str:
    """Write one pending record (owner-only, atomically); returns its id."""
    label = "user profile" if target == "user" else "memory"
    if op.action == "add":
        summary, detail = f"add to {label}", op.content
    elif op.action == "replace":
        summary, detail = f"replace in {label}", f"old: {op.old_text}\nnew: {op.content}"
    else:
        summary, detail = f"remove from {label}", op.old_text
    pid = uuid.uuid4().hex[:8]
    record: dict[str, Any] = {
        "id": pid,
        "subsystem": "memory",
        "action": op.action,
        "summary": f"{summary}: {detail[:120]}",
        "origin": ORIGIN,
        "created_at": time.time(),
        "payload": {
            "action": op.action,
            "target": target,
            "content": op.content or None,
            "old_text": op.old_text or None,
        },
    }
    folder = pending_dir(home)
    text = json.dumps(record, ensure_ascii=False, indent=2)
    write_text_atomic(folder / f"{pid}.json", text, make_parents=True)
    return pid
