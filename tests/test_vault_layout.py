"""Vault layout (init, areas, journal paths) and journal sections."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from companion.errors import InputError
from companion.vault.journal import parse_journal, section_key
from companion.vault.layout import HOME_TEMPLATE, area_of, init_vault, journal_date, journal_path


def test_init_creates_the_layout(tmp_path):
    root = tmp_path / "new" / "vault"
    result = init_vault(root)
    assert sorted(result.created) == [".", "Home.md", "journal/", "knowledge/", "projects/"]
    assert (root / "Home.md").read_text(encoding="utf-8") == HOME_TEMPLATE
    for d in ("knowledge", "projects", "journal"):
        assert (root / d).is_dir()


def test_init_never_touches_what_exists(tmp_path):
    (tmp_path / "Home.md").write_bytes(b"my own home\r\n")
    (tmp_path / "knowledge").mkdir()
    (tmp_path / "knowledge" / "keep.md").write_text("keep")
    os.utime(tmp_path / "Home.md", ns=(1_000_000_000, 1_000_000_000))
    result = init_vault(tmp_path)
    assert sorted(result.created) == ["journal/", "projects/"]
    assert sorted(result.kept) == ["Home.md", "knowledge/"]
    assert (tmp_path / "Home.md").read_bytes() == b"my own home\r\n"
    assert (tmp_path / "Home.md").stat().st_mtime_ns == 1_000_000_000
    assert (tmp_path / "knowledge" / "keep.md").read_text() == "keep"
    again = init_vault(tmp_path)
    assert again.created == []


def test_init_refuses_a_file_where_a_folder_goes(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(InputError):
        init_vault(f)
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "journal").write_text("not a folder")
    with pytest.raises(InputError, match="journal"):
        init_vault(tmp_path / "v")
    assert (tmp_path / "v" / "journal").read_text() == "not a folder"


def test_area_and_journal_paths(tmp_path):
    assert area_of("Home.md") == "home"
    assert area_of("knowledge/a/b.md") == "knowledge"
    assert area_of("Projects/x.md") == "projects"
    assert area_of("journal/2024-01-02.md") == "journal"
    assert area_of(".companion/dreams/x.json") == "companion"
    assert area_of("knowledge.md") == "other"
    assert journal_path(tmp_path, dt.date(2024, 3, 9)) == tmp_path / "journal" / "2024-03-09.md"
    assert journal_date("journal/2024-03-09.md") == dt.date(2024, 3, 9)
    assert journal_date("journal/2024-02-30.md") is None
    assert journal_date("knowledge/2024-03-09.md") is None


JOURNAL = """---
date: 2024-03-09
---
# 2024-03-09

## Done
- Shipped the [[Relay]] fix
  with a continuation line
* [x] Wrote tests
Plain line item

## Decidido
1. Use SQLite FTS5

```
- not an item
```

### Detail under Decided
- nested section item

## Notes
- not in a known section

## Learned / Aprendido
- WAL needs the -shm file

## Dreaming
- Consolidated [[Relay]]
## Done
- second Done section merges
"""


def test_parse_journal_sections_with_line_numbers():
    sections = parse_journal(JOURNAL)
    assert set(sections) == {"done", "decided", "learned", "dreaming"}
    done = sections["done"]
    assert done.line == 6 and done.title == "Done"
    assert [(i.text, i.line) for i in done.items] == [
        ("Shipped the [[Relay]] fix with a continuation line", 7),
        ("Wrote tests", 9),
        ("Plain line item", 10),
        ("second Done section merges", 31),
    ]
    decided = sections["decided"]
    assert [i.text for i in decided.items] == ["Use SQLite FTS5", "nested section item"]
    assert sections["learned"].items[0].text == "WAL needs the -shm file"
    assert sections["dreaming"].items[0].line == 29


def test_section_names_are_configurable_and_accent_insensitive():
    assert section_key("Décidé", {"decided": ("Decide",)}) == "decided"
    assert section_key("Decisiones", {"decided": ("Decide",)}) is None
    assert section_key("Done", {"decided": ("Decide",)}) is None
    assert section_key("APRENDIDO") == "learned"
    assert parse_journal("## Hecho\n- hola\n")["done"].items[0].text == "hola"
