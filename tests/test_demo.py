"""`companion demo` works on a fresh home with no configuration and no network, twice in a row."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_companion


def test_demo_runs_twice_and_cleans_up(companion_home: Path) -> None:
    for _ in range(2):
        res = run_companion("demo", "--headless", timeout=600)
        assert res.returncode == 0, res.stdout + res.stderr
        out = res.stdout
        assert "broken: knowledge/Backups.md:8  [[Restore drill]]" in out
        assert "MEMORY (your personal notes) [" in out
        assert "USER PROFILE (who the user is) [" in out
        assert "== 3. The nightly dream" in out
        assert "promoted     MEMORY.md" in out
        assert "A second dream over the same night: nothing changed (idempotent)." in out
        assert "The station's logs are capped with journald SystemMaxUse=200M." in out
        assert "Traceback" not in res.stderr
    assert not (companion_home / "data" / "demo").exists()


def test_demo_keep_leaves_the_vault(companion_home: Path) -> None:
    res = run_companion("demo", "--headless", "--keep", "--today", "2026-03-10", timeout=600)
    assert res.returncode == 0, res.stderr
    vault = companion_home / "data" / "demo" / "server" / "vault"
    assert (vault / "Home.md").is_file()
    assert (vault / "journal" / "2026-03-09.md").is_file()
