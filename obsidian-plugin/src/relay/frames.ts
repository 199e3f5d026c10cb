/**
 * Batched blob transfer frames (`application/x-companion-blobs`, docs/relay.md):
 * u8 id length | id (ASCII hex) | SHA-256 (32) | u64 length | data.
 */

import { concat, fromHex, readU64, toHex, u64, utf8 } from "../crypto/bytes";

export const FRAMES_TYPE = "application/x-companion-blobs";
const ID_RE = /^[0-9a-f]{16,128}$/;

export class BatchFrameError extends Error {}

export function encodeFrames(items: { id: string; sha256: string; data: Uint8Array }[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const it of items) {
    if (!ID_RE.test(it.id)) throw new BatchFrameError(`bad blob id ${it.id}`);
    parts.push(new Uint8Array([it.id.length]), utf8(it.id), fromHex(it.sha256), u64(it.data.length), it.data);
  }
  return concat(...parts);
}

export function decodeFrames(body: Uint8Array, maxBlob: number): { id: string; sha256: string; data: Uint8Array }[] {
  const out = [];
  let off = 0;
  while (off < body.length) {
    const n = body[off];
    if (n < 16 || n > 128) throw new BatchFrameError("bad blob id length in batch frame");
    if (off + 1 + n + 40 > body.length) throw new BatchFrameError("batch body ends in the middle of a frame");
    const id = new TextDecoder().decode(body.subarray(off + 1, off + 1 + n));
    if (!ID_RE.test(id)) throw new BatchFrameError("bad blob id in batch frame");
    const sha = toHex(body.subarray(off + 1 + n, off + 33 + n));
    const size = Number(readU64(body, off + 33 + n));
    if (size > maxBlob) throw new BatchFrameError(`blob ${id} is larger than ${maxBlob} bytes`);
    const start = off + 41 + n;
    if (start + size > body.length) throw new BatchFrameError("batch body ends in the middle of a frame");
    out.push({ id, sha256: sha, data: body.subarray(start, start + size) });
    off = start + size;
  }
  return out;
}
