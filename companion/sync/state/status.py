"""The engine's last known state, kept as JSON for `companion status` and the desktop app.

Written atomically after every round (and by the daemon when it goes online or offline), read
without taking the engine lock, so `status` answers instantly while a daemon runs. Conflicts and
errors are kept as short rolling lists (newest last).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from companion.fileio import write_text_atomic

MAX_CONFLICTS = 50
MAX_ERRORS = 20

# state values, in the order the tray shows them
SYNCED = "synced"
SYNCING = "syncing"
OFFLINE = "offline"
ERROR = "error"
CONFLICT = "conflict"
PENDING = "pending"
NEVER = "never_synced"
THROTTLED = "throttled"  # an agent device past its daily quota on the relay (relay/quota.py)
VAULT_MISSING = "vault_missing"  # the vault folder is not there or not the vault's (folder.py)


def _empty() -> dict[str, Any]:
    return {
        "state": NEVER,
        "online": None,
        "last_sync": None,
        "last_attempt": None,
        "last_round": None,
        "pending": {"upload": 0, "download": 0},
        "conflicts": [],
        "errors": [],
        "daemon": None,
    }


class StatusStore:
    """Read-modify-write of one status file (thread-safe within a process)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def read(self) -> dict[str, Any]:
        data = _empty()
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return data
        if isinstance(loaded, dict):
            data.update(loaded)
        return data

    def update(self, **changes: Any) -> dict[str, Any]:
        with self._lock:
            data = self.read()
            data.update(changes)
            self._write(data)
            return data

    def add_conflicts(self, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        with self._lock:
            data = self.read()
            data["conflicts"] = (list(data.get("conflicts") or []) + items)[-MAX_CONFLICTS:]
            self._write(data)

    def add_error(self, kind: str, message: str) -> None:
        with self._lock:
            data = self.read()
            entry = {"time": time.time(), "kind": kind, "message": message}
            data["errors"] = (list(data.get("errors") or []) + [entry])[-MAX_ERRORS:]
            self._write(data)

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = json.dumps(data, indent=2, sort_keys=True)
        write_text_atomic(self.path, text, durable=False)  # rebuilt by the next round if lost
