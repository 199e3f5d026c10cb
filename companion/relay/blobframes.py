"""Framing for batched blob transfers (`application/x-companion-blobs`).

A body is a sequence of frames, each::

    u8   id length (16..128)
    id   ASCII lowercase hex
    32   SHA-256 of the data (raw bytes)
    u64  data length, big-endian
    data

Frames stream: neither side has to hold a whole batch, and each blob carries its own
checksum. `FrameParser` is a push parser (feed it chunks as they arrive).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MEDIA_TYPE = "application/x-companion-blobs"

_ID_RE = re.compile(rb"^[0-9a-f]{16,128}$")
_TAIL = struct.Struct(">32sQ")


class FrameError(ValueError):
    """A malformed batch body."""


@dataclass(frozen=True)
class FrameHeader:
    blob_id: str
    sha256: str  # hex
    size: int


def frame_header(blob_id: str, sha256_hex: str, size: int) -> bytes:
    raw_id = blob_id.encode("ascii")
    if not _ID_RE.match(raw_id):
        raise FrameError(f"bad blob id {blob_id!r}")
    return bytes([len(raw_id)]) + raw_id + _TAIL.pack(bytes.fromhex(sha256_hex), size)


def encode_frames(items: Iterable[tuple[str, str, bytes]]) -> Iterator[bytes]:
    """(blob_id, sha256 hex, data) triples as frame pieces, without copying the data."""
    for blob_id, sha, data in items:
        yield frame_header(blob_id, sha, len(data))
        yield data


class FrameParser:
    """Feed bytes; get `FrameHeader`, then the data in pieces, then `None` at each frame end.

    Data pieces are memoryviews into the chunks fed (no copy); they stay valid because the
    chunks are immutable `bytes`.
    """

    def __init__(self, max_blob_bytes: int) -> None:
        self.max_blob_bytes = max_blob_bytes
        self._buf = bytearray()
        self._remaining = 0  # data bytes still due for the current frame
        self._in_data = False

    def feed(self, data: bytes) -> Iterator[FrameHeader | memoryview | None]:
        view = memoryview(data)
        while True:
            if self._in_data:
                if self._remaining == 0:
                    self._in_data = False
                    yield None
                    continue
                if not view:
                    return
                take = view[: self._remaining]
                self._remaining -= len(take)
                view = view[len(take) :]
                yield take
                continue
            if not view and not self._buf:
                return
            self._buf += view
            view = memoryview(b"")
            header = self._take_header()
            if header is None:
                return
            self._in_data = True
            self._remaining = header.size
            yield header
            if self._buf:
                view = memoryview(bytes(self._buf))
                self._buf.clear()

    def _take_header(self) -> FrameHeader | None:
        buf = self._buf
        if not buf:
            return None
        n = buf[0]
        if n < 16 or n > 128:
            raise FrameError("bad blob id length in batch frame")
        need = 1 + n + _TAIL.size
        if len(buf) < need:
            return None
        raw_id = bytes(buf[1 : 1 + n])
        if not _ID_RE.match(raw_id):
            raise FrameError("bad blob id in batch frame")
        digest, size = _TAIL.unpack_from(buf, 1 + n)
        if size > self.max_blob_bytes:
            raise FrameError(f"blob {raw_id.decode()} is larger than {self.max_blob_bytes} bytes")
        del buf[:need]
        return FrameHeader(raw_id.decode("ascii"), digest.hex(), size)

    def close(self) -> None:
        """The body ended: refuse a frame cut short."""
        if self._buf or (self._in_data and self._remaining):
            raise FrameError("batch body ends in the middle of a frame")
