/** The stale-save rule (docs/protocol.md R15) on the plugin's engine, through a real relay: a
 * save soon after a remote change replaced the file is checked against the replaced version
 * (plan.ts `StaleSave`, apply.ts `staleSave`, as Python's round/apply.py `_stale_save`). The
 * devices' clocks are the in-memory vault's modification times, so "soon" is exact. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestRelay } from "./relay";
import { device, type Device } from "./helpers";

let relay: TestRelay;
beforeAll(async () => {
  relay = await TestRelay.start();
});
afterAll(async () => {
  await relay.stop();
});

/** A person's device whose clock is its vault's (shifted by `shift.ms`), and an agent's. */
async function pairWithClock(shift = { ms: 0 }): Promise<[Device, Device]> {
  const invite = await relay.newVault();
  const h = await device(relay, invite, "phone", "human", { clock: (v) => v.time + shift.ms });
  const a = await device(relay, await relay.invite(h.engine.remote.vaultId, "agent"), "server", "agent");
  return [h, a];
}

const BEFORE = "line 1\nline 2\nline 3\n";
const RECEIVED = "line 1, received\nline 2\nline 3\n";

async function received(h: Device, a: Device): Promise<void> {
  await h.vault.put("n.md", BEFORE);
  await h.engine.round();
  await a.engine.round();
  await a.vault.put("n.md", RECEIVED);
  await a.engine.round();
  const r = await h.engine.round();
  expect(r.downloaded).toEqual(["n.md"]);
  expect(h.engine.state.applied?.["n.md"]).toBeTruthy();
}

describe("a save soon after an apply (R15)", () => {
  it("merges a stale save into the change it would have dropped", async () => {
    const [h, a] = await pairWithClock();
    await received(h, a);
    // the editor saves the buffer it read before the change arrived, with the person's edit
    await h.vault.put("n.md", "line 1\nline 2\nline 3, typed\n");
    const r = await h.engine.round();
    expect(r.merged).toEqual(["n.md"]);
    expect(h.vault.text("n.md")).toBe("line 1, received\nline 2\nline 3, typed\n");
    await a.engine.round();
    expect(a.vault.text("n.md")).toBe("line 1, received\nline 2\nline 3, typed\n");
  });

  it("keeps both versions when the stale save does not merge", async () => {
    const [h, a] = await pairWithClock();
    await received(h, a);
    await h.vault.put("n.md", "line 1, mine\nline 2\nline 3\n");
    const r = await h.engine.round();
    expect(r.conflicts.map((c) => c.path)).toEqual(["n.md"]);
    const copy = r.conflicts[0].copy;
    // the person's version stays in the note (human precedence), the agent's in the copy
    expect(h.vault.text("n.md")).toBe("line 1, mine\nline 2\nline 3\n");
    expect(h.vault.text(copy)).toBe(RECEIVED);
    await a.engine.round();
    expect(a.vault.text(copy)).toBe(RECEIVED);
  });

  it("pushes a save that holds the change just applied as it is", async () => {
    const [h, a] = await pairWithClock();
    await received(h, a);
    await h.vault.put("n.md", "line 1, received\nline 2, mine\nline 3\n");
    const r = await h.engine.round();
    expect(r.merged).toEqual([]);
    expect(r.conflicts).toEqual([]);
    expect(r.uploaded).toEqual(["n.md"]);
    await a.engine.round();
    expect(a.vault.text("n.md")).toBe("line 1, received\nline 2, mine\nline 3\n");
  });

  it("pushes a save long after the apply as an ordinary edit", async () => {
    const shift = { ms: 0 };
    const [h, a] = await pairWithClock(shift);
    shift.ms = -20_000; // the apply happened 20 s before the save that follows
    await received(h, a);
    await h.vault.put("n.md", "line 1\nline 2\nline 3, typed\n");
    const r = await h.engine.round();
    expect(r.merged).toEqual([]);
    expect(r.uploaded).toEqual(["n.md"]);
    await a.engine.round();
    expect(a.vault.text("n.md")).toBe("line 1\nline 2\nline 3, typed\n");
  });

  it("takes a file the round wrote on purpose as an ordinary edit", async () => {
    const [h, a] = await pairWithClock();
    await received(h, a);
    await h.engine.writeOwn("n.md", new TextEncoder().encode("line 1\nline 2\nline 3, reverted\n"));
    const r = await h.engine.round();
    expect(r.merged).toEqual([]);
    expect(r.uploaded).toEqual(["n.md"]);
  });
});
