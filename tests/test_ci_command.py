"""`.ci/run` runs exactly the README's test command (the second command at the top)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_test_command() -> str:
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert block, "README.md starts with a sh block of commands"
    line = block.group(1).splitlines()[1]
    return line.split("  #", 1)[0].strip()


def test_ci_runs_the_readme_test_command_exactly():
    command = _readme_test_command()
    assert "npm ci" in command and "npm test" in command and "python3 -m pytest" in command
    assert "python3 -m mypy" in command  # the type check is part of the gate
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert command in lines
