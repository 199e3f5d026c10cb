"""Links the app opens: the vault folder, a note in Obsidian."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote


def obsidian_uri(path: Path) -> str:
    """`obsidian://open?path=...` for a vault folder or a note (absolute path, percent-encoded).

    Obsidian opens the vault that contains `path`, and the note when `path` is a file.
    """
    return "obsidian://open?path=" + quote(str(Path(path).expanduser().absolute()), safe="")
