"""Sealed blobs and records: round trips, padding, relay blindness and tamper evidence.

Each tamper test plays a lying relay (or a lying device) and checks the client refuses the data
with the matching error.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.crypto import (
    ChunkRef,
    FileMeta,
    RolledBack,
    TamperDetected,
    TamperedBlob,
    TamperedRecord,
    UnsupportedVersion,
    VaultKey,
    assemble,
    blob_id,
    check_not_rolled_back,
    file_id,
    framing,
    open_blob,
    open_record,
    padded_size,
    records,
    seal_blob,
    seal_record,
)

KEY = VaultKey(bytes(range(32)))
OTHER_KEY = VaultKey(bytes(range(1, 33)))
VID = "vault-0001"
OVERHEAD = 1 + 12 + 16 + 9  # version + nonce + tag + frame header


def make_file(path: str, content: bytes, chunk_size: int = 1000, **fields):
    """Chunk, seal and describe `content` the way the sync engine will."""
    pieces = [content[i : i + chunk_size] for i in range(0, len(content), chunk_size)]
    blobs = dict(seal_blob(KEY, VID, p) for p in pieces)
    meta = FileMeta(
        path=path,
        size=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
        chunks=tuple(ChunkRef(blob_id(KEY, p), len(p)) for p in pieces),
        **fields,
    )
    return meta, blobs


NOTE = b"# Lesson\n\nThe deploy needs `make release` before tagging.\n" * 60
META, BLOBS = make_file(
    "knowledge/deploy.md",
    NOTE,
    mtime_ns=1_736_930_000_123_456_789,
    device_id="dev-laptop",
    device_name="Ana's laptop",
    device_kind="human",
)
FID, SEALED_REC = seal_record(KEY, VID, 3, META)


# ------------------------------------------------------------------------------------- ids


def test_file_id_is_keyed_hex_and_nfc_insensitive():
    fid = file_id(KEY, "notas/café.md")
    assert len(fid) == 64 and int(fid, 16) >= 0
    assert file_id(KEY, unicodedata.normalize("NFD", "notas/café.md")) == fid
    assert file_id(OTHER_KEY, "notas/café.md") != fid
    assert file_id(KEY, "Notas/café.md") != fid  # case is kept
    assert hashlib.sha256(b"notas/caf\xc3\xa9.md").hexdigest() != fid


def test_blob_id_is_keyed():
    assert blob_id(KEY, b"x") == blob_id(KEY, b"x")
    assert blob_id(KEY, b"x") != blob_id(OTHER_KEY, b"x")
    assert blob_id(KEY, b"x") != hashlib.sha256(b"x").hexdigest()


# ----------------------------------------------------------------------------- round trips


def test_record_and_blobs_round_trip():
    meta = open_record(KEY, VID, FID, 3, SEALED_REC)
    assert meta == META
    chunks = [open_blob(KEY, VID, c.blob_id, BLOBS[c.blob_id]) for c in meta.chunks]
    assert assemble(meta, chunks) == NOTE


def test_empty_file_and_deletion_round_trip():
    empty, _ = make_file("empty.md", b"")
    fid, sealed = seal_record(KEY, VID, 1, empty)
    got = open_record(KEY, VID, fid, 1, sealed)
    assert got.chunks == () and assemble(got, []) == b""
    gone = FileMeta(path="old.md", size=0, sha256="", deleted=True, rename_from=None)
    fid, sealed = seal_record(KEY, VID, 9, gone)
    assert open_record(KEY, VID, fid, 9, sealed).deleted


def test_nonces_are_random():
    _, a = seal_blob(KEY, VID, NOTE)
    _, b = seal_blob(KEY, VID, NOTE)
    assert a != b and a[1:13] != b[1:13]
    assert seal_record(KEY, VID, 3, META)[1] != SEALED_REC


def test_unknown_record_fields_are_ignored_for_forward_compatibility():
    import json

    obj = json.loads(META.to_json())
    obj["future_field"] = {"anything": 1}
    assert FileMeta.from_json(json.dumps(obj).encode()) == META


@pytest.mark.parametrize(
    "kwargs",
    [
        {"size": 5},  # chunk lengths do not add up
        {"sha256": "abc"},
        {"size": -1},
        {"size": True},
        {"path": ""},
        {"deleted": 1},
        {"mtime_ns": 1.5},
        {"deleted": True},  # a deletion with chunks
    ],
)
def test_inconsistent_metadata_is_refused_at_seal_time(kwargs):
    fields = {
        "path": "a.md",
        "size": len(NOTE),
        "sha256": META.sha256,
        "chunks": META.chunks,
    } | kwargs
    with pytest.raises(ValueError):
        FileMeta(**fields)


# --------------------------------------------------------------------- padding and blindness


def test_padded_size_buckets():
    assert padded_size(0) == 512
    assert padded_size(512) == 512
    assert padded_size(513) == 1024
    assert padded_size(40_000) == 65_536
    assert padded_size(65_536) == 65_536
    assert padded_size(65_537) == 131_072
    assert padded_size(1_000_000) == 16 * 65_536


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=5000) | st.text(max_size=3000).map(str.encode))
def test_blob_round_trip_and_size_is_a_bucket(chunk):
    bid, sealed = seal_blob(KEY, VID, chunk)
    body = len(sealed) - OVERHEAD
    assert body == padded_size(body)  # only bucket sizes ever reach the relay
    assert open_blob(KEY, VID, bid, sealed) == chunk


def test_sizes_leak_only_a_size_class():
    # Incompressible chunks from 1 byte to 500 bytes all look the same to the relay.
    sizes = {len(seal_blob(KEY, VID, os.urandom(n))[1]) for n in range(1, 500, 7)}
    assert sizes == {OVERHEAD + 512}


def test_compression_is_used_only_when_it_helps():
    random_chunk = os.urandom(50_000)
    _, sealed = seal_blob(KEY, VID, random_chunk)
    assert len(sealed) == OVERHEAD + padded_size(50_000)
    _, sealed_text = seal_blob(KEY, VID, NOTE)
    assert len(sealed_text) - OVERHEAD < len(NOTE) // 4


def test_relay_sees_no_path_name_extension_device_or_content():
    visible = (
        SEALED_REC + b"".join(BLOBS.values()) + FID.encode() + b"".join(k.encode() for k in BLOBS)
    )
    for secret in (b"knowledge/deploy", b"deploy.md", b"Ana's laptop", b"dev-laptop", b"Lesson"):
        assert secret not in visible
    assert str(META.mtime_ns).encode() not in visible


# --------------------------------------------------------------------------- tamper evidence


def _other_blob():
    bid, sealed = seal_blob(KEY, VID, b"another chunk entirely")
    return bid, sealed


def test_swapped_blobs_are_refused():
    (a_id, a_sealed), (b_id, b_sealed) = _other_blob(), next(iter(BLOBS.items()))
    with pytest.raises(TamperedBlob, match="failed authentication"):
        open_blob(KEY, VID, a_id, b_sealed)
    with pytest.raises(TamperedBlob):
        open_blob(KEY, VID, b_id, a_sealed)


def test_record_moved_to_another_file_id_is_refused():
    other = file_id(KEY, "knowledge/other.md")
    with pytest.raises(TamperedRecord, match="failed authentication"):
        open_record(KEY, VID, other, 3, SEALED_REC)


def test_record_served_under_another_revision_is_refused():
    for rev in (2, 4, 1 << 40):
        with pytest.raises(TamperedRecord):
            open_record(KEY, VID, FID, rev, SEALED_REC)
    for rev in (0, -1, 1 << 64):
        with pytest.raises(TamperedRecord, match="invalid revision"):
            open_record(KEY, VID, FID, rev, SEALED_REC)


def test_data_of_another_vault_is_refused():
    with pytest.raises(TamperedRecord):
        open_record(KEY, "vault-0002", FID, 3, SEALED_REC)
    bid, sealed = next(iter(BLOBS.items()))
    with pytest.raises(TamperedBlob):
        open_blob(KEY, "vault-0002", bid, sealed)
    # Another vault with its own key and its own data, served under this vault's ids.
    fid2, rec2 = seal_record(OTHER_KEY, VID, 3, META)
    with pytest.raises(TamperedRecord):
        open_record(KEY, VID, FID, 3, rec2)
    bid2, blob2 = seal_blob(OTHER_KEY, VID, NOTE[:1000])
    with pytest.raises(TamperedBlob):
        open_blob(KEY, VID, blob_id(KEY, NOTE[:1000]), blob2)


def test_older_revision_replay_is_refused_by_the_rollback_check():
    fid, old = seal_record(KEY, VID, 2, META)
    # The old record is genuine, so it authenticates under its own revision...
    assert open_record(KEY, VID, fid, 2, old) == META
    # ...and the highest revision the device has seen is what catches the replay.
    with pytest.raises(RolledBack, match="revision 2 .* already seen revision 3"):
        check_not_rolled_back(3, 2, file_id=fid)
    check_not_rolled_back(3, 3)
    check_not_rolled_back(3, 4)
    check_not_rolled_back(None, 1)
    assert issubclass(RolledBack, TamperDetected)


def test_record_from_a_lying_device_naming_another_path_is_refused():
    # A device holding the key seals a record for path B under the file id of path A.
    fid_a = file_id(KEY, "a.md")
    meta_b = FileMeta(path="b.md", size=0, sha256=hashlib.sha256(b"").hexdigest())
    ad = records._record_ad(VID, bytes.fromhex(fid_a), 1)
    sealed = records._seal(KEY.metadata_aead, 1, meta_b.to_json(), ad, None)
    with pytest.raises(TamperedRecord, match="different file"):
        open_record(KEY, VID, fid_a, 1, sealed)


def test_blob_whose_content_does_not_match_its_id_is_refused():
    bid = blob_id(KEY, b"what the record promised")
    sealed = records._seal_blob_as(KEY, VID, bid, b"something else")
    with pytest.raises(TamperedBlob, match="different id"):
        open_blob(KEY, VID, bid, sealed)


def test_malformed_plaintext_from_a_key_holder_is_refused():
    fid = file_id(KEY, "a.md")
    for payload in (b"not json", b"[1, 2]", b'{"path": "a.md"}', b"\xff\xfe"):
        ad = records._record_ad(VID, bytes.fromhex(fid), 1)
        sealed = records._seal(KEY.metadata_aead, 1, payload, ad, None)
        with pytest.raises(TamperedRecord, match="malformed metadata"):
            open_record(KEY, VID, fid, 1, sealed)


@pytest.mark.parametrize("field", ["path", "rename_from", "device_name", "device_id"])
def test_a_record_naming_a_string_that_is_not_unicode_is_refused(field: str) -> None:
    """JSON can spell a lone surrogate (`"\\udcff"`), which no UTF-8 text holds: a key holder's
    record with one is malformed, not a path to hash, store or write (it raised
    UnicodeEncodeError out of `open_record`, past every handler of `TamperedRecord`)."""
    meta = FileMeta(
        path="badX.md", size=0, sha256=hashlib.sha256(b"").hexdigest(),
        rename_from="oldX.md", device_name="srvX", device_id="idX",
    )  # fmt: skip
    target = {"path": b"badX", "rename_from": b"oldX", "device_name": b"srvX",
              "device_id": b"idX"}[field]  # fmt: skip
    payload = meta.to_json().replace(target, target[:-1] + b"\\udcff")
    fid = file_id(KEY, "badX.md")
    ad = records._record_ad(VID, bytes.fromhex(fid), 1)
    sealed = records._seal(KEY.metadata_aead, 1, payload, ad, None)
    with pytest.raises(TamperedRecord, match="malformed metadata"):
        open_record(KEY, VID, fid, 1, sealed)
    with pytest.raises(ValueError, match="not valid Unicode"):
        FileMeta(path="bad\udcff.md", size=0, sha256=hashlib.sha256(b"").hexdigest())


def test_assemble_refuses_wrong_order_missing_or_altered_chunks():
    meta, blobs = make_file("long.md", os.urandom(3500), chunk_size=1000)
    chunks = [open_blob(KEY, VID, c.blob_id, blobs[c.blob_id]) for c in meta.chunks]
    assert len(chunks) == 4
    for bad in (chunks[:-1], chunks[1:] + chunks[:1], [chunks[1], chunks[0]] + chunks[2:]):
        with pytest.raises(TamperedBlob):
            assemble(meta, bad)
    with pytest.raises(TamperedBlob, match="chunk 3 has the wrong length"):
        assemble(meta, chunks[:3] + [chunks[3] + b"\x00"])
    same_length = [chunks[0][:-1] + b"\x00"] + chunks[1:]
    with pytest.raises(TamperedBlob, match="hash"):
        assemble(meta, same_length)


def test_invalid_ids_from_the_relay_are_refused():
    with pytest.raises(TamperedRecord, match="not a valid id"):
        open_record(KEY, VID, "../../etc/passwd", 3, SEALED_REC)
    with pytest.raises(TamperedBlob, match="not a valid id"):
        open_blob(KEY, VID, FID.upper(), SEALED_REC)


def test_unknown_version_byte_is_reported_as_such():
    with pytest.raises(UnsupportedVersion, match="version 2"):
        open_record(KEY, VID, FID, 3, b"\x02" + SEALED_REC[1:])


def test_error_messages_carry_no_plaintext_or_key():
    errors = []
    for call in (
        lambda: open_record(KEY, VID, FID, 4, SEALED_REC),
        lambda: open_record(KEY, VID, FID, 3, SEALED_REC[:-1]),
        lambda: open_blob(KEY, VID, next(iter(BLOBS)), SEALED_REC),
        lambda: assemble(META, [b"x" * c.length for c in META.chunks]),
    ):
        with pytest.raises(TamperDetected) as info:
            call()
        errors.append(str(info.value))
    text = "\n".join(errors)
    for secret in ("deploy", "Lesson", KEY.to_bytes().hex(), KEY.content_key.hex(), META.sha256):
        assert secret not in text


# ------------------------------------------------------------ bit flips and truncation (any byte)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_bit_flip_in_a_record_is_refused(data):
    index = data.draw(st.integers(0, len(SEALED_REC) - 1))
    bit = data.draw(st.integers(0, 7))
    bad = bytearray(SEALED_REC)
    bad[index] ^= 1 << bit
    expected = UnsupportedVersion if index == 0 else TamperedRecord
    with pytest.raises(expected):
        open_record(KEY, VID, FID, 3, bytes(bad))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_bit_flip_in_a_blob_is_refused(data):
    bid, sealed = next(iter(BLOBS.items()))
    index = data.draw(st.integers(0, len(sealed) - 1))
    bit = data.draw(st.integers(0, 7))
    bad = bytearray(sealed)
    bad[index] ^= 1 << bit
    expected = UnsupportedVersion if index == 0 else TamperedBlob
    with pytest.raises(expected):
        open_blob(KEY, VID, bid, bytes(bad))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_truncated_or_extended_data_is_refused(data):
    bid, sealed = next(iter(BLOBS.items()))
    cut = data.draw(st.integers(0, len(SEALED_REC) - 1))
    with pytest.raises(TamperedRecord):
        open_record(KEY, VID, FID, 3, SEALED_REC[:cut])
    cut = data.draw(st.integers(0, len(sealed) - 1))
    with pytest.raises(TamperedBlob):
        open_blob(KEY, VID, bid, sealed[:cut])
    tail = data.draw(st.binary(min_size=1, max_size=64))
    with pytest.raises(TamperedRecord):
        open_record(KEY, VID, FID, 3, SEALED_REC + tail)
    with pytest.raises(TamperedBlob):
        open_blob(KEY, VID, bid, sealed + tail)


# ------------------------------------------------------------------------ frame strictness


def test_frame_round_trip_and_non_canonical_frames_are_refused():
    good = framing.frame(b"hello " * 100)
    assert framing.unframe(good) == b"hello " * 100
    stored = framing.frame(os.urandom(100))
    cases = {
        "nonzero padding": good[:-1] + b"\x01",
        "extra padding": good + b"\x00" * 512,
        "short": good[:5],
        "flags": bytes([0x80]) + good[1:],
        "body length": good[:5] + (10_000).to_bytes(4, "big") + good[9:],
        "raw length": good[:1] + (7).to_bytes(4, "big") + good[5:],
        "stored lengths": stored[:1] + (99).to_bytes(4, "big") + stored[5:],
        "not zlib": bytes([1]) + stored[1:],
    }
    for name, bad in cases.items():
        with pytest.raises(framing.FrameError):
            framing.unframe(bad)
            pytest.fail(f"accepted a frame with bad {name}")


def test_seal_refuses_caller_mistakes():
    for rev in (0, -3, 1 << 63, True):
        with pytest.raises(ValueError, match="revision"):
            seal_record(KEY, VID, rev, META)
    for vid in ("", None):
        with pytest.raises(ValueError, match="vault_id"):
            seal_blob(KEY, vid, b"x")
    with pytest.raises(ValueError):
        file_id(KEY, "")


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.binary(max_size=40_000), st.text(max_size=20_000).map(str.encode)))
def test_a_blob_sealed_with_its_stream_is_the_same_blob_and_the_stream_is_its_content(
    chunk: bytes,
) -> None:
    """`seal_blob_with_stream` gives the zlib stream its frame holds, which the sync index
    keeps as the merge base: it must decompress to the chunk, and the blob must open as one
    `seal_blob` made (same id, same frame layout, same size class)."""
    import zlib

    if not chunk:
        return
    bid, sealed, stream = records.seal_blob_with_stream(KEY, VID, chunk, _nonce=b"\x01" * 12)
    assert (bid, sealed) == seal_blob(KEY, VID, chunk, _nonce=b"\x01" * 12)
    assert open_blob(KEY, VID, bid, sealed) == chunk
    assert records.open_blob_with_stream(KEY, VID, bid, sealed) == (chunk, stream)
    framed, same = framing.frame_with_stream(chunk)
    assert framed == framing.frame(chunk) and same == stream
    if stream is None:  # stored as is: compressing did not make it smaller
        assert framing.unframe(framed) == chunk
    else:
        assert zlib.decompress(stream) == chunk and len(stream) < len(chunk)
