/**
 * The vault key and its HKDF-SHA256 subkeys (docs/security.md §1, companion/crypto/keys.py).
 * Nothing is ever encrypted or hashed with the vault key itself.
 */

import { toHex, utf8 } from "./bytes";
import { aesKey, hkdfSha256, hmacKey, randomBytes } from "./webcrypto";

export const KEY_SIZE = 32;
export const LABEL_CONTENT = "vault-companion/v1/content";
export const LABEL_METADATA = "vault-companion/v1/metadata";
export const LABEL_FILE_ID = "vault-companion/v1/file-id";
export const LABEL_BLOB_ID = "vault-companion/v1/blob-id";
export const LABEL_FINGERPRINT = "vault-companion/v1/fingerprint";
const FINGERPRINT_BYTES = 10;

export interface Subkeys {
  content: Uint8Array;
  metadata: Uint8Array;
  fileId: Uint8Array;
  blobId: Uint8Array;
}

export class VaultKey {
  readonly #raw: Uint8Array;
  readonly subkeys: Subkeys;
  readonly contentAead: CryptoKey;
  readonly metadataAead: CryptoKey;
  readonly fileIdMac: CryptoKey;
  readonly blobIdMac: CryptoKey;
  readonly fingerprint: string;

  private constructor(
    raw: Uint8Array,
    subkeys: Subkeys,
    keys: [CryptoKey, CryptoKey, CryptoKey, CryptoKey],
    fingerprint: string,
  ) {
    this.#raw = raw;
    this.subkeys = subkeys;
    [this.contentAead, this.metadataAead, this.fileIdMac, this.blobIdMac] = keys;
    this.fingerprint = fingerprint;
  }

  static async fromBytes(raw: Uint8Array): Promise<VaultKey> {
    if (!(raw instanceof Uint8Array) || raw.length !== KEY_SIZE) {
      throw new Error(`a vault key is exactly ${KEY_SIZE} bytes`);
    }
    const copy = raw.slice();
    const [content, metadata, fileId, blobId, fp] = await Promise.all([
      hkdfSha256(copy, utf8(LABEL_CONTENT)),
      hkdfSha256(copy, utf8(LABEL_METADATA)),
      hkdfSha256(copy, utf8(LABEL_FILE_ID)),
      hkdfSha256(copy, utf8(LABEL_BLOB_ID)),
      hkdfSha256(copy, utf8(LABEL_FINGERPRINT), FINGERPRINT_BYTES),
    ]);
    const keys = await Promise.all([aesKey(content), aesKey(metadata), hmacKey(fileId), hmacKey(blobId)]);
    const hex = toHex(fp);
    const fingerprint = hex.match(/.{4}/g)!.join("-");
    return new VaultKey(copy, { content, metadata, fileId, blobId }, keys, fingerprint);
  }

  static async generate(): Promise<VaultKey> {
    return VaultKey.fromBytes(randomBytes(KEY_SIZE));
  }

  /** The raw 32 bytes, for the secret store only. Never log or send them. */
  toBytes(): Uint8Array {
    return this.#raw.slice();
  }

  toString(): string {
    return `VaultKey(fingerprint=${this.fingerprint})`;
  }

  toJSON(): string {
    return this.toString();
  }
}
