"""The vault's layout: `Home.md`, `knowledge/`, `projects/`, `journal/YYYY-MM-DD.md`.

`init_vault` creates what is missing and never touches what exists (it creates files with
exclusive mode, so a file that appears meanwhile is kept, not overwritten).

Sync carries files, not folders, so an area still empty on the device that ran `vault init`
would never reach the others: `ensure_area_folders` (called when a device joins the vault)
creates the areas on every copy. Home.md is a note, and arrives by sync like any other.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from companion.errors import CompanionError, InputError

HOME = "Home.md"
AREAS = ("knowledge", "projects", "journal")
COMPANION_DIR = ".companion"

HOME_TEMPLATE = """\
---
tags: [home]
---
# Home

Map of content: every note, grouped by area.

## Knowledge

## Projects

## Journal

Daily notes live in `journal/YYYY-MM-DD.md`.
"""

_DAY_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


@dataclass
class InitResult:
    """What `init_vault` did: paths (relative, POSIX) it created and those it left alone."""

    root: Path
    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def init_vault(root: str | Path) -> InitResult:
    """Create the vault layout under `root`; existing files and folders are left untouched."""
    root = Path(root).expanduser()
    if root.exists() and not root.is_dir():
        raise InputError(f"{root} exists and is not a folder")
    result = InitResult(root=root)
    try:
        if not root.exists():
            root.mkdir(parents=True)
            result.created.append(".")
        for area in AREAS:
            d = root / area
            if d.is_dir():
                result.kept.append(area + "/")
            elif d.exists() or d.is_symlink():
                raise InputError(f"{d} exists and is not a folder; move it aside first")
            else:
                d.mkdir()
                result.created.append(area + "/")
        home = root / HOME
        try:
            with open(home, "x", encoding="utf-8", newline="\n") as fh:
                fh.write(HOME_TEMPLATE)
            result.created.append(HOME)
        except FileExistsError:
            result.kept.append(HOME)
    except OSError as exc:
        raise CompanionError(
            f"cannot create the vault layout in {root}: {exc.strerror or exc}"
        ) from None
    return result


def ensure_area_folders(root: str | Path) -> list[str]:
    """Create the missing area folders (knowledge/, projects/, journal/) in an existing vault
    folder; a file or link already named like one is left alone. The names created."""
    root = Path(root)
    created = []
    for area in AREAS:
        d = root / area
        if d.exists() or d.is_symlink():
            continue
        try:
            d.mkdir()
        except OSError:
            continue  # a race or a read-only folder: the vault works without it
        created.append(area + "/")
    return created


def looks_like_vault(root: str | Path) -> bool:
    """A folder that is already a vault: it holds Home.md, one of the areas, an Obsidian
    settings folder or the companion's own folder. Commands that write into a vault (the
    dream) refuse anything else, so a mistyped path never fills a random folder."""
    root = Path(root)
    markers = (HOME, *AREAS, ".obsidian", COMPANION_DIR)
    return root.is_dir() and any((root / m).exists() for m in markers)


def area_of(relpath: str | PurePosixPath) -> str:
    """The area a vault-relative path belongs to: home, knowledge, projects, journal,
    companion (the hidden `.companion/` folder) or other."""
    parts = PurePosixPath(relpath).parts
    if not parts:
        return "other"
    if len(parts) == 1 and parts[0].casefold() == HOME.casefold():
        return "home"
    first = parts[0]
    if first == COMPANION_DIR:
        return "companion"
    if len(parts) > 1 and first.casefold() in AREAS:
        return first.casefold()
    return "other"


def journal_path(root: str | Path, day: dt.date) -> Path:
    """The journal note of `day`: `<root>/journal/YYYY-MM-DD.md`."""
    return Path(root) / "journal" / f"{day.isoformat()}.md"


def new_journal_text(day: dt.date, tag: str = "journal") -> str:
    """A new journal day before any section is written: its frontmatter, tagged with the
    vault's own journal tag (`journal`, `diario`...)."""
    return f"---\ntags: [{tag}]\ndate: {day.isoformat()}\n---\n"


def journal_date(relpath: str | PurePosixPath) -> dt.date | None:
    """The day a journal note is about, from its `YYYY-MM-DD.md` name; None for other notes."""
    p = PurePosixPath(relpath)
    if area_of(p) != "journal" or p.suffix.lower() != ".md":
        return None
    m = _DAY_RE.match(p.stem)
    if not m:
        return None
    try:
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None
