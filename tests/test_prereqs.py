"""What the suite needs from the machine (tests/prereqs.py): a test whose system prerequisite
is missing is skipped with the reason, the run ends by saying which areas were skipped and why,
and under COMPANION_TEST_STRICT=1 (tools/test as root, CI) it fails instead (#39)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.prereqs import AREAS, missing_line, packages

ROOT = Path(__file__).resolve().parent.parent
TEST = "tests/test_packaging_installers.py::test_desktop_entries_validate"


def _run_without_tools(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """pytest on one `needs("desktop-files")` test, on a PATH that holds only Python."""
    bare = tmp_path / "bin"
    bare.mkdir(exist_ok=True)
    if not (bare / "python3").exists():
        (bare / "python3").symlink_to(sys.executable)
    full = {k: v for k, v in os.environ.items() if k != "COMPANION_TEST_STRICT"}
    full.update(PATH=str(bare), **env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, TEST],
        cwd=ROOT, env=full, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


# tools/test runs pytest on two workers (pytest-xdist): the summary is the controller's, from
# the reports the workers send it
@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_missing_prerequisite_skips_and_the_run_ends_naming_it(
    tmp_path: Path, workers: str
) -> None:
    res = _run_without_tools(tmp_path, "-n", workers)
    assert res.returncode == 0, res.stdout + res.stderr
    tail = res.stdout[res.stdout.index("skipped areas") :]
    assert "skipped: needs the freedesktop entry validator: desktop-file-validate not found" in tail
    assert "apt-get install desktop-file-utils" in tail
    assert "this machine: missing for some tests:" in tail  # the one line, again at the end


@pytest.mark.parametrize("workers", ["0", "2"])
def test_strict_mode_fails_a_test_whose_prerequisite_is_missing(
    tmp_path: Path, workers: str
) -> None:
    res = _run_without_tools(tmp_path, "-n", workers, COMPANION_TEST_STRICT="1")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "COMPANION_TEST_STRICT=1 and needs the freedesktop entry validator" in res.stdout


def test_the_missing_line_is_one_line_naming_every_missing_area(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    line = missing_line()
    assert "\n" not in line
    gone = [a.name for a in AREAS.values() if a.missing()]
    assert {"x-desktop", "secret-service", "systemd", "node"} <= set(gone)
    for name in gone:
        assert f"{name} (" in line


def test_ci_installs_every_package_the_suite_names() -> None:
    """tools/test installs what tests/prereqs.py names: one list, read by both."""
    script = (ROOT / "tools" / "test").read_text(encoding="utf-8")
    assert "tests/prereqs.py missing-packages" in script
    assert {"xvfb", "trayer", "gnome-keyring", "postgresql", "libsecret-tools"} <= set(packages())
