/**
 * The passphrase-wrapped vault key (docs/security.md §2.1, companion/crypto/wrap.py), 89 bytes:
 *
 *   0x01 | memory KiB u32 | iterations u32 | lanes u32 | salt 16 | nonce 12 | AES-GCM(kek, key) 48
 *   kek = Argon2id(NFC(passphrase), salt, params); ad = bytes[0:29] | vid
 *
 * Argon2id is hash-wasm's WebAssembly build (no Node APIs). Its output is checked against a
 * known answer (`argon2SelfTest`) before the first use, so a broken WASM engine cannot
 * silently derive a different key. Parameters are range-checked before the KDF runs, so a
 * hostile relay cannot make a phone allocate gigabytes.
 */

import { argon2id } from "hash-wasm";
import { concat, fromHex, readU32, toHex, u32, utf8 } from "./bytes";
import { encodeVaultId } from "./framing";
import { KEY_SIZE, VaultKey } from "./keys";
import { aesGcmDecrypt, aesGcmEncrypt, aesKey, AuthFailed, randomBytes } from "./webcrypto";
import {
  SelfTestFailed,
  TamperedWrappedKey,
  UnsafeKdfParams,
  UnsupportedVersion,
  WeakPassphrase,
  WrongPassphrase,
} from "../errors";

export const WRAP_VERSION = 1;
export const SALT_SIZE = 16;
const NONCE_SIZE = 12;
const AD_END = 29;
export const WRAPPED_SIZE = 89;
export const MIN_MEMORY_KIB = 8 * 1024;
/** Python accepts up to 4 GiB; a phone cannot. We refuse above this and say so (docs). */
export const MAX_MEMORY_KIB_HERE = 1024 * 1024;
const PY_MAX_MEMORY_KIB = 4 * 1024 * 1024;
const MAX_ITERATIONS = 32;
const MAX_LANES = 16;

export interface KdfParams {
  memoryKib: number;
  iterations: number;
  lanes: number;
}

export const DEFAULT_KDF_PARAMS: KdfParams = { memoryKib: 64 * 1024, iterations: 3, lanes: 4 };
/** The cheapest parameters the format accepts: COMPANION_TEST_WEAK_KDF=1 only (tests). */
export const TEST_KDF_PARAMS: KdfParams = { memoryKib: 8 * 1024, iterations: 1, lanes: 1 };

export function checkKdfParams(p: KdfParams, maxMemoryKib = MAX_MEMORY_KIB_HERE): void {
  if (!(p.memoryKib >= MIN_MEMORY_KIB && p.memoryKib <= PY_MAX_MEMORY_KIB)) {
    throw new UnsafeKdfParams(
      `refusing Argon2id memory of ${p.memoryKib} KiB: it must be between 8 MiB and 4 GiB`,
    );
  }
  if (p.memoryKib > maxMemoryKib) {
    throw new UnsafeKdfParams(
      `the vault key is wrapped with Argon2id memory of ${p.memoryKib / 1024} MiB, more than this device ` +
        `can spend (${maxMemoryKib / 1024} MiB); change the passphrase on a computer with the default settings`,
    );
  }
  if (!(p.iterations >= 1 && p.iterations <= MAX_ITERATIONS)) {
    throw new UnsafeKdfParams(`refusing ${p.iterations} Argon2id iterations: it must be 1 to ${MAX_ITERATIONS}`);
  }
  if (!(p.lanes >= 1 && p.lanes <= MAX_LANES)) {
    throw new UnsafeKdfParams(`refusing ${p.lanes} Argon2id lanes: it must be 1 to ${MAX_LANES}`);
  }
}

function passphraseBytes(passphrase: string): Uint8Array {
  if (typeof passphrase !== "string" || !passphrase) {
    throw new WeakPassphrase("the passphrase is empty; choose a long passphrase");
  }
  return utf8(passphrase.normalize("NFC"));
}

export async function argon2(password: Uint8Array, salt: Uint8Array, p: KdfParams, length = KEY_SIZE): Promise<Uint8Array> {
  await ensureSelfTest();
  return rawArgon2(password, salt, p, length);
}

async function rawArgon2(password: Uint8Array, salt: Uint8Array, p: KdfParams, length: number): Promise<Uint8Array> {
  return argon2id({
    password,
    salt,
    parallelism: p.lanes,
    iterations: p.iterations,
    memorySize: p.memoryKib,
    hashLength: length,
    outputType: "binary",
  });
}

// A known answer computed by Python's `cryptography` (OpenSSL) Argon2id; the same value is in
// tests/vectors/plugin_v1.json and checked on both sides. Small parameters: a phone runs it at
// every start in a few milliseconds.
export const ARGON2_KAT = {
  password: "vault-companion argon2id self-test",
  salt: "7661756c742d636f6d70616e696f6e2d6b6174",
  memoryKib: 64,
  iterations: 2,
  lanes: 2,
  output: "7a6de6e8f9038e730be9356ec2f21349aef2ac99c1e979c6a91d71dce7449b00",
};

let selfTest: Promise<void> | null = null;

/** Run the Argon2id known-answer test once per process; SelfTestFailed if it disagrees. */
export function ensureSelfTest(): Promise<void> {
  if (!selfTest) {
    selfTest = (async () => {
      const k = ARGON2_KAT;
      const got = await rawArgon2(utf8(k.password), fromHex(k.salt), k, 32);
      if (toHex(got) !== k.output) {
        throw new SelfTestFailed(
          "Argon2id on this device failed its known-answer self-test: it would derive wrong keys, " +
            "so encrypted sync stays off (please report your device and Obsidian version)",
        );
      }
    })();
    selfTest.catch(() => {
      selfTest = null;
    });
  }
  return selfTest;
}

export async function wrapVaultKey(
  key: VaultKey,
  passphrase: string,
  vaultId: string,
  params: KdfParams = DEFAULT_KDF_PARAMS,
  fixed?: { salt: Uint8Array; nonce: Uint8Array },
): Promise<Uint8Array> {
  checkKdfParams(params);
  const salt = fixed?.salt ?? randomBytes(SALT_SIZE);
  const nonce = fixed?.nonce ?? randomBytes(NONCE_SIZE);
  if (salt.length !== SALT_SIZE || nonce.length !== NONCE_SIZE) throw new Error("bad salt or nonce length");
  const header = concat(
    new Uint8Array([WRAP_VERSION]),
    u32(params.memoryKib),
    u32(params.iterations),
    u32(params.lanes),
    salt,
  );
  const kek = await aesKey(await argon2(passphraseBytes(passphrase), salt, params));
  const sealed = await aesGcmEncrypt(kek, nonce, key.toBytes(), concat(header, encodeVaultId(vaultId)));
  return concat(header, nonce, sealed);
}

export function readKdfParams(blob: Uint8Array, maxMemoryKib = MAX_MEMORY_KIB_HERE): KdfParams {
  if (!(blob instanceof Uint8Array) || blob.length < 1) throw new TamperedWrappedKey("the wrapped vault key from the relay is empty");
  if (blob[0] !== WRAP_VERSION) {
    throw new UnsupportedVersion(
      `wrapped-key format version ${blob[0]} is not supported by this companion (update it, or the relay altered the data)`,
    );
  }
  if (blob.length !== WRAPPED_SIZE) {
    throw new TamperedWrappedKey(
      `the wrapped vault key from the relay is ${blob.length} bytes, expected ${WRAPPED_SIZE}: it was truncated or altered`,
    );
  }
  const p = { memoryKib: readU32(blob, 1), iterations: readU32(blob, 5), lanes: readU32(blob, 9) };
  checkKdfParams(p, maxMemoryKib);
  return p;
}

export async function unwrapVaultKey(blob: Uint8Array, passphrase: string, vaultId: string): Promise<VaultKey> {
  const params = readKdfParams(blob);
  const salt = blob.subarray(13, AD_END);
  const nonce = blob.subarray(AD_END, AD_END + NONCE_SIZE);
  const ad = concat(blob.subarray(0, AD_END), encodeVaultId(vaultId));
  const kek = await aesKey(await argon2(passphraseBytes(passphrase), salt, params));
  try {
    return await VaultKey.fromBytes(await aesGcmDecrypt(kek, nonce, blob.subarray(AD_END + NONCE_SIZE), ad));
  } catch (e) {
    if (e instanceof AuthFailed) {
      throw new WrongPassphrase(
        "wrong passphrase: it does not unlock this vault's key " +
          "(or the wrapped key on the relay was altered or belongs to another vault)",
      );
    }
    throw e;
  }
}
