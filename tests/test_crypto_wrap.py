"""The passphrase-wrapped vault key: round trip, wrong passphrase, tampering, KDF bounds."""

from __future__ import annotations

import struct
import time
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.crypto import (
    DEFAULT_KDF_PARAMS,
    KdfParams,
    TamperedWrappedKey,
    UnsafeKdfParams,
    UnsupportedVersion,
    VaultKey,
    WeakPassphrase,
    WrongPassphrase,
    read_kdf_params,
    rewrap,
    unwrap_vault_key,
    wrap_vault_key,
)

# The smallest parameters unwrap accepts: fast enough for many tests (about 10 ms).
FAST = KdfParams(memory_kib=8 * 1024, iterations=1, lanes=1)
VID = "vault-0001"
PASS = "correct horse battery staple"
KEY = VaultKey(bytes(range(32)))


@pytest.fixture(scope="module")
def wrapped() -> bytes:
    return wrap_vault_key(KEY, PASS, vault_id=VID, params=FAST)


def _with_header(blob: bytes, memory_kib: int, iterations: int, lanes: int) -> bytes:
    return blob[:1] + struct.pack(">III", memory_kib, iterations, lanes) + blob[13:]


def test_round_trip_and_layout(wrapped):
    assert len(wrapped) == 89
    assert wrapped[0] == 1
    assert struct.unpack(">III", wrapped[1:13]) == (8192, 1, 1)
    assert KEY.to_bytes() not in wrapped
    assert unwrap_vault_key(wrapped, PASS, vault_id=VID) == KEY
    assert read_kdf_params(wrapped) == FAST


def test_each_wrap_uses_a_fresh_salt_and_nonce(wrapped):
    again = wrap_vault_key(KEY, PASS, vault_id=VID, params=FAST)
    assert again[13:29] != wrapped[13:29]  # salt
    assert again[29:41] != wrapped[29:41]  # nonce
    assert unwrap_vault_key(again, PASS, vault_id=VID) == KEY


def test_default_parameters_are_at_least_64_mib():
    assert DEFAULT_KDF_PARAMS.memory_kib >= 64 * 1024
    assert DEFAULT_KDF_PARAMS.iterations >= 2
    blob = wrap_vault_key(KEY, PASS, vault_id=VID)
    assert read_kdf_params(blob).memory_kib >= 64 * 1024
    assert unwrap_vault_key(blob, PASS, vault_id=VID) == KEY


def test_wrong_passphrase_is_refused_clearly(wrapped):
    with pytest.raises(WrongPassphrase, match="wrong passphrase") as info:
        unwrap_vault_key(wrapped, PASS + "!", vault_id=VID)
    message = str(info.value)
    assert PASS not in message and KEY.to_bytes().hex() not in message


def test_passphrase_is_unicode_normalised():
    nfc = "contraseña segura"
    nfd = unicodedata.normalize("NFD", nfc)
    assert nfc != nfd
    blob = wrap_vault_key(KEY, nfc, vault_id=VID, params=FAST)
    assert unwrap_vault_key(blob, nfd, vault_id=VID) == KEY


def test_empty_passphrase_is_refused():
    with pytest.raises(WeakPassphrase, match="empty"):
        wrap_vault_key(KEY, "", vault_id=VID, params=FAST)


def test_wrapped_key_of_another_vault_is_refused(wrapped):
    with pytest.raises(WrongPassphrase, match="another vault"):
        unwrap_vault_key(wrapped, PASS, vault_id="vault-0002")


def test_rewrap_changes_passphrase_not_key(wrapped):
    new = rewrap(wrapped, PASS, "a whole new passphrase", vault_id=VID, params=FAST)
    assert new != wrapped
    assert unwrap_vault_key(new, "a whole new passphrase", vault_id=VID) == KEY
    with pytest.raises(WrongPassphrase):
        unwrap_vault_key(new, PASS, vault_id=VID)


def test_rewrap_needs_the_old_passphrase(wrapped):
    with pytest.raises(WrongPassphrase):
        rewrap(wrapped, "not it", "new one", vault_id=VID, params=FAST)


def test_rewrap_upgrades_to_default_parameters(wrapped):
    new = rewrap(wrapped, PASS, "new passphrase", vault_id=VID)
    assert read_kdf_params(new) == DEFAULT_KDF_PARAMS


@pytest.mark.parametrize(
    ("memory_kib", "iterations", "lanes", "match"),
    [
        (4 * 1024 * 1024 + 1, 1, 1, "memory"),  # just over 4 GiB
        (0xFFFF_FFFF, 1, 1, "memory"),
        (8 * 1024 - 1, 1, 1, "memory"),  # just under 8 MiB
        (0, 1, 1, "memory"),
        (8192, 0, 1, "iterations"),
        (8192, 1_000_000, 1, "iterations"),
        (8192, 1, 0, "lanes"),
        (8192, 1, 255, "lanes"),
    ],
)
def test_absurd_parameters_from_the_relay_are_refused_before_any_work(
    wrapped, memory_kib, iterations, lanes, match
):
    evil = _with_header(wrapped, memory_kib, iterations, lanes)
    start = time.perf_counter()
    with pytest.raises(UnsafeKdfParams, match=match):
        unwrap_vault_key(evil, PASS, vault_id=VID)
    assert time.perf_counter() - start < 0.5
    with pytest.raises(UnsafeKdfParams):
        wrap_vault_key(KEY, PASS, vault_id=VID, params=KdfParams(memory_kib, iterations, lanes))


@pytest.mark.parametrize(
    ("memory_kib", "iterations", "lanes"), [(9216, 1, 1), (8192, 2, 1), (8192, 1, 2)]
)
def test_parameters_are_authenticated(wrapped, memory_kib, iterations, lanes):
    # In range, so the KDF runs, but the header is associated data: it must not verify.
    with pytest.raises(WrongPassphrase):
        unwrap_vault_key(_with_header(wrapped, memory_kib, iterations, lanes), PASS, vault_id=VID)


def test_truncated_or_extended_wrapped_key_is_refused(wrapped):
    for bad in (b"", wrapped[:1], wrapped[:40], wrapped[:-1], wrapped + b"\x00"):
        with pytest.raises((TamperedWrappedKey, WrongPassphrase)) as info:
            unwrap_vault_key(bad, PASS, vault_id=VID)
        assert isinstance(info.value, TamperedWrappedKey)


def test_unknown_wrap_version_is_refused(wrapped):
    with pytest.raises(UnsupportedVersion, match="version 2"):
        unwrap_vault_key(b"\x02" + wrapped[1:], PASS, vault_id=VID)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(min_value=13, max_value=88), st.integers(min_value=0, max_value=7))
def test_any_bit_flip_in_salt_nonce_or_ciphertext_is_refused(wrapped, index, bit):
    # Flips in the parameter words are covered above (bounds and authentication) without
    # letting hypothesis make the KDF allocate gigabytes.
    bad = bytearray(wrapped)
    bad[index] ^= 1 << bit
    with pytest.raises(WrongPassphrase):
        unwrap_vault_key(bytes(bad), PASS, vault_id=VID)
