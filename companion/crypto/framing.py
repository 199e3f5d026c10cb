"""Shared byte layouts: associated-data encoding, and the compress-then-pad plaintext frame.

The plaintext frame hides exact sizes from the relay. Before sealing, a payload becomes::

    flags      u8    bit 0 set: body is a zlib (RFC 1950) stream; other bits must be zero
    raw_len    u32   length of the payload before compression (big endian)
    body_len   u32   length of the body that follows
    body             the payload, compressed or not
    padding          zero bytes, so that len(body + padding) == padded_size(body_len)

`padded_size` rounds up to a power of two (at least 512 bytes) up to 64 KiB, and above that to
the next multiple of 64 KiB, so the relay learns a size class, never the exact size. The
bucket applies to the body alone, so a chunk of exactly 256 KiB stays in the 256 KiB class.
"""

from __future__ import annotations

import struct
import zlib

MIN_BUCKET = 512
LARGE_STEP = 64 * 1024
MAX_PAYLOAD = 0xFFFF_FFFF

FLAG_ZLIB = 0x01
_HEADER = struct.Struct(">BII")
HEADER_SIZE = _HEADER.size  # 9

# Incompressible data (images, PDFs, archives) is detected on a sample first, so a large chunk
# of it is not run through deflate for nothing.
_SAMPLE = 8 * 1024
_ZLIB_LEVEL = 6


class FrameError(ValueError):
    """A decrypted frame is malformed; callers turn this into their own tamper error."""


def encode_vault_id(vault_id: str) -> bytes:
    """u16 length (big endian) + UTF-8, so ids of any length cannot run into the next field."""
    if not isinstance(vault_id, str) or not vault_id:
        raise ValueError("vault_id must be a non-empty string")
    raw = vault_id.encode("utf-8")
    if len(raw) > 0xFFFF:
        raise ValueError("vault_id is too long")
    return struct.pack(">H", len(raw)) + raw


def padded_size(n: int) -> int:
    """The size class a body of `n` bytes is padded to."""
    if n <= MIN_BUCKET:
        return MIN_BUCKET
    if n <= LARGE_STEP:
        return 1 << (n - 1).bit_length()
    return -(-n // LARGE_STEP) * LARGE_STEP


def _compress(payload: bytes) -> bytes | None:
    """The zlib stream of `payload`, or None when compression does not make it smaller."""
    if len(payload) > 2 * _SAMPLE:
        sample = payload[:_SAMPLE]
        if len(zlib.compress(sample, 1)) >= len(sample) * 0.97:
            return None
    packed = zlib.compress(payload, _ZLIB_LEVEL)
    return packed if len(packed) < len(payload) else None


def frame(payload: bytes) -> bytes:
    """Compress (when it helps) and pad `payload` into a plaintext frame."""
    return frame_with_stream(payload)[0]


def frame_with_stream(payload: bytes) -> tuple[bytes, bytes | None]:
    """`frame(payload)`, and the zlib stream of `payload` the frame holds (None when its body
    is `payload` as is). A caller that keeps the same bytes compressed, as the sync index keeps
    a note's merge base, takes that stream instead of compressing them a second time."""
    if len(payload) > MAX_PAYLOAD:
        raise ValueError("payload too large for one frame; chunk it")
    packed = _compress(payload)
    flags, body = (FLAG_ZLIB, packed) if packed is not None else (0, payload)
    used = HEADER_SIZE + len(body)
    out = bytearray(HEADER_SIZE + padded_size(len(body)))
    _HEADER.pack_into(out, 0, flags, len(payload), len(body))
    out[HEADER_SIZE:used] = body
    return bytes(out), packed


def unframe(data: bytes) -> bytes:
    """Undo `frame`, insisting on the canonical form (exact padding, zero bytes, known flags)."""
    return unframe_with_stream(data)[0]


def unframe_with_stream(data: bytes) -> tuple[bytes, bytes | None]:
    """`unframe(data)`, and the zlib stream the frame held (None for a body stored as is), once
    it has inflated to exactly the payload: what `frame_with_stream` gave the sender."""
    if len(data) < HEADER_SIZE:
        raise FrameError("frame shorter than its header")
    flags, raw_len, body_len = _HEADER.unpack_from(data, 0)
    if flags & ~FLAG_ZLIB:
        raise FrameError("unknown frame flags")
    used = HEADER_SIZE + body_len
    if len(data) != HEADER_SIZE + padded_size(body_len):
        raise FrameError("frame padding does not match its length")
    if data.count(0, used) != len(data) - used:
        raise FrameError("frame padding is not zero")
    body = data[HEADER_SIZE:used]
    if not flags & FLAG_ZLIB:
        if raw_len != body_len:
            raise FrameError("stored frame has inconsistent lengths")
        return body, None
    inflater = zlib.decompressobj()
    try:
        payload = inflater.decompress(body, raw_len + 1)
    except zlib.error as exc:
        raise FrameError("frame body is not a valid zlib stream") from exc
    if len(payload) != raw_len or not inflater.eof or inflater.unused_data:
        raise FrameError("frame body does not inflate to its declared length")
    return payload, body
