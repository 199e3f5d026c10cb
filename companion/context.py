"""What every subcommand receives: this device's directories and its configuration.

Its own module, so each package's command module imports this and not the top-level command
line (`companion/cli.py`), and libraries never import a command.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import click

from companion.config import Config, load_config
from companion.paths import DevicePaths


@dataclass
class AppContext:
    """This device's directories, its configuration (loaded on first use) and the verbosity."""

    paths: DevicePaths
    verbose: int = 0
    _config: Config | None = field(default=None, repr=False)

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(self.paths)
        return self._config

    def lenient_config(self) -> Config:
        """The configuration even when the file has problems (`Config.problems` lists them,
        defaults stand in): for the desktop app and `doctor`, which show them."""
        if self._config is None:
            self._config = load_config(self.paths, lenient=True)
        return self._config


pass_app = click.make_pass_decorator(AppContext)
