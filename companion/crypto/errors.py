"""Errors raised by the crypto layer.

Every message is meant for a person and never contains key material, passphrases or plaintext:
at most a short prefix of a file or blob id (which the relay already sees) and a revision number.
"""

from __future__ import annotations

from companion.errors import CompanionError


class CryptoError(CompanionError):
    """Base class of every error raised by `companion.crypto`."""


class TamperDetected(CryptoError):
    """Data from the relay failed an integrity check: it was altered, moved, swapped or replayed."""


class TamperedRecord(TamperDetected):
    """A sealed file record failed authentication or does not belong where the relay put it."""


class TamperedBlob(TamperDetected):
    """A sealed content blob failed authentication, or assembled content does not match."""


class TamperedWrappedKey(TamperDetected):
    """The wrapped vault key is truncated or structurally invalid."""


class RolledBack(TamperDetected):
    """The relay offered an older revision of a file than this device has already seen."""


class WrongPassphrase(CryptoError):
    """The passphrase does not unlock the wrapped vault key."""


class WeakPassphrase(CryptoError):
    """The passphrase cannot be used (empty, short or easy to guess).

    `suggestion` is a generated strong passphrase to offer the person. It is kept out of the
    message on purpose: messages are logged, and the suggestion may become the passphrase.
    Show it where the person reads (the terminal, the settings window), never in a log.
    """

    exit_code = 2

    def __init__(self, message: str, suggestion: str = "") -> None:
        super().__init__(message)
        self.suggestion = suggestion


class UnsafeKdfParams(CryptoError):
    """Key-derivation parameters outside the accepted range (too weak or absurdly expensive)."""


class BadRecoveryKey(CryptoError):
    """A recovery key that is malformed or whose checksum does not match."""

    exit_code = 2


class UnsupportedVersion(CryptoError):
    """A format version byte this version of the companion does not understand."""
