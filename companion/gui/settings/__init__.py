"""The settings window: five tabs, every field checked as it is typed.

A field with a bad value shows a red message under it and Save stays disabled until it is
fixed. Save writes the config through `Config.set` + `Config.save` (secrets never go there:
passphrase and recovery key go to the callables in `SettingsHooks`, which the sync engine
provides; until it does, those buttons are disabled and say why).

One module a part: `window` assembles the tabs, checks and saves; `form` the field rows every
tab is made of; `sync_tab`, `keys_tab`, `schedule_tab`, `memory_tab` and `advanced_tab` one
tab each; `keystore` what the secret store says about a folder; `flows` the join, rejoin,
passphrase, unlock and recovery-key flows; `hooks` what only the sync engine can do.
"""

from __future__ import annotations

from companion.gui.settings.advanced_tab import IGNORE_FILE
from companion.gui.settings.flows import write_private
from companion.gui.settings.form import ERROR_COLOR, ERROR_STYLE, TABS
from companion.gui.settings.hooks import JoinRequest, SettingsHooks
from companion.gui.settings.window import SettingsWindow

__all__ = [
    "ERROR_COLOR",
    "ERROR_STYLE",
    "IGNORE_FILE",
    "TABS",
    "JoinRequest",
    "SettingsHooks",
    "SettingsWindow",
    "write_private",
]
