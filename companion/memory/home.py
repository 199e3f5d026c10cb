"""Where Hermes keeps its memory files and how large they may grow.

Home resolution, first that applies: an explicit home (``--home``), the config key
``memory.hermes_home``, ``$HERMES_HOME``, ``~/.hermes``. A profile lives in
``<home>/profiles/<name>/`` and is a home of its own. Files are ``<home>/memories/MEMORY.md``
(the agent's notes) and ``USER.md`` (the user's profile).

Hermes's own ``<home>/config.yaml`` has the last word on limits, on whether each store is loaded
and on whether writes need the person's approval (`hermes_memory_settings`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from companion.errors import InputError

if TYPE_CHECKING:
    from companion.config import Config
    from companion.memory.store import MemoryStore

TARGETS: dict[str, str] = {"memory": "MEMORY.md", "user": "USER.md"}
DEFAULT_LIMITS: dict[str, int] = {"memory": 2200, "user": 1375}
_CONFIG_LIMIT_KEYS = {"memory": "memory_char_limit", "user": "user_char_limit"}  # ours and Hermes's
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


def limits_from_config(config: Config) -> dict[str, int]:
    """Per-target limits from a `companion.config.Config` (keys memory.*_char_limit)."""
    if config is None:
        return dict(DEFAULT_LIMITS)
    memory = config.settings.memory
    return {"memory": memory.memory_char_limit, "user": memory.user_char_limit}


# --- Hermes's own settings (`<home>/config.yaml`, section `memory`) -------------------------

_TRUTHY = {"on", "true", "yes", "1", "approve", "enabled"}
_ENABLED_KEYS = {"memory": "memory_enabled", "user": "user_profile_enabled"}


@dataclass(frozen=True)
class HermesMemorySettings:
    """What Hermes's config.yaml says about its memory, with Hermes's defaults.

    `limits` are Hermes's own (``memory_char_limit`` / ``user_char_limit``, default 2,200 and
    1,375): Hermes refuses any add or replace that leaves a file over them, so the companion
    never writes past them. `enabled` says whether Hermes loads each store at all
    (``memory_enabled``, ``user_profile_enabled``); `write_approval` whether the agent's writes
    wait for the person's approval (``write_approval``).
    """

    path: Path
    limits: dict[str, int]
    enabled: dict[str, bool]
    write_approval: bool = False
    problem: str | None = None  # config.yaml exists but could not be read

    def enabled_key(self, target: str) -> str:
        return f"memory.{_ENABLED_KEYS[target]}"


def _flag(value: Any, default: bool) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in _TRUTHY
    return default


def hermes_memory_settings(home: str | os.PathLike[str]) -> HermesMemorySettings:
    """Read `<home>/config.yaml` as Hermes does (missing file or keys: Hermes's defaults)."""
    import yaml  # noqa: PLC0415 - only needed here

    path = Path(home) / "config.yaml"
    limits = dict(DEFAULT_LIMITS)
    enabled = {"memory": True, "user": True}
    try:
        raw = yaml.safe_load(path.read_text("utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return HermesMemorySettings(path, limits, enabled, False, f"cannot read {path}: {why}")
    mem = raw.get("memory") if isinstance(raw, dict) else None
    if not isinstance(mem, dict):
        return HermesMemorySettings(path, limits, enabled)
    for target, key in _CONFIG_LIMIT_KEYS.items():
        try:
            if mem.get(key) is not None:
                limits[target] = int(mem[key])
        except (TypeError, ValueError):
            pass  # Hermes falls back to its default too
    for target, key in _ENABLED_KEYS.items():
        enabled[target] = _flag(mem.get(key), True)
    return HermesMemorySettings(path, limits, enabled, _flag(mem.get("write_approval"), False))


def effective_limits(config: Config, settings: HermesMemorySettings) -> dict[str, int]:
    """The limits to write under: the companion's own (``[memory] *_char_limit``) but never
    above Hermes's, or Hermes could then neither add, replace nor remove in that file."""
    ours = limits_from_config(config)
    return {t: max(1, min(ours[t], settings.limits[t])) for t in TARGETS}


def memory_stores(config: Config) -> dict[str, MemoryStore]:
    """The injected-memory files this device writes, by target, as Hermes loads them: the
    configured (or default) Hermes home, its limits and which files it has switched on."""
    from companion.memory.store import MemoryStore

    home = resolve_home(None, config_home=config.settings.memory.hermes_home or None)
    hermes = hermes_memory_settings(home)
    limits = effective_limits(config, hermes)
    return {t: MemoryStore(home, t, limits[t]) for t in TARGETS if hermes.enabled[t]}
