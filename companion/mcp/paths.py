"""Which paths an agent may name: notes inside the vault, never hidden, ignored or linked away.

A path from a tool call is a vault-relative POSIX path. It is refused, with the reason, when it
is absolute, climbs out (`..`), has an empty segment or a control character
(`companion.sync.local.pathsafe.normalize`); when any segment is hidden (`.obsidian/`,
`.companion/`, `.trash/`, `.git/`: app state, plugins and the companion's own files, never
notes); when the vault's ignore rules exclude it (it would never sync); or when it goes through
a symbolic link.
Notes end in `.md`. A new note's name must also work as an Obsidian link and on every system
the vault syncs to: none of `[ ] # ^ | \\ : * ? " < >`, no segment ending in a dot or a space,
no Windows device name (`CON.md`: `pathsafe.windows_name_problem`, the rule the person's Windows
and Android devices apply). A path in one of the agent's `no_read` folders is refused too
(`companion.mcp.scope`).
"""

from __future__ import annotations

import os
import re

from companion.mcp.context import ToolRefused, VaultContext
from companion.sync.local.pathsafe import (
    UnsafePath,
    normalize,
    resolve_inside,
    windows_name_problem,
)

_BAD_NEW_NAME = re.compile(r'[\[\]#^|\\:*?"<>]')
_DRIVE_PATH = re.compile(r"^[A-Za-z]:[/\\]")  # C:/notes/x.md, C:\notes\x.md


def _checked(ctx: VaultContext, raw: str, what: str) -> str:
    if not isinstance(raw, str):
        raise ToolRefused(f"{what} must be a string")
    if len(raw) > ctx.limits.path_chars:
        raise ToolRefused(f"{what} is longer than {ctx.limits.path_chars} characters")
    if raw != raw.strip():
        raise ToolRefused(f"{what} {raw!r} starts or ends with spaces")
    if _DRIVE_PATH.match(raw):  # a name on the vault's disks, but from an agent a Windows path
        raise ToolRefused(f"{what} {raw!r} is absolute, expected a path inside the vault")
    try:
        rel = normalize(raw)
    except UnsafePath as exc:
        raise ToolRefused(f"{what}: {exc}") from None
    for seg in rel.split("/"):
        if seg.startswith("."):
            raise ToolRefused(
                f"{what} {rel!r} is inside a hidden folder or file ({seg}): app settings, "
                "plugins and the companion's own files are not notes"
            )
    if ctx.ignore.is_ignored(rel):
        raise ToolRefused(f"{what} {rel!r} is excluded by the vault's ignore rules (never synced)")
    from companion.mcp.scope import check_read

    check_read(ctx, rel, what)  # the person's no_read folders (.companion/scopes.json)
    try:
        resolve_inside(ctx.root, rel)
    except UnsafePath as exc:
        raise ToolRefused(f"{what}: {exc}") from None
    return rel


def note_path(ctx: VaultContext, raw: str, *, new: bool = False) -> str:
    """The normalised path of a note (`.md`); `new`: also a good name for a note to create."""
    rel = _checked(ctx, raw, "path")
    if not rel.lower().endswith(".md"):
        raise ToolRefused(f"path {rel!r} is not a note: notes end in .md")
    if new:
        for seg in rel.split("/"):
            bad = _BAD_NEW_NAME.search(seg)
            if bad:
                raise ToolRefused(
                    f"path {rel!r}: {bad.group(0)!r} does not work in a note name (it breaks "
                    "links or is not allowed on every system)"
                )
            stem = seg[:-3] if seg.lower().endswith(".md") else seg
            if stem.endswith((" ", ".")) or not stem:
                raise ToolRefused(f"path {rel!r}: a name may not end with a space or a dot")
        why = windows_name_problem(rel)
        if why:
            raise ToolRefused(f"path {rel!r}: {why}, so a person's Windows device cannot hold it")
        twin = case_twin(ctx, rel)
        if twin is not None:
            raise ToolRefused(
                f"path {rel!r}: {twin!r} exists, and names that differ only in case are one "
                f"note on macOS, Windows and Android: write to {twin!r}"
            )
    return rel


def case_twin(ctx: VaultContext, rel: str) -> str | None:
    """An existing file or folder of the vault whose path differs from `rel` only in case."""
    at = ctx.root
    parts = rel.split("/")
    for i, seg in enumerate(parts):
        try:
            names = os.listdir(at)
        except OSError:
            return None
        if seg in names:
            at = at / seg
            continue
        folded = seg.casefold()
        other = next((n for n in names if n.casefold() == folded), None)
        return "/".join([*parts[:i], other]) if other is not None else None
    return None


REVIEW_FOLDER = "review/"  # the morning review's notes (companion.review): the person's to decide


def writable_note_path(ctx: VaultContext, raw: str) -> str:
    """`note_path`, for a write: the morning review's notes are refused (a tick is the
    person's decision; what the agent changed is the relay's to say, docs/review.md)."""
    rel = note_path(ctx, raw)
    if rel.startswith(REVIEW_FOLDER):
        raise ToolRefused(
            f"path {rel!r} is a morning review note: the person decides there, agents do not "
            "write it"
        )
    return rel


def folder_path(ctx: VaultContext, raw: str) -> str:
    """A folder of the vault ("" is the whole vault)."""
    raw = raw.strip("/") if isinstance(raw, str) else raw
    if raw in ("", "."):
        return ""
    return _checked(ctx, raw, "folder")
