"""Which vault? The one answer every command and window gives.

A command names the vault folder, or falls back on `[vault] path` in the config. The folder is
expanded (`~`) and made real (symbolic links resolved), so two spellings of one folder are one
vault copy. What it must be depends on the caller:

- ``FOLDER``: an existing folder (read-only commands, `mcp`, `install-service`);
- ``VAULT``: a folder that already looks like a vault, or is set up for sync here (commands that
  write into it, like the dream: a mistyped path must never fill a random folder).

Every refusal is one line naming the folder and what to do.
"""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from companion.errors import InputError
from companion.textsafe import shown

if TYPE_CHECKING:
    from companion.config import Config


class Need(enum.Enum):
    FOLDER = "folder"
    VAULT = "vault"


def _printable(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return shown(text)


def configured_vault(config: Config | None) -> Path | None:
    """`[vault] path` from the config, expanded; None when unset (no checks: the GUI and
    `doctor` report what is wrong with it themselves)."""
    raw = str(config.settings.vault.path or "") if config is not None else ""
    return Path(raw).expanduser() if raw else None


def vault_choice(given: str | os.PathLike[str] | None, config: Config | None) -> Path | None:
    """The folder named on the command line, else the configured one (unchecked)."""
    if given is not None and os.fspath(given) != "":
        return Path(os.fspath(given)).expanduser()
    return configured_vault(config)


def which_vault(
    given: str | os.PathLike[str] | None,
    config: Config | None,
    *,
    need: Need = Need.FOLDER,
    paths: Any = None,
    hint: str = "give the vault folder",
) -> Path:
    """The vault folder to work on (real path), or `InputError` saying why there is none."""
    chosen = vault_choice(given, config)
    if chosen is None:
        raise InputError(f"{hint}, or set [vault] path in the config (`companion config path`)")
    name = _printable(chosen)
    if not chosen.exists():
        raise InputError(f"the vault folder {name} does not exist")
    if not chosen.is_dir():
        raise InputError(f"{name} is not a folder")
    root = Path(os.path.realpath(chosen))
    if need is Need.VAULT:
        from companion.vault.layout import looks_like_vault  # noqa: PLC0415 - light

        synced = False
        if paths is not None:
            from companion.sync.state.device import DeviceState  # noqa: PLC0415

            synced = DeviceState.exists(paths, str(root))
        if not looks_like_vault(root) and not synced:
            raise InputError(
                f"{name} is not a vault (no Home.md, knowledge/, projects/, journal/ or "
                f".obsidian/); nothing was written. Make it one with `companion vault init {name}`"
            )
    return root
