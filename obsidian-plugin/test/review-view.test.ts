// @vitest-environment happy-dom
/**
 * The "Review last night" view against a DOM (happy-dom) and a stand-in vault (`obsidian` is
 * test/fake-obsidian.ts): it renders the items of the newest review note (the vector's note,
 * the same bytes Python writes) with their diffs and one button per decision, and a button
 * ticks exactly that decision's line through the vault API.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestRelay } from "./relay";
import { device } from "./helpers";
import { httpTransport } from "./http";
import { changeId } from "../src/review/model";
import { render } from "../src/review/note";
import { keyOf } from "../src/review/model";
import { setTicked } from "../src/review/note";
import type { SyncEngine } from "../src/sync/engine";
import { newestReviewFile, REVIEW_VIEW, ReviewView, waitingSummary } from "../src/obsidian/review";

const HERE = dirname(fileURLToPath(import.meta.url));
const V = JSON.parse(readFileSync(join(HERE, "..", "..", "tests", "vectors", "review_v1.json"), "utf-8"));
const REVIEW = "review/2026-11-29.md";

/** The parts of Obsidian's Vault the view uses, over a map of texts. */
class FakeVault {
  files = new Map<string, string>();
  writes: string[] = [];
  private handlers: [string, (f: { path: string }) => unknown][] = [];
  getFiles() {
    return [...this.files.keys()].map((path) => ({ path, stat: { size: 0, mtime: 0 } }));
  }
  async read(f: { path: string }) {
    return this.files.get(f.path)!;
  }
  async process(f: { path: string }, fn: (t: string) => string) {
    const t = fn(this.files.get(f.path)!);
    this.files.set(f.path, t);
    this.writes.push(f.path);
    for (const [name, cb] of this.handlers) if (name === "modify") cb(f);
    return t;
  }
  on(name: string, cb: (f: { path: string }) => unknown) {
    this.handlers.push([name, cb]);
    return { name };
  }
}

async function open(files: Record<string, string>, engine: SyncEngine | null = null) {
  const vault = new FakeVault();
  for (const [p, t] of Object.entries(files)) vault.files.set(p, t);
  const view = new ReviewView({ app: { vault } } as never, () => engine);
  document.body.appendChild(view.containerEl);
  await view.onOpen();
  return { vault, view, root: view.contentEl };
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
};

const item = (root: HTMLElement, id: string) => root.querySelector(`[data-id="${id}"]`) as HTMLElement;
const buttons = (box: HTMLElement) => [...box.querySelectorAll("button")].map((b) => b.textContent);

describe("Review last night", () => {
  it("lists the newest note's items with their diffs and one button per decision", async () => {
    const { root, view } = await open({ "review/2026-11-28.md": "---\nreview: 1\n---\n", [REVIEW]: V.note, "knowledge/Backups.md": "x" });
    expect(view.getViewType()).toBe(REVIEW_VIEW);
    expect(root.querySelector("h2")!.textContent).toBe("Review of the night of 2026-11-29");
    expect(root.querySelector(".vault-companion-summary")!.textContent).toBe("Waiting for you: 3 changes, 1 disagreement, 1 proposal.");
    const ids = [...root.querySelectorAll(".vault-companion-item")].map((e) => (e as HTMLElement).dataset.id);
    expect(ids).toEqual(["n-20261129", "c-ceef01b851", "c-9c59ce5886", "k-5a8072aa7b", "p-b9a09c7e56", "c-1111111111"]);
    expect(buttons(item(root, "n-20261129"))).toEqual(["Revert the whole night", "Apply every proposal"]);
    expect(buttons(item(root, "c-ceef01b851"))).toEqual(["Revert this change"]);
    expect(buttons(item(root, "k-5a8072aa7b"))).toEqual(["Keep mine", "Take the new value"]);
    expect(buttons(item(root, "p-b9a09c7e56"))).toEqual(["Apply", "Drop"]);
    // the diffs: the note's own (no relay here), a disagreement's two values, a proposal's
    const diff = (id: string) => [...item(root, id).querySelectorAll(".vault-companion-diff div")].map((d) => d.textContent);
    expect(diff("c-ceef01b851")).toEqual(["+ - The prune runs on Saturdays.", "+ - ⚠ Disagrees with your line (2026-11-28): The prune runs on Sundays at 02:00."]);
    expect(diff("c-9c59ce5886")).toContain("+ ```sh");
    expect(diff("k-5a8072aa7b")).toEqual(["- The prune runs on Saturdays.", "+ The prune runs on Sundays at 02:00."]);
    expect(item(root, "c-ceef01b851").querySelector(".vault-companion-path")!.textContent).toBe("knowledge/Backups.md");
  });

  it("a button ticks exactly its line in the review note, through the vault", async () => {
    const { root, vault } = await open({ [REVIEW]: V.note });
    const take = [...item(root, "k-5a8072aa7b").querySelectorAll("button")].find((b) => b.textContent === "Take the new value")!;
    take.click();
    await until(() => vault.writes.length === 1);
    expect(vault.files.get(REVIEW)).toBe(setTicked(V.note, keyOf("k-5a8072aa7b", "t")));
    // drawn again from the note: ticked, no more buttons for it; the others unchanged
    await until(() => item(root, "k-5a8072aa7b").classList.contains("vc-ticked"));
    expect(buttons(item(root, "k-5a8072aa7b"))).toEqual([]);
    expect(item(root, "k-5a8072aa7b").textContent).toContain("carried out at the next sync");
    expect(buttons(item(root, "c-ceef01b851"))).toEqual(["Revert this change"]);
    // the vector's revert tick, by a tap
    (item(root, "c-ceef01b851").querySelector("button") as HTMLButtonElement).click();
    await until(() => vault.writes.length === 2);
    expect(vault.files.get(REVIEW)).toBe(setTicked(setTicked(V.note, keyOf("k-5a8072aa7b", "t")), keyOf("c-ceef01b851", "r")));
  });

  it("a decided line shows its outcome and offers nothing; an ignored tick can be made again", async () => {
    const ignored = V.decided.text.replace("`k-5a8072aa7b/k`", "`k-5a8072aa7b/k` — ⚠ a tick written by server, an agent device, was ignored");
    const { root } = await open({ [REVIEW]: ignored });
    expect(item(root, "c-ceef01b851").querySelector(".vault-companion-outcome")!.textContent).toBe("reverted 08:14 from phone");
    expect(buttons(item(root, "c-ceef01b851"))).toEqual([]);
    expect(item(root, "k-5a8072aa7b").querySelector(".vault-companion-outcome")!.textContent).toContain("was ignored");
    expect(buttons(item(root, "k-5a8072aa7b"))).toEqual(["Keep mine", "Take the new value"]);
  });

  it("the notice's summary and the newest note; no note, a plain message", async () => {
    const { vault, root } = await open({});
    expect(root.textContent).toContain("No review yet");
    vault.files.set(REVIEW, V.note);
    vault.files.set("review/2026-11-27.md", "old");
    vault.files.set("review/notes.md", "not a night");
    const app = { vault } as never;
    expect(newestReviewFile(app)!.path).toBe(REVIEW);
    expect(await waitingSummary(app)).toBe("3 changes, 1 disagreement, 1 proposal");
  });

  it("its buttons are tap targets, not hover controls", () => {
    const css = readFileSync(join(HERE, "..", "styles.css"), "utf-8");
    const rule = css.match(/\.vault-companion-tap\s*\{([^}]*)\}/)![1];
    expect(Number(rule.match(/min-height:\s*(\d+)px/)![1])).toBeGreaterThanOrEqual(44);
    expect(css).not.toMatch(/vault-companion-(review|item|tap)[^{]*:hover/);
  });

  describe("with the relay", () => {
    let relay: TestRelay;
    beforeAll(async () => {
      relay = await TestRelay.start();
    });
    afterAll(async () => {
      await relay.stop();
    });

    it("shows a change as the relay's history holds it, not as the note says", async () => {
      // node's own HTTP (happy-dom's fetch would apply the browser's CORS rules)
      const phone = await device(relay, await relay.newVault(), "phone", "human", { transport: httpTransport });
      const server = await device(relay, await relay.invite(phone.engine.remote.vaultId, "agent"), "server", "agent", { transport: httpTransport });
      await server.vault.put("knowledge/A.md", "# A\n\nthe agent wrote this\n");
      await server.engine.round();
      const id = await changeId(await server.engine.remote.fileId("knowledge/A.md"), 0, 1);
      // the note claims another diff: the view shows the relay's
      const claimed = { id, path: "knowledge/A.md", fileId: "", fromRev: 0, toRev: 1, before: null, after: "# A\n\nharmless\n", device: "server", kind: "agent", at: "03:12", beforeKnown: true, notes: [] };
      await server.vault.put(REVIEW, render({ night: "2026-11-29", fromSeq: 0, toSeq: 9, changes: [claimed] }));
      await server.engine.round();
      await phone.engine.round();
      const { root } = await open({ [REVIEW]: phone.vault.text(REVIEW)!, "knowledge/A.md": phone.vault.text("knowledge/A.md")! }, phone.engine);
      const diff = () => [...item(root, id).querySelectorAll(".vault-companion-diff div")].map((d) => d.textContent);
      await until(() => diff().includes("+ the agent wrote this"));
      expect(diff()).toEqual(["+ # A", "+", "+ the agent wrote this"]);
      expect(root.textContent).not.toContain("Offline");
    });
  });
});
