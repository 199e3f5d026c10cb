"""Where Hermes keeps its memory files and how large they may grow.

Home resolution, first that applies: an explicit home (``--home``), the config key
``memory.hermes_home``, ``$HERMES_HOME``, ``~/.hermes``. A profile lives in
``<home>/profiles/<name>/`` and is a home of its own. Files are ``<home>/memories/MEMORY.md``
(the agent's notes) and ``USER.md`` (the user's profile).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from companion.errors import InputError

TARGETS: dict[str, str] = {"memory": "MEMORY.md", "user": "USER.md"}
DEFAULT_LIMITS: dict[str, int] = {"memory": 2200, "user": 1375}
_CONFIG_LIMIT_KEYS = {"memory": "memory_char_limit", "user": "user_char_limit"}
_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def resolve_home(
    home: str | os.PathLike[str] | None = None,
    *,
    config_home: str | None = None,
    profile: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """The Hermes home to use (see the module docstring for the order), with `profile` applied."""
    env = os.environ if environ is None else environ
    chosen = home or config_home or env.get("HERMES_HOME") or "~/.hermes"
    base = Path(chosen).expanduser()
    if profile is not None:
        if not _PROFILE_NAME.match(profile) or profile in {".", ".."}:
            raise InputError(
                f"invalid profile name {profile!r}: use letters, digits, '.', '_' or '-'"
            )
        base = base / "profiles" / profile
    return base


def memories_dir(home: str | os.PathLike[str]) -> Path:
    """``<home>/memories``: the folder holding MEMORY.md and USER.md."""
    return Path(home) / "memories"


def check_target(target: str) -> str:
    """`target` if it names a store, else an error naming the valid ones."""
    if target not in TARGETS:
        raise InputError(f"unknown target {target!r}: use 'memory' or 'user'")
    return target


def limits_from_config(config: Any) -> dict[str, int]:
    """Per-target limits from a `companion.config.Config` (keys memory.*_char_limit)."""
    out = dict(DEFAULT_LIMITS)
    for target, key in _CONFIG_LIMIT_KEYS.items():
        value = config.get("memory", key)
        if value is not None:
            out[target] = int(value)
    return out
