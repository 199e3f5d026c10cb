"""The `companion` command line: one entry point, subcommands loaded on demand.

Each subcommand lives beside the engine package it drives (`companion/vault/cli.py`, ...), so
this module only wires them together, sets up configuration and logging, and turns engine
errors into a clear message and an exit status.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from companion import __version__
from companion.context import AppContext
from companion.errors import CompanionError
from companion.logs import redact, setup_logging
from companion.paths import device_paths

# name -> "module:attribute"; a command whose module is not installed is simply not listed.
LAZY_COMMANDS: dict[str, str] = {
    "vault": "companion.vault.cli:vault",
    "memory": "companion.memory.cli:memory",
    "config": "companion.config_cli:config",
    "relay": "companion.relay.cli:relay",
    "init": "companion.sync.commands.cli:init",
    "sync": "companion.sync.commands.cli:sync",
    "watch": "companion.sync.commands.cli:watch",
    "status": "companion.sync.commands.cli:status",
    "history": "companion.sync.commands.cli:history",
    "restore": "companion.sync.commands.cli:restore",
    "held": "companion.sync.commands.cli_attention:held",
    "quarantine": "companion.sync.commands.cli_attention:quarantine",
    "dream": "companion.dream.cli:dream",
    "review": "companion.review.cli:review",
    "mcp": "companion.mcp.cli:mcp",
    "secrets": "companion.secrets.cli:secrets",
    "keys": "companion.sync.commands.cli_keys:keys",
    "trust": "companion.sync.commands.cli_trust:trust",
    "scopes": "companion.sync.commands.cli_scopes:scopes",
    "demo": "companion.demo:demo",
    "doctor": "companion.doctor:doctor",
    "install-service": "companion.services.cli:install_service",
}


GLOBAL_VERBOSE = ("-v", "--verbose")


def _verbose_after_command(ctx: click.Context, param: click.Parameter, value: int) -> int:
    """`-v` given after the command (`companion watch VAULT -v`): counted with any before it,
    and logging set up again at the new level."""
    app = ctx.find_root().obj
    if value and isinstance(app, AppContext):
        app.verbose += value
        setup_logging(app.paths.log_dir, app.verbose)
        logging.getLogger("companion").debug(
            "companion %s: %s", __version__, ctx.find_root().invoked_subcommand or "tray"
        )
    return value


def accept_global_flags(cmd: click.Command) -> click.Command:
    """Give `cmd` (and every command under it) the global `-v/--verbose` too, so it works
    after the command as most command lines allow. Click parses each command's own options
    first, so a value that looks like the flag (`--name -v`) stays a value."""
    if getattr(cmd, "_companion_global_flags", False):
        return cmd
    if not any(set(GLOBAL_VERBOSE) & set(getattr(p, "opts", ())) for p in cmd.params):
        cmd.params.append(
            click.Option(
                list(GLOBAL_VERBOSE),
                count=True,
                expose_value=False,
                callback=_verbose_after_command,
                help="Log to stderr too (-vv for debug); also accepted before the command.",
            )
        )
    cmd._companion_global_flags = True  # type: ignore[attr-defined]
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            accept_global_flags(sub)
    return cmd


class LazyGroup(click.Group):
    def _available(self) -> dict[str, str]:
        """The registered commands whose module ships in this build.

        Checked by file, not by import, so listing commands stays cheap (importing every
        package would cost more than a warm `vault check`). A frozen build lists them all.
        """
        if getattr(sys, "frozen", False):
            return dict(LAZY_COMMANDS)
        base = Path(__file__).resolve().parent.parent
        out = {}
        for name, target in LAZY_COMMANDS.items():
            rel = Path(*target.split(":")[0].split("."))
            if (base / rel).with_suffix(".py").is_file() or (base / rel / "__init__.py").is_file():
                out[name] = target
        return out

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._available()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            return accept_global_flags(cmd)
        target = self._available().get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return accept_global_flags(getattr(importlib.import_module(module_name), attr))


@click.group(
    cls=LazyGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "--version", prog_name="companion")
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Log to stderr too (-vv for debug); before or after the command.",
)
@click.pass_context
def cli(ctx: click.Context, verbose: int) -> None:
    """Vault Companion: encrypted sync, secret guard and nightly dream for an agent's vault.

    With no subcommand, starts the desktop tray app.

    \b
    Examples:
      companion demo                 the whole story on embedded defaults
      companion vault check ~/vault  broken links and headings; orphans as warnings
      companion memory show          the agent's injected memory
    """
    from companion.hardening import disable_core_dumps

    disable_core_dumps()  # the key and the token must never land in a core file
    paths = device_paths()
    setup_logging(paths.log_dir, verbose)
    logging.getLogger("companion").debug(
        "companion %s: %s", __version__, ctx.invoked_subcommand or "tray"
    )
    ctx.obj = AppContext(paths=paths, verbose=verbose)
    if ctx.invoked_subcommand not in ("config", "doctor", None) and not ctx.resilient_parsing:
        _ = ctx.obj.config  # a bad config file stops every command with a clear error (exit 2)
    if ctx.invoked_subcommand is None:
        try:
            from companion.gui.app import run_tray
        except ImportError as exc:
            raise CompanionError(f"the desktop app is not available here: {exc}") from None
        sys.exit(run_tray(ctx.obj))


def main(argv: list[str] | None = None) -> None:
    """Console entry point: engine errors become one clear line and an exit status."""
    try:
        rv: Any = cli.main(args=argv, prog_name="companion", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.BadParameter as exc:
        if isinstance(exc, click.MissingParameter):  # the usage line says what is missing
            exc.show()
        else:  # a bad value (a path that does not exist, a file for a folder): one line
            click.echo(f"error: {' '.join(exc.format_message().split())}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except CompanionError as exc:
        logging.getLogger("companion").debug("command failed: %s", exc)
        line = redact(str(exc))
        suggestion = getattr(exc, "suggestion", "")
        if suggestion:  # a generated passphrase: shown to the person, never logged
            line += f", for example: {suggestion}"
        click.echo(f"error: {line}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug: one line for the person, the traceback in the log
        logging.getLogger("companion").exception("internal error")
        log_file = device_paths().log_file
        click.echo(
            f"internal error: {redact(type(exc).__name__ + ': ' + str(exc))}\n"
            f"(this is a bug; the details are in {log_file})",
            err=True,
        )
        sys.exit(70)
    sys.exit(rv if isinstance(rv, int) else 0)


def run() -> None:
    """The `companion` program (console script, `python -m companion`, the frozen app).

    `main`, then, when the command has finished everything it started, an immediate exit: the
    interpreter's own teardown (unloading ~430 modules and freeing what they hold) costs a
    one-shot command 10-15 ms for nothing. `exit_now` keeps a normal exit whenever something
    could still be running.
    """
    try:
        main()
    except SystemExit as exc:
        exit_now(exc.code)
        raise


def exit_now(code: object) -> None:
    """End the process with status `code` without the interpreter's teardown, or return (and
    let the caller exit normally) when that could lose anything: another Python thread still
    runs (its work would be cut off), Qt is loaded (its objects are torn down in order at a
    normal exit), or the status is not a number. What a normal exit does that matters runs
    first, in the same order: the at-exit handlers (log handlers flushed and closed, temporary
    folders removed), then the standard streams are flushed."""
    import atexit
    import threading

    if code is None:
        code = 0
    if not isinstance(code, int) or isinstance(code, bool):
        return
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's, as Py_Finalize
    if run_exit_handlers is None:
        return
    if any(t is not threading.main_thread() and t.is_alive() for t in threading.enumerate()):
        return
    if "PySide6" in sys.modules:
        return
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`companion status | head`): as a normal exit
            code = code or 120
    os._exit(code & 0xFF)
