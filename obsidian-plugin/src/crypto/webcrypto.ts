/** WebCrypto (`crypto.subtle`), the only crypto primitive source on Obsidian mobile. */

import { bs } from "./bytes";

export function subtle(): SubtleCrypto {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (!c || !c.subtle) {
    throw new Error("this platform offers no WebCrypto (crypto.subtle): encrypted sync is unavailable");
  }
  return c.subtle;
}

export function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  (globalThis as { crypto: Crypto }).crypto.getRandomValues(out);
  return out;
}

export async function sha256(data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await subtle().digest("SHA-256", bs(data)));
}

export async function hkdfSha256(ikm: Uint8Array, info: Uint8Array, length = 32): Promise<Uint8Array> {
  const base = await subtle().importKey("raw", bs(ikm), "HKDF", false, ["deriveBits"]);
  // salt "none" in RFC 5869 is HashLen zero bytes; HMAC pads an empty key with zeros: the same
  const bits = await subtle().deriveBits(
    { name: "HKDF", hash: "SHA-256", salt: new ArrayBuffer(0), info: bs(info) },
    base,
    length * 8,
  );
  return new Uint8Array(bits);
}

export async function hmacKey(raw: Uint8Array): Promise<CryptoKey> {
  return subtle().importKey("raw", bs(raw), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

export async function hmacSha256(key: CryptoKey, data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await subtle().sign("HMAC", key, bs(data)));
}

export async function aesKey(raw: Uint8Array): Promise<CryptoKey> {
  return subtle().importKey("raw", bs(raw), { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
}

/** AES-256-GCM; the result is ciphertext followed by the 16-byte tag (as in `cryptography`). */
export async function aesGcmEncrypt(
  key: CryptoKey,
  nonce: Uint8Array,
  plain: Uint8Array,
  ad: Uint8Array,
): Promise<Uint8Array> {
  const out = await subtle().encrypt({ name: "AES-GCM", iv: bs(nonce), additionalData: bs(ad) }, key, bs(plain));
  return new Uint8Array(out);
}

/** Throws `AuthFailed` when the tag does not verify. */
export async function aesGcmDecrypt(
  key: CryptoKey,
  nonce: Uint8Array,
  sealed: Uint8Array,
  ad: Uint8Array,
): Promise<Uint8Array> {
  try {
    const out = await subtle().decrypt({ name: "AES-GCM", iv: bs(nonce), additionalData: bs(ad) }, key, bs(sealed));
    return new Uint8Array(out);
  } catch {
    throw new AuthFailed();
  }
}

export class AuthFailed extends Error {
  constructor() {
    super("AES-GCM authentication failed");
  }
}
