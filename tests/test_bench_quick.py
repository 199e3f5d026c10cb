"""Every `bench/` command in its quick mode, so none rots unnoticed (issue 43).

`bench/bench_plugin.py` failed at its first join (its invites lacked the human kind
once invites gained kinds) and nothing ran it. Here each row of the table in `bench/README.md`
runs exactly as its "quick run" column says, from the repository root, as a person would run
it: a subprocess outside the test suite (no `PYTEST_CURRENT_TEST`, no `COMPANION_TEST_*`
escape hatch), on loopback only. `DIR` in a command stands for an empty temporary folder.

A run passes when it exits 0 and printed its Markdown table (a generator: when it wrote its
vault). No number in a table is checked: the sizes are tiny and the machine is shared, so the
targets mean nothing here; the quick modes print them without enforcing them. A script that
needs something optional names it (`needs`: Syncthing, a display, PostgreSQL, Node, the model
server's venv): skipped without it, failed under COMPANION_TEST_STRICT=1 (tools/test as root,
CI), which installs all of them.

Run one bench for real by its own command (bench/README.md), not through this test.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
README = BENCH / "README.md"
PLUGIN = ROOT / "obsidian-plugin"

TABLE_HEADER = "| script | what it measures | quick run (the smoke test's command) |"
# A Markdown table: a header row, then its separator row.
TABLE = re.compile(r"^\|.*\|[ \t]*\n\|(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*$", re.MULTILINE)


def quick_rows() -> list[tuple[str, str]]:
    """(script cell, quick command) of every row of the README's table."""
    text = README.read_text(encoding="utf-8")
    lines = text[text.index(TABLE_HEADER) :].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        script, quick = cells[0].strip("`"), cells[-1]
        assert quick.startswith("`python bench/") and quick.endswith("`"), line
        rows.append((script, quick.strip("`")))
    return rows


def needs(script_cell: str, command: str) -> tuple[str, ...]:
    """What each command needs beyond Python and the locked packages (tests/prereqs.py)."""
    name = Path(script_cell.split()[0]).name
    areas = {
        "bench_plugin.py": ("node",),
        "bench_sync.py": ("syncthing",),
        "bench_gui_idle.py": ("x-desktop",),
        "soak_gui_refresh.py": ("x-desktop",),
        "bench_dream_llm.py": ("llm-venv",),
    }.get(name, ())
    if "--backend postgres" in command:
        areas += ("postgresql",)
    return areas


def _params() -> list:
    out = []
    for script, command in quick_rows():
        areas = needs(script, command)
        marks = [pytest.mark.needs(*areas)] if areas else []
        ident = " ".join([Path(script.split()[0]).stem, *script.split()[1:]])
        out.append(pytest.param(script, command, marks=marks, id=ident))
    return out


def test_every_bench_command_has_a_quick_run() -> None:
    """A new script in bench/ gets its row (and so its run here), or the table is wrong."""
    listed = {Path(script.split()[0]).name for script, _ in quick_rows()}
    commands = {
        p.name for p in BENCH.glob("*.py") if 'if __name__ == "__main__"' in p.read_text("utf-8")
    }
    assert commands - listed == set(), "bench/README.md's table lacks these scripts"
    assert listed - commands == set(), "bench/README.md's table lists scripts that are gone"
    for script, command in quick_rows():
        assert command.split()[1] == script.split()[0], (script, command)


def _env(extra: dict[str, str]) -> dict[str, str]:
    """This checkout's code, not the test suite: a bench must work as its user runs it."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTEST_CURRENT_TEST" and not k.startswith("COMPANION_TEST_")
    }
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.update(extra)
    return env


def _plugin_built() -> None:
    """dist/cli.js, as tests/test_plugin_interop.py builds it (tools/test already has)."""
    from tests.test_plugin_interop import plugin_cli

    plugin_cli()


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("script", "command"), _params())
def test_quick_run(script: str, command: str, tmp_path: Path, request) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    argv = [str(out_dir) if a == "DIR" else a for a in shlex.split(command)]
    assert argv[0] == "python"
    argv[0] = sys.executable
    extra: dict[str, str] = {}
    if Path(argv[1]).name == "soak_gui_refresh.py":
        extra = request.getfixturevalue("x_desktop")  # the app on a real X screen with a tray
    if Path(argv[1]).name == "bench_plugin.py":
        _plugin_built()
    proc = subprocess.run(
        argv,
        cwd=ROOT,
        env=_env(extra),
        capture_output=True,
        text=True,
        timeout=840,
        stdin=subprocess.DEVNULL,
    )
    said = f"$ {command}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, said
    if Path(argv[1]).name.startswith("gen_"):
        assert any(out_dir.rglob("*.md")), said  # a generator: its vault, no table
    else:
        assert TABLE.search(proc.stdout), said
