/**
 * The printable recovery key (docs/security.md §2.2, companion/crypto/recovery.py):
 * base32(0x01 | vault key | SHA-256(label | 0x01 | key)[0:7]), 64 characters in 16 groups of 4.
 */

import { concat, equalBytes, utf8 } from "./bytes";
import { KEY_SIZE, VaultKey } from "./keys";
import { sha256 } from "./webcrypto";
import { BadRecoveryKey, UnsupportedVersion } from "../errors";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const LABEL = utf8("vault-companion/v1/recovery-checksum");
const CHARS = 64;

async function checksum(versionAndKey: Uint8Array): Promise<Uint8Array> {
  return (await sha256(concat(LABEL, versionAndKey))).subarray(0, 7);
}

function b32encode(data: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of data) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

function b32decode(text: string): Uint8Array {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of text) {
    value = ((value << 5) | ALPHABET.indexOf(ch)) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return new Uint8Array(out);
}

export async function exportRecoveryKey(key: VaultKey): Promise<string> {
  const body = concat(new Uint8Array([1]), key.toBytes());
  const text = b32encode(concat(body, await checksum(body)));
  return text.match(/.{4}/g)!.join("-");
}

export async function importRecoveryKey(text: string): Promise<VaultKey> {
  const cleaned = Array.from(text)
    .filter((c) => !" \t\r\n-".includes(c))
    .join("")
    .toUpperCase()
    .replace(/0/g, "O")
    .replace(/1/g, "I")
    .replace(/8/g, "B");
  if (cleaned.length !== CHARS) {
    throw new BadRecoveryKey(
      `a recovery key has ${CHARS} letters and digits (16 groups of 4), this one has ${cleaned.length}`,
    );
  }
  for (let i = 0; i < cleaned.length; i++) {
    if (!ALPHABET.includes(cleaned[i])) {
      throw new BadRecoveryKey(
        `character ${i + 1} of the recovery key is not valid (only letters A-Z and digits 2-7 are used)`,
      );
    }
  }
  const raw = b32decode(cleaned);
  const body = raw.subarray(0, raw.length - 7);
  if (!equalBytes(await checksum(body), raw.subarray(raw.length - 7))) {
    throw new BadRecoveryKey("recovery key checksum does not match: a character is mistyped or missing");
  }
  if (body[0] !== 1) throw new UnsupportedVersion(`recovery key format version ${body[0]} is not supported by this companion`);
  if (body.length !== 1 + KEY_SIZE) throw new BadRecoveryKey("the recovery key has the wrong length");
  return VaultKey.fromBytes(body.subarray(1));
}
