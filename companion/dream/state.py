"""The agent side's private state on this device, and who last edited a note.

`DreamState` (under the data dir, one JSON file per vault) remembers the SHA-256 of every file
the companion wrote for the agent on this device -- the dream and the MCP server's tools -- so
those writes never count as a person's edit. Several processes record writes (a dream and an
MCP server can run at once), so `save` merges under a lock instead of overwriting: each
instance writes back only the paths it recorded itself.

`DreamState` also holds what this device's own commands wrote into the vault for nobody in
particular (`companion vault init`'s Home.md, `record_command_writes`): a template is not a
person's edit either.

`EditorInfo` answers "when did a person last edit this note?". The default, `MtimeEditors`,
uses the file's modification time unless the file still holds exactly what the agent side
wrote; it cannot tell a person from the agent, so it counts every other edit (the safe side).
`companion.sync.state.editors.SyncEditors` knows each synced version's device kind and does better.

An `EditorInfo` may also say what is known of who made an edit (`edit_origin`): `PERSON` (a
person's device: the person), `HERE` (this agent device, outside the companion: the agent's own
file write as likely as a person over ssh) or `UNKNOWN`. The edit counts the same either way;
what the dream tells the person (`edit_note`) says only what is known.

`edited_recently` is the one rule every writer applies: a note a person edited within the
window (`[vault] human_edit_window_hours`) is never rewritten, only appended to.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock

from companion.dream.report import write_json_atomic


def vault_key(vault: Path) -> str:
    raw = os.path.realpath(vault).encode("utf-8", "surrogateescape")
    return hashlib.sha256(raw).hexdigest()[:24]


def _read_state(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raw = {}
    if not isinstance(raw, dict):
        return {}, {}
    ow = raw.get("own_writes")
    own = {str(k): str(v) for k, v in ow.items()} if isinstance(ow, dict) else {}
    return raw, own


class DreamState:
    """`own_writes`: {vault-relative path: sha256 of what the agent side last wrote there}."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data, self.own_writes = _read_state(path)
        self._touched: dict[str, str | None] = {}  # recorded by this instance, not yet saved

    @classmethod
    def for_vault(cls, data_dir: Path, vault: Path) -> DreamState:
        return cls(Path(data_dir) / "dream" / f"{vault_key(vault)}.json")

    def record_write(self, rel: str, data: bytes | None) -> None:
        digest = None if data is None else hashlib.sha256(data).hexdigest()
        if digest is None:
            self.own_writes.pop(rel, None)
        else:
            self.own_writes[rel] = digest
        self._touched[rel] = digest

    def reload(self) -> None:
        """Pick up writes other processes saved since this instance read the file."""
        _data, disk = _read_state(self.path)
        for rel, digest in self._touched.items():
            if digest is None:
                disk.pop(rel, None)
            else:
                disk[rel] = digest
        self.own_writes = disk

    def save(self) -> None:
        """Write this instance's recorded paths into the file, keeping everyone else's."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(self.path.with_name(self.path.name + ".lock"), timeout=30):
            data, _own = _read_state(self.path)
            self.reload()
            for key, value in self.data.items():
                if key != "own_writes":
                    data[key] = value
            data["own_writes"] = dict(sorted(self.own_writes.items()))
            write_json_atomic(self.path, data)
            self.data = data
            self._touched.clear()


def record_command_writes(data_dir: Path, vault: Path, rels: Iterable[str]) -> None:
    """Remember what a command of this device just wrote at each vault-relative path in
    `rels` (`companion vault init`): those bytes are nobody's edit until someone changes them."""
    state = DreamState.for_vault(data_dir, vault)
    for rel in rels:
        try:
            state.record_write(rel, (Path(vault) / rel).read_bytes())
        except OSError:
            continue
    state.save()


PERSON = "person"  # the edit is a person's (a human device's version, or made on one)
HERE = "here"  # made on this agent device outside the companion: by the agent or a person
UNKNOWN = "unknown"  # nothing more is known than that the file changed


class EditorInfo(Protocol):
    def last_human_edit(self, path: str) -> dt.datetime | None:
        """When a person last changed the vault-relative `path` (None: never, or unknown)."""
        ...


def edit_origin(editors: EditorInfo, path: str) -> str:
    """What is known of who made the last edit of `path`: `PERSON`, `HERE` or `UNKNOWN`
    (an `EditorInfo` without `edit_origin` knows nothing more)."""
    origin = getattr(editors, "edit_origin", None)
    value = origin(path) if callable(origin) else UNKNOWN
    return value if value in (PERSON, HERE, UNKNOWN) else UNKNOWN


def edit_note(origin: str) -> str:
    """Why a file is left alone, in the report's words (English), saying only what is known."""
    if origin == PERSON:
        return "edited by a person recently"
    if origin == HERE:
        return "changed on this server outside the dream recently"
    return "changed outside the dream recently"


def edited_recently(editors: EditorInfo, path: str, now: dt.datetime, window: dt.timedelta) -> bool:
    """True when a person edited `path` within `window` before `now` (an edit time in the
    future of `now` can only be read as "just now")."""
    last = editors.last_human_edit(path)
    return last is not None and now - last < window


class MtimeEditors:
    """File modification time, unless the file holds exactly what the agent side last wrote.
    `origin`: who makes the changes it counts, as far as this device knows (`PERSON` on a
    person's device; on an agent's, `HERE` when nothing else writes into the vault)."""

    def __init__(self, root: Path, state: DreamState, *, origin: str = UNKNOWN) -> None:
        self.root = Path(root)
        self.state = state
        self.origin = origin

    def edit_origin(self, path: str) -> str:
        return self.origin

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


def default_editors(
    root: Path, state: DreamState, config: Any, *, here: bool = False
) -> MtimeEditors:
    """`MtimeEditors` for a device of `config`'s kind: on a person's device every change is the
    person's; on an agent's, who made it is unknown, or `here` (this device) when the caller
    knows nothing else writes into the vault (it is not a sync copy)."""
    if config.settings.sync.kind != "agent":
        return MtimeEditors(root, state, origin=PERSON)
    return MtimeEditors(root, state, origin=HERE if here else UNKNOWN)
