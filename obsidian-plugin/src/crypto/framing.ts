/**
 * The compress-then-pad plaintext frame (docs/security.md §2.4, companion/crypto/framing.py).
 *
 *   flags u8 (bit 0: zlib body) | raw_len u32 | body_len u32 | body | zero padding
 *
 * Compression is pako (a port of zlib that produces zlib's exact bytes at the same level), so
 * frames built here are byte-identical to Python's, which the committed vectors check.
 */

import { deflate, Inflate } from "pako";
import { readU32, u16, u32, utf8 } from "./bytes";

export const MIN_BUCKET = 512;
export const LARGE_STEP = 64 * 1024;
export const HEADER_SIZE = 9;
export const FLAG_ZLIB = 0x01;
const SAMPLE = 8 * 1024;
const ZLIB_LEVEL = 6;
const MAX_PAYLOAD = 0xffffffff;

export class FrameError extends Error {}

/** u16 length (big endian) + UTF-8: the vault id inside every associated data. */
export function encodeVaultId(vaultId: string): Uint8Array {
  if (typeof vaultId !== "string" || !vaultId) throw new Error("vault_id must be a non-empty string");
  const raw = utf8(vaultId);
  if (raw.length > 0xffff) throw new Error("vault_id is too long");
  const out = new Uint8Array(2 + raw.length);
  out.set(u16(raw.length), 0);
  out.set(raw, 2);
  return out;
}

/** The size class a body of `n` bytes is padded to. */
export function paddedSize(n: number): number {
  if (n <= MIN_BUCKET) return MIN_BUCKET;
  if (n <= LARGE_STEP) {
    let p = 1;
    while (p < n) p *= 2;
    return p;
  }
  return Math.ceil(n / LARGE_STEP) * LARGE_STEP;
}

function compress(payload: Uint8Array): Uint8Array | null {
  if (payload.length > 2 * SAMPLE) {
    const sample = payload.subarray(0, SAMPLE);
    if (deflate(sample, { level: 1 }).length >= sample.length * 0.97) return null;
  }
  const packed = deflate(payload, { level: ZLIB_LEVEL });
  return packed.length < payload.length ? packed : null;
}

export function frame(payload: Uint8Array): Uint8Array {
  if (payload.length > MAX_PAYLOAD) throw new Error("payload too large for one frame; chunk it");
  const packed = compress(payload);
  const flags = packed ? FLAG_ZLIB : 0;
  const body = packed ?? payload;
  const out = new Uint8Array(HEADER_SIZE + paddedSize(body.length));
  out[0] = flags;
  out.set(u32(payload.length), 1);
  out.set(u32(body.length), 5);
  out.set(body, HEADER_SIZE);
  return out;
}

/** Undo `frame`, insisting on the canonical form; inflation is bounded by raw_len. */
export function unframe(data: Uint8Array): Uint8Array {
  if (data.length < HEADER_SIZE) throw new FrameError("frame shorter than its header");
  const flags = data[0];
  const rawLen = readU32(data, 1);
  const bodyLen = readU32(data, 5);
  if (flags & ~FLAG_ZLIB) throw new FrameError("unknown frame flags");
  const used = HEADER_SIZE + bodyLen;
  if (data.length !== HEADER_SIZE + paddedSize(bodyLen)) throw new FrameError("frame padding does not match its length");
  for (let i = used; i < data.length; i++) {
    if (data[i] !== 0) throw new FrameError("frame padding is not zero");
  }
  const body = data.subarray(HEADER_SIZE, used);
  if (!(flags & FLAG_ZLIB)) {
    if (rawLen !== bodyLen) throw new FrameError("stored frame has inconsistent lengths");
    return body.slice();
  }
  return boundedInflate(body, rawLen);
}

function boundedInflate(body: Uint8Array, rawLen: number): Uint8Array {
  const out = new Uint8Array(rawLen);
  let got = 0;
  let overflow = false;
  // one output chunk of raw_len (+1 to see an overflow) for all but large payloads
  const chunkSize = Math.max(1024, Math.min(rawLen + 1, 1024 * 1024));
  const inflater = new Inflate({ chunkSize }) as Inflate & { ended: boolean };
  inflater.onData = (chunk: Uint8Array) => {
    if (got + chunk.length > rawLen) {
      overflow = true;
      return;
    }
    out.set(chunk, got);
    got += chunk.length;
  };
  // feed in slices so a bomb stops after at most one slice's worth of output past raw_len
  const step = 16 * 1024;
  let ended = false;
  for (let off = 0; off < body.length && !overflow; off += step) {
    const last = off + step >= body.length;
    inflater.push(body.subarray(off, off + step), last);
    if (inflater.err) throw new FrameError("frame body is not a valid zlib stream");
    if (inflater.ended) {
      ended = true;
      const left = (inflater as unknown as { strm: { avail_in: number } }).strm.avail_in;
      if (!last || left) throw new FrameError("frame body does not inflate to its declared length");
      break;
    }
  }
  if (body.length === 0) throw new FrameError("frame body is not a valid zlib stream");
  if (overflow || !ended || got !== rawLen || inflater.err) {
    throw new FrameError("frame body does not inflate to its declared length");
  }
  return out;
}
