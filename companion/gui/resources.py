"""Where the app's icons and translation catalogues live.

In a source checkout they sit at the repository root (`resources/`); an installed package may
carry them inside (`companion/resources/`). The first folder that exists wins.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from pathlib import Path

_HERE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def resources_dir() -> Path:
    """The resources folder ($COMPANION_RESOURCES overrides, for packagers)."""
    override = os.environ.get("COMPANION_RESOURCES")
    candidates = [Path(override)] if override else []
    candidates += [
        _HERE.parent / "resources",
        _HERE.parent.parent / "resources",
        # a wheel installs the repository's resources/ as data files under the prefix
        Path(sys.prefix) / "share" / "vault-companion" / "resources",
    ]
    for c in candidates:
        if (c / "translations").is_dir():
            return c
    return candidates[-1]


def icon_path(name: str) -> Path:
    return resources_dir() / "icons" / name


def translations_dir() -> Path:
    return resources_dir() / "translations"
