"""Batched blob framing: any split of the byte stream parses back to the same blobs."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.relay.blobframes import FrameError, FrameHeader, FrameParser, encode_frames

blobs_st = st.lists(
    st.tuples(st.from_regex(r"[0-9a-f]{16,40}", fullmatch=True), st.binary(max_size=300)),
    max_size=6,
)


def parse(chunks: list[bytes], max_blob: int = 10_000) -> list[tuple[str, str, bytes]]:
    parser = FrameParser(max_blob)
    out, header, parts = [], None, []
    for chunk in chunks:
        for ev in parser.feed(chunk):
            if isinstance(ev, FrameHeader):
                header, parts = ev, []
            elif ev is None:
                out.append((header.blob_id, header.sha256, b"".join(parts)))
            else:
                parts.append(ev)
    parser.close()
    return out


@settings(max_examples=200, deadline=None)
@given(blobs=blobs_st, cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=12))
def test_any_chunking_roundtrips(blobs, cuts):
    items = [(b, hashlib.sha256(d).hexdigest(), d) for b, d in blobs]
    stream = b"".join(encode_frames(items))
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    chunks = [stream[a:b] for a, b in zip(points, points[1:], strict=False)]
    assert parse(chunks) == items


def test_truncated_stream_is_refused():
    stream = b"".join(encode_frames([("ab" * 16, hashlib.sha256(b"abc").hexdigest(), b"abc")]))
    for cut in range(1, len(stream)):
        with pytest.raises(FrameError):
            parse([stream[:cut]])


def test_oversize_frame_is_refused_before_its_data():
    stream = b"".join(encode_frames([("ab" * 16, "00" * 32, b"x" * 101)]))
    with pytest.raises(FrameError, match="larger than"):
        parse([stream[:80]], max_blob=100)  # the 73-byte header and a little data
