"""`companion dream` on the command line: the contract scripts and the desktop app rely on."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from companion.cli import cli
from companion.dream.cli import parse_window
from companion.errors import InputError
from companion.paths import device_paths
from tests.conftest import run_companion
from tests.fixtures.dream import SECRET, build, snapshot, write_config

NOW = "2026-11-28T02:00"


@pytest.fixture
def fx(tmp_path):
    fixture = build(tmp_path / "fx")
    write_config(device_paths().config_file, fixture)
    return fixture


def invoke(*args: str):
    return CliRunner().invoke(cli, ["dream", *args], catch_exceptions=False)


def test_help_has_examples():
    res = invoke("--help")
    assert res.exit_code == 0 and "Example" in res.output and "--undo DATE" in res.output


def test_dry_run_prints_a_diff_and_writes_nothing(fx):
    before = snapshot(fx.vault)
    res = invoke(str(fx.vault), "--now", NOW, "--dry-run", "--explain")
    assert res.exit_code == 0, res.output
    assert "+++ b/knowledge/Raspberry Pi setup.md" in res.output
    assert "Dry run: nothing was written." in res.output
    assert "[withheld: it holds a secret]" in res.output and SECRET not in res.output
    assert "[promoted]" in res.output and "[skipped: junk]" in res.output
    assert snapshot(fx.vault) == before


def test_json_report_then_nothing_changed(fx):
    res = invoke(str(fx.vault), "--now", NOW, "--json")
    data = json.loads(res.output)
    assert data["date"] == "2026-11-28" and data["nothing_changed"] is False
    assert data["counts"]["consolidated"] >= 5
    again = json.loads(invoke(str(fx.vault), "--now", NOW, "--json").output)
    assert again["nothing_changed"] is True and again["run_changes"] == []
    plain = invoke(str(fx.vault), "--now", NOW)
    assert "Nothing changed." in plain.output


def test_verify_passes_then_fails_after_tampering(fx):
    invoke(str(fx.vault), "--now", NOW)
    ok = invoke(str(fx.vault), "--verify")
    assert ok.exit_code == 0 and "0 unresolved" in ok.output
    # the dream's own line whose source no longer says it (issue 40: a line the person
    # changed in the note is theirs, "edited by a person", not a failure)
    source = fx.vault / "journal/2026-11-26.md"
    text = source.read_text(encoding="utf-8")
    source.write_text(
        text.replace("fails on NFS shares", "works great on NFS shares"), encoding="utf-8"
    )
    bad = invoke(str(fx.vault), "--verify", "--json")
    assert bad.exit_code == 1
    problems = json.loads(bad.output)["problems"]
    unresolved = [p for p in problems if p["status"] == "unresolved"]
    assert [p["note"] for p in unresolved] == ["knowledge/SQLite.md"]
    source.write_text(text, encoding="utf-8")
    note = fx.vault / "knowledge/SQLite.md"
    note.write_text(
        note.read_text(encoding="utf-8").replace("fails on NFS shares", "works on NFS shares"),
        encoding="utf-8",
    )
    edited = invoke(str(fx.vault), "--verify")
    assert edited.exit_code == 0 and "edited by a person" in edited.output


def test_undo_via_cli(fx):
    before = snapshot(fx.vault)
    invoke(str(fx.vault), "--now", NOW)
    res = invoke(str(fx.vault), "--undo", "2026-11-28")
    assert res.exit_code == 0 and "Undid the dream of 2026-11-28" in res.output
    assert {k: v for k, v in snapshot(fx.vault).items() if not k.startswith(".companion")} == before


def test_window_and_now_parsing():
    assert parse_window("48h") == 48 and parse_window("36") == 36 and parse_window("2d") == 48
    with pytest.raises(InputError):
        parse_window("soon")


def test_bad_input_exits_2_with_one_line(fx, tmp_path):
    for args in (
        ["--window", "12h"],
        ["--now", "yesterday"],
        ["--verify", "--undo", "x"],
        ["--undo", "28/11/2026"],
    ):
        res = run_companion("dream", str(fx.vault), *args)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.startswith("error: ") and "Traceback" not in res.stderr
    missing = run_companion("dream", str(tmp_path / "nope"))
    assert missing.returncode == 2


def test_subprocess_dream_and_verify(fx):
    res = run_companion("dream", str(fx.vault), "--now", NOW)
    assert res.returncode == 0, res.stderr
    assert "Report:" in res.stdout
    v = run_companion("dream", str(fx.vault), "--verify")
    assert v.returncode == 0 and "0 unresolved" in v.stdout


def test_engine_never_imports_qt():
    import subprocess
    import sys

    code = (
        "import sys, companion.dream.engine, companion.dream.cli, companion.dream.schedule, "
        "companion.dream.undo, companion.dream.verify; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_verify_and_vault_check_fail_on_a_link_gone_not_on_an_orphan(fx):
    invoke(str(fx.vault), "--now", NOW)
    home = (fx.vault / "Home.md").read_text(encoding="utf-8")
    listed = "knowledge/CI.md"  # a new note named by its topic (issue 40)
    assert "<!-- dream:begin index -->" in home and "[[CI]]" in home
    (fx.vault / "knowledge" / "Loose end.md").write_text("no one links here\n", encoding="utf-8")
    ok = invoke(str(fx.vault), "--verify")
    assert ok.exit_code == 0 and "0 unresolved" in ok.output
    check = run_companion("vault", "check", str(fx.vault), "--json")
    report = json.loads(check.stdout)
    assert check.returncode == 0, check.stdout
    assert "knowledge/Loose end.md" in report["orphans"]  # reported, as a warning
    (fx.vault / listed).unlink()  # a note the dream listed in Home.md
    bad = invoke(str(fx.vault), "--verify", "--json")
    assert bad.exit_code == 1
    assert any(p["detail"] == "the linked note is gone" for p in json.loads(bad.output)["problems"])
    check = run_companion("vault", "check", str(fx.vault), "--json")
    assert check.returncode == 1
    assert any(b["source"] == "Home.md" for b in json.loads(check.stdout)["broken_links"])
