"""Issue 16, item 6: what the dream names and writes can be read and resolved by the vault's own
tools: titles without link-breaking characters, an H1 on new notes with the title as written
(":" kept), the vault's own journal tag, provenance without absolute paths."""

from __future__ import annotations

import datetime as dt

from companion.dream.topics import clean_title, derive_title, file_title
from companion.dream.verify import verify_vault
from companion.vault import Vault, run_check
from tests.fixtures.dream import NOW
from tests.fixtures.mini import Mini, journal


def test_time_of_day_is_not_cut_at_its_colon() -> None:
    assert derive_title("the NAS is called atlas and wakes up at 01:30.") == (
        "The NAS is called atlas and wakes up at 01:30"
    )
    assert file_title("The NAS is called atlas and wakes up at 01:30") == (
        "The NAS is called atlas and wakes up at 01.30"
    )


def test_leading_phrase_before_colon_space_is_the_title() -> None:
    assert derive_title("Backups on the NAS: restic at 03:00 every night") == "Backups on the NAS"


def test_backticks_never_reach_a_file_name() -> None:
    assert "`" not in clean_title("PostgreSQL 16 necesita `pg_upgrade` con los binarios")
    assert file_title("PostgreSQL 16 necesita `pg_upgrade` con los binarios") == (
        "PostgreSQL 16 necesita pg_upgrade con los binarios"
    )


def test_new_notes_resolve_have_an_h1_and_verify_passes(tmp_path):
    w = Mini(tmp_path)
    w.note("Home.md", "# Home\n")
    w.note(
        "journal/2026-11-27.md",
        journal(
            "2026-11-27",
            {
                "Aprendido": [
                    "PostgreSQL 16 necesita `pg_upgrade` con los binarios de la versión vieja.",
                    "El NAS despierta a las 01:30.",
                ]
            },
            tag="diario",
        ),
    )
    before = w.files()
    w.dream()
    made = sorted(p for p in w.new_notes(before) if p.startswith("knowledge/"))
    assert len(made) == 2 and not any("`" in p or ":" in p for p in made)
    heads = [w.read(p).split("---\n", 2)[2].lstrip("\n").split("\n", 1)[0] for p in made]
    # named by their topics, never by the sentence cut short (issue 40)
    assert sorted(heads) == ["# NAS", "# PostgreSQL"]
    check = run_check(Vault(w.vault), tmp_path / "check-data").to_dict()
    assert check["broken_links"] == [], check["broken_links"]
    result = verify_vault(w.vault)
    assert result.ok, result.to_dict()
    today = w.read("journal/2026-11-28.md")
    assert today.startswith("---\ntags: [diario]\n")


def test_provenance_names_transcripts_without_the_home_path(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    w = Mini(tmp_path, transcript_dir=home / "logs")
    w.say("user", "remember: the staging box is called kestrel.", NOW - dt.timedelta(hours=3))
    rep = w.dream()
    written = "\n".join(w.read(p) for p in w.files() if p.startswith("knowledge/"))
    assert "src: jsonl:~/logs/agent.jsonl#" in written
    assert str(home) not in written
    assert str(home) not in str([c.provenance for c in rep.run_changes])
    assert verify_vault(w.vault).ok
