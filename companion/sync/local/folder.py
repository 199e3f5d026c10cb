"""The vault folder's identity: a round syncs only a folder that is this copy's vault.

A vault on a drive that goes away (an external disk, a network share, an SD card) leaves its
bare mount point at the vault's path; a folder can also be swapped in under a running engine
(moved away and another put there). Such a folder is not the vault: writing a remote change
into it hides that change under the real folder once it is mounted again (and the engine then
sees the file "gone" and deletes it everywhere), and every file the vault has looks deleted in
it. So the folder is identified, and checked at the start of every round and before the
executors write or delete:

- the marker ``.companion-folder.json`` at the vault's root, written atomically at the join
  (`companion init`, the desktop app's join, a rejoin) and never synced (a built-in ignore
  pattern): ``{"vault_id": ..., "device_id": ..., "created": <unix seconds>}``;
- the folder is the vault's when the root exists, is a folder, and its marker parses with this
  device's vault id and device id;
- no marker (a copy joined before markers existed): when the folder holds at least one file
  the index knows as live, or the index has no live file at all (a fresh copy), the marker is
  written and the round goes on; otherwise the folder is missing;
- otherwise (no folder, a file in its place, a bare mount point, a foreign or unreadable
  marker) `VaultMissing`: the round writes nothing, deletes nothing, records nothing it
  scanned, says "vault folder missing" (status, tray) and `companion sync` exits 6. The next
  round looks again; once the folder is back it scans every file.

The Obsidian plugin follows the same rule with the same marker.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any, Protocol

from companion.errors import CompanionError
from companion.fileio import write_text_atomic

MARKER_NAME = ".companion-folder.json"
EXIT_VAULT_MISSING = 6
OK = "ok"
ADOPTED = "adopted"  # no marker yet: this check wrote it (the upgrade rule)


class VaultMissing(CompanionError):
    """The vault folder is not there, or the folder at its path is not this copy's vault (an
    unmounted drive's mount point, another folder swapped in): nothing is synced."""

    exit_code = EXIT_VAULT_MISSING

    def __init__(self, message: str, root: str | os.PathLike[str] = "") -> None:
        super().__init__(message)
        self.root = os.fspath(root)


class LiveIndex(Protocol):
    def live_stats(self) -> dict[str, Any]: ...


def read_marker(root: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The marker's content, None when there is none; `ValueError` when it does not parse as
    a JSON object (a damaged or foreign file)."""
    try:
        text = (Path(root) / MARKER_NAME).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from None
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def write_marker(root: str | os.PathLike[str], vault_id: str, device_id: str) -> None:
    """Mark `root` as the folder of this device's copy of the vault (atomically)."""
    text = json.dumps(
        {"vault_id": vault_id, "device_id": device_id, "created": int(time.time())},
        sort_keys=True,
    )
    write_text_atomic(Path(root) / MARKER_NAME, text + "\n")


def _missing(root: str, why: str) -> VaultMissing:
    return VaultMissing(f"vault folder missing: {root} {why}; nothing was synced", root)


def check_folder(
    root: str | os.PathLike[str],
    vault_id: str,
    device_id: str,
    index: LiveIndex | None,
    *,
    adopt: bool = True,
) -> str:
    """`OK` when `root` is this copy's vault folder, `ADOPTED` when it had no marker and the
    upgrade rule wrote one (see the module docstring); raises `VaultMissing` otherwise.
    `adopt=False` only reads (`companion status`): an unmarked folder that would be adopted
    is `OK` then. `index` None: the copy has no index yet (nothing synced: a fresh copy)."""
    shown = os.fspath(root)
    if not os.path.isdir(root):
        raise _missing(shown, "is not there (is the drive mounted?)")
    hint = (
        f"belongs to another vault or device (its {MARKER_NAME}); if it is this vault's "
        f"folder, remove that file"
    )
    try:
        marker = read_marker(root)
    except ValueError:
        raise _missing(shown, hint) from None
    if marker is not None:
        if marker.get("vault_id") == vault_id and marker.get("device_id") == device_id:
            return OK
        raise _missing(shown, hint)
    if index is not None and not _holds_known_file(root, index):
        raise _missing(shown, f"holds none of this vault's files and no {MARKER_NAME} "
                              "(is the drive mounted?)")  # fmt: skip
    if adopt:
        write_marker(root, vault_id, device_id)
        return ADOPTED
    return OK


def _holds_known_file(root: str | os.PathLike[str], index: LiveIndex) -> bool:
    """Whether the folder holds a file the index knows as live; True for an index without
    live files (a fresh copy)."""
    live = index.live_stats()
    if not live:
        return True
    base = Path(root)
    for rel in live:
        try:
            st = os.lstat(base / rel)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            return True
    return False
