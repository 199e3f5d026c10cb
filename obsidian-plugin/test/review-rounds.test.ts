/**
 * The review's work after each round of the plugin's engine (src/review/rounds.ts), with
 * in-memory vaults against the real relay: a revert ticked on this device is carried out here
 * and said on the line; one ticked where the file changed since says why and changes nothing; a
 * tick an agent device wrote is cleared and says so; another person's device's tick is left to
 * it; and `review list`'s items read the changes from the relay's history, not from the note.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestRelay } from "./relay";
import { type Device, device, pair } from "./helpers";
import { items } from "../src/review/listing";
import { changeId, keyOf, type ChangeItem } from "../src/review/model";
import { parseLines, render, setTicked } from "../src/review/note";
import { installReview, ReviewRounds } from "../src/review/rounds";

let relay: TestRelay;
beforeAll(async () => {
  relay = await TestRelay.start();
});
afterAll(async () => {
  await relay.stop();
});

const REVIEW = "review/2026-11-29.md";
const NOW = () => new Date("2026-11-30T07:14:00Z"); // 08:14 in Madrid

function change(id: string, path: string, before: string | null, after: string | null, from: number, to: number): ChangeItem {
  return { id, path, fileId: "", fromRev: from, toRev: to, before, after, device: "server", kind: "agent", at: "03:12", beforeKnown: true, notes: [] };
}

/** A phone and a laptop (people's devices) and a server (agent) that changed two notes in the
 * night and wrote the review note listing them. */
async function world() {
  const [phone, server] = await pair(relay);
  const laptop = await device(relay, await relay.invite(phone.engine.remote.vaultId), "laptop", "human");
  installReview(phone.engine, NOW);
  installReview(laptop.engine, NOW);
  await phone.vault.put("knowledge/B.md", "# B\n\n- mine\n");
  await phone.engine.round();
  await server.engine.round();
  await server.vault.put("knowledge/A.md", "# A\n\nthe agent wrote this\n");
  await server.vault.put("knowledge/B.md", "# B\n\n- mine\n- the agent's line\n");
  await server.engine.round();
  const fa = await server.engine.remote.fileId("knowledge/A.md");
  const fb = await server.engine.remote.fileId("knowledge/B.md");
  const a = change(await changeId(fa, 0, 1), "knowledge/A.md", null, "# A\n\nthe agent wrote this\n", 0, 1);
  const b = change(await changeId(fb, 1, 2), "knowledge/B.md", "# B\n\n- mine\n", "# B\n\n- mine\n- the agent's line\n", 1, 2);
  await server.vault.put(REVIEW, render({ night: "2026-11-29", fromSeq: 0, toSeq: 9, tz: "Europe/Madrid", changes: [a, b] }));
  await server.engine.round();
  await phone.engine.round();
  await laptop.engine.round();
  return { phone, laptop, server, a: a.id, b: b.id };
}

const line = (d: Device, id: string, code = "r") => parseLines(d.vault.text(REVIEW)!).find((l) => keyOf(l.id, l.code) === keyOf(id, code))!;

async function tick(d: Device, id: string, code = "r"): Promise<void> {
  await d.vault.put(REVIEW, setTicked(d.vault.text(REVIEW)!, keyOf(id, code)));
}

describe("the review after each round", () => {
  it("a revert ticked on the phone is carried out by the phone and reaches every copy", async () => {
    const { phone, laptop, server, a, b } = await world();
    expect(phone.vault.text(REVIEW)).toBe(server.vault.text(REVIEW));
    await tick(phone, b);
    await phone.engine.round();
    expect(phone.vault.text("knowledge/B.md")).toBe("# B\n\n- mine\n");
    expect(line(phone, b)).toMatchObject({ ticked: true, final: true, outcome: "reverted 08:14 from phone" });
    expect(line(phone, a)).toMatchObject({ ticked: false, final: false });
    await server.engine.round();
    await laptop.engine.round();
    for (const d of [server, laptop]) {
      expect(d.vault.text("knowledge/B.md")).toBe("# B\n\n- mine\n");
      expect(line(d, b).outcome).toBe("reverted 08:14 from phone");
    }
    // the revert of a new note deletes it
    await tick(phone, a);
    await phone.engine.round();
    expect(phone.vault.text("knowledge/A.md")).toBeUndefined();
    await server.engine.round();
    expect(server.vault.text("knowledge/A.md")).toBeUndefined();
    // review list: the relay's before/after, and the device whose revision ticked each line
    await laptop.engine.round();
    const listed = await items(laptop.engine, REVIEW);
    const bItem = listed.find((i) => i.id === b)!;
    expect(bItem).toMatchObject({ kind: "change", file: "knowledge/B.md", state: "decided", decided_by: "phone", decided_by_kind: "human" });
    expect([bItem.before, bItem.after]).toEqual(["# B\n\n- mine\n", "# B\n\n- mine\n- the agent's line\n"]);
    expect(listed.find((i) => i.id === "n-20261129")!.state).toBe("open");
  });

  it("a note edited since the change is not reverted, and the line says why", async () => {
    const { phone, b } = await world();
    await phone.vault.put("knowledge/B.md", "# B\n\n- mine, rewritten\n");
    await tick(phone, b);
    await phone.engine.round();
    expect(phone.vault.text("knowledge/B.md")).toBe("# B\n\n- mine, rewritten\n");
    expect(line(phone, b).outcome).toBe("not done: the note changed since this change (08:14)");
  });

  it("a tick written by the agent device is cleared and says so; another person's tick is left to her device", async () => {
    const { phone, laptop, server, a, b } = await world();
    await tick(server, a);
    await server.engine.round();
    await phone.engine.round();
    expect(line(phone, a)).toMatchObject({ ticked: false, final: false, outcome: "⚠ a tick written by server, an agent device, was ignored" });
    expect(phone.vault.text("knowledge/A.md")).toBeDefined();
    await server.engine.round();
    expect(line(server, a).ticked).toBe(false);
    // the laptop's tick (synced before its review ran): the phone leaves it to the laptop
    await laptop.engine.round();
    laptop.engine.afterRound.length = 0;
    await tick(laptop, b);
    await laptop.engine.round();
    await phone.engine.round();
    expect(line(phone, b)).toMatchObject({ ticked: true, final: false });
    expect(phone.vault.text("knowledge/B.md")).toBe("# B\n\n- mine\n- the agent's line\n");
    installReview(laptop.engine, NOW);
    await laptop.engine.round();
    expect(line(laptop, b).outcome).toBe("reverted 08:14 from laptop");
    await phone.engine.round();
    expect(line(phone, b).outcome).toBe("reverted 08:14 from laptop");
  });

  it("a note an agent rewrote to hide its change and forge another is rewritten from the relay's history", async () => {
    const { phone, server, a, b } = await world();
    const honest = server.vault.text(REVIEW)!;
    const block = honest.slice(honest.indexOf("### [[knowledge/A]]"), honest.indexOf("### [[knowledge/B]]"));
    const forged = honest.replace(block, "### [[knowledge/Forged]]\n\n- [ ] Revert this change `c-0000000000/r`\n\n");
    await server.vault.put(REVIEW, forged);
    await server.engine.round();
    await tick(phone, b); // the person's tick, made meanwhile, survives the rewrite
    await phone.engine.round();
    const fixed = phone.vault.text(REVIEW)!;
    expect(fixed).toContain("⚠ phone rewrote this review from the relay's history: the version written by server did not match it (1 change(s) left out; 1 change(s) the history does not hold).");
    expect(fixed).toContain(`\`${a}/r\``);
    expect(fixed).not.toContain("c-0000000000");
    expect(line(phone, b)).toMatchObject({ ticked: true, final: true, outcome: "reverted 08:14 from phone" });
    await server.engine.round();
    expect(server.vault.text(REVIEW)).toBe(phone.vault.text(REVIEW));
  });

  it("the night's note missing 10 minutes after the dream's report: the phone writes it from the relay's history", async () => {
    const [phone, server] = await pair(relay);
    await phone.vault.put("Home.md", "# Home\n");
    await phone.engine.round();
    await server.engine.round();
    await server.vault.put("knowledge/C.md", "# C\n\n- ⚠ Disagrees with your line (2026-11-28): the backup runs at 03:00\n");
    await server.vault.put(".companion/dreams/2026-11-29.json", JSON.stringify({ changes: [{ note: "knowledge/C.md", provenance: [{ quote: "I moved it", source: "journal/2026-11-28.md" }] }] }));
    await server.vault.put(".companion/dreams/proposals.json", JSON.stringify({ version: 1, proposals: [{ id: "abc", target: "memory", file: "MEMORY.md", op: "add", new: "Backups at 03:00.", reason: "propose_all", state: "pending", night: "2026-11-29" }] }));
    await server.engine.round();
    // not yet late: the dream's device may still write it
    const early = new ReviewRounds(phone.engine, () => new Date());
    phone.engine.afterRound.push(() => early.afterRound());
    await phone.engine.round();
    expect(phone.vault.text(REVIEW)).toBeUndefined();
    phone.engine.afterRound.length = 0;
    installReview(phone.engine, () => new Date(Date.now() + 11 * 60_000));
    await phone.engine.round();
    const text = phone.vault.text(REVIEW)!;
    const fc = await phone.engine.remote.fileId("knowledge/C.md");
    expect(text).toContain(`\`${await changeId(fc, 0, 1)}/r\``);
    expect(text).toContain("- Source: “I moved it” — [[journal/2026-11-28]]");
    expect(text).toContain("- New value: the backup runs at 03:00");
    expect(text).toContain("### MEMORY.md · add");
    expect(text).toContain("by server (agent device) · new note");
    expect(phone.vault.text("Home.md")).toBe("<!-- review:begin -->\n> [!todo] [[review/2026-11-29|Review of the night of 2026-11-29]]\n<!-- review:end -->\n\n# Home\n");
    await server.engine.round();
    expect(server.vault.text(REVIEW)).toBe(text);
  });
});
