"""The vault model: layout, notes, Obsidian links, the link graph and the full-text index.

Public API (imported on first use, so `import companion.vault` stays cheap for every command):

    parse_note(text, path) -> Note               companion.vault.note
    Vault(root).notes() / .resolve_link(t, src)  companion.vault.vault
    VaultIndex(vault, data_dir).update() / .graph() / .search(q) / .similar(text)
    init_vault(root), area_of(path), journal_path(root, day), journal_date(path)
    parse_journal(text) -> {key: JournalSection}
    run_check(vault, data_dir) -> CheckReport
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Note": "note",
    "Link": "note",
    "Heading": "note",
    "parse_note": "note",
    "Vault": "vault",
    "LinkResolver": "links",
    "LinkGraph": "graph",
    "NoteMeta": "graph",
    "build_graph": "graph",
    "VaultIndex": "index",
    "SearchHit": "index",
    "SimilarHit": "index",
    "init_vault": "layout",
    "area_of": "layout",
    "journal_path": "layout",
    "journal_date": "layout",
    "HOME": "layout",
    "parse_journal": "journal",
    "JournalItem": "journal",
    "JournalSection": "journal",
    "SECTION_NAMES": "journal",
    "run_check": "check",
    "CheckReport": "check",
    "walk_vault": "walk",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'companion.vault' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"companion.vault.{module}"), name)
    globals()[name] = value
    return value
