"""Vault key, subkeys, fingerprint and the printable recovery key."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

from companion.crypto import (
    BadRecoveryKey,
    CryptoError,
    UnsupportedVersion,
    VaultKey,
    export_recovery_key,
    import_recovery_key,
)
from companion.errors import CompanionError

FIXED = VaultKey(bytes(range(32)))
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def test_generate_is_random_and_32_bytes():
    a, b = VaultKey.generate(), VaultKey.generate()
    assert len(a.to_bytes()) == 32
    assert a != b
    assert VaultKey.from_bytes(a.to_bytes()) == a


def test_wrong_size_key_is_refused():
    for n in (0, 16, 31, 33, 64):
        with pytest.raises(ValueError):
            VaultKey(b"\x00" * n)


def test_subkeys_are_distinct_and_not_the_key():
    k = VaultKey.generate()
    subkeys = {k.content_key, k.metadata_key, k.file_id_key, k.blob_id_key, k.to_bytes()}
    assert len(subkeys) == 5
    assert all(len(s) == 32 for s in subkeys)


def test_repr_shows_fingerprint_never_the_key():
    text = repr(FIXED) + str(FIXED)
    assert FIXED.to_bytes().hex() not in text
    assert FIXED.fingerprint() in text


def test_fingerprint_shape_and_determinism():
    fp = FIXED.fingerprint()
    assert re.fullmatch(r"[0-9a-f]{4}(-[0-9a-f]{4}){4}", fp)
    assert VaultKey(bytes(range(32))).fingerprint() == fp
    assert VaultKey.generate().fingerprint() != fp
    # It is not a prefix of the key or of any subkey.
    raw = fp.replace("-", "")
    for material in (FIXED.to_bytes(), FIXED.content_key, FIXED.file_id_key):
        assert raw not in material.hex()


def test_errors_share_one_base():
    assert issubclass(CryptoError, CompanionError)
    assert issubclass(BadRecoveryKey, CryptoError)


# ------------------------------------------------------------------------------ recovery key


def test_recovery_key_shape_and_round_trip():
    text = export_recovery_key(FIXED)
    assert re.fullmatch(r"[A-Z2-7]{4}(-[A-Z2-7]{4}){15}", text)
    assert import_recovery_key(text) == FIXED
    k = VaultKey.generate()
    assert import_recovery_key(export_recovery_key(k)) == k


def test_recovery_key_import_is_forgiving():
    text = export_recovery_key(FIXED)
    compact = text.replace("-", "")
    variants = [
        text.lower(),
        compact,
        " ".join(text.split("-")),
        f"  {text}\n",
        "\n".join(compact[i : i + 16] for i in range(0, 64, 16)),
    ]
    for v in variants:
        assert import_recovery_key(v) == FIXED


def test_recovery_key_lookalike_digits_are_read_as_letters():
    # Find a fixed key whose recovery key contains O, I and B, so the test always exercises them.
    for seed in range(1000):
        k = VaultKey(hashlib.sha256(seed.to_bytes(4, "big")).digest())
        text = export_recovery_key(k)
        if all(c in text for c in "OIB"):
            break
    else:  # pragma: no cover
        pytest.fail("no suitable key found")
    typed = text.replace("O", "0").replace("I", "1").replace("B", "8")
    assert typed != text
    assert import_recovery_key(typed) == k


def test_every_single_character_change_is_caught_by_the_checksum():
    text = export_recovery_key(FIXED).replace("-", "")
    for pos in range(len(text)):
        for ch in ALPHABET:
            if ch == text[pos]:
                continue
            bad = text[:pos] + ch + text[pos + 1 :]
            with pytest.raises(BadRecoveryKey, match="checksum"):
                import_recovery_key(bad)


def test_swapped_adjacent_characters_are_caught():
    text = export_recovery_key(FIXED).replace("-", "")
    for pos in range(len(text) - 1):
        if text[pos] == text[pos + 1]:
            continue
        bad = text[:pos] + text[pos + 1] + text[pos] + text[pos + 2 :]
        with pytest.raises(BadRecoveryKey):
            import_recovery_key(bad)


@pytest.mark.parametrize(
    ("mangle", "match"),
    [
        (lambda t: t[:-5], "has 64 letters"),
        (lambda t: t + "-AAAA", "has 64 letters"),
        (lambda t: "", "this one has 0"),
        (lambda t: "9" + t[1:], "character 1 .*not valid"),
        (lambda t: t[:10] + "!" + t[11:], "character 9 .*not valid"),
    ],
)
def test_malformed_recovery_keys_get_a_clear_message(mangle, match):
    text = export_recovery_key(FIXED)
    with pytest.raises(BadRecoveryKey, match=match) as info:
        import_recovery_key(mangle(text))
    assert FIXED.to_bytes().hex() not in str(info.value)
    assert info.value.exit_code == 2


def test_recovery_key_with_unknown_version_is_refused():
    body = bytes([2]) + FIXED.to_bytes()
    check = hashlib.sha256(b"vault-companion/v1/recovery-checksum" + body).digest()[:7]
    text = base64.b32encode(body + check).decode()
    with pytest.raises(UnsupportedVersion, match="version 2"):
        import_recovery_key(text)
