/** tests/vectors/roster_v1.json (written by tests/test_crypto_roster_vectors.py from
 * companion/crypto/signing.py): the plugin signs, verifies, evaluates the roster and decides
 * who wrote a record exactly as the Python engine does (docs/trust.md, issue 44 finding 9). */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { fromHex, toHex, utf8 } from "../src/crypto/bytes";
import { parseJson, pyDumps, type Json } from "../src/crypto/json";
import { metaFromJson, metaToJson } from "../src/crypto/records";
import { announcementJson, b64u, DeviceKey, entryJson, entryMessage, fromB64u, recordMessage, verify } from "../src/crypto/signing";
import { TamperedRecord } from "../src/errors";
import { type Candidate, evaluate, parseEntry, Trust } from "../src/sync/trust";
import { effectiveKind, kindMismatch } from "../src/sync/policy";

const HERE = dirname(fileURLToPath(import.meta.url));
// the repository's own parser: `at` and nanosecond times beyond 2^53 stay exact
const V = parseJson(readFileSync(join(HERE, "..", "..", "tests", "vectors", "roster_v1.json"), "utf-8")) as { [k: string]: Json };

type Obj = { [k: string]: Json };
const keys = V.keys as Obj[];
const keyOf = (name: string) => DeviceKey.fromSeed(fromHex(keys.find((k) => k.name === name)!.seed as string));
const asCandidates = (entries: Json[]): Candidate[] =>
  entries.map((e, i) => {
    try {
      return { source: String(i), entry: parseEntry(pyDumps(e)) };
    } catch (err) {
      return { source: String(i), entry: null, error: (err as Error).message };
    }
  });
const metaOf = (m: Json) => metaFromJson(utf8(pyDumps(m)));

describe("roster_v1.json", () => {
  it("is the version the plugin replays", () => {
    expect(V.format).toBe("vault-companion roster vectors v1");
    expect(keys.length).toBeGreaterThanOrEqual(3);
  });

  it("derives each public key, fingerprint and announcement from its seed", () => {
    for (const k of keys) {
      const dk = DeviceKey.fromSeed(fromHex(k.seed as string));
      expect([k.name, dk.publicB64, dk.fingerprint]).toEqual([k.name, k.public, k.fingerprint]);
      expect(announcementJson(k.device_id as string, dk.publicKey, JSON.parse(k.announcement as string).name)).toBe(k.announcement);
    }
  });

  it("builds each entry's message and JSON, and signs it to the same bytes", () => {
    for (const v of V.entries as Obj[]) {
      const e = parseEntry(v.json as string);
      expect(toHex(entryMessage(e))).toBe(v.message);
      expect(entryJson(e)).toBe(v.json);
      expect(parseEntry(pyDumps(v.entry))).toEqual(e);
      // Ed25519 is deterministic: the same key signs the same message to the same signature
      expect(keyOf(v.signer as string).sign(entryMessage(e))).toBe(e.sig);
      expect(verify(keyOf(v.signer as string).publicKey, entryMessage(e), e.sig)).toBe(true);
    }
  });

  it("builds each record's message, signature and plaintext", () => {
    for (const v of V.records as Obj[]) {
      const meta = metaOf(v.meta);
      const msg = recordMessage({ ...meta, vaultId: v.vault_id as string, fileId: v.file_id as string, rev: Number(v.rev) });
      expect(toHex(msg)).toBe(v.message);
      expect(keyOf(v.signer as string).sign(msg)).toBe(v.sig);
      expect(meta.sig).toBe(v.sig);
      expect(new TextDecoder().decode(metaToJson(meta))).toBe(v.plaintext);
    }
  });

  it("evaluates every roster to the same trusted set", () => {
    for (const c of V.evaluation as Obj[]) {
      const a = c.anchor as Obj;
      const ev = evaluate(c.vault_id as string, { deviceId: a.device_id as string, key: a.key as string }, asCandidates(c.entries as Json[]));
      const got = Object.fromEntries([...ev.trusted.entries()].map(([id, d]) => [id, { kind: d.kind, key: b64u(d.key) }]));
      expect([c.name, got]).toEqual([c.name, c.trusted]);
    }
  });

  it("decides every record's author as the Python engine does", () => {
    const authors = V.authors as Obj;
    const roster = (V.evaluation as Obj[]).find((c) => c.name === authors.roster)!;
    const a = roster.anchor as Obj;
    for (const c of authors.cases as Obj[]) {
      const r = c.record as Obj;
      const meta = metaOf(r.meta);
      const anchored = c.anchored === true;
      // "self" is a device outside the roster: the vectors judge other devices' records
      const t = new Trust(r.vault_id as string, { deviceId: "self-not-in-roster", kind: "human" }, null, anchored ? { deviceId: a.device_id as string, key: a.key as string } : null);
      t.refresh(asCandidates(roster.entries as Json[]));
      let got: string;
      try {
        const judged = t.judge(meta, r.file_id as string, Number(r.rev));
        // no anchor: version 1's rule (a sealed kind the relay contradicts is refused as a
        // kind mismatch, which the vectors count as agent: it is never a person's write)
        got = judged ?? (kindMismatch(c.relay_kind as string, meta.deviceKind) ? "agent" : effectiveKind(c.relay_kind as string, meta.deviceKind));
      } catch (e) {
        if (!(e instanceof TamperedRecord)) throw e;
        got = "tampered";
      }
      expect([c.name, got]).toEqual([c.name, c.author]);
    }
  });

  it("refuses the malformed", () => {
    expect(() => fromB64u("AAAA", 32, "key")).toThrow();
  });
});

