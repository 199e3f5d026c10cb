"""The dream: nightly consolidation of the agent's memory (docs/dream.md).

`run_dream(vault, config, now, ...) -> DreamReport` runs the six steps; `SyncHook` and
`EditorInfo` are what the sync engine plugs in. Qt-free: the same code runs headless on the
server and inside the desktop app. See docs/dream.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from companion.dream.engine import DreamSyncError, run_dream
    from companion.dream.report import DreamReport
    from companion.dream.schedule import local_fallback_due
    from companion.dream.state import EditorInfo
    from companion.dream.undo import undo_dream
    from companion.dream.verify import SyncHook, verify_vault

__all__ = [
    "DreamReport",
    "DreamSyncError",
    "EditorInfo",
    "SyncHook",
    "local_fallback_due",
    "run_dream",
    "undo_dream",
    "verify_vault",
]

_WHERE = {
    "run_dream": "engine",
    "DreamSyncError": "engine",
    "DreamReport": "report",
    "local_fallback_due": "schedule",
    "EditorInfo": "state",
    "undo_dream": "undo",
    "SyncHook": "verify",
    "verify_vault": "verify",
}


def __getattr__(name: str) -> Any:  # lazy: `import companion.dream.cli` stays light
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'companion.dream' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"companion.dream.{module}"), name)
