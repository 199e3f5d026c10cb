"""`companion keys`: the vault key from the shell (the settings window calls the same engine).

Secrets in, never out by accident: passphrases come from a prompt (hidden, typed twice when
new) or from owner-only files; the recovery key is printed only by `export-recovery` (or written
to an owner-only file with `--output`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from companion.context import AppContext, pass_app
from companion.errors import InputError


def _root(app: AppContext, vault: Path | None) -> Path:
    from companion.sync.commands.cli import _vault

    return _vault(app, vault)


def _secret_from(file: Path | None, prompt: str, *, confirm: bool = False) -> str:
    """A secret from an owner-only file, or a hidden prompt on a terminal."""
    from companion.logs import register_secret
    from companion.sync.commands.join import read_passphrase_file

    if file is not None:
        return read_passphrase_file(file)
    if sys.stdin is None or not sys.stdin.isatty():
        raise InputError(f"{prompt.lower()}: no terminal to ask on; pass it in a file (see --help)")
    value = str(click.prompt(prompt, hide_input=True, confirmation_prompt=confirm, err=True))
    register_secret(value)
    return value


@click.group()
def keys() -> None:
    """The vault key: fingerprint, passphrase, recovery key, rewrap.

    \b
    Example:
      companion keys fingerprint ~/vault
      companion keys unlock ~/vault
      companion keys passphrase ~/vault
      companion keys export-recovery ~/vault --output ~/recovery.txt
      companion keys import-recovery ~/vault --recovery-file ~/recovery.txt
      companion keys rewrap ~/vault
    """


@keys.command()
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@pass_app
def fingerprint(app: AppContext, vault: Path | None) -> None:
    """Print the vault key's fingerprint (the same on every device of the vault).

    \b
    Example:
      companion keys fingerprint ~/vault
    """
    from companion.sync.commands.vaultkeys import fingerprint as fp

    click.echo(fp(app.paths, app.config, _root(app, vault)))


@keys.command()
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@pass_app
def unlock(app: AppContext, vault: Path | None) -> None:
    """Store the vault key here again, unlocked with the passphrase.

    For a folder set up for sync whose secret store lost its key or holds a damaged one (a new
    keyring, a wiped secrets file): the relay's wrapped key is opened with the passphrase, from
    COMPANION_PASSPHRASE_FILE, the secret store or a prompt, as for `companion init`. The key
    must be the one this device joined with (same fingerprint). When the store already holds
    it, nothing is asked. Forgot the passphrase too? `companion keys import-recovery`.

    \b
    Example:
      companion keys unlock ~/vault
      COMPANION_PASSPHRASE_FILE=~/.vault-pass companion keys unlock /srv/agent-vault
    """
    from companion.sync.commands.vaultkeys import unlock_again

    done = unlock_again(app.paths, app.config, _root(app, vault))
    if done.stored:
        click.echo(f"vault key stored again; fingerprint {done.fingerprint}")
    else:
        click.echo(f"the vault key is already stored here; fingerprint {done.fingerprint}")


_CURRENT = click.option(
    "--current-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Owner-only file holding the current passphrase (default: prompt).",
)
_NEW = click.option(
    "--new-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Owner-only file holding the new passphrase (default: prompt twice).",
)


@keys.command()
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@_CURRENT
@_NEW
@pass_app
def passphrase(
    app: AppContext, vault: Path | None, current_file: Path | None, new_file: Path | None
) -> None:
    """Change the vault passphrase (human devices): the key is re-wrapped on the relay.

    No file is re-encrypted and other devices keep syncing; only a device joining later needs
    the new passphrase. It must be long and hard to guess (a strong one is suggested if not).

    \b
    Example:
      companion keys passphrase ~/vault
      companion keys passphrase ~/vault --current-file old.txt --new-file new.txt
    """
    from companion.sync.commands.vaultkeys import change_passphrase

    root = _root(app, vault)
    old = _secret_from(current_file, "Current passphrase")
    new = _secret_from(new_file, "New passphrase", confirm=True)
    change_passphrase(app.paths, app.config, root, old, new)
    click.echo("passphrase changed: the vault key is re-wrapped on the relay")


@keys.command("export-recovery")
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write it to this new owner-only file instead of the terminal.",
)
@pass_app
def export_recovery(app: AppContext, vault: Path | None, output: Path | None) -> None:
    """Print the recovery key: whoever holds it holds the vault. Keep it on paper, offline.

    \b
    Example:
      companion keys export-recovery ~/vault
      companion keys export-recovery ~/vault --output /media/usb/vault-recovery.txt
    """
    from companion.fileio import write_new_private
    from companion.sync.commands.vaultkeys import export_recovery_key

    text = export_recovery_key(app.paths, app.config, _root(app, vault))
    if output is None:
        click.echo(text)
        return
    write_new_private(output, (text + "\n").encode("ascii"))
    click.echo(f"recovery key written to {output} (mode 0600)")


@keys.command("import-recovery")
@click.argument("vault", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--recovery-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Owner-only file holding the recovery key (default: prompt).",
)
@_NEW
@click.option("--relay", "relay_url", metavar="URL", help="Join VAULT first (a new folder).")
@click.option("--invite", metavar="CODE", help="The invite to join with (a new folder).")
@click.option("--device-name", metavar="NAME", help="This device's name (a new folder).")
@pass_app
def import_recovery(
    app: AppContext,
    vault: Path,
    recovery_file: Path | None,
    new_file: Path | None,
    relay_url: str | None,
    invite: str | None,
    device_name: str | None,
) -> None:
    """Bring the vault key back from a recovery key and set a new passphrase.

    For a folder already set up for sync (the key was lost from the keyring, or the passphrase
    forgotten), or a new folder with --relay and --invite. The key is checked against the
    vault's data on the relay before anything is stored.

    \b
    Example:
      companion keys import-recovery ~/vault
      companion keys import-recovery ~/vault --relay https://relay.example.org \\
          --invite 3f9a... --device-name laptop
    """
    import socket

    from companion.sync.commands.vaultkeys import import_recovery as do_import

    recovery = _secret_from(recovery_file, "Recovery key")
    new = _secret_from(new_file, "New passphrase", confirm=True)
    result = do_import(
        app.paths, app.config, vault, recovery, new,
        relay_url=relay_url or "", invite=invite or "",
        device_name=device_name or socket.gethostname(),
    )  # fmt: skip
    click.echo(f"vault key imported; fingerprint {result.fingerprint}")
    if result.rewrapped:
        click.echo("the relay's wrapped key now opens with the new passphrase")
    else:
        click.echo("this is an agent device: the relay's wrapped key was left as it is")


@keys.command()
@click.argument("vault", required=False, type=click.Path(file_okay=False, path_type=Path))
@_NEW
@pass_app
def rewrap(app: AppContext, vault: Path | None, new_file: Path | None) -> None:
    """Repair the relay's wrapped key from this device's own copy of the vault key (human
    devices), under a new passphrase; the old one is not needed.

    \b
    Example:
      companion keys rewrap ~/vault
    """
    from companion.sync.commands.vaultkeys import rewrap_from_local_key

    root = _root(app, vault)
    new = _secret_from(new_file, "New passphrase", confirm=True)
    fp = rewrap_from_local_key(app.paths, app.config, root, new)
    click.echo(f"the relay's wrapped key is replaced (fingerprint {fp}); join new devices with "
               "the new passphrase")  # fmt: skip


__all__ = ["keys"]
