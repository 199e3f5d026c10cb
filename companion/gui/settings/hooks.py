"""What only the sync engine can do for the settings window, and what a join asks of it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QUrl


@dataclass(frozen=True)
class JoinRequest:
    vault: Path
    relay_url: str
    invite_code: str
    device_name: str
    kind: str
    # Empty: the engine asks the passphrase file / secret store. Never shown in a repr.
    passphrase: str = field(default="", repr=False)


@dataclass
class SettingsHooks:
    """What only the sync engine can do. None = not available yet (the button says so)."""

    join: Callable[[JoinRequest], None] | None = None
    set_passphrase: Callable[[str | None, str], None] | None = None  # (current, new)
    fingerprint: Callable[[], str | None] | None = None
    export_recovery_key: Callable[[], str] | None = None
    # the store lost this copy's vault key: open the relay's wrapped key with the passphrase
    # and store it again (`companion keys unlock`); returns the key's fingerprint
    unlock_key: Callable[[str], str] | None = None
    open_url: Callable[[QUrl], bool] | None = None
    # how a folder joined its relay on this device (`keys.sync_state`): an object with
    # relay_url, device_name, kind and vault_id, or None when it is not a sync copy here
    sync_state: Callable[[str], Any] | None = None
    # whether the store lost a sync copy's relay token (`keys.token_lost`), and joining it
    # again with an invite and the passphrase (`keys.rejoin`, as `companion init --rejoin`)
    token_lost: Callable[[str], bool] | None = None
    rejoin: Callable[[Path, str, str], None] | None = None
