"""The full-text index: incremental updates, where it lives, recovery, search and similarity."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.errors import InputError
from companion.vault.index import VaultIndex, index_path
from companion.vault.query import fts_query
from companion.vault.vault import Vault

NOTES = {
    "Home.md": "# Home\n- [[Docker networking]]\n- [[Decisión de arquitectura]]\n- [[Bread]]\n",
    "knowledge/Docker networking.md": (
        "---\ntags: [infra]\n---\n# Docker networking\n\nBridge networks isolate containers.\n"
        "Use docker compose to declare a network per project.\nPort publishing maps host ports.\n"
    ),
    "knowledge/Decisión de arquitectura.md": (
        "# Decisión de arquitectura\n\nElegimos SQLite con FTS5 para la búsqueda local.\n"
        "La decisión evita un servidor externo.\n"
    ),
    "knowledge/Bread.md": "# Bread\n\nSourdough needs a starter, flour, water and patience.\n",
}


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture()
def vault(tmp_path) -> Vault:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        write(root, rel, text)
    past = time.time() - 100
    for p in root.rglob("*.md"):
        os.utime(p, (past, past))
    time.sleep(0.15)  # ctime is now: let the racy window pass
    return Vault(root)


@pytest.fixture()
def data(tmp_path) -> Path:
    return tmp_path / "data"


def test_incremental_update(vault, data):
    with VaultIndex(vault, data) as idx:
        first = idx.update()
        assert (first.notes, first.parsed, first.unchanged) == (4, 4, 0)
        second = idx.update()
        assert (second.parsed, second.unchanged, second.removed) == (0, 4, 0)
        # an edit that keeps the size and the mtime is still seen (ctime moved)
        p = vault.root / "knowledge" / "Bread.md"
        st = p.stat()
        p.write_text(p.read_text().replace("starter", "STARTER"), encoding="utf-8")
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns
        third = idx.update()
        assert third.parsed == 1
        assert [h.path for h in idx.search("STARTER")] == ["knowledge/Bread.md"]
        time.sleep(0.15)
        idx.update()  # may read Bread.md once more (racy), then it is settled
        # a note removed and one added
        (vault.root / "knowledge" / "Docker networking.md").unlink()
        write(vault.root, "projects/New.md", "brand new note about kayaks")
        fourth = idx.update()
        assert (fourth.parsed, fourth.removed, fourth.unchanged) == (1, 1, 3)
        assert [h.path for h in idx.search("kayaks")] == ["projects/New.md"]
        assert idx.search("bridge") == []


def test_racy_notes_are_read_again(vault, data):
    with VaultIndex(vault, data) as idx:
        idx.update()
        p = write(vault.root, "knowledge/Bread.md", "changed")
        future = time.time() + 30  # a timestamp after the read: the file may still change
        os.utime(p, (future, future))
        assert idx.update().parsed == 1
        assert idx.update().parsed == 1  # racy: read again, although nothing changed
        past = time.time() - 30
        os.utime(p, (past, past))
        assert idx.update().parsed == 1
        time.sleep(0.15)
        assert idx.update().parsed in (0, 1)  # once more if the last read was racy (ctime)
        assert idx.update().parsed == 0


def test_index_lives_under_the_data_dir_and_the_vault_is_not_written(vault, data):
    before = {
        p: (p.read_bytes(), p.stat().st_mtime_ns) for p in vault.root.rglob("*") if p.is_file()
    }
    with VaultIndex(vault, data) as idx:
        idx.update()
        idx.graph()
        idx.search("docker")
        assert idx.path == index_path(vault.root, data)
        assert idx.path.parent == data / "index" and idx.path.exists()
    after = {
        p: (p.read_bytes(), p.stat().st_mtime_ns) for p in vault.root.rglob("*") if p.is_file()
    }
    assert after == before
    assert not any(p.suffix in (".sqlite", ".db") for p in vault.root.rglob("*"))


def test_data_dir_inside_the_vault_is_refused(vault):
    with pytest.raises(InputError, match="inside the vault"):
        VaultIndex(vault, vault.root / ".companion" / "data")


def test_corrupt_index_is_rebuilt(vault, data):
    path = index_path(vault.root, data)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 100)
    with VaultIndex(vault, data) as idx:
        assert idx.update().parsed == 4
        assert idx.search("sourdough")[0].path == "knowledge/Bread.md"


def test_outdated_index_version_is_rebuilt(vault, data):
    with VaultIndex(vault, data) as idx:
        idx.update()
    db = sqlite3.connect(index_path(vault.root, data))
    db.execute("UPDATE info SET value = 'old' WHERE key = 'version'")
    db.commit()
    db.close()
    with VaultIndex(vault, data) as idx:
        assert idx.update().parsed == 4


def test_unusable_data_dir_falls_back_to_a_temporary_index(vault, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data folder should be")
    with VaultIndex(vault, blocker) as idx:
        assert idx.update().parsed == 4
        assert idx.warnings and "temporary" in idx.warnings[0]
        assert idx.search("docker")


def test_graph_is_refreshed_when_only_an_attachment_appears(vault, data):
    write(vault.root, "knowledge/Bread.md", "![[loaf.jpg]]")
    time.sleep(0.15)
    with VaultIndex(vault, data) as idx:
        idx.update()
        assert [b.target for b in idx.graph().broken] == ["loaf.jpg"]
        assert idx.update().parsed == 0
        (vault.root / "loaf.jpg").write_bytes(b"\xff\xd8")
        assert idx.update().parsed == 0
        assert idx.graph().broken == []


def test_search_words_phrases_prefix_or_not_and_accents(vault, data):
    with VaultIndex(vault, data) as idx:
        idx.update()
        paths = lambda q: [h.path for h in idx.search(q)]  # noqa: E731
        assert paths("compose network") == ["knowledge/Docker networking.md"]
        assert paths('"docker compose"') == ["knowledge/Docker networking.md"]
        assert paths('"compose docker"') == []
        assert paths("sourd*") == ["knowledge/Bread.md"]
        assert sorted(paths("sourdough OR bridge")) == [
            "knowledge/Bread.md",
            "knowledge/Docker networking.md",
        ]
        assert paths("docker -bridge") == ["Home.md"]
        assert paths("docker NOT bridge") == ["Home.md"]
        # accents and case do not matter
        assert "knowledge/Decisión de arquitectura.md" in paths("DECISION busqueda")
        hit = idx.search("port publishing")[0]
        assert (hit.path, hit.line) == ("knowledge/Docker networking.md", 8)
        assert hit.snippet == "Port publishing maps host ports."
        assert hit.score > 0
        # the title (file name) is searchable and ranks first
        assert paths("bread")[0] == "knowledge/Bread.md"
        assert len(idx.search("docker", limit=1)) == 1


@pytest.mark.parametrize(
    "query", ['"', "AND", "OR", "NOT x", "a)", "(", "col:val", "^x", "*", "NEAR(a b)", "-"]
)
def test_odd_queries_never_crash(vault, data, query):
    with VaultIndex(vault, data) as idx:
        idx.update()
        try:
            idx.search(query)
        except InputError as exc:
            assert "nothing to search" in str(exc)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_fts_query_is_always_valid_fts5(text):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(a, tokenize = 'unicode61 remove_diacritics 2')")
    db.execute("INSERT INTO t VALUES ('hello world')")
    expr = fts_query(text)
    if expr:
        db.execute("SELECT * FROM t WHERE t MATCH ?", (expr,)).fetchall()


def test_similar_finds_the_note_on_the_same_topic(vault, data):
    with VaultIndex(vault, data) as idx:
        idx.update()
        text = "How do containers talk to each other? A docker bridge network and compose files."
        hits = idx.similar(text, limit=3)
        assert hits[0].path == "knowledge/Docker networking.md"
        spanish = idx.similar("la búsqueda local con SQLite", limit=2)
        assert spanish[0].path == "knowledge/Decisión de arquitectura.md"
        assert all(
            h.path != "knowledge/Bread.md" for h in idx.similar(text, exclude="knowledge/Bread.md")
        )
        excluded = idx.similar(text, exclude="knowledge/Docker networking.md")
        assert "knowledge/Docker networking.md" not in [h.path for h in excluded]
        assert idx.similar("the and of") == []
        assert idx.similar("zzzqqq unknownword") == []


def test_two_indexes_one_after_the_other_share_the_database(vault, data):
    with VaultIndex(vault, data) as a:
        a.update()
    with VaultIndex(vault, data) as b:
        assert b.update().parsed == 0
        assert b.paths() == sorted(NOTES)


def test_links_only_update_then_full_text_without_parsing_again(vault, data):
    with VaultIndex(vault, data) as idx:
        first = idx.update(fulltext=False)  # what `vault check` does
        assert first.parsed == 4
        assert idx.note_count() == 0 and idx.search("sourdough") == []
        assert [b.target for b in idx.graph().broken] == []
        second = idx.update()  # what `vault search` does: adds the text, parses nothing
        assert (second.parsed, second.unchanged) == (0, 4)
        assert idx.note_count() == 4
        assert idx.search("sourdough")[0].path == "knowledge/Bread.md"
        # a changed note seen by a links-only update leaves the full text until next time
        write(vault.root, "knowledge/Bread.md", "rye loaf")
        idx.update(fulltext=False)
        assert idx.search("sourdough") == [] and idx.search("rye") == []
        idx.update()
        assert idx.search("rye")[0].path == "knowledge/Bread.md"
