"""Which vault paths are not synced: gitignore syntax, with Obsidian-friendly defaults.

Three sources, in order (a later ``!pattern`` can re-include what an earlier one excluded):
the built-in defaults, the vault's own ``.companionignore`` (synced, so every device agrees) and
the device's config ``sync.ignore``. Matching uses `pathspec`'s `GitIgnoreSpec` (git's rules,
including "a file inside an excluded folder cannot be re-included").

``.companionignore`` itself and ``.companion/`` (dream reports) are synced: the defaults leave
them alone. A bad line is skipped with a warning instead of stopping sync.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from pathspec import GitIgnoreSpec

from companion.logs import get_logger
from companion.sync.local.folder import MARKER_NAME
from companion.sync.local.pathsafe import TEMP_PREFIX

log = get_logger("sync.ignore")

IGNORE_FILE = ".companionignore"

DEFAULT_PATTERNS: tuple[str, ...] = (
    # Obsidian: the per-device window layout (desktop, mobile; `workspace` before 0.10) and
    # caches change constantly and mean nothing elsewhere. `workspaces.json` (named layouts the
    # person saved with the Workspaces plugin) is kept and synced.
    ".obsidian/workspace.json",
    ".obsidian/workspace-mobile.json",
    ".obsidian/workspace",
    ".obsidian/cache",
    ".trash/",
    # version control
    ".git/",
    # OS junk
    ".DS_Store",
    "._*",
    ".Spotlight-V100/",
    ".fseventsd/",
    ".Trashes/",
    "Thumbs.db",
    "ehthumbs.db",
    "desktop.ini",
    "$RECYCLE.BIN/",
    # editors' lock, swap, backup and auto-save files
    "~$*",
    ".~lock.*#",
    "*.swp",
    "*.swx",
    "*~",
    "\\#*#",  # Emacs auto-save (`#note.md#`; the backslash: not a comment)
    ".#*",  # Emacs lock
    "4913",  # vim's "can I write here" probe
    "*.tmp",  # Office, LibreOffice and many tools write a temp file, then rename it
    # partial downloads: a browser writes these and renames them once complete
    "*.crdownload",  # Chrome, Edge, Brave
    "*.part",  # Firefox, wget, KDE
    "*.partial",  # older Firefox, Internet Explorer
    "*.opdownload",  # Opera
    "*.download/",  # Safari (a folder)
    # the engine's own temporary files, and the marker naming the vault folder's device
    TEMP_PREFIX + "*",
    MARKER_NAME,
)


def _compile(lines: Iterable[str], source: str) -> list[str]:
    """Keep the lines pathspec accepts; warn about (and drop) the others."""
    good: list[str] = []
    for n, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            GitIgnoreSpec.from_lines([line])
        except Exception as exc:  # pathspec raises several types for malformed patterns
            log.warning("%s line %d: ignoring invalid pattern %r (%s)", source, n, line, exc)
            continue
        good.append(line)
    return good


class IgnoreRules:
    """The ignore rules of one vault; cheap to query, reloaded when ``.companionignore`` changes."""

    def __init__(self, root: str | os.PathLike[str], extra: Sequence[str] = ()) -> None:
        self.root = Path(root)
        self._extra = _compile(extra, "config sync.ignore")
        self._file_key: tuple[int, int, int] | None = None
        self.patterns: list[str] = []
        self._spec = GitIgnoreSpec.from_lines([])
        self._load()

    @property
    def file(self) -> Path:
        return self.root / IGNORE_FILE

    def _stat_file(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.file)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _load(self) -> None:
        key = self._stat_file()
        vault_lines: list[str] = []
        if key is not None:
            try:
                text = self.file.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                log.warning("cannot read %s: %s", self.file, exc)
            else:
                vault_lines = _compile(text.splitlines(), IGNORE_FILE)
        self._file_key = key
        self.patterns = [*DEFAULT_PATTERNS, *vault_lines, *self._extra]
        self._spec = GitIgnoreSpec.from_lines(self.patterns)

    def reload_if_changed(self) -> bool:
        """Re-read ``.companionignore`` if it changed since the last load; True if it did."""
        if self._stat_file() == self._file_key:
            return False
        self._load()
        return True

    def is_ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Whether the normalised vault-relative path `rel` is excluded from sync.

        A file under an ignored folder is ignored too. Pass ``is_dir=True`` for a folder so
        folder-only patterns (``.trash/``) apply to it.
        """
        if is_dir and not rel.endswith("/"):
            rel += "/"
        return self._spec.match_file(rel)
