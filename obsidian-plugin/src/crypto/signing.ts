/**
 * Device keys, the person's roster and signed records (docs/trust.md §1, §2, §4; the Python
 * side is companion/crypto/signing.py), pinned by tests/vectors/roster_v1.json.
 *
 * Ed25519 comes from @noble/curves (pure JavaScript, audited): WebCrypto's Ed25519 is not in
 * every mobile WebView Obsidian runs in. SHA-256 for the fingerprint from @noble/hashes (sync).
 *
 * - a device key is a 32-byte seed, stored as unpadded base64url under `signing-key-<vault_id>`
 *   where the device token lives (never in the vault, a log or an error);
 * - fingerprint: base32(SHA-256("vault-companion device key v1\0" + pub)), first 28 characters
 *   in 7 groups of 4 joined by "-";
 * - entry message: "VCROSTER1" then vault_id, device_id, key, kind, name, by, decimal at, each
 *   UTF-8 with a 4-byte big-endian length prefix;
 * - record message: "VCREC1" then vault_id, file_id, rev, NFC path, size, sha256, deleted,
 *   executable, device_id, device_kind, rename_from, recorded_ns, the same way.
 */

import { ed25519 } from "@noble/curves/ed25519";
import { sha256 } from "@noble/hashes/sha2";
import { concat, u32, utf8 } from "./bytes";
import { pyDumps } from "./json";

export const SEED_SIZE = 32;
export const PUBLIC_SIZE = 32;
export const SIG_SIZE = 64;
export const KINDS = ["human", "agent", "revoked"] as const;
export type RosterKind = (typeof KINDS)[number];
export const KEYS_DIR = ".companion/keys";
export const ROSTER_DIR = ".companion/roster";
const FP_DOMAIN = utf8("vault-companion device key v1\x00");
const ENTRY_TAG = utf8("VCROSTER1");
const RECORD_TAG = utf8("VCREC1");

// ------------------------------------------------------------------ unpadded base64url

const B64U = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const B64U_RE = /^[A-Za-z0-9_-]*$/;

export function b64u(data: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 2 < data.length; i += 3) {
    const n = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    out += B64U[n >> 18] + B64U[(n >> 12) & 63] + B64U[(n >> 6) & 63] + B64U[n & 63];
  }
  if (i < data.length) {
    const two = i + 1 < data.length;
    const n = (data[i] << 16) | ((two ? data[i + 1] : 0) << 8);
    out += B64U[n >> 18] + B64U[(n >> 12) & 63] + (two ? B64U[(n >> 6) & 63] : "");
  }
  return out;
}

/** Strict: the alphabet only, no padding, canonical (it encodes back to itself), `size` bytes. */
export function fromB64u(text: unknown, size: number, what: string): Uint8Array {
  if (typeof text !== "string" || !B64U_RE.test(text) || text.length % 4 === 1) {
    throw new SigningError(`${what} is not unpadded base64url`);
  }
  const out = new Uint8Array(Math.floor((text.length * 3) / 4));
  let o = 0;
  let acc = 0;
  let bits = 0;
  for (const ch of text) {
    acc = (acc << 6) | B64U.indexOf(ch);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
    acc &= (1 << bits) - 1;
  }
  if (b64u(out) !== text) throw new SigningError(`${what} is not canonical base64url`);
  if (out.length !== size) throw new SigningError(`${what} is ${out.length} bytes, not ${size}`);
  return out;
}

export class SigningError extends Error {}

// ------------------------------------------------------------------ keys

export class DeviceKey {
  private constructor(
    private readonly seed: Uint8Array,
    readonly publicKey: Uint8Array,
  ) {}

  static generate(): DeviceKey {
    return DeviceKey.fromSeed(ed25519.utils.randomPrivateKey());
  }

  static fromSeed(seed: Uint8Array): DeviceKey {
    if (seed.length !== SEED_SIZE) throw new SigningError("a device key seed is 32 bytes");
    return new DeviceKey(Uint8Array.from(seed), ed25519.getPublicKey(seed));
  }

  /** From its stored form (unpadded base64url of the seed). */
  static fromStored(text: string): DeviceKey {
    return DeviceKey.fromSeed(fromB64u(text, SEED_SIZE, "the stored device key"));
  }

  /** What the secret store keeps. Never log it. */
  stored(): string {
    return b64u(this.seed);
  }

  get publicB64(): string {
    return b64u(this.publicKey);
  }

  get fingerprint(): string {
    return fingerprint(this.publicKey);
  }

  sign(message: Uint8Array): string {
    return b64u(ed25519.sign(message, this.seed));
  }

  toJSON(): string {
    return "DeviceKey(...)"; // a key never lands in a log or a saved state by accident
  }
}

/** The name under which the secret store keeps this device's key for a vault. */
export const signingKeyName = (vaultId: string) => `signing-key-${vaultId}`;

const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

function base32(data: Uint8Array): string {
  let out = "";
  let acc = 0;
  let bits = 0;
  for (const b of data) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += B32[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  if (bits) out += B32[(acc << (5 - bits)) & 31];
  return out;
}

/** The fingerprint the person compares by eye: `ABCD-EFGH-…` (7 groups of 4). */
export function fingerprint(pub: Uint8Array): string {
  if (pub.length !== PUBLIC_SIZE) throw new SigningError("a device public key is 32 bytes");
  const s = base32(sha256(concat(FP_DOMAIN, pub))).slice(0, 28);
  return s.match(/.{4}/g)!.join("-");
}

/** A fingerprint as typed (any case, spaces or dashes anywhere) in its canonical form, or
 * null when it is not 28 base32 characters. */
export function normalizeFingerprint(text: string): string | null {
  const s = text.toUpperCase().replace(/[\s-]/g, "");
  if (!/^[A-Z2-7]{28}$/.test(s)) return null;
  return s.match(/.{4}/g)!.join("-");
}

/** Ed25519 verification; false for anything malformed (never throws). */
export function verify(pub: Uint8Array, message: Uint8Array, sig: unknown): boolean {
  let raw: Uint8Array;
  try {
    raw = fromB64u(sig, SIG_SIZE, "signature");
  } catch {
    return false;
  }
  try {
    return ed25519.verify(raw, message, pub, { zip215: false });
  } catch {
    return false;
  }
}

// ------------------------------------------------------------------ messages

function fields(tag: Uint8Array, values: string[]): Uint8Array {
  const parts: Uint8Array[] = [tag];
  for (const v of values) {
    const b = utf8(v);
    parts.push(u32(b.length), b);
  }
  return concat(...parts);
}

export interface RosterEntry {
  v: number;
  vault_id: string;
  device_id: string;
  key: string;
  kind: string;
  name: string;
  by: string;
  at: bigint;
  sig: string;
}

export function entryMessage(e: Omit<RosterEntry, "sig" | "v">): Uint8Array {
  return fields(ENTRY_TAG, [e.vault_id, e.device_id, e.key, e.kind, e.name, e.by, e.at.toString()]);
}

export function signEntry(key: DeviceKey, e: Omit<RosterEntry, "sig" | "v">): RosterEntry {
  return { v: 1, ...e, sig: key.sign(entryMessage(e)) };
}

/** Canonical JSON of an entry (sorted keys, no spaces, UTF-8), as the file holds it. */
export function entryJson(e: RosterEntry): string {
  return pyDumps({ ...e });
}

export function announcementJson(deviceId: string, pub: Uint8Array, name: string): string {
  return pyDumps({ device_id: deviceId, key: b64u(pub), name, v: 1 });
}

/** What a record's signature covers (docs/trust.md §4). */
export interface RecordFields {
  vaultId: string;
  fileId: string;
  rev: number;
  path: string;
  size: number;
  sha256: string;
  deleted: boolean;
  executable: boolean;
  deviceId: string;
  deviceKind: string;
  renameFrom: string | null;
  recordedNs: bigint | null;
}

export function recordMessage(r: RecordFields): Uint8Array {
  return fields(RECORD_TAG, [
    r.vaultId,
    r.fileId,
    String(r.rev),
    r.path.normalize("NFC"),
    String(r.size),
    r.sha256,
    r.deleted ? "1" : "0",
    r.executable ? "1" : "0",
    r.deviceId,
    r.deviceKind,
    r.renameFrom ?? "",
    r.recordedNs === null ? "" : r.recordedNs.toString(),
  ]);
}

