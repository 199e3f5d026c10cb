"""The dream's private state on this device, and who last edited a note.

`DreamState` (under the data dir, one JSON file per vault) remembers the SHA-256 of every file
the dream wrote, so the dream's own writes never count as a person's edit.

`EditorInfo` answers "when did a person last edit this note?". The default, `MtimeEditors`,
uses the file's modification time unless the file still holds exactly what the dream wrote; it
cannot tell a person from the agent, so it counts every edit not made by the dream (the safe
side). The sync engine, which knows each device's kind, can supply a better implementation.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Protocol

from companion.dream.report import write_json_atomic


def vault_key(vault: Path) -> str:
    raw = os.path.realpath(vault).encode("utf-8", "surrogateescape")
    return hashlib.sha256(raw).hexdigest()[:24]


class DreamState:
    """`own_writes`: {vault-relative path: sha256 of what the dream last wrote there}."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.own_writes: dict[str, str] = {}
        self.data: dict[str, Any] = {}
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            raw = {}
        if isinstance(raw, dict):
            self.data = raw
            ow = raw.get("own_writes")
            if isinstance(ow, dict):
                self.own_writes = {str(k): str(v) for k, v in ow.items()}

    @classmethod
    def for_vault(cls, data_dir: Path, vault: Path) -> DreamState:
        return cls(Path(data_dir) / "dream" / f"{vault_key(vault)}.json")

    def record_write(self, rel: str, data: bytes | None) -> None:
        if data is None:
            self.own_writes.pop(rel, None)
        else:
            self.own_writes[rel] = hashlib.sha256(data).hexdigest()

    def save(self) -> None:
        self.data["own_writes"] = dict(sorted(self.own_writes.items()))
        write_json_atomic(self.path, self.data)


class EditorInfo(Protocol):
    def last_human_edit(self, path: str) -> dt.datetime | None:
        """When a person last changed the vault-relative `path` (None: never, or unknown)."""
        ...


class MtimeEditors:
    """File modification time, unless the file holds exactly what the dream last wrote."""

    def __init__(self, root: Path, state: DreamState) -> None:
        self.root = Path(root)
        self.state = state

    def last_human_edit(self, path: str) -> dt.datetime | None:
        p = self.root / path
        try:
            st = p.stat()
        except OSError:
            return None
        own = self.state.own_writes.get(path)
        if own is not None:
            try:
                if hashlib.sha256(p.read_bytes()).hexdigest() == own:
                    return None
            except OSError:
                return None
        return dt.datetime.fromtimestamp(st.st_mtime, dt.UTC)
