"""Resolve a link target to a file of the vault, the way Obsidian does.

Rules (Obsidian 1.x, `getFirstLinkpathDest`):
1. Matching is case-insensitive and Unicode-normalised (NFC), and `.md` is optional:
   `[[note]]`, `[[Note.md]]` and `[[NOTE]]` all reach `Note.md`; `[[img.png]]` reaches the
   attachment `img.png`.
2. `./x` and `../x` are relative to the linking note's folder; a leading `/` means the vault
   root.
3. An exact vault path wins (`[[Note]]` is `Note.md` at the root, `[[b/Note]]` is `b/Note.md`).
4. Otherwise every file whose path ends with the target (`[[Note]]`, `[[b/Note]]` for
   `a/b/Note.md`) is a candidate: one in the linking note's own folder wins, else the shortest
   path (then alphabetical). More than one candidate makes the link *ambiguous*; it still
   resolves. A link Obsidian writes itself is the shortest unique path, so it is never ambiguous.
Among names that differ only in case, the exact spelling is preferred.
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Iterable
from typing import NamedTuple


def path_key(path: str) -> str:
    """The comparison key of a path or link target: NFC, case-folded."""
    if not path.isascii():
        path = unicodedata.normalize("NFC", path)
    return path.casefold()


class Resolution(NamedTuple):
    path: str | None
    candidates: tuple[str, ...] = ()

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1


_NONE = Resolution(None)
_RELATIVE = Resolution(None, ("",))


class LinkResolver:
    """Resolves link targets against a fixed set of vault-relative POSIX paths."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._by_key: dict[str, list[str]] = {}
        self._by_name: dict[str, list[str]] = {}
        for p in paths:
            k = path_key(p)
            self._by_key.setdefault(k, []).append(p)
            self._by_name.setdefault(k.rpartition("/")[2], []).append(p)
        self._cache: dict[str, Resolution] = {}
        self._folders: dict[tuple[str, ...], dict[str, str]] = {}

    def __contains__(self, path: str) -> bool:
        return path_key(path) in self._by_key

    def resolve(self, target: str, from_path: str = "") -> str | None:
        """The vault path `target` points to from the note `from_path`, or None (broken)."""
        return self.resolve_full(target, from_path).path

    def resolve_full(self, target: str, from_path: str = "") -> Resolution:
        """Like `resolve`, with the candidates when several files match."""
        hit = self._cache.get(target)
        if hit is None:
            hit = self._resolve(target)
            self._cache[target] = hit
        if hit.path is not None or not hit.candidates:
            return hit
        # depends on the linking note's folder: relative, or several candidates
        folder = from_path.rpartition("/")[0]
        if not hit.candidates[0]:
            return self._relative(target, folder)
        cands = hit.candidates
        by_folder = self._folders.get(cands)
        if by_folder is None:  # once per set of candidates: each folder's first candidate
            by_folder = {}
            for p in reversed(cands):
                by_folder[path_key(p.rpartition("/")[0])] = p
            self._folders[cands] = by_folder
        return Resolution(by_folder.get(path_key(folder), cands[0]), cands)

    @staticmethod
    def _pick(paths: list[str], spelled: str) -> str:
        if len(paths) > 1:
            for p in paths:
                if p == spelled or p == spelled + ".md":
                    return p
        return paths[0]

    def _relative(self, target: str, folder: str) -> Resolution:
        t = target.strip().replace("\\", "/")
        joined = posixpath.normpath(posixpath.join(folder, t))
        if joined.startswith("../") or joined == "..":
            return _NONE  # outside the vault
        return self._exact(joined) or _NONE

    def _resolve(self, target: str) -> Resolution:
        """Resolution of `target` where it does not depend on the linking note; otherwise
        Resolution(None, candidates) (several candidates) or Resolution(None, ("",))
        (a relative target)."""
        t = target.strip().replace("\\", "/")
        if not t:
            return _NONE
        if t.startswith("./") or t.startswith("../"):
            return _RELATIVE
        t = t.lstrip("/")
        exact = self._exact(t)
        if exact is not None:
            return exact
        key = path_key(t)
        if key.endswith("/"):
            return _NONE
        cands: list[str] = []
        for k in (key, key + ".md"):
            name = k.rpartition("/")[2]
            for p in self._by_name.get(name, ()):
                pk = path_key(p)
                if pk == k or pk.endswith("/" + k):
                    cands.append(p)
        if not cands:
            return _NONE
        if len(cands) == 1:
            return Resolution(cands[0], (cands[0],))
        return Resolution(None, tuple(sorted(set(cands), key=lambda p: (len(p), p))))

    def _exact(self, t: str) -> Resolution | None:
        key = path_key(t)
        for k in (key, key + ".md"):
            paths = self._by_key.get(k)
            if paths:
                chosen = self._pick(paths, t)
                return Resolution(chosen, (chosen,))
        return None
