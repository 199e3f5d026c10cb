"""What the secret store says about a folder: whether it lost the relay token, and the vault
key's fingerprint or why it cannot be read. Asked on a pool thread (a locked keyring answers
only when the person answers its prompt)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from companion.errors import CompanionError
from companion.sync.state.device import SecretMissing


@dataclass(frozen=True)
class KeyStoreAnswer:
    """What the secret store said, read on a pool thread, and for which folder."""

    folder: str
    token_lost: bool
    fingerprint: str | None
    key_problem: str | None  # why the vault key cannot be read (a message for a person)
    key_lost: bool = False  # the store lacks the key or holds a damaged one (not: is locked)


def ask_key_store(
    folder: str,
    ask_token: bool,
    token_lost: Callable[[str], bool] | None,
    fingerprint: Callable[[], str | None] | None,
) -> KeyStoreAnswer:
    """Ask the store (blocking: run it off the GUI thread)."""
    lost = ask_token and token_lost is not None and token_lost(folder)
    shown, problem, key_lost = None, None, False
    if fingerprint is not None:
        try:
            shown = fingerprint()
        except SecretMissing as exc:  # the passphrase can store it again
            problem, key_lost = str(exc), True
        except CompanionError as exc:  # a locked or missing keyring: not the key
            problem = str(exc)
    return KeyStoreAnswer(folder, lost, shown, problem, key_lost)
