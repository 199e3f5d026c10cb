"""Obsidian link resolution (companion.vault.links) and Vault.resolve_link on real folders."""

from __future__ import annotations

import unicodedata

import pytest

from companion.vault.links import LinkResolver
from companion.vault.vault import Vault

PATHS = [
    "Home.md",
    "Note.md",
    "knowledge/Docker.md",
    "knowledge/infra/Compose.md",
    "projects/Compose.md",
    "a/b/Twin.md",
    "zzzz/Twin.md",
    "Case.md",
    "case.md",
    "attachments/Diagram 1.png",
    "v1.2 release.md",
    "Café.md",
]


@pytest.fixture()
def resolver() -> LinkResolver:
    return LinkResolver(PATHS)


@pytest.mark.parametrize(
    ("target", "source", "expected"),
    [
        ("Docker", "Home.md", "knowledge/Docker.md"),  # unique name anywhere
        ("docker", "Home.md", "knowledge/Docker.md"),  # case-insensitive
        ("DOCKER.MD", "Home.md", "knowledge/Docker.md"),  # .md optional, any case
        ("Docker.md", "x/y.md", "knowledge/Docker.md"),
        ("knowledge/Docker", "Home.md", "knowledge/Docker.md"),  # vault path
        ("/knowledge/Docker", "Home.md", "knowledge/Docker.md"),  # leading slash = root
        ("infra/Compose", "Home.md", "knowledge/infra/Compose.md"),  # path suffix
        ("projects/Compose", "Home.md", "projects/Compose.md"),
        ("Diagram 1.png", "Home.md", "attachments/Diagram 1.png"),  # attachment keeps its ext
        ("v1.2 release", "Home.md", "v1.2 release.md"),  # a dot in the name is not an ext
        ("./Compose", "projects/Plan.md", "projects/Compose.md"),  # relative to the note
        ("../Note", "knowledge/Docker.md", "Note.md"),
        ("Missing", "Home.md", None),
        ("Diagram 1", "Home.md", None),  # non-md files need their extension
        ("../../outside", "knowledge/Docker.md", None),
        ("knowledge/", "Home.md", None),
    ],
)
def test_resolution(resolver, target, source, expected):
    assert resolver.resolve(target, source) == expected


def test_exact_spelling_wins_among_case_variants(resolver):
    assert resolver.resolve("Case", "Home.md") == "Case.md"
    assert resolver.resolve("case", "Home.md") == "case.md"


def test_ambiguous_name_prefers_own_folder_then_shortest_path(resolver):
    # Two Compose.md: from projects/ the sibling wins; elsewhere the shortest path.
    assert resolver.resolve("Compose", "projects/Plan.md") == "projects/Compose.md"
    assert resolver.resolve("Compose", "knowledge/infra/X.md") == "knowledge/infra/Compose.md"
    res = resolver.resolve_full("Compose", "Home.md")
    assert res.path == "projects/Compose.md"  # 19 chars < 26 chars
    assert res.ambiguous and set(res.candidates) == {
        "projects/Compose.md",
        "knowledge/infra/Compose.md",
    }
    # the shorter string wins even with more folders (a/b/Twin.md over zzzz/Twin.md)
    assert resolver.resolve("Twin", "Home.md") == "a/b/Twin.md"
    # an ancestor folder counts for nothing, only the note's own folder
    assert resolver.resolve("Twin", "zzzz/deep/N.md") == "a/b/Twin.md"
    assert resolver.resolve("Twin", "zzzz/N.md") == "zzzz/Twin.md"


def test_exact_vault_path_beats_the_notes_own_folder():
    r = LinkResolver(["Note.md", "sub/Note.md"])
    assert r.resolve("Note", "sub/Other.md") == "Note.md"
    assert not r.resolve_full("Note", "sub/Other.md").ambiguous


def test_unicode_normalisation(resolver):
    nfd = unicodedata.normalize("NFD", "Café")
    assert resolver.resolve(nfd, "Home.md") == "Café.md"
    r = LinkResolver([unicodedata.normalize("NFD", "Crème.md")])
    assert r.resolve("Crème", "") == unicodedata.normalize("NFD", "Crème.md")


def test_vault_resolve_link_on_disk(tmp_path):
    (tmp_path / "knowledge").mkdir()
    (tmp_path / "knowledge" / "Rust Notes.md").write_text("x")
    (tmp_path / "img.PNG").write_bytes(b"\x89PNG")
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "Hidden.md").write_text("x")
    v = Vault(tmp_path)
    assert v.resolve_link("rust notes", "Home.md") == "knowledge/Rust Notes.md"
    assert v.resolve_link("img.png", "Home.md") == "img.PNG"
    assert v.resolve_link("Hidden", "Home.md") is None  # .obsidian/ is not part of the vault
