"""Where each device keeps its state.

By default the platform's directories (platformdirs). `COMPANION_HOME` moves all of them under
one folder so several devices can run side by side on one machine (tests, the demo).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "vault-companion"


@dataclass(frozen=True)
class DevicePaths:
    config_dir: Path
    data_dir: Path
    log_dir: Path
    state_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def log_file(self) -> Path:
        return self.log_dir / "companion.log"

    @property
    def secrets_file(self) -> Path:
        """Owner-only secrets file used on headless servers instead of an OS keyring."""
        return self.config_dir / "secrets.toml"

    def ensure(self) -> DevicePaths:
        for d in (self.config_dir, self.data_dir, self.log_dir, self.state_dir):
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self


def device_paths(home: str | os.PathLike[str] | None = None) -> DevicePaths:
    """The directories for this device; `home` (or $COMPANION_HOME) overrides them all."""
    root = home if home is not None else os.environ.get("COMPANION_HOME")
    if root:
        base = Path(root).expanduser().resolve()
        return DevicePaths(base / "config", base / "data", base / "log", base / "state")
    return DevicePaths(
        Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
        Path(platformdirs.user_log_dir(APP_NAME, appauthor=False)),
        Path(platformdirs.user_state_dir(APP_NAME, appauthor=False)),
    )
