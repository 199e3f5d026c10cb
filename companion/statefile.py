"""A small JSON document of a device's own state (schedules, clocks): read tolerantly, written
atomically. A missing or damaged file reads as empty: the state is rebuilt, never fatal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from companion.fileio import write_text_atomic


class JsonStateFile:
    """`data` is the parsed object (always a dict); `save()` replaces the file atomically."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        self.data: dict[str, Any] = data if isinstance(data, dict) else {}

    def save(self) -> None:
        text = json.dumps(self.data, indent=2, sort_keys=True)
        write_text_atomic(self.path, text, make_parents=True)
