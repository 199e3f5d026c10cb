"""Ignore rules: defaults, the vault's .companionignore, config patterns, reloading."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from companion.sync.local.ignore import IGNORE_FILE, IgnoreRules


@pytest.mark.parametrize(
    "path",
    [
        ".obsidian/workspace.json",
        ".obsidian/workspace-mobile.json",
        ".obsidian/workspace",
        ".obsidian/cache",
        ".trash/old note.md",
        "sub/.trash/x.md",
        ".DS_Store",
        "deep/folder/.DS_Store",
        "Thumbs.db",
        "desktop.ini",
        "~$report.docx",
        "note.md.swp",
        ".note.md.swp",
        "draft.md~",
        ".git/config",
        "a/.companion-tmp-1234abcd",
        "._resourcefork",
    ],
)
def test_defaults_ignore_obsidian_state_and_os_junk(tmp_path: Path, path: str) -> None:
    assert IgnoreRules(tmp_path).is_ignored(path)


@pytest.mark.parametrize(
    "path",
    [
        "Home.md",
        "knowledge/topic.md",
        ".companionignore",
        ".companion/dreams/2024-05-01.json",
        ".obsidian/app.json",
        ".obsidian/plugins/x/data.json",
        ".obsidian/workspaces.json",  # named layouts saved on purpose (Workspaces plugin)
        ".obsidian/workspace.json.bak",
        "workspace.json",
        "journal/2024-05-01.md",
        "trash.md",
    ],
)
def test_defaults_keep_notes_and_companion_files(tmp_path: Path, path: str) -> None:
    assert not IgnoreRules(tmp_path).is_ignored(path)


def test_folder_patterns_need_is_dir(tmp_path: Path) -> None:
    rules = IgnoreRules(tmp_path)
    assert rules.is_ignored(".trash", is_dir=True)
    assert not rules.is_ignored(".trash")  # a file named .trash is not the folder


def test_vault_file_and_config_patterns(tmp_path: Path) -> None:
    (tmp_path / IGNORE_FILE).write_text("# comment\n\nprivate/\n*.pdf\n!keep.pdf\n")
    rules = IgnoreRules(tmp_path, extra=["scratch.md"])
    assert rules.is_ignored("private/a.md")
    assert rules.is_ignored("x/book.pdf")
    assert not rules.is_ignored("keep.pdf")
    assert rules.is_ignored("scratch.md")
    assert not rules.is_ignored("private.md")


def test_vault_file_can_reinclude_a_default(tmp_path: Path) -> None:
    (tmp_path / IGNORE_FILE).write_text("!.obsidian/workspace.json\n")
    rules = IgnoreRules(tmp_path)
    assert not rules.is_ignored(".obsidian/workspace.json")
    assert rules.is_ignored(".obsidian/workspace-mobile.json")


def test_reload_when_companionignore_changes(tmp_path: Path) -> None:
    f = tmp_path / IGNORE_FILE
    rules = IgnoreRules(tmp_path)
    assert not rules.is_ignored("drafts/x.md")
    assert rules.reload_if_changed() is False
    f.write_text("drafts/\n")
    assert rules.reload_if_changed() is True
    assert rules.is_ignored("drafts/x.md")
    f.write_text("drafts/\nold/\n")
    os.utime(f, ns=(1, 1))  # even with an odd mtime, the size changed
    assert rules.reload_if_changed() is True
    assert rules.is_ignored("old/y.md")
    f.unlink()
    assert rules.reload_if_changed() is True
    assert not rules.is_ignored("drafts/x.md")


def test_invalid_pattern_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / IGNORE_FILE).write_text("[z-a]\n*.log\n")
    monkeypatch.setattr(logging.getLogger("companion"), "propagate", True)
    with caplog.at_level(logging.WARNING, logger="companion"):
        rules = IgnoreRules(tmp_path)
    assert rules.is_ignored("x.log")
    assert "invalid pattern" in caplog.text
