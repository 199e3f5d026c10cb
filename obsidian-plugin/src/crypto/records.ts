/**
 * Sealed blobs and sealed records (docs/security.md §2.3-2.6, companion/crypto/records.py).
 *
 *   blob:   0x01 | nonce (12) | AES-256-GCM(content key, frame(chunk), 0x01|vid|blob_id)
 *   record: 0x01 | nonce (12) | AES-256-GCM(metadata key, frame(json), 0x01|vid|file_id|rev u64)
 */

import { concat, equalStrings, fromHex, fromUtf8, isUnicode, toHex, u64, utf8 } from "./bytes";
import { encodeVaultId, frame, FrameError, unframe } from "./framing";
import { Float, isInt, type Json, parseJson, pyDumps } from "./json";
import type { VaultKey } from "./keys";
import { aesGcmDecrypt, aesGcmEncrypt, AuthFailed, hmacSha256, randomBytes, sha256 } from "./webcrypto";
import { RolledBack, TamperDetected, TamperedBlob, TamperedRecord, UnsupportedVersion } from "../errors";

export const BLOB_VERSION = 1;
export const RECORD_VERSION = 1;
export const NONCE_SIZE = 12;
export const TAG_SIZE = 16;
const MIN_SEALED = 1 + NONCE_SIZE + TAG_SIZE;
export const MAX_REV = (1n << 63n) - 1n;
const HEX_ID = /^[0-9a-f]{64}$/;

// ---------------------------------------------------------------------------------------- ids

/** HMAC-SHA256(file-id subkey, NFC(path)), 64 hex digits. Case is kept. */
export async function fileId(key: VaultKey, path: string): Promise<string> {
  if (typeof path !== "string" || !path) throw new Error("path must be a non-empty string");
  return toHex(await hmacSha256(key.fileIdMac, utf8(path.normalize("NFC"))));
}

export async function blobId(key: VaultKey, chunk: Uint8Array): Promise<string> {
  return toHex(await hmacSha256(key.blobIdMac, chunk));
}

export async function sha256Hex(data: Uint8Array): Promise<string> {
  return toHex(await sha256(data));
}

function idBytes(value: unknown, what: string, Err: typeof TamperDetected): Uint8Array {
  if (typeof value !== "string" || !HEX_ID.test(value)) {
    throw new Err(`${what} '${String(value).slice(0, 16)}' is not a valid id (64 lowercase hex digits)`);
  }
  return fromHex(value);
}

// ------------------------------------------------------------------------------- sealing core

async function seal(aead: CryptoKey, version: number, payload: Uint8Array, ad: Uint8Array, nonce?: Uint8Array) {
  const n = nonce ?? randomBytes(NONCE_SIZE);
  if (n.length !== NONCE_SIZE) throw new Error("bad nonce length");
  return concat(new Uint8Array([version]), n, await aesGcmEncrypt(aead, n, frame(payload), ad));
}

async function open(
  aead: CryptoKey,
  version: number,
  sealed: Uint8Array,
  ad: Uint8Array,
  Err: typeof TamperDetected,
  where: string,
): Promise<Uint8Array> {
  if (!(sealed instanceof Uint8Array) || sealed.length < 1) throw new Err(`${where} is empty`);
  if (sealed[0] !== version) {
    throw new UnsupportedVersion(
      `${where} has format version ${sealed[0]}, which this companion does not support ` +
        "(update it, or the relay altered the data)",
    );
  }
  if (sealed.length < MIN_SEALED) throw new Err(`${where} is truncated (${sealed.length} bytes)`);
  let plain: Uint8Array;
  try {
    plain = await aesGcmDecrypt(aead, sealed.subarray(1, 1 + NONCE_SIZE), sealed.subarray(1 + NONCE_SIZE), ad);
  } catch (e) {
    if (e instanceof AuthFailed) {
      throw new Err(
        `${where} failed authentication: the relay returned altered, truncated, swapped or misplaced data, ` +
          "or data of another vault",
      );
    }
    throw e;
  }
  try {
    return unframe(plain);
  } catch (e) {
    if (e instanceof FrameError) throw new Err(`${where} is malformed after decryption (${e.message})`);
    throw e;
  }
}

// -------------------------------------------------------------------------------------- blobs

function blobAd(vaultId: string, bid: Uint8Array): Uint8Array {
  return concat(new Uint8Array([BLOB_VERSION]), encodeVaultId(vaultId), bid);
}

export async function sealBlob(
  key: VaultKey,
  vaultId: string,
  chunk: Uint8Array,
  nonce?: Uint8Array,
): Promise<{ blobId: string; sealed: Uint8Array }> {
  const bid = await blobId(key, chunk);
  return { blobId: bid, sealed: await seal(key.contentAead, BLOB_VERSION, chunk, blobAd(vaultId, fromHex(bid)), nonce) };
}

export async function openBlob(key: VaultKey, vaultId: string, bid: string, sealed: Uint8Array): Promise<Uint8Array> {
  const raw = idBytes(bid, "blob id", TamperedBlob);
  const where = `blob ${bid.slice(0, 12)}`;
  const chunk = await open(key.contentAead, BLOB_VERSION, sealed, blobAd(vaultId, raw), TamperedBlob, where);
  if (!equalStrings(await blobId(key, chunk), bid)) throw new TamperedBlob(`${where} decrypts to content with a different id`);
  return chunk;
}

// ------------------------------------------------------------------------------------ records

export interface ChunkRef {
  blobId: string;
  length: number;
}

export interface FileMeta {
  path: string;
  size: number;
  sha256: string;
  chunks: ChunkRef[];
  mtimeNs: bigint | null;
  deleted: boolean;
  executable: boolean;
  deviceId: string;
  deviceName: string;
  deviceKind: string;
  renameFrom: string | null;
  recordedNs: bigint | null;
  /** Unpadded base64url Ed25519 signature by the writing device (docs/trust.md §4); absent
   * on records from before device keys. */
  sig?: string | null;
}

export function makeMeta(m: Partial<FileMeta> & Pick<FileMeta, "path" | "size" | "sha256">): FileMeta {
  const meta: FileMeta = {
    chunks: [],
    mtimeNs: null,
    deleted: false,
    executable: false,
    deviceId: "",
    deviceName: "",
    deviceKind: "",
    renameFrom: null,
    recordedNs: null,
    ...m,
  };
  checkMeta(meta);
  return meta;
}

/** The same invariants as FileMeta.__post_init__ in Python; throws Error. */
export function checkMeta(m: FileMeta): void {
  if (typeof m.path !== "string" || !m.path) throw new Error("FileMeta.path must be a non-empty string");
  if (!Number.isSafeInteger(m.size) || m.size < 0) throw new Error("FileMeta.size must be a non-negative int");
  for (const c of m.chunks) {
    if (typeof c.blobId !== "string" || !HEX_ID.test(c.blobId)) throw new Error("ChunkRef.blob_id must be 64 lowercase hex digits");
    if (!Number.isSafeInteger(c.length) || c.length < 1) throw new Error("ChunkRef.length must be a positive int");
  }
  for (const name of ["mtimeNs", "recordedNs"] as const) {
    const v = m[name];
    if (v !== null && typeof v !== "bigint") throw new Error(`FileMeta.${name} must be an int or None`);
  }
  if (typeof m.deleted !== "boolean" || typeof m.executable !== "boolean") throw new Error("FileMeta flags must be bools");
  for (const name of ["deviceId", "deviceName", "deviceKind"] as const) {
    if (typeof m[name] !== "string") throw new Error(`FileMeta.${name} must be a string`);
  }
  if (m.renameFrom !== null && typeof m.renameFrom !== "string") throw new Error("FileMeta.rename_from must be a string or None");
  if (typeof m.sha256 !== "string") throw new Error("FileMeta.sha256 must be a string");
  // a sig that is not a string of ASCII characters makes the record malformed (docs/trust.md §4)
  if (m.sig !== undefined && m.sig !== null && (typeof m.sig !== "string" || !/^[\x00-\x7f]*$/.test(m.sig))) {
    throw new Error("FileMeta.sig must be an ASCII string or None");
  }
  const texts = { path: m.path, rename_from: m.renameFrom, device_id: m.deviceId, device_name: m.deviceName, device_kind: m.deviceKind };
  for (const [name, v] of Object.entries(texts)) {
    if (typeof v === "string" && !isUnicode(v)) throw new Error(`FileMeta.${name} is not valid Unicode (a lone surrogate)`);
  }
  if (m.deleted) {
    if (m.chunks.length) throw new Error("a deleted FileMeta has no chunks");
    if (m.sha256 && !HEX_ID.test(m.sha256)) throw new Error("FileMeta.sha256 must be 64 lowercase hex digits or empty");
  } else {
    if (!HEX_ID.test(m.sha256)) throw new Error("FileMeta.sha256 must be 64 lowercase hex digits");
    if (m.chunks.reduce((s, c) => s + c.length, 0) !== m.size) throw new Error("FileMeta chunk lengths do not add up to its size");
  }
}

/** Canonical JSON (sorted keys, no spaces, UTF-8): identical to Python's FileMeta.to_json. */
export function metaToJson(m: FileMeta): Uint8Array {
  const obj: { [k: string]: Json } = {
    path: m.path,
    size: m.size,
    sha256: m.sha256,
    chunks: m.chunks.map((c) => [c.blobId, c.length]),
    mtime_ns: m.mtimeNs,
    deleted: m.deleted,
    executable: m.executable,
    device_id: m.deviceId,
    device_name: m.deviceName,
    device_kind: m.deviceKind,
    rename_from: m.renameFrom,
    recorded_ns: m.recordedNs,
  };
  // a record from before device keys has no `sig` key at all (the same bytes as then)
  if (m.sig !== undefined && m.sig !== null) obj.sig = m.sig;
  return utf8(pyDumps(obj));
}

function asSafeInt(v: unknown, name: string): number {
  if (v instanceof Float || typeof v === "boolean" || !isInt(v)) throw new Error(`FileMeta.${name} must be an int`);
  if (typeof v === "bigint") throw new Error(`FileMeta.${name} is too large`);
  return v;
}

function asOptBig(v: unknown, name: string): bigint | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Float || !isInt(v)) throw new Error(`FileMeta.${name} must be an int or None`);
  return BigInt(v);
}

/** Parse `metaToJson` output (unknown keys ignored); Error when anything is missing or mistyped. */
export function metaFromJson(data: Uint8Array): FileMeta {
  const obj = parseJson(fromUtf8(data));
  if (obj === null || typeof obj !== "object" || Array.isArray(obj) || obj instanceof Float) {
    throw new Error("record is not a JSON object");
  }
  const o = obj as { [k: string]: unknown };
  const chunks = o.chunks;
  if (!Array.isArray(chunks) || !chunks.every((c) => Array.isArray(c) && c.length === 2)) {
    throw new Error("record chunks are malformed");
  }
  for (const k of ["path", "size", "sha256"]) if (!(k in o)) throw new Error(`record lacks field '${k}'`);
  const str = (k: string, dflt: string): string => {
    const v = k in o ? o[k] : dflt;
    if (typeof v !== "string") throw new Error(`FileMeta.${k} must be a string`);
    return v;
  };
  const bool = (k: string): boolean => {
    const v = k in o ? o[k] : false;
    if (typeof v !== "boolean") throw new Error(`FileMeta.${k} must be a bool`);
    return v;
  };
  const meta: FileMeta = {
    path: o.path as string,
    size: asSafeInt(o.size, "size"),
    sha256: o.sha256 as string,
    chunks: (chunks as unknown[][]).map((c) => ({ blobId: c[0] as string, length: asSafeInt(c[1], "chunk length") })),
    mtimeNs: asOptBig(o.mtime_ns, "mtime_ns"),
    deleted: bool("deleted"),
    executable: bool("executable"),
    deviceId: str("device_id", ""),
    deviceName: str("device_name", ""),
    deviceKind: str("device_kind", ""),
    renameFrom: o.rename_from === undefined || o.rename_from === null ? null : (o.rename_from as string),
    recordedNs: asOptBig(o.recorded_ns, "recorded_ns"),
    sig: o.sig === undefined || o.sig === null ? null : (o.sig as string),
  };
  checkMeta(meta);
  return meta;
}

function recordAd(vaultId: string, fid: Uint8Array, rev: number): Uint8Array {
  return concat(new Uint8Array([RECORD_VERSION]), encodeVaultId(vaultId), fid, u64(rev));
}

function checkRev(rev: number): void {
  if (!Number.isSafeInteger(rev) || rev < 1 || BigInt(rev) > MAX_REV) throw new Error("revision must be an int from 1");
}

export async function sealRecord(
  key: VaultKey,
  vaultId: string,
  rev: number,
  meta: FileMeta,
  nonce?: Uint8Array,
): Promise<{ fileId: string; sealed: Uint8Array }> {
  checkRev(rev);
  checkMeta(meta);
  const fid = await fileId(key, meta.path);
  const sealed = await seal(key.metadataAead, RECORD_VERSION, metaToJson(meta), recordAd(vaultId, fromHex(fid), rev), nonce);
  return { fileId: fid, sealed };
}

/** Open revision `rev` of `fid`; TamperedRecord unless sealed for exactly this place. */
export async function openRecord(
  key: VaultKey,
  vaultId: string,
  fid: string,
  rev: number,
  sealed: Uint8Array,
): Promise<FileMeta> {
  const raw = idBytes(fid, "file id", TamperedRecord);
  const where = `record rev ${rev} of file ${fid.slice(0, 12)}`;
  try {
    checkRev(rev);
  } catch {
    throw new TamperedRecord(`${where}: the relay gave an invalid revision number`);
  }
  const payload = await open(key.metadataAead, RECORD_VERSION, sealed, recordAd(vaultId, raw, rev), TamperedRecord, where);
  let meta: FileMeta;
  try {
    meta = metaFromJson(payload);
  } catch (e) {
    throw new TamperedRecord(`${where} holds malformed metadata (${(e as Error).message})`);
  }
  if (!equalStrings(await fileId(key, meta.path), fid)) throw new TamperedRecord(`${where} describes a different file than its id`);
  return meta;
}

/** Join opened chunks, checking count, lengths and the whole content's SHA-256. */
export async function assemble(meta: FileMeta, chunks: Uint8Array[]): Promise<Uint8Array> {
  if (meta.deleted) throw new Error("a deleted file has no content to assemble");
  if (chunks.length !== meta.chunks.length) {
    throw new TamperedBlob(`file content: expected ${meta.chunks.length} chunks, got ${chunks.length}`);
  }
  chunks.forEach((c, i) => {
    if (c.length !== meta.chunks[i].length) throw new TamperedBlob(`file content: chunk ${i} has the wrong length`);
  });
  const content = chunks.length === 1 ? chunks[0] : concat(...chunks);
  if (!equalStrings(await sha256Hex(content), meta.sha256)) {
    throw new TamperedBlob("file content: the assembled chunks do not match the record's hash");
  }
  return content;
}

export function checkNotRolledBack(seenRev: number | null | undefined, offeredRev: number, fid = ""): void {
  if (seenRev !== null && seenRev !== undefined && offeredRev < seenRev) {
    const label = fid ? `file ${fid.slice(0, 12)}` : "a file";
    throw new RolledBack(
      `the relay offered revision ${offeredRev} of ${label}, but this device has already seen revision ` +
        `${seenRev}: refusing a rollback to older data`,
    );
  }
}
