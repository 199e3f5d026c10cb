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


def test_the_verbose_flag_works_after_the_command_too(companion_home) -> None:
    """`companion watch VAULT -v` as well as `companion -v watch VAULT` (#39, item 8a): the
    global flag anywhere on the line, counted together, on commands of every depth."""
    vault = companion_home.parent / "v"
    res = run_companion("vault", "init", str(vault), "-v")
    assert res.returncode == 0, res.stderr
    assert run_companion("vault", "check", str(vault), "-v").returncode == 0
    before = run_companion("-vv", "vault", "check", str(vault))
    after = run_companion("vault", "check", str(vault), "-vv")
    split = run_companion("-v", "vault", "check", "--verbose", str(vault))
    assert before.returncode == after.returncode == split.returncode == 0, after.stderr
    assert "DEBUG: companion" in before.stderr
    assert after.stderr == split.stderr == before.stderr
    res = run_companion("status", str(vault), "--offline", "-v")
    assert "no such option" not in res.stderr.lower(), res.stderr


def test_a_value_that_looks_like_the_flag_stays_a_value(companion_home) -> None:
    """An option's value is never taken for the global flag (click parses it first), and
    each command gets the flag once."""
    vault = companion_home.parent / "v"
    assert run_companion("vault", "init", str(vault)).returncode == 0
    res = run_companion("mcp", str(vault), "--print-config", "claude", "--name", "-v")
    assert res.returncode == 0, res.stderr
    assert "claude mcp add" in res.stdout and " -v -- " in res.stdout
    ctx = click.Context(cli)
    relay = cli.get_command(ctx, "relay")
    assert isinstance(relay, click.Group)
    for _ in range(2):  # looked up twice: still one flag
        serve = relay.get_command(ctx, "serve")
        assert serve is not None
        assert [p.name for p in serve.params if "-v" in getattr(p, "opts", [])] == ["verbose"]
