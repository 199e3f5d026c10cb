"""A configured transcript source, and the window of time the dream reads."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SourceSpec:
    """A configured transcript source: its kind, its path as written in the config, and the
    label it is named by when its path is outside the home folder (`[dream] sources` item's
    `name`; empty: its own file or folder name, `source_labels`)."""

    kind: str
    path: str
    label: str = ""

    @property
    def name(self) -> str:
        """The provenance name, e.g. `hermes:~/.hermes/state.db`: a path under the home
        folder is written from `~`, so no line of the vault names the person's account."""
        path = self.path
        if not path.startswith("~") and os.path.isabs(os.path.expandvars(path)):
            path = contract_home(Path(os.path.expandvars(path)))
        return f"{self.kind}:{path}"

    @property
    def real_path(self) -> Path:
        return Path(os.path.expandvars(self.path)).expanduser()


@dataclass(frozen=True)
class Window:
    start: dt.datetime  # aware
    end: dt.datetime  # aware

    def __contains__(self, t: dt.datetime) -> bool:
        return self.start <= t <= self.end

    def to_dict(self) -> dict[str, str]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat()}


def contract_home(path: Path) -> str:
    home = str(Path.home())
    s = str(path)
    if s == home or s.startswith(home.rstrip(os.sep) + os.sep):
        return "~" + s[len(home) :]
    return s
