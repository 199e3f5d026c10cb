"""`Vault`: one vault folder, its notes, link resolution and link graph (no index needed).

For repeated work on a large vault use `VaultIndex` (companion.vault.index), which caches
parsed notes across runs; `Vault` reads everything each time it is asked.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from companion.errors import InputError
from companion.vault.graph import LinkGraph, NoteMeta, build_graph
from companion.vault.links import LinkResolver, Resolution
from companion.vault.note import Note, parse_note
from companion.vault.reader import read_note_text
from companion.vault.walk import Issue, ScanResult, walk_vault

if TYPE_CHECKING:
    from companion.config import Config

DEFAULT_MAX_FILE_MB = 20


def max_bytes_from_mb(mb: float | None) -> int | None:
    """The byte cap for a `vault.max_file_mb` value; 0 or None means no cap."""
    if not mb:
        return None
    return int(float(mb) * 1024 * 1024)


class Vault:
    """A vault folder. Paths handed in and out are vault-relative POSIX strings.

    `max_file_bytes`: notes larger than this are listed but not read (None: the default
    cap of 20 MB, as `vault.max_file_mb`; 0: no cap)."""

    def __init__(self, root: str | os.PathLike[str], *, max_file_bytes: int | None = None) -> None:
        path = Path(root).expanduser()
        if not path.exists():
            raise InputError(f"{path} does not exist")
        if not path.is_dir():
            raise InputError(f"{path} is not a folder")
        self.root = Path(os.path.abspath(path))
        self.max_file_bytes = (
            max_bytes_from_mb(DEFAULT_MAX_FILE_MB)
            if max_file_bytes is None
            else (max_file_bytes or None)
        )
        self._scan: ScanResult | None = None
        self._resolver: LinkResolver | None = None
        self.read_issues: list[Issue] = []

    @classmethod
    def from_config(cls, root: str | os.PathLike[str], config: Config) -> Vault:
        """A vault with the size cap of `config` (`vault.max_file_mb`; 0 = no cap)."""
        mb = config.settings.vault.max_file_mb
        return cls(root, max_file_bytes=max_bytes_from_mb(mb) or 0)

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    def abspath(self, rel: str) -> Path:
        return self.root / rel

    def scan(self, refresh: bool = False) -> ScanResult:
        """The walk of the vault (cached; `refresh=True` walks again)."""
        if self._scan is None or refresh:
            self._scan = walk_vault(self.root, self.max_file_bytes)
            self._resolver = None
        return self._scan

    def use_scan(self, scan: ScanResult) -> None:
        """Adopt a walk made elsewhere (the index's), so links resolve against it."""
        if scan is not self._scan:
            self._scan, self._resolver = scan, None

    def note_paths(self) -> list[str]:
        return sorted(self.scan().notes)

    def read_note(self, rel: str) -> Note | None:
        """Parse one note; None (and an entry in `read_issues`) when it cannot be read."""
        rr = read_note_text(self.abspath(rel), rel, self.max_file_bytes)
        if rr.issue is not None:
            self.read_issues.append(rr.issue)
            return None
        assert rr.text is not None
        note = parse_note(rr.text, rel)
        note.warnings[:0] = rr.warnings
        return note

    def notes(self) -> Iterator[Note]:
        """Every readable note, in path order (unreadable ones go to `read_issues`)."""
        self.read_issues = []
        for rel in self.note_paths():
            note = self.read_note(rel)
            if note is not None:
                yield note

    def resolver(self) -> LinkResolver:
        if self._resolver is None:
            self._resolver = LinkResolver(self.scan().all_paths())
        return self._resolver

    def resolve_link(self, target: str, from_path: str = "") -> str | None:
        """The vault path a link target points to from `from_path`, or None when broken."""
        return self.resolver().resolve(target, from_path)

    def resolve_link_full(self, target: str, from_path: str = "") -> Resolution:
        return self.resolver().resolve_full(target, from_path)

    def graph(self) -> LinkGraph:
        """The link graph, parsing every note now (see VaultIndex.graph for the cached one)."""
        metas = {note.path: NoteMeta.from_note(note) for note in self.notes()}
        scan = self.scan()
        return build_graph([*scan.notes, *scan.too_large], metas, self.resolver())
