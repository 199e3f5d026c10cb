"""Represent: Home.md's index, broken-link repair, orphans, and the recent-edit rule."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from companion.config import load_config
from companion.dream import blocks
from companion.dream.engine import run_dream
from companion.paths import device_paths
from tests.fixtures.dream import NOW

HOME = "# Home\n\n## Knowledge\n- [[SQLite]]\n\n## Projects\n"


def vault(tmp_path: Path, files: dict[str, str], recent: tuple[str, ...] = ()) -> Path:
    root = tmp_path / "v"
    old = (NOW - dt.timedelta(days=5)).timestamp()
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        t = (NOW - dt.timedelta(hours=1)).timestamp() if rel in recent else old
        os.utime(p, (t, t))
    return root


def dream(root: Path, **kw):
    paths = device_paths()
    config = load_config(paths)
    return run_dream(root, config, NOW, paths=paths, **kw)


def test_home_index_lists_unlinked_notes_by_area(tmp_path):
    root = vault(
        tmp_path,
        {
            "Home.md": HOME,
            "knowledge/SQLite.md": "# SQLite\n",
            "knowledge/db/Backups.md": "# Backups\n",
            "projects/Weather station.md": "# Weather station\n",
            "ideas/Someday.md": "# Someday\n",
            "journal/2026-11-27.md": "# Day\n",
        },
    )
    rep = dream(root)
    home = (root / "Home.md").read_text(encoding="utf-8")
    assert home.startswith(HOME)  # the person's part is untouched
    body = blocks.block_body(home, "index")
    assert body is not None
    assert body[0].startswith("## Index")
    assert "- [[Backups]]" in body and "- [[Weather station]]" in body and "- [[Someday]]" in body
    assert "- [[SQLite]]" not in body  # already linked by the person
    assert not any("2026-11-27" in ln for ln in body)  # journal days are found by date
    assert body.index("### Knowledge") < body.index("### Projects") < body.index("### Other")
    change = next(c for c in rep.run_changes if c.note == "Home.md")
    assert change.kind == "represented" and "listed 3 notes" in change.summary
    assert rep.orphans == []


def test_same_titles_get_path_links(tmp_path):
    root = vault(
        tmp_path, {"Home.md": HOME, "knowledge/a/Notes.md": "x\n", "knowledge/b/Notes.md": "y\n"}
    )
    dream(root)
    body = blocks.block_body((root / "Home.md").read_text(encoding="utf-8"), "index")
    assert "- [[knowledge/a/Notes]]" in body and "- [[knowledge/b/Notes]]" in body


def test_recently_edited_home_is_left_alone_and_orphans_reported(tmp_path):
    root = vault(
        tmp_path,
        {
            "Home.md": HOME,
            "knowledge/SQLite.md": "# SQLite\n",
            "knowledge/Backups.md": "# Backups\n",
        },
        recent=("Home.md",),
    )
    before = (root / "Home.md").read_bytes()
    rep = dream(root)
    assert (root / "Home.md").read_bytes() == before
    assert rep.orphans == ["knowledge/Backups.md"]
    assert any("Home.md: edited by a person recently" in w for w in rep.warnings)


def test_spanish_index_headings(tmp_path):
    root = vault(
        tmp_path,
        {
            "Home.md": HOME,
            "knowledge/Copias.md": "# Copias\n",
            "journal/2026-11-27.md": "# Día\n\n## Aprendido\n- Nada nuevo hoy.\n",
        },
    )
    dream(root)
    home = (root / "Home.md").read_text(encoding="utf-8")
    assert "## Índice (lo mantiene el sueño)" in home and "### Conocimiento" in home
    journal = (root / "journal/2026-11-28.md").read_text(encoding="utf-8")
    assert "## Dreaming" in journal and "9 notas" not in journal


def test_unambiguous_broken_links_are_repaired(tmp_path):
    root = vault(
        tmp_path,
        {
            "Home.md": HOME,
            "knowledge/SQLite.md": "# SQLite\n",
            "knowledge/Raspberry Pi setup.md": "---\naliases: [Pi 4 notes]\n---\n# Pi\n",
            "knowledge/Notes.md": (
                "See [[raspberry-pi Setup#Power|the Pi]] and ![[Pi 4 Notes]].\n"
                "Also [[Nowhere at all]] and `[[raspberry-pi Setup]]` in code.\n"
            ),
            "knowledge/Edited.md": "Recent [[raspberry-pi Setup]].\n",
        },
        recent=("knowledge/Edited.md",),
    )
    rep = dream(root)
    notes = (root / "knowledge/Notes.md").read_text(encoding="utf-8")
    assert notes == (
        "See [[Raspberry Pi setup#Power|the Pi]] and ![[Raspberry Pi setup]].\n"
        "Also [[Nowhere at all]] and `[[raspberry-pi Setup]]` in code.\n"
    )
    change = next(c for c in rep.run_changes if c.note == "knowledge/Notes.md")
    assert change.kind == "represented" and change.removed == 1
    assert "repaired 2 broken links" in change.summary
    assert (root / "knowledge/Edited.md").read_text(
        encoding="utf-8"
    ) == "Recent [[raspberry-pi Setup]].\n"  # a person is editing it: left alone
    assert any("Edited.md" in w for w in rep.warnings)


def test_ambiguous_broken_link_is_left_alone(tmp_path):
    root = vault(
        tmp_path,
        {
            "Home.md": HOME,
            "knowledge/a/Pi setup.md": "a\n",
            "knowledge/b/Pi-setup.md": "b\n",
            "knowledge/Notes.md": "See [[pi  SETUP]].\n",
        },
    )
    dream(root)
    assert (root / "knowledge/Notes.md").read_text(encoding="utf-8") == "See [[pi  SETUP]].\n"


def test_rename_reported_by_sync_is_followed(tmp_path):
    root = vault(
        tmp_path,
        {
            "Home.md": HOME,
            "knowledge/Storage.md": "# Storage\n",
            "knowledge/Notes.md": "See [[Disks]].\n",
        },
    )
    dream(root, renames={"knowledge/Disks.md": "knowledge/Storage.md"})
    assert (root / "knowledge/Notes.md").read_text(encoding="utf-8") == "See [[Storage]].\n"


def test_nothing_in_the_window_writes_only_nothing_changed(tmp_path):
    root = vault(tmp_path, {"Home.md": HOME, "knowledge/SQLite.md": "# SQLite\n"})
    rep = dream(root)
    assert rep.nothing_changed and [c.kind for c in rep.run_changes] == ["recorded"]
    journal = (root / "journal/2026-11-28.md").read_text(encoding="utf-8")
    assert "Nothing changed." in journal
    again = dream(root)
    assert again.run_changes == [] and again.nothing_changed
    assert (root / "journal/2026-11-28.md").read_text(encoding="utf-8") == journal


def test_dreaming_line_counts_the_orphans_the_report_lists(tmp_path):
    """Issue 16, item 8: notes the Dreaming lines link are not orphans, in the count as in the
    report (Home.md edited recently, so the index cannot list the new note)."""
    import re

    root = vault(
        tmp_path,
        {
            "Home.md": HOME,
            "knowledge/SQLite.md": "# SQLite\n",
            "knowledge/Lonely.md": "# Lonely\n\nNothing links here.\n",
            "journal/2026-11-27.md": "# 2026-11-27\n\n## Learned\n"
            "- The NAS sleeps from 01:30 to save power every night.\n",
        },
        recent=("Home.md",),
    )
    rep = dream(root)
    assert rep.orphans == ["knowledge/Lonely.md"]
    journal = (root / "journal/2026-11-28.md").read_text(encoding="utf-8")
    m = re.search(r"(\d+) orphan note", journal)
    assert m is not None and int(m.group(1)) == len(rep.orphans), journal
