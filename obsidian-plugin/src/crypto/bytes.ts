/** Byte helpers shared by the crypto, relay and sync code (no Node APIs: this runs on mobile). */

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });

export function toHex(data: Uint8Array): string {
  let out = "";
  for (let i = 0; i < data.length; i++) out += HEX[data[i]];
  return out;
}

export function fromHex(text: string): Uint8Array {
  if (text.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text)) {
    throw new Error("not a hex string");
  }
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function utf8(text: string): Uint8Array {
  return enc.encode(text);
}

/** Strict UTF-8 decoding: throws on invalid bytes (never substitutes). */
export function fromUtf8(data: Uint8Array): string {
  return dec.decode(data);
}

export function isUtf8(data: Uint8Array): boolean {
  try {
    dec.decode(data);
    return true;
  } catch {
    return false;
  }
}

/** Whether `s` is text UTF-8 can hold: JSON can spell a lone surrogate ("\\udcff"), which no
 * file name, index or other device can (Python's `_is_unicode`). encodeURIComponent refuses
 * exactly those. */
export function isUnicode(s: string): boolean {
  try {
    encodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** Constant-time comparison of two strings of equal length (ids, hashes). */
export function equalStrings(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

export function u16(n: number): Uint8Array {
  return new Uint8Array([(n >>> 8) & 0xff, n & 0xff]);
}

export function u32(n: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, n >>> 0, false);
  return out;
}

export function u64(n: number | bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n), false);
  return out;
}

export function readU32(data: Uint8Array, off: number): number {
  return new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(off, false);
}

export function readU64(data: Uint8Array, off: number): bigint {
  return new DataView(data.buffer, data.byteOffset, data.byteLength).getBigUint64(off, false);
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_INV = new Int16Array(128).fill(-1);
for (let i = 0; i < B64.length; i++) B64_INV[B64.charCodeAt(i)] = i;

const hasBtoa = typeof btoa === "function" && typeof atob === "function";

/** Standard base64 with padding (what the relay's JSON uses). */
export function toBase64(data: Uint8Array): string {
  if (hasBtoa) {
    let bin = "";
    for (let i = 0; i < data.length; i += 0x8000) bin += String.fromCharCode(...data.subarray(i, i + 0x8000));
    return btoa(bin);
  }
  return toBase64Slow(data);
}

function toBase64Slow(data: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 2 < data.length; i += 3) {
    const n = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    out += B64[n >> 18] + B64[(n >> 12) & 63] + B64[(n >> 6) & 63] + B64[n & 63];
  }
  if (i < data.length) {
    const n = (data[i] << 16) | ((i + 1 < data.length ? data[i + 1] : 0) << 8);
    out += B64[n >> 18] + B64[(n >> 12) & 63];
    out += i + 1 < data.length ? B64[(n >> 6) & 63] + "=" : "==";
  }
  return out;
}

export function fromBase64(text: string): Uint8Array {
  if (text.length % 4 !== 0) throw new Error("base64 length is not a multiple of 4");
  if (hasBtoa) {
    let bin: string;
    try {
      bin = atob(text); // refuses characters outside the alphabet (the tag checks the rest)
    } catch {
      throw new Error("invalid base64 character");
    }
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  const pad = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const out = new Uint8Array((text.length / 4) * 3 - pad);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    let n = 0;
    for (let j = 0; j < 4; j++) {
      const c = text.charCodeAt(i + j);
      let v: number;
      if (c === 61 && i + j >= text.length - pad) v = 0;
      else {
        v = c < 128 ? B64_INV[c] : -1;
        if (v < 0) throw new Error("invalid base64 character");
      }
      n = (n << 6) | v;
    }
    if (o < out.length) out[o++] = (n >> 16) & 0xff;
    if (o < out.length) out[o++] = (n >> 8) & 0xff;
    if (o < out.length) out[o++] = n & 0xff;
  }
  return out;
}

/** A view of `data` as the ArrayBuffer-backed BufferSource WebCrypto wants. */
export function bs(data: Uint8Array): ArrayBuffer {
  if (data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer) {
    return data.buffer;
  }
  return data.slice().buffer as ArrayBuffer;
}
