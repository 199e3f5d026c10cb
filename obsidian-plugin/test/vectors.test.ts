/** The committed vectors (tests/vectors/*.json, written by the Python code) pass here too. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { fromHex, toHex, utf8 } from "../src/crypto/bytes";
import { frame, paddedSize, unframe } from "../src/crypto/framing";
import { VaultKey } from "../src/crypto/keys";
import { blobId, fileId, metaFromJson, metaToJson, openBlob, openRecord, sealBlob, sealRecord } from "../src/crypto/records";
import { exportRecoveryKey, importRecoveryKey } from "../src/crypto/recovery";
import { ARGON2_KAT, argon2, ensureSelfTest, unwrapVaultKey, wrapVaultKey } from "../src/crypto/wrap";

const V = JSON.parse(readFileSync(new URL("../../tests/vectors/crypto_v1.json", import.meta.url), "utf-8"));

async function key(): Promise<VaultKey> {
  return VaultKey.fromBytes(fromHex(V.vault_key));
}

describe("crypto_v1.json", () => {
  it("derives the same subkeys, fingerprint, recovery key and file ids", async () => {
    const k = await key();
    expect(toHex(k.subkeys.content)).toBe(V.subkeys.content);
    expect(toHex(k.subkeys.metadata)).toBe(V.subkeys.metadata);
    expect(toHex(k.subkeys.fileId)).toBe(V.subkeys.file_id);
    expect(toHex(k.subkeys.blobId)).toBe(V.subkeys.blob_id);
    expect(k.fingerprint).toBe(V.fingerprint);
    expect(await exportRecoveryKey(k)).toBe(V.recovery_key);
    expect(toHex((await importRecoveryKey(V.recovery_key.toLowerCase())).toBytes())).toBe(V.vault_key);
    for (const f of V.file_ids) expect(await fileId(k, f.path)).toBe(f.file_id);
  });

  it("builds every blob byte for byte and opens the committed ones", async () => {
    const k = await key();
    for (const b of V.blobs) {
      const chunk = fromHex(b.chunk);
      expect(toHex(frame(chunk))).toBe(b.frame);
      const { blobId: bid, sealed } = await sealBlob(k, V.vault_id, chunk, fromHex(b.nonce));
      expect(bid).toBe(b.blob_id);
      expect(toHex(sealed)).toBe(b.sealed);
      expect(toHex(await openBlob(k, V.vault_id, b.blob_id, fromHex(b.sealed)))).toBe(b.chunk);
    }
  });

  it("builds every record byte for byte and opens the committed ones", async () => {
    const k = await key();
    for (const r of V.records) {
      const meta = metaFromJson(utf8(r.meta_json));
      expect(new TextDecoder().decode(metaToJson(meta))).toBe(r.meta_json);
      expect(toHex(frame(utf8(r.meta_json)))).toBe(r.frame);
      const { fileId: fid, sealed } = await sealRecord(k, V.vault_id, r.rev, meta, fromHex(r.nonce));
      expect(fid).toBe(r.file_id);
      expect(toHex(sealed)).toBe(r.sealed);
      const opened = await openRecord(k, V.vault_id, r.file_id, r.rev, fromHex(r.sealed));
      expect(new TextDecoder().decode(metaToJson(opened))).toBe(r.meta_json);
    }
  });

  it("wraps and unwraps the key exactly like Python", async () => {
    const w = V.wrapped_key;
    const k = await key();
    const params = { memoryKib: w.memory_kib, iterations: w.iterations, lanes: w.lanes };
    const wrapped = await wrapVaultKey(k, w.passphrase, V.vault_id, params, { salt: fromHex(w.salt), nonce: fromHex(w.nonce) });
    expect(toHex(wrapped)).toBe(w.sealed);
    // the passphrase in NFD must unlock it too (NFC before the KDF)
    const back = await unwrapVaultKey(fromHex(w.sealed), w.passphrase.normalize("NFD"), V.vault_id);
    expect(toHex(back.toBytes())).toBe(V.vault_key);
  });
});

describe("Argon2id self-test", () => {
  it("passes with hash-wasm and matches the known answer", async () => {
    await ensureSelfTest();
    const out = await argon2(utf8(ARGON2_KAT.password), fromHex(ARGON2_KAT.salt), ARGON2_KAT, 32);
    expect(toHex(out)).toBe(ARGON2_KAT.output);
  });
});

describe("framing", () => {
  it("pads to the documented buckets and round-trips", () => {
    expect([0, 512, 513, 4096, 4097, 65536, 65537].map(paddedSize)).toEqual([512, 512, 1024, 4096, 8192, 65536, 131072]);
    const data = utf8("hello ".repeat(5000));
    expect(unframe(frame(data))).toEqual(data);
  });
  void blobId;
});
