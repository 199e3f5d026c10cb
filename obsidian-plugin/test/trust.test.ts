/** The person's roster through a real relay (docs/trust.md §5, issue 44 finding 9): a relay
 * that calls an agent's device human, and an agent that seals as human, no longer pass on a
 * phone that has an anchor; its own records are signed and count as the person's. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestRelay } from "./relay";
import { device, type Device } from "./helpers";
import { KEYS_DIR } from "../src/crypto/signing";
import { trustAccept, trustInit, trustShow, trustVouch } from "../src/sync/trustactions";
import { InputError } from "../src/errors";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodeVault } from "../src/cli/nodevault";

let relay: TestRelay;
beforeAll(async () => {
  relay = await TestRelay.start();
});
afterAll(async () => {
  await relay.stop();
});

const EVIL = ".obsidian/plugins/evil/main.js";

async function world(): Promise<{ laptop: Device; phone: Device; vid: string }> {
  const laptop = await device(relay, await relay.newVault(), "laptop", "human", { signs: true });
  const vid = laptop.engine.remote.vaultId;
  const phone = await device(relay, await relay.invite(vid), "phone", "human", { signs: true });
  await laptop.engine.round();
  await phone.engine.round();
  await laptop.engine.round();
  // the person: starts the roster on the laptop, reads its fingerprint into the phone
  await trustInit(laptop.engine);
  await laptop.engine.round();
  await phone.engine.round();
  await trustAccept(phone.engine, laptop.engine.trust!.fingerprint!);
  await laptop.engine.round(); // the phone's announcement
  await trustVouch(laptop.engine, phone.engine.device.deviceId, "human", phone.engine.trust!.fingerprint!);
  await laptop.engine.round();
  await phone.engine.round();
  return { laptop, phone, vid };
}

describe("device keys and the roster", () => {
  it("announces no key until the vault has a roster, as the laptop does", async () => {
    const laptop = await device(relay, await relay.newVault(), "laptop", "human", { signs: true });
    const phone = await device(relay, await relay.invite(laptop.engine.remote.vaultId), "phone", "human", { signs: true });
    await laptop.vault.put("a.md", "a\n");
    await laptop.engine.round();
    await phone.engine.round();
    const keys = (d: Device) => [...d.vault.files.keys()].filter((p) => p.startsWith(`${KEYS_DIR}/`)).sort();
    expect(keys(laptop)).toEqual([]);
    expect(keys(phone)).toEqual([]);
    await trustInit(laptop.engine);
    expect(keys(laptop)).toEqual([`${KEYS_DIR}/${laptop.engine.device.deviceId}.json`]);
    await laptop.engine.round();
    await phone.engine.round(); // brings the roster, then announces in the same round
    await laptop.engine.round();
    const both = [laptop, phone].map((d) => `${KEYS_DIR}/${d.engine.device.deviceId}.json`).sort();
    expect(keys(laptop)).toEqual(both);
    expect(keys(phone)).toEqual(both);
  });

  it("announces its key at once on trust-accept, even before any roster file arrives", async () => {
    const laptop = await device(relay, await relay.newVault(), "laptop", "human", { signs: true });
    const phone = await device(relay, await relay.invite(laptop.engine.remote.vaultId), "phone", "human", { signs: true });
    await laptop.engine.round();
    await phone.engine.round();
    await trustInit(laptop.engine);
    // only the laptop's announcement reaches the phone (a relay that withholds the roster)
    const ann = `${KEYS_DIR}/${laptop.engine.device.deviceId}.json`;
    await phone.vault.put(ann, laptop.vault.text(ann)!);
    await trustAccept(phone.engine, laptop.engine.trust!.fingerprint!);
    expect(phone.vault.text(`${KEYS_DIR}/${phone.engine.device.deviceId}.json`)).toContain(phone.engine.trust!.key!.publicB64);
  });

  it("syncs on when a folder stands where its announcement goes", async () => {
    const laptop = await device(relay, await relay.newVault(), "laptop", "human", { signs: true });
    await laptop.engine.round();
    await trustInit(laptop.engine);
    await laptop.engine.round();
    const root = mkdtempSync(join(tmpdir(), "trust-"));
    const vault = await NodeVault.open(root);
    const phone = await device(relay, await relay.invite(laptop.engine.remote.vaultId), "phone", "human", { signs: true, fs: vault });
    mkdirSync(join(root, KEYS_DIR, `${phone.engine.device.deviceId}.json`), { recursive: true });
    await laptop.vault.put("after.md", "still syncing\n");
    await laptop.engine.round();
    const r = await phone.engine.round();
    expect(r.converged).toBe(true);
    expect(readFileSync(join(root, "after.md"), "utf-8")).toBe("still syncing\n");
  });

  it("announces each device's key in the vault, unheld, and signs what it seals", async () => {
    const { laptop, phone } = await world();
    const ann = `${KEYS_DIR}/${phone.engine.device.deviceId}.json`;
    expect(laptop.vault.text(ann)).toContain(phone.engine.trust!.key!.publicB64);
    expect(laptop.engine.state.held).toEqual({});
    await phone.vault.put("from-phone.md", "hi\n");
    await phone.engine.round();
    await laptop.engine.round();
    const ch = (await laptop.engine.remote.record("from-phone.md", 1))!;
    expect(ch.meta.sig).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(ch.kind).toBe("human");
    const show = await trustShow(laptop.engine);
    expect(Object.fromEntries(show.trusted.map((t) => [t.device_id, t.kind]))).toEqual({
      [laptop.engine.device.deviceId]: "human",
      [phone.engine.device.deviceId]: "human",
    });
  });

  it("holds a plugin from a device the relay calls human but the roster does not vouch for", async () => {
    const { phone, vid } = await world();
    // the relay relabels: the agent joins on a human invite and seals as human, unsigned
    const rogue = await device(relay, await relay.invite(vid, "human"), "server", "human");
    await rogue.engine.round();
    await rogue.vault.put(EVIL, "require('child_process')");
    await rogue.engine.round();
    const r = await phone.engine.round();
    expect(r.held).toEqual([EVIL]);
    expect(phone.vault.files.has(EVIL)).toBe(false);
  });

  it("holds a vouched agent's plugin although it seals as human and the relay agrees", async () => {
    const { laptop, phone, vid } = await world();
    const agent = await device(relay, await relay.invite(vid, "human"), "server", "human", { signs: true });
    await agent.engine.round();
    await laptop.engine.round();
    await trustVouch(laptop.engine, "server", "agent", agent.engine.trust!.fingerprint!);
    await laptop.engine.round();
    await agent.vault.put(EVIL, "require('child_process')");
    await agent.engine.round();
    const r = await phone.engine.round();
    expect(r.held).toEqual([EVIL]);
    const show = await trustShow(phone.engine);
    expect(show.announced.find((a) => a.name === "server")!.status).toBe("agent");
    expect(show.unvouched_devices).toEqual([]);
    expect(show.trusted.find((d) => d.name === "server")).toMatchObject({ kind: "agent", key: agent.engine.trust!.key!.publicB64 });
  });

  it("quarantines a record sealed as a vouched device by another token, whatever its signature", async () => {
    const { laptop, phone, vid } = await world();
    const forger = await device(relay, await relay.invite(vid, "human"), "laptop", "human", {
      signs: true,
      sealAs: { deviceId: laptop.engine.device.deviceId },
    });
    await forger.engine.round();
    await forger.vault.put("forged.md", "x\n");
    await forger.engine.round();
    const annPath = `${KEYS_DIR}/${laptop.engine.device.deviceId}.json`;
    const ann = phone.vault.text(annPath);
    const r = await phone.engine.round();
    // everything it sealed as the laptop: the note and the announcement it wrote over the laptop's
    expect(r.quarantined).toContain("file " + (await phone.engine.remote.fileId("forged.md")).slice(0, 12));
    expect(r.quarantined).toContain(annPath);
    for (const q of Object.values(phone.engine.state.quarantine)) expect(q.reason).toMatch(/committed with the token of device/);
    expect(phone.vault.files.has("forged.md")).toBe(false);
    expect(phone.vault.text(annPath)).toBe(ann);
  });

  it("still refuses a record the relay labels another kind than sealed, anchored or not", async () => {
    const { laptop, phone } = await world();
    await laptop.vault.put("note.md", "from the laptop\n");
    await laptop.engine.round();
    // the relay relabels the laptop as an agent on the wire: a denial of service, never a
    // change of author (docs/trust.md §5)
    phone.wire.rewrite = (req, resp) => {
      if (!req.url.includes("/changes")) return resp;
      const body = JSON.parse(new TextDecoder().decode(resp.body));
      for (const rec of body.records ?? []) if (rec.device_id === laptop.engine.device.deviceId) rec.device_kind = "agent";
      return { ...resp, body: new TextEncoder().encode(JSON.stringify(body)) };
    };
    const r = await phone.engine.round();
    expect(r.quarantined).toEqual(["file " + (await phone.engine.remote.fileId("note.md")).slice(0, 12)]);
    expect(Object.values(phone.engine.state.quarantine)[0].reason).toMatch(/claims device kind 'human', but the relay recorded its device as 'agent'/);
  });

  it("judges a pull by the roster held when it opens it: a device vouched in the same pull counts once as an agent", async () => {
    const { laptop, phone, vid } = await world();
    const tablet = await device(relay, await relay.invite(vid), "tablet", "human", { signs: true });
    await tablet.engine.round();
    await laptop.engine.round();
    await trustVouch(laptop.engine, "tablet", "human", tablet.engine.trust!.fingerprint!);
    await laptop.engine.round();
    await tablet.vault.put(".obsidian/snippets/t.css", "a {}\n");
    await tablet.engine.round();
    const r = await phone.engine.round(); // the entry and the change in one pull
    expect(r.held).toEqual([".obsidian/snippets/t.css"]);
    await tablet.vault.put(".obsidian/snippets/t.css", "a { b: c }\n");
    await tablet.engine.round();
    const r2 = await phone.engine.round(); // the roster is held now: the person's device
    expect(r2.held).toEqual([]);
    expect(phone.vault.text(".obsidian/snippets/t.css")).toBe("a { b: c }\n");
  });

  it("a revoked phone's changes count as an agent's on the laptop; trust-init again is harmless", async () => {
    const { laptop, phone } = await world();
    await trustInit(laptop.engine); // the same roster, re-signed: no second root
    await trustVouch(laptop.engine, "phone", "revoked", undefined);
    await laptop.engine.round();
    await phone.engine.round();
    await phone.vault.put(".obsidian/snippets/mine.css", "body {}\n");
    await phone.engine.round();
    const r = await laptop.engine.round();
    expect(r.held).toEqual([".obsidian/snippets/mine.css"]);
    const show = await trustShow(laptop.engine);
    expect(show.trusted.map((d) => d.device_id)).toEqual([laptop.engine.device.deviceId]);
    expect(show.unvouched_devices.map((d) => d.name)).toEqual(["phone"]);
    await expect(trustInit(phone.engine)).rejects.toThrow(/already trusts another device's roster/);
  });

  it("refuses to vouch for a key whose fingerprint is not the one read on the device", async () => {
    const { laptop, phone } = await world();
    const wrong = laptop.engine.trust!.fingerprint!;
    await expect(trustVouch(laptop.engine, phone.engine.device.deviceId, "agent", wrong)).rejects.toThrow(/not vouched/);
    await expect(trustVouch(laptop.engine, "nobody", "agent", wrong)).rejects.toThrow(InputError);
    await expect(trustVouch(laptop.engine, phone.engine.device.deviceId, "boss", wrong)).rejects.toThrow(/human, agent or revoked/);
    await expect(trustAccept(phone.engine, "ABCD")).rejects.toThrow(/not a fingerprint/);
    await expect(trustVouch(laptop.engine, "laptop", "human", wrong)).rejects.toThrow(/never vouches for itself/);
  });
});
