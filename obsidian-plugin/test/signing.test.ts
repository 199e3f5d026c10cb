/** Device keys, roster entries and signed records (src/crypto/signing.ts, src/sync/trust.ts),
 * by their own rules (docs/trust.md); test/roster-vectors.test.ts replays Python's bytes. */
import { describe, expect, it } from "vitest";
import { fromHex, toHex, utf8 } from "../src/crypto/bytes";
import { makeMeta, metaFromJson, metaToJson } from "../src/crypto/records";
import {
  announcementJson,
  b64u,
  DeviceKey,
  entryJson,
  entryMessage,
  fingerprint,
  fromB64u,
  normalizeFingerprint,
  recordMessage,
  signEntry,
  verify,
} from "../src/crypto/signing";
import { CompanionError, TamperedRecord } from "../src/errors";
import { type Candidate, evaluate, parseEntry, Trust } from "../src/sync/trust";

const seed = (n: number) => new Uint8Array(32).fill(n);

describe("keys", () => {
  it("signs as RFC 8032 test 1 says (Ed25519 from @noble/curves)", () => {
    const k = DeviceKey.fromSeed(fromHex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"));
    expect(toHex(k.publicKey)).toBe("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    const sig = k.sign(new Uint8Array(0));
    expect(toHex(fromB64u(sig, 64, "sig"))).toBe(
      "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    );
    expect(verify(k.publicKey, new Uint8Array(0), sig)).toBe(true);
    expect(verify(k.publicKey, new Uint8Array(1), sig)).toBe(false);
  });

  it("stores the seed as unpadded base64url and never prints it", () => {
    const k = DeviceKey.generate();
    expect(k.stored()).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(DeviceKey.fromStored(k.stored()).publicB64).toBe(k.publicB64);
    expect(JSON.stringify({ k })).not.toContain(k.stored());
  });

  it("makes a fingerprint of 7 groups of 4 base32 letters and reads one back as typed", () => {
    const fp = fingerprint(DeviceKey.fromSeed(seed(1)).publicKey);
    expect(fp).toMatch(/^[A-Z2-7]{4}(-[A-Z2-7]{4}){6}$/);
    expect(normalizeFingerprint(fp.toLowerCase().replace(/-/g, " "))).toBe(fp);
    expect(normalizeFingerprint("ABCD-EFGH")).toBeNull();
    expect(normalizeFingerprint(fp.replace(/.$/, "1"))).toBeNull();
  });

  it("refuses padded, non-canonical or wrong-sized base64url", () => {
    expect(b64u(new Uint8Array([0xff, 0xfe]))).toBe("__4");
    expect(() => fromB64u("__4=", 2, "x")).toThrow();
    expect(() => fromB64u("__5", 2, "x")).toThrow(/canonical/);
    expect(() => fromB64u("__4", 3, "x")).toThrow(/2 bytes/);
  });
});

describe("messages", () => {
  it("length-prefixes each entry field after VCROSTER1", () => {
    const m = entryMessage({ vault_id: "v", device_id: "d", key: "k", kind: "human", name: "é", by: "b", at: 12n });
    expect(toHex(m)).toBe(
      toHex(utf8("VCROSTER1")) +
        ["v", "d", "k", "human", "é", "b", "12"].map((f) => toHex(new Uint8Array([0, 0, 0, utf8(f).length])) + toHex(utf8(f))).join(""),
    );
  });

  it("signs the record's place, content and author, NFC path, empty optional fields", () => {
    const base = {
      vaultId: "v",
      fileId: "f",
      rev: 3,
      path: "Cafe\u0301.md",
      size: 5,
      sha256: "aa",
      deleted: false,
      executable: true,
      deviceId: "d",
      deviceKind: "human",
      renameFrom: null,
      recordedNs: null,
    };
    const m = recordMessage(base);
    expect(toHex(m)).toBe(
      toHex(utf8("VCREC1")) +
        ["v", "f", "3", "Café.md", "5", "aa", "0", "1", "d", "human", "", ""]
          .map((f) => toHex(new Uint8Array([0, 0, 0, utf8(f).length])) + toHex(utf8(f)))
          .join(""),
    );
    expect(toHex(recordMessage({ ...base, deviceKind: "agent" }))).not.toBe(toHex(m));
  });

  it("keeps an unsigned record's JSON byte for byte and adds sig when signed", () => {
    const meta = makeMeta({ path: "a.md", size: 0, sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" });
    const plain = new TextDecoder().decode(metaToJson(meta));
    expect(plain).not.toContain("sig");
    const signed = metaToJson({ ...meta, sig: "abc" });
    expect(new TextDecoder().decode(signed)).toBe(plain.replace(',"size"', ',"sig":"abc","size"'));
    expect(metaFromJson(signed).sig).toBe("abc");
    expect(metaFromJson(metaToJson(meta)).sig).toBeNull();
    // a sig that is not an ASCII string makes the record malformed, on every device
    expect(() => metaFromJson(utf8(plain.replace(',"size"', ',"sig":"é","size"')))).toThrow(/ASCII/);
    expect(() => metaFromJson(utf8(plain.replace(',"size"', ',"sig":5,"size"')))).toThrow(/ASCII/);
  });

  it("writes entries and announcements as canonical JSON", () => {
    const k = DeviceKey.fromSeed(seed(2));
    const e = signEntry(k, { vault_id: "v", device_id: "d", key: k.publicB64, kind: "human", name: "n", by: "d", at: 5n });
    expect(entryJson(e)).toBe(`{"at":5,"by":"d","device_id":"d","key":"${k.publicB64}","kind":"human","name":"n","sig":"${e.sig}","v":1,"vault_id":"v"}`);
    expect(parseEntry(entryJson(e))).toEqual(e);
    expect(announcementJson("d", k.publicKey, "phone")).toBe(`{"device_id":"d","key":"${k.publicB64}","name":"phone","v":1}`);
  });
});

// ---------------------------------------------------------------- the roster

const laptop = DeviceKey.fromSeed(seed(10));
const phone = DeviceKey.fromSeed(seed(11));
const agent = DeviceKey.fromSeed(seed(12));
const VID = "vault1";

function entry(by: DeviceKey, byId: string, dev: DeviceKey, devId: string, kind: string, at: bigint, vaultId = VID): Candidate {
  return { source: devId, entry: signEntry(by, { vault_id: vaultId, device_id: devId, key: dev.publicB64, kind, name: devId, by: byId, at }) };
}

describe("evaluation", () => {
  const anchor = { deviceId: "L", key: laptop.publicB64 };

  it("follows signatures from the anchor, through human devices only, in order of time", () => {
    const ev = evaluate(VID, anchor, [
      entry(phone, "P", agent, "A", "agent", 3n), // signed by the phone once the phone is in
      entry(phone, "P", agent, "B", "agent", 1n), // signed by the phone before it was vouched
      entry(laptop, "L", phone, "P", "human", 2n),
      entry(agent, "A", agent, "X", "human", 4n), // an agent vouching: never
    ]);
    expect([...ev.trusted.entries()].map(([id, d]) => [id, d.kind])).toEqual([
      ["L", "human"],
      ["P", "human"],
      ["A", "agent"],
    ]);
    expect(ev.notVouched).toEqual([
      { source: "B", deviceId: "B", why: "signed by a device that is not vouched for" },
      { source: "X", deviceId: "X", why: "signed by a device vouched for as an agent" },
    ]);
  });

  it("ignores another vault's entries, forged signatures, and lets the newest entry win", () => {
    const forged = entry(laptop, "L", agent, "A", "human", 9n);
    forged.entry!.kind = "human";
    forged.entry!.name = "renamed";
    const ev = evaluate(VID, anchor, [
      entry(laptop, "L", phone, "P", "human", 1n, "other"),
      forged,
      entry(laptop, "L", agent, "A", "agent", 2n),
      entry(laptop, "L", agent, "A", "revoked", 3n),
    ]);
    expect([...ev.trusted.keys()]).toEqual(["L"]);
    expect(ev.notVouched.map((n) => n.why)).toEqual([
      "written for another vault",
      "its signature does not verify",
      "replaced by a newer entry",
    ]);
  });
});

describe("the stored anchor", () => {
  it("is taken when whole and stops sync, naming where, when damaged", () => {
    expect(Trust.checkAnchor({ deviceId: "L", key: laptop.publicB64 }, "x")).toEqual({ deviceId: "L", key: laptop.publicB64 });
    for (const bad of [null, "L", { deviceId: "L" }, { deviceId: "", key: laptop.publicB64 }, { deviceId: "L", key: "AAAA" }]) {
      expect(() => Trust.checkAnchor(bad, "device.json")).toThrow(CompanionError);
      expect(() => Trust.checkAnchor(bad, "device.json")).toThrow(/trust anchor \(device\.json\) is damaged/);
    }
  });
});

describe("who wrote a record", () => {
  const meta = (deviceId: string, kind: string) =>
    makeMeta({ path: ".obsidian/plugins/evil/main.js", size: 0, sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", deviceId, deviceKind: kind });
  const signed = (k: DeviceKey, m: ReturnType<typeof meta>) => ({ ...m, sig: k.sign(recordMessage({ ...m, vaultId: VID, fileId: "f", rev: 1 })) });

  it("has no say without an anchor (version 1's rule)", () => {
    const t = new Trust(VID, { deviceId: "P", kind: "human" }, phone, null);
    t.refresh([]);
    expect(t.judge(meta("A", "human"), "f", 1)).toBeNull();
  });

  it("takes the roster's kind for a signed record, agent for unsigned or unvouched, refuses a bad signature", () => {
    const t = new Trust(VID, { deviceId: "P", kind: "human" }, phone, { deviceId: "L", key: laptop.publicB64 });
    t.refresh([entry(laptop, "L", agent, "A", "agent", 1n)]);
    expect(t.judge(signed(laptop, meta("L", "human")), "f", 1)).toBe("human");
    expect(t.judge(signed(agent, meta("A", "human")), "f", 1)).toBe("agent"); // seals as human: the roster says agent
    expect(t.judge(meta("L", "human"), "f", 1)).toBe("agent"); // unsigned
    expect(t.judge(signed(phone, meta("Z", "human")), "f", 1)).toBe("agent"); // not vouched
    expect(() => t.judge(signed(agent, meta("L", "human")), "f", 1)).toThrow(TamperedRecord);
    expect(() => t.judge(signed(laptop, meta("L", "human")), "f", 2)).toThrow(TamperedRecord); // another place
    expect(t.judge(signed(phone, meta("P", "human")), "f", 1)).toBe("human"); // its own, by its own key
  });
});
