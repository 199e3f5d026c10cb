"""What a human device keeps out of the vault until the person approves it.

An agent device holds the vault key, so the relay and the crypto cannot tell its writes from a
person's: only the kind its invite fixed can. An agent that reads the web can be talked into
writing anything, and some files are not notes: Obsidian runs `.obsidian/plugins/*/main.js` at
its next start once `community-plugins.json` lists it, applies CSS snippets and themes, rebinds
keys from `hotkeys.json`, and a file with the executable bit is one double-click from running.
So on a device of kind human, a remote change written by an agent device that touches one of
`DEFAULT_HOLD_PATTERNS` (matched case-insensitively, as macOS and Windows file systems would
open them) or sets the executable bit is **held**: not applied, listed in `companion status`,
the tray menu and `companion held list`, and applied or refused by the person
(`companion held accept|refuse`). Refusing re-commits this device's own version (or a deletion,
when it has none) on top, so every device converges on the person's choice.

Agent devices apply everything (they are servers that need what the person approved); a
human device's changes are never held. `sync.hold_agent_changes = false` turns holding off;
`sync.hold_patterns` replaces the pattern list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pathspec import GitIgnoreSpec

if TYPE_CHECKING:
    from companion.config import Config

from companion.sync.remote import HUMAN, RemoteChange

DEFAULT_HOLD_PATTERNS: tuple[str, ...] = (
    ".obsidian/plugins/",
    ".obsidian/snippets/",
    ".obsidian/themes/",
    ".obsidian/community-plugins.json",
    ".obsidian/core-plugins.json",
    ".obsidian/core-plugins-migration.json",
    ".obsidian/hotkeys.json",
    ".obsidian/app.json",
    ".obsidian/appearance.json",
)

CONFIG = "changes Obsidian's plugins, themes or settings"
EXECUTABLE = "sets the executable bit"


@dataclass(frozen=True)
class HoldPolicy:
    """Pure: which remote changes this device holds for the person."""

    device_kind: str
    enabled: bool = True
    patterns: Sequence[str] = DEFAULT_HOLD_PATTERNS

    def __post_init__(self) -> None:
        spec = GitIgnoreSpec.from_lines([p.lower() for p in self.patterns])
        object.__setattr__(self, "_spec", spec)

    @property
    def active(self) -> bool:
        return self.enabled and self.device_kind == HUMAN

    def reason(self, ch: RemoteChange) -> str | None:
        """Why `ch` must wait for the person, or None when it may be applied."""
        if not self.active or ch.author_kind == HUMAN:
            return None
        paths = [ch.path] + ([ch.meta.rename_from] if ch.meta.rename_from else [])
        spec: GitIgnoreSpec = self._spec  # type: ignore[attr-defined]
        if any(spec.match_file(p.lower()) for p in paths):
            return CONFIG
        if ch.meta.executable and not ch.deleted:
            return EXECUTABLE
        return None


def policy_from_config(config: Config, device_kind: str) -> HoldPolicy:
    sync = config.settings.sync
    return HoldPolicy(
        device_kind=device_kind,
        enabled=sync.hold_agent_changes,
        patterns=tuple(sync.hold_patterns) or DEFAULT_HOLD_PATTERNS,
    )
