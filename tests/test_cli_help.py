"""Every command says what it does with an example; `--version` and `python -m companion` work."""

from __future__ import annotations

import click

from companion import __version__
from companion.cli import LAZY_COMMANDS, cli
from tests.conftest import run_companion


def _walk(cmd: click.Command, path: list[str]) -> list[tuple[list[str], str]]:
    ctx = click.Context(cmd, info_name=path[-1] if path else "companion")
    out = [(path, cmd.get_help(ctx))]
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            assert sub is not None, f"{' '.join(path + [name])} is listed but does not load"
            out += _walk(sub, path + [name])
    return out


def test_every_command_has_help_with_an_example() -> None:
    helps = _walk(cli, [])
    assert len(helps) > 30
    missing = [" ".join(p) for p, h in helps if "Example" not in h]
    assert missing == []


def test_every_registered_command_is_present() -> None:
    ctx = click.Context(cli)
    assert set(LAZY_COMMANDS) <= set(cli.list_commands(ctx))


def test_version_and_module_entry_point() -> None:
    res = run_companion("--version")
    assert res.returncode == 0
    assert res.stdout.strip() == f"companion, version {__version__}"


def test_unknown_command_is_a_usage_error() -> None:
    res = run_companion("frobnicate")
    assert res.returncode == 2
    assert "No such command" in res.stderr
