"""`.ci/run` runs exactly the README's test command (the second command at the top), and that
command installs the locked dependency set, never a fresh resolution (#39)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert block, "README.md starts with a sh block of commands"
    return [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines()[:2]]


def test_ci_runs_the_readme_test_command_exactly():
    command = _readme_commands()[1]
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert command in lines


def test_the_test_command_installs_the_lock_and_runs_every_test():
    script = (ROOT / _readme_commands()[1].split()[0]).read_text(encoding="utf-8")
    assert "--require-hashes -r requirements/test.txt" in script
    assert "--require-hashes" in script and "-r requirements/hermes.txt" in script
    assert "--no-deps" in script  # the project itself adds nothing to the locked set
    assert "npm ci" in script and "npm test" in script  # the plugin's lock and tests
    assert "python3 -m mypy" in script and "python3 -m pytest" in script


def test_the_demo_command_installs_the_locked_app_set():
    demo = _readme_commands()[0]
    assert "--require-hashes -r requirements/app.txt" in demo and "--no-deps" in demo
    assert demo.endswith("companion demo")


def test_every_locked_requirement_is_pinned_with_hashes():
    """What `pip install --require-hashes` demands; also catches a hand edit of the lock."""
    for name in ("app", "test", "hermes"):
        text = (ROOT / "requirements" / f"{name}.txt").read_text(encoding="utf-8")
        entries = re.findall(r"^([A-Za-z0-9][^\s;]*)(.*?)(?=^\S|\Z)", text, re.M | re.S)
        assert len(entries) > 30, name
        for req, rest in entries:
            assert "==" in req, f"{name}.txt: {req} is not pinned"
            assert "--hash=sha256:" in rest, f"{name}.txt: {req} has no hash"


def test_app_and_test_sets_agree_on_every_shared_pin():
    def pins(name: str) -> dict[str, str]:
        text = (ROOT / "requirements" / f"{name}.txt").read_text(encoding="utf-8")
        return {
            f"{m[0]}{m[2]}": m[1]
            for m in re.findall(r"^([a-z0-9._-]+)==(\S+)( ;[^\\]*)?", text, re.M)
        }

    app, test = pins("app"), pins("test")
    assert set(app) <= set(test)
    assert {k: v for k, v in app.items() if test[k] != v} == {}


def test_the_hermes_lock_holds_the_pinned_hermes_agent():
    """Bumping `.ci/hermes-agent.txt` without `tools/lock` would test one version and lock
    another: the interop tests install the lock."""
    from tests.interop.hermes import LOCK_FILE, pinned_requirement

    assert re.search(rf"^{re.escape(pinned_requirement())} \\", LOCK_FILE.read_text("utf-8"), re.M)
