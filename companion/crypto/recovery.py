"""The printable recovery key: the vault key itself, written for a person to keep on paper.

40 bytes = version (0x01) + vault key (32) + checksum (7), in RFC 4648 base32 (A-Z, 2-7): exactly
64 characters, shown as 16 groups of 4 separated by dashes. The checksum is the first 7 bytes of
SHA-256(label + version + key); it catches typing mistakes (it is not a secret and not a MAC).
Input is forgiving: case, spaces and dashes are ignored, and the digits 0, 1 and 8 (absent from
the alphabet) are read as the letters O, I and B they are usually mistaken for.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from companion.crypto.errors import BadRecoveryKey, UnsupportedVersion
from companion.crypto.keys import KEY_SIZE, VaultKey
from companion.logs import register_secret

RECOVERY_VERSION = 1
CHECKSUM_SIZE = 7
_LABEL = b"vault-companion/v1/recovery-checksum"
_CHARS = 64
_GROUP = 4
_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
_LOOKALIKES = str.maketrans({"0": "O", "1": "I", "8": "B"})


def _checksum(version_and_key: bytes) -> bytes:
    return hashlib.sha256(_LABEL + version_and_key).digest()[:CHECKSUM_SIZE]


def export_recovery_key(key: VaultKey) -> str:
    """The recovery key as ``XXXX-XXXX-...`` (16 groups of 4). Whoever has it has the vault."""
    body = bytes([RECOVERY_VERSION]) + key.to_bytes()
    text = base64.b32encode(body + _checksum(body)).decode("ascii")
    pretty = "-".join(text[i : i + _GROUP] for i in range(0, _CHARS, _GROUP))
    register_secret(pretty)
    register_secret(text)
    return pretty


def import_recovery_key(text: str) -> VaultKey:
    """Read a recovery key typed by a person; `BadRecoveryKey` names what is wrong."""
    cleaned = "".join(ch for ch in text if ch not in " \t\r\n-").upper().translate(_LOOKALIKES)
    if len(cleaned) != _CHARS:
        raise BadRecoveryKey(
            f"a recovery key has {_CHARS} letters and digits (16 groups of 4), "
            f"this one has {len(cleaned)}"
        )
    for pos, ch in enumerate(cleaned, start=1):
        if ch not in _ALPHABET:
            raise BadRecoveryKey(
                f"character {pos} of the recovery key is not valid "
                "(only letters A-Z and digits 2-7 are used)"
            )
    register_secret(cleaned)
    try:
        raw = base64.b32decode(cleaned)
    except binascii.Error:  # pragma: no cover - every 64-char string of the alphabet decodes
        raise BadRecoveryKey("the recovery key is not valid base32") from None
    body, check = raw[:-CHECKSUM_SIZE], raw[-CHECKSUM_SIZE:]
    if not hmac.compare_digest(_checksum(body), check):
        raise BadRecoveryKey(
            "recovery key checksum does not match: a character is mistyped or missing"
        )
    if body[0] != RECOVERY_VERSION:
        raise UnsupportedVersion(
            f"recovery key format version {body[0]} is not supported by this companion"
        )
    if len(body) != 1 + KEY_SIZE:  # pragma: no cover - fixed by the length check above
        raise BadRecoveryKey("the recovery key has the wrong length")
    return VaultKey(body[1:])
