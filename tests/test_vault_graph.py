"""The link graph: broken links, orphans, notes not in Home.md, anchors, ambiguity."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

from companion.vault.index import VaultIndex
from companion.vault.vault import Vault

ROOT = Path(__file__).resolve().parents[1]


def make_vault(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    return root


def load_gen():
    spec = importlib.util.spec_from_file_location("gen_vault", ROOT / "bench" / "gen_vault.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gen_vault"] = mod
    spec.loader.exec_module(mod)
    return mod


FILES = {
    "Home.md": "# Home\n- [[Alpha]]\n- [[Beta|b]]\n- [[Gone]]\n",
    "knowledge/Alpha.md": "# Alpha\n## Setup\nText ^blk1\n"
    "See [[Beta#Usage]] and [[Beta#Nope]] and [[Beta#^zzz]]\n"
    "and [[#Setup]] and [[Alpha]] and ![[pic.png]] and ![[missing.png]]\n",
    "knowledge/Beta.md": "# Beta\n## Usage\nBack to [[Alpha#^blk1]] and [[alpha#setup]]\n",
    "knowledge/Lonely.md": "Nobody links here. [[Alpha]]\n",
    "knowledge/Self.md": "Only myself: [[Self]] [[#Top]]\n",
    "projects/Unlisted.md": "linked from a day only\n",
    "journal/2024-01-01.md": "## Done\n- worked on [[Unlisted]]\n",
    "pic.png": b"\x89PNG",
}


def test_graph_problems(tmp_path):
    g = Vault(make_vault(tmp_path, FILES)).graph()
    assert g.home == "Home.md"
    assert [(b.source, b.line, b.target, b.embed) for b in g.broken] == [
        ("Home.md", 4, "Gone", False),
        ("knowledge/Alpha.md", 5, "missing.png", True),
    ]
    # Home.md and journal days are never orphans; self links do not count
    assert g.orphans() == ["knowledge/Lonely.md", "knowledge/Self.md"]
    assert g.not_in_home() == ["knowledge/Lonely.md", "knowledge/Self.md", "projects/Unlisted.md"]
    assert sorted((m.source, m.anchor) for m in g.missing_anchors) == [
        ("knowledge/Alpha.md", "Nope"),
        ("knowledge/Alpha.md", "^zzz"),
        ("knowledge/Self.md", "Top"),
    ]
    assert g.backlinks("knowledge/Alpha.md") == {
        "Home.md",
        "knowledge/Beta.md",
        "knowledge/Lonely.md",
    }
    assert g.outbound["knowledge/Alpha.md"] == {"knowledge/Beta.md", "pic.png"}
    assert g.ambiguous == []


def test_no_home_lists_every_note_as_not_in_home(tmp_path):
    g = Vault(make_vault(tmp_path, {"a.md": "[[b]]", "b.md": "[[a]]"})).graph()
    assert g.home is None
    assert g.not_in_home() == ["a.md", "b.md"]
    assert g.orphans() == []


def test_ambiguous_links_resolve_and_are_reported(tmp_path):
    files = {"Home.md": "[[Dup]] [[x/Dup]]", "x/Dup.md": "", "yy/Dup.md": "[[Dup]]"}
    g = Vault(make_vault(tmp_path, files)).graph()
    assert g.broken == []
    amb = [(a.source, a.resolved) for a in g.ambiguous]
    assert amb == [("Home.md", "x/Dup.md"), ("yy/Dup.md", "yy/Dup.md")]  # own folder wins


def test_index_graph_equals_direct_graph_on_a_generated_vault(tmp_path):
    gen = load_gen()
    root = tmp_path / "v"
    stats = gen.generate_vault(150, root, seed=3)
    assert stats.notes == 150
    time.sleep(0.25)  # past the racy window: the warm update must read nothing
    direct = Vault(root).graph()
    with VaultIndex(Vault(root), tmp_path / "data") as idx:
        idx.update()
        cold = idx.graph()
    with VaultIndex(Vault(root), tmp_path / "data") as idx:
        st = idx.update()
        warm = idx.graph()  # served from the stored graph
    assert st.parsed == 0
    for g in (cold, warm):
        assert sorted(g.broken) == sorted(direct.broken)
        assert g.orphans() == direct.orphans()
        assert g.not_in_home() == direct.not_in_home()
        assert sorted(g.missing_anchors) == sorted(direct.missing_anchors)
        assert g.outbound == direct.outbound
        assert g.inbound == direct.inbound
        assert g.link_count == direct.link_count
    assert len(direct.broken) > 0 and direct.link_count > 500


def test_benchmark_script_runs_and_prints_a_table(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_HOME", str(tmp_path / "home"))
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_vault.py"), "--notes", "120", "--runs", "1"],
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    ).stdout
    assert "| measurement | median wall |" in out
    for row in ("stat-walk floor", "check, cold", "check, warm", "search, per query", "similar"):
        assert f"| {row}" in out


def test_check_benchmark_counts_what_its_vault_plants(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_HOME", str(tmp_path / "home"))
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "bench_vault_check.py"),
            *("--folders", "2", "--notes", "30", "--runs", "1"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr  # 1: counts differ from the plan
    out = proc.stdout
    for row in ("stat-walk floor", "check, cold", "check, warm", "check --json, warm"):
        assert f"| {row}" in out
    assert "Planted: 61 notes" in out and "MISMATCH" not in out


def test_cold_build_with_a_helper_process_matches_one_process(tmp_path, monkeypatch):
    import companion.vault.parse as parse_mod

    gen = load_gen()
    root = tmp_path / "v"
    gen.generate_vault(150, root, seed=5)
    (root / "Binary.md").write_bytes(b"\x00\x01")
    with VaultIndex(Vault(root), tmp_path / "serial") as idx:
        idx.update()
        serial = (idx.metas, sorted(idx.issues), idx.search("docker"))
    monkeypatch.setattr(parse_mod, "PARALLEL_MIN_NOTES", 10)
    with VaultIndex(Vault(root), tmp_path / "parallel") as idx:
        st = idx.update()
        assert st.parsed == 151 and st.helper_parsed > 50  # the helper process did its share
        parallel = (idx.metas, sorted(idx.issues), idx.search("docker"))
    assert parallel == serial
    assert serial[1] and serial[1][0].path == "Binary.md"
