"""`companion vault init|check|search` through the real command line entry point."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from companion.cli import main


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    monkeypatch.setenv("COMPANION_HOME", str(h))
    return h


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ei:
        main(list(args))
    out, err = capsys.readouterr()
    code = ei.value.code
    return (0 if code is None else int(code)), out, err


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def test_init_then_check_clean_vault(capsys, tmp_path):
    v = tmp_path / "vault"
    code, out, _ = run(capsys, "vault", "init", str(v))
    assert code == 0 and "created  Home.md" in out and "created  journal/" in out
    code, out, _ = run(capsys, "vault", "init", str(v))
    assert code == 0 and "kept     Home.md" in out
    code, out, _ = run(capsys, "vault", "check", str(v))
    assert code == 0, out
    assert out.strip().splitlines()[-1].startswith("OK:")


def test_init_on_a_file_is_a_usage_error(capsys, tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    code, _, err = run(capsys, "vault", "init", str(f))
    assert code == 2 and err.startswith("error:") and "not a folder" in err


def test_check_exit_status_and_text_report(capsys, tmp_path):
    v = tmp_path / "v"
    run(capsys, "vault", "init", str(v))
    write(v, "Home.md", "# Home\n- [[Listed]]\n")
    write(v, "knowledge/Listed.md", "See [[Nowhere]]\n")
    write(v, "knowledge/Stray.md", "no one links here\n")
    write(v, "journal/2024-01-01.md", "## Done\n- [[Listed]]\n")
    code, out, _ = run(capsys, "vault", "check", str(v))
    assert code == 1
    assert "Errors (1):\n  Broken links (1):\n    knowledge/Listed.md:1  [[Nowhere]]" in out
    assert "Orphans (no note links to them) (1):\n    knowledge/Stray.md" in out
    assert "Not listed in Home.md (1):\n    knowledge/Stray.md" in out
    assert "journal/2024-01-01.md" not in out  # days are never orphans
    assert out.strip().splitlines()[-1] == (
        "Problems: 1 error (1 broken link); 2 warnings (1 orphan, 1 not listed in Home.md)"
    )


def test_orphans_and_unlisted_notes_are_warnings_unless_strict(capsys, tmp_path):
    v = tmp_path / "v"
    run(capsys, "vault", "init", str(v))
    write(v, "Home.md", "# Home\n- [[Listed]]\n")
    write(v, "knowledge/Listed.md", "See [[Unlisted]]\n")
    write(v, "knowledge/Unlisted.md", "linked from Listed only\n")
    write(v, "knowledge/Stray.md", "no one links here\n")
    code, out, _ = run(capsys, "vault", "check", str(v))
    assert code == 0, out
    assert "Warnings (3):" in out and "Errors" not in out
    assert out.strip().splitlines()[-1] == (
        "OK: no errors; 3 warnings (1 orphan, 2 not listed in Home.md)"
    )
    code, out, _ = run(capsys, "vault", "check", str(v), "--strict")
    assert code == 1
    assert out.strip().splitlines()[-1].startswith("Problems (--strict): no errors; 3 warnings")
    code, out, _ = run(capsys, "vault", "check", str(v), "--json", "--strict")
    d = json.loads(out)
    assert code == 1 and d["ok"] is False and d["strict"] is True
    assert d["problems"] == {"errors": 0, "warnings": 3}


def test_missing_anchors_are_errors(capsys, tmp_path):
    v = tmp_path / "v"
    write(v, "Home.md", "- [[A]]\n- [[B]]\n")
    write(v, "A.md", "# Top\nsee [[B#Top]] and [[B#^blk]]\n")
    write(v, "B.md", "# Top\ntext ^blk\n")
    code, out, _ = run(capsys, "vault", "check", str(v))
    assert code == 0, out
    assert out.strip().splitlines()[-1] == "OK: no errors, no warnings"
    write(v, "A.md", "# Top\nsee [[B#Bottom]] and [[B#^nope]]\n")
    code, out, _ = run(capsys, "vault", "check", str(v))
    assert code == 1
    rows = "Missing headings or blocks (2):\n    A.md:2  [[B#Bottom]]\n    A.md:2  [[B#^nope]]"
    assert rows in out
    assert out.strip().splitlines()[-1] == "Problems: 2 errors (2 missing headings or blocks)"


def test_check_json_shape(capsys, tmp_path):
    v = tmp_path / "v"
    write(v, "Home.md", "[[A]] [[Gone|x]] [[Dup]]")
    write(v, "A.md", "# A\n[[Home#Nope]]")
    write(v, "x/Dup.md", "")
    write(v, "y/Dup.md", "")
    write(v, "Lonely.md", "")
    code, out, _ = run(capsys, "vault", "check", str(v), "--json")
    assert code == 1
    d = json.loads(out)
    assert set(d) == {
        "format",
        "vault",
        "ok",
        "strict",
        "problems",
        "severity",
        "counts",
        "home",
        "broken_links",
        "orphans",
        "not_in_home",
        "unreadable",
        "ambiguous_links",
        "missing_anchors",
        "warnings",
        "index",
    }
    assert d["format"] == 2 and d["ok"] is False and d["strict"] is False
    assert d["home"] == "Home.md"
    assert d["vault"] == str(v)
    assert d["severity"] == {
        "broken_links": "error",
        "missing_anchors": "error",
        "unreadable": "error",
        "missing_home": "warning",
        "orphans": "warning",
        "not_in_home": "warning",
        "ambiguous_links": "warning",
        "warnings": "warning",
    }
    assert set(d["counts"]) >= set(d["severity"])
    assert d["broken_links"] == [
        {"source": "Home.md", "line": 1, "target": "Gone", "raw": "[[Gone|x]]", "embed": False}
    ]
    assert d["missing_anchors"] == [
        {"source": "A.md", "line": 2, "target": "Home", "anchor": "Nope"}
    ]
    c = d["counts"]
    assert c["notes"] == 5 and c["links"] == 4 and c["broken_links"] == 1
    assert d["orphans"] == d["not_in_home"] == ["Lonely.md", "y/Dup.md"]
    assert c["orphans"] == 2 and c["not_in_home"] == 2 and c["ambiguous_links"] == 1
    assert c["missing_home"] == 0
    assert d["ambiguous_links"] == [
        {
            "source": "Home.md",
            "line": 1,
            "target": "Dup",
            "resolved": "x/Dup.md",
            "candidates": ["x/Dup.md", "y/Dup.md"],
            "candidate_count": 2,
        }
    ]
    assert d["problems"] == {"errors": 2, "warnings": 5}
    assert set(d["index"]) == {"path", "parsed", "unchanged", "removed", "helper_parsed", "seconds"}
    assert not Path(d["index"]["path"]).is_relative_to(v)


def test_check_missing_dir_is_exit_2(capsys, tmp_path):
    code, _, err = run(capsys, "vault", "check", str(tmp_path / "nope"))
    assert code == 2 and "does not exist" in err
    code, _, err = run(capsys, "vault", "search", str(tmp_path / "nope"), "x")
    assert code == 2 and "does not exist" in err


def test_search_text_and_json(capsys, tmp_path):
    v = tmp_path / "v"
    write(v, "knowledge/Relay.md", "# Relay\n\nThe relay stores only ciphertext.\n")
    write(v, "knowledge/Other.md", "nothing relevant\n")
    code, out, _ = run(capsys, "vault", "search", str(v), "ciphertext")
    assert code == 0
    assert out.strip() == "knowledge/Relay.md:3: The relay stores only ciphertext."
    code, out, _ = run(
        capsys, "vault", "search", str(v), "relay", "stores", "--json", "--limit", "5"
    )
    d = json.loads(out)
    assert d["query"] == "relay stores"
    assert d["results"][0]["path"] == "knowledge/Relay.md" and d["results"][0]["line"] == 3
    assert set(d["results"][0]) == {"path", "line", "snippet", "score"}
    code, out, _ = run(capsys, "vault", "search", str(v), "relay -ciphertext")  # -word: excluded
    assert code == 0 and out == ""
    code, out, err = run(capsys, "vault", "search", str(v), "unmatched")
    assert code == 0 and out == "" and "No matches" in err
    code, _, err = run(capsys, "vault", "search", str(v), "(*)")
    assert code == 2 and "nothing to search" in err


def test_search_sees_edits_without_rebuilding(capsys, tmp_path):
    v = tmp_path / "v"
    write(v, "a.md", "alpha\n")
    run(capsys, "vault", "search", str(v), "alpha")
    write(v, "a.md", "omega\n")
    code, out, _ = run(capsys, "vault", "search", str(v), "omega")
    assert out.startswith("a.md:1:")


@pytest.mark.parametrize("sub", ["init", "check", "search"])
def test_help_has_examples(capsys, sub):
    code, out, _ = run(capsys, "vault", sub, "--help")
    assert code == 0 and "Example:" in out and "companion vault " + sub in out


def test_check_uses_the_configured_size_cap(capsys, tmp_path, home):
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text("[vault]\nmax_file_mb = 0.001\n")
    v = tmp_path / "v"
    write(v, "Home.md", "[[Big]]")
    write(v, "Big.md", "hugeword " * 400)
    time.sleep(0.01)
    code, out, _ = run(capsys, "vault", "check", str(v), "--json")
    d = json.loads(out)
    assert d["broken_links"] == []  # the note exists; it is only not read
    assert any(w["path"] == "Big.md" and "cap" in w["message"] for w in d["warnings"])
    code, out, err = run(capsys, "vault", "search", str(v), "hugeword")
    assert out == "" and "No matches" in err


def test_many_ambiguous_links_are_grouped_and_their_candidates_capped(capsys, tmp_path):
    v = tmp_path / "v"
    write(v, "Home.md", "- [[a/Hub]]\n")
    for i in range(8):
        write(v, f"f{i}/Shared.md", "[[Shared]] [[Hub]]\n")
    write(v, "a/Hub.md", "")
    write(v, "b/Hub.md", "")
    code, out, _ = run(capsys, "vault", "check", str(v), "--json")
    d = json.loads(out)
    assert code == 0 and d["counts"]["ambiguous_links"] == 16  # 8 [[Hub]], 8 [[Shared]]
    first = d["ambiguous_links"][0]
    assert first["candidates"] == ["a/Hub.md", "b/Hub.md"] and first["candidate_count"] == 2
    write(v, "Home.md", "- [[a/Hub]] [[Shared]]\n")
    code, out, _ = run(capsys, "vault", "check", str(v), "--json")
    shared = [a for a in json.loads(out)["ambiguous_links"] if a["target"] == "Shared"]
    assert shared[0]["candidate_count"] == 8 and len(shared[0]["candidates"]) == 5
    code, out, _ = run(capsys, "vault", "check", str(v))
    assert "Ambiguous links (several files match; each link reaches the one shown) (17):" in out
    assert (
        "[[Hub]] -> a/Hub.md (also b/Hub.md): f0/Shared.md:1, f1/Shared.md:1, f2/Shared.md:1 "
        "and 5 more" in out
    )
    assert (
        "[[Shared]] -> f0/Shared.md (also f1/Shared.md, f2/Shared.md, f3/Shared.md, "
        "f4/Shared.md and 3 more): Home.md:1" in out
    )


def test_missing_home_is_a_warning(capsys, tmp_path):
    v = tmp_path / "v"  # an ordinary Obsidian vault: no Home.md
    write(v, "a.md", "[[b]]")
    write(v, "b.md", "[[a]]")
    code, out, _ = run(capsys, "vault", "check", str(v))
    assert code == 0 and "Home.md is missing" in out
    assert "Not listed in Home.md" not in out
    code, out, _ = run(capsys, "vault", "check", str(v), "--json")
    d = json.loads(out)
    assert d["home"] is None and d["ok"] is True and d["not_in_home"] == []
    assert d["counts"]["missing_home"] == 1 and d["problems"] == {"errors": 0, "warnings": 1}
    assert run(capsys, "vault", "check", str(v), "--strict")[0] == 1


def test_check_help_documents_the_exit_statuses(capsys):
    code, out, _ = run(capsys, "vault", "check", "--help")
    text = " ".join(out.split())
    assert code == 0
    assert "Exit status: 0 when there is no error (warnings allowed)" in text
    assert "1 when there is an error (with --strict, also a warning)" in text
    assert "2 for a bad DIRECTORY" in text and "--strict" in text


def test_exit_statuses_in_a_real_process(tmp_path):
    from tests.conftest import run_companion

    v = tmp_path / "v"
    assert run_companion("vault", "init", str(v)).returncode == 0
    assert run_companion("vault", "check", str(v)).returncode == 0
    write(v, "knowledge/Orphan.md", "alone")
    proc = run_companion("vault", "check", str(v), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["orphans"] == ["knowledge/Orphan.md"]
    assert run_companion("vault", "check", str(v), "--strict").returncode == 1
    write(v, "knowledge/Orphan.md", "[[Nowhere]]")
    assert run_companion("vault", "check", str(v)).returncode == 1
    proc = run_companion("vault", "check", str(tmp_path / "missing"))
    assert (
        proc.returncode == 2 and proc.stderr.startswith("error:") and "Traceback" not in proc.stderr
    )
