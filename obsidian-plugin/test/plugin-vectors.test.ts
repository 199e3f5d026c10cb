/** tests/vectors/plugin_v1.json (written by tests/test_plugin_vectors.py) passes here too. */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { bs, concat, fromHex, toHex, utf8 } from "../src/crypto/bytes";
import { frame, paddedSize, unframe } from "../src/crypto/framing";
import { VaultKey } from "../src/crypto/keys";
import { metaFromJson, metaToJson, openRecord, sealRecord, sha256Hex } from "../src/crypto/records";
import { ARGON2_KAT, argon2 } from "../src/crypto/wrap";
import { decodeFrames, encodeFrames } from "../src/relay/frames";
import { conflictCopyName, sanitizeDevice } from "../src/sync/conflicts";
import { IgnoreRules } from "../src/sync/ignore";
import { mergeText } from "../src/sync/merge";
import { tryNormalize } from "../src/sync/paths";

const HERE = dirname(fileURLToPath(import.meta.url));
const V = JSON.parse(readFileSync(join(HERE, "..", "..", "tests", "vectors", "plugin_v1.json"), "utf-8"));

async function fixed(label: string, n: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let have = 0;
  for (let c = 0; have < n; c++) {
    const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bs(utf8(`${label}/${c}`))));
    parts.push(d);
    have += d.length;
  }
  return concat(...parts).subarray(0, n);
}

async function textInput(label: string, n: number): Promise<Uint8Array> {
  const hex = toHex(await fixed(label, Math.floor(n / 2) + 1));
  const lines = hex.match(/.{1,60}/g)!.join("\n");
  return utf8(lines).subarray(0, n);
}

describe("plugin_v1.json", () => {
  it("the Argon2id known answer is the one the plugin checks at start-up", async () => {
    const k = V.argon2id_kat;
    expect(ARGON2_KAT).toMatchObject({ password: k.password, salt: k.salt, output: k.output, memoryKib: k.memory_kib, iterations: k.iterations, lanes: k.lanes });
    const out = await argon2(utf8(k.password), fromHex(k.salt), { memoryKib: k.memory_kib, iterations: k.iterations, lanes: k.lanes }, 32);
    expect(toHex(out)).toBe(k.output);
  });

  it("pads and frames large payloads byte for byte", async () => {
    for (const [n, p] of V.padded_size) expect(paddedSize(n)).toBe(p);
    for (const f of V.frames) {
      const data = f.kind === "noise" ? await fixed(f.label, f.size) : await textInput(f.label, f.size);
      expect(await sha256Hex(data)).toBe(f.input_sha256);
      const out = frame(data);
      expect(out[0]).toBe(f.flags);
      expect(out.length).toBe(f.frame_len);
      expect(await sha256Hex(out)).toBe(f.frame_sha256);
      expect(unframe(out)).toEqual(data);
    }
  });

  it("seals the multi-chunk record with escapes and 2^53+1 exactly like Python", async () => {
    const r = V.record;
    const key = await VaultKey.fromBytes(await fixed("vault-key", 32));
    const meta = metaFromJson(utf8(r.meta_json));
    expect(meta.recordedNs).toBe(9007199254740993n);
    expect(meta.executable).toBe(true);
    expect(new TextDecoder().decode(metaToJson(meta))).toBe(r.meta_json);
    const s = await sealRecord(key, r.vault_id, r.rev, meta, fromHex(r.nonce));
    expect(s.fileId).toBe(r.file_id);
    expect(toHex(s.sealed)).toBe(r.sealed);
    const back = await openRecord(key, r.vault_id, r.file_id, r.rev, fromHex(r.sealed));
    expect(back.chunks).toHaveLength(2);
  });

  it("encodes and decodes the relay's batched blob frames", () => {
    const items = V.blob_batch.items.map((i: { id: string; sha256: string; data: string }) => ({ id: i.id, sha256: i.sha256, data: fromHex(i.data) }));
    const enc = encodeFrames(items);
    expect(toHex(enc)).toBe(V.blob_batch.encoded);
    expect(decodeFrames(enc, 1 << 20).map((f) => f.id)).toEqual(items.map((i: { id: string }) => i.id));
  });

  it("normalises paths, ignores, names conflict copies and merges like Python", () => {
    for (const n of V.normalize) expect(tryNormalize(n.path)).toBe(n.normal);
    const rules = new IgnoreRules();
    for (const i of V.ignored) expect([i.path, rules.isIgnored(i.path)]).toEqual([i.path, i.ignored]);
    for (const c of V.conflict_names) {
      expect(sanitizeDevice(c.device)).toBe(c.sanitized);
      expect(conflictCopyName(c.path, c.device, new Date(c.when))).toBe(c.name);
    }
    for (const m of V.merges) {
      const got = mergeText(m.base, m.ours, m.theirs);
      expect([m.base, m.ours, m.theirs, got.clean, got.text]).toEqual([m.base, m.ours, m.theirs, m.clean, m.text]);
    }
  });
});
