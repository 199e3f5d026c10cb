"""`companion secrets`: find credentials in notes and move them into the keyring."""

from __future__ import annotations

import hashlib
import json
import sys

import click

from companion.context import AppContext, pass_app
from companion.errors import CompanionError, InputError
from companion.logs import get_logger, register_secret

log = get_logger("secrets.cli")


@click.group()
def secrets() -> None:
    """Keep credentials out of notes: scan, move them to the keyring, resolve references.

    A secret moved out of a note leaves the reference `keyring:NAME` in its place; scripts and
    agents resolve it with `companion secrets get NAME`. Secrets live in the OS keyring, or in an
    owner-only file on a headless server (`[secrets] backend = "file"` in the config).

    \b
    Silencing a false positive:
      - on its line, anywhere: companion:allow-secret   (e.g. <!-- companion:allow-secret -->)
        detect-secrets' "pragma: allowlist secret" works too, and
        "pragma: allowlist nextline secret" on the line before;
      - in the config, regexes searched in the secret value:
          [secrets]
          allowlist = ["^AKIA[A-Z0-9]{12}EXAMPLE$"]

    \b
    Example:
      companion secrets scan ~/vault
      companion secrets move ~/vault journal/2024-10-21.md:5 --name github-bot
      export GITHUB_TOKEN="$(companion secrets get github-bot)"
    """


def _allowlist(app: AppContext):  # type: ignore[no-untyped-def]
    from companion.secrets.detect import compile_allowlist

    return compile_allowlist(app.config.settings.secrets.allowlist)


def _store(app: AppContext):  # type: ignore[no-untyped-def]
    from companion.credentials.store import open_store

    return open_store(app.config)


@secrets.command("scan")
@click.argument("vault", type=click.Path(exists=True, file_okay=False, dir_okay=True))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    default=None,
    help="Worker processes for very large vaults (0 = one per core).",
)
@pass_app
def scan(app: AppContext, vault: str, as_json: bool, jobs: int | None) -> None:
    """Find credentials in the notes of VAULT (secrets are shown masked).

    Reports file, line, column and kind of each finding. Exit status 1 when something is
    found, 0 when the vault is clean, 2 on bad input.

    \b
    Example:
      companion secrets scan ~/vault
      companion secrets scan ~/vault --json | jq '.findings[].path'
    """
    from companion.secrets.detect import scan_vault
    from companion.secrets.state import record_scan

    max_mb = app.config.settings.vault.max_file_mb
    result = scan_vault(
        vault,
        allowlist=_allowlist(app),
        max_file_bytes=int(max_mb * 1024 * 1024) if max_mb else None,
        jobs=jobs,
    )
    try:
        record_scan(app.paths.state_dir, result)
    except OSError as exc:  # the scan result matters more than the bookkeeping
        log.warning("could not record the scan: %s", exc)
    notes = len({f.path for f in result.findings})
    log.info(
        "scanned %d notes in %s: %d findings in %d notes",
        result.files,
        vault,
        len(result.findings),
        notes,
    )
    for rel, reason in result.skipped:
        log.warning("skipped %s: %s", rel, reason)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "vault": str(result.vault.resolve()),
                    "files_scanned": result.files,
                    "findings": [f.to_dict() for f in result.findings],
                    "skipped": [{"path": p, "reason": r} for p, r in result.skipped],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        for f in result.findings:
            click.echo(f"{f.path}:{f.line}:{f.column}  {f.kind}  {f.masked}")
        if result.findings:
            click.echo(
                f"\n{len(result.findings)} possible secret(s) in {notes} of "
                f"{result.files} notes. Move one into the keyring with:\n"
                f"  companion secrets move {vault} PATH:LINE --name NAME",
                err=True,
            )
        else:
            click.echo(f"No secrets found in {result.files} notes.", err=True)
    if result.findings:
        click.get_current_context().exit(1)


def _parse_location(location: str) -> tuple[str, int]:
    path, sep, line = location.rpartition(":")
    if not sep or not path or not line.isdigit() or int(line) < 1:
        raise InputError(f"expected PATH:LINE (e.g. journal/2024-10-21.md:5), got {location!r}")
    return path, int(line)


@secrets.command("move")
@click.argument("vault", type=click.Path(exists=True, file_okay=False, dir_okay=True))
@click.argument("location", metavar="PATH:LINE")
@click.option("--name", required=True, help="Name for the secret in the keyring ([A-Za-z0-9_.-]).")
@click.option(
    "--index",
    type=click.IntRange(min=1),
    default=None,
    help="Which secret, when the line has several (1 = leftmost).",
)
@pass_app
def move(app: AppContext, vault: str, location: str, name: str, index: int | None) -> None:
    """Move the secret at PATH:LINE into the keyring; the note keeps `keyring:NAME`.

    Only the secret's characters change; the write is atomic. If the note changed since the
    last `secrets scan`, nothing is written: scan again first.

    \b
    Example:
      companion secrets scan ~/vault
      companion secrets move ~/vault projects/billing.md:3 --name stripe-live
    """
    from companion.secrets.move import move_secret, resolve_note
    from companion.secrets.state import scanned_sha, update_note

    path, line = _parse_location(location)
    full, rel = resolve_note(vault, path)
    expected = scanned_sha(app.paths.state_dir, vault, rel)
    result = move_secret(
        vault,
        rel,
        line,
        name,
        _store(app),
        expected=expected,
        index=index,
        allowlist=_allowlist(app),
    )
    update_note(app.paths.state_dir, vault, rel, hashlib.sha256(full.read_bytes()).hexdigest())
    click.echo(f"{result.path}:{result.line}  {result.kind} {result.masked} -> {result.reference}")


@secrets.command("get")
@click.argument("name")
@click.option("-n", "--no-newline", is_flag=True, help="Do not print a newline after the value.")
@pass_app
def get(app: AppContext, name: str, no_newline: bool) -> None:
    """Print the secret NAME (or a `keyring:NAME` reference) to stdout.

    This is the one command whose job is to output a secret: use it in scripts and agents,
    in a command substitution, never where its output is logged.

    \b
    Example:
      export OPENAI_API_KEY="$(companion secrets get openai)"
    """
    from companion.credentials.store import resolve_reference

    value = resolve_reference(name, _store(app))
    if value is None:
        raise CompanionError(f"no secret named {name!r}")
    sys.stdout.write(value if no_newline else value + "\n")
    sys.stdout.flush()


@secrets.command("set")
@click.argument("name")
@click.option("--replace", is_flag=True, help="Overwrite an existing secret of that name.")
@pass_app
def set_(app: AppContext, name: str, replace: bool) -> None:
    """Store a secret as NAME, reading its value from stdin (never from an argument).

    Reading from stdin keeps the value out of shell history and process listings. On a
    terminal the value is asked for without echo.

    \b
    Example:
      printf '%s' "$TOKEN" | companion secrets set github-bot
      companion secrets set relay-token < token.txt
    """
    from companion.credentials.store import validate_name

    name = validate_name(name)
    if sys.stdin.isatty():
        value = click.prompt(f"Value for {name}", hide_input=True, prompt_suffix=": ")
    else:
        value = sys.stdin.read()
        if value.endswith("\n"):
            value = value[:-1]
            if value.endswith("\r"):
                value = value[:-1]
    register_secret(value)
    if not value:
        raise InputError("no value on stdin")
    store = _store(app)
    if not replace and store.get(name) is not None:
        raise CompanionError(
            f"a secret named {name!r} already exists; use --replace to overwrite it"
        )
    store.set(name, value)
    click.echo(f"stored {name} in the {store.description}", err=True)


@secrets.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_app
def list_(app: AppContext, as_json: bool) -> None:
    """List the names of stored secrets (never their values).

    \b
    Example:
      companion secrets list
    """
    store = _store(app)
    names = store.names()
    if as_json:
        click.echo(json.dumps({"backend": store.description, "names": names}, indent=2))
    else:
        for n in names:
            click.echo(n)


@secrets.command("delete")
@click.argument("name")
@pass_app
def delete(app: AppContext, name: str) -> None:
    """Delete the secret NAME from the store.

    \b
    Example:
      companion secrets delete old-token
    """
    if not _store(app).delete(name):
        raise CompanionError(f"no secret named {name!r}")
    click.echo(f"deleted {name}", err=True)
