/** tests/vectors/resync_v1.json (written by tests/test_sync_resync_vectors.py from the Python
 * engine's `plan_resync`): after a relay restored from a backup the plugin renumbers and offers
 * again exactly what the Python engine does (docs/protocol.md R3). */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ConflictError, RelayRestored } from "../src/errors";
import {
  cursorMark,
  isRestoredRelay,
  planResync,
  recordResync,
  resyncChecks,
  type ResyncHead,
  type ResyncStep,
  setCursor,
} from "../src/sync/resync";
import { emptyState, type Entry } from "../src/sync/state";

const HERE = dirname(fileURLToPath(import.meta.url));
const V = JSON.parse(readFileSync(join(HERE, "..", "..", "tests", "vectors", "resync_v1.json"), "utf-8"));

interface VStep {
  step: "renumber" | "reoffer" | "diverged";
  path: string;
  rev?: number;
  relay_rev?: number;
}

const wanted = (s: VStep): ResyncStep =>
  s.step === "renumber" ? { step: "renumber", path: s.path, rev: s.rev! } : { step: s.step, path: s.path, relayRev: s.relay_rev! };

describe("resync_v1.json", () => {
  it("plans the resync after a relay restore as the Python engine does", () => {
    expect(V.version).toBe(1);
    expect(V.cases.length).toBeGreaterThanOrEqual(15);
    for (const c of V.cases) {
      const heads = new Map<string, ResyncHead>(Object.entries(c.heads as Record<string, ResyncHead>));
      const atRev = new Map<string, ResyncHead>(Object.entries(c.at_rev as Record<string, ResyncHead>));
      expect([c.name, resyncChecks(c.entries, heads)]).toEqual([c.name, c.checks]);
      expect([c.name, planResync(c.entries, heads, atRev)]).toEqual([c.name, (c.steps as VStep[]).map(wanted)]);
    }
  });

  it("records a renumber as the relay's revision and a re-offer as a change to push", () => {
    const entry = (rev: number, deleted = false): Entry => ({
      fileId: "f", rev, sha256: deleted ? "" : "ab".repeat(32), size: deleted ? 0 : 5, mtime: deleted ? 0 : 17,
      deleted, executable: false, device: "phone", deviceKind: "human",
    });
    const files: Record<string, Entry> = { "same.md": entry(5), "lost.md": entry(4), "dead.md": entry(3, true) };
    const got = recordResync(files, [
      { step: "renumber", path: "same.md", rev: 3 },
      { step: "reoffer", path: "lost.md", relayRev: 2 },
      { step: "reoffer", path: "dead.md", relayRev: 1 },
    ]);
    expect(got).toEqual(["lost.md", "dead.md"]);
    expect(files["same.md"]).toEqual({ ...entry(5), rev: 3 });
    // an unknown local state on the relay's revision: the scan hashes the file (or sees it
    // gone) and pushes it on top of that revision, never takes the relay's older one
    expect(files["lost.md"]).toMatchObject({ rev: 2, sha256: "", mtime: -1, deleted: false, force: true });
    expect(files["dead.md"]).toMatchObject({ rev: 1, deleted: false, force: true });
  });

  it("records what both changed just below the relay's revision, with no version to merge from", () => {
    const entry = (rev: number, deleted = false): Entry => ({
      fileId: "f", rev, sha256: deleted ? "" : "ab".repeat(32), size: deleted ? 0 : 5, mtime: deleted ? 0 : 17,
      deleted, executable: false, device: "phone", deviceKind: "human",
    });
    const files: Record<string, Entry> = { "both.md": entry(3), "dead.md": entry(2, true) };
    const got = recordResync(files, [
      { step: "diverged", path: "both.md", relayRev: 3 },
      { step: "diverged", path: "dead.md", relayRev: 2 },
    ]);
    expect(got).toEqual(["both.md", "dead.md"]);
    // the relay's head is newer than the entry, so the pull queues it; this device's version
    // is a change (forced, no hash), so the apply reconciles the two (R20); no sha256 means
    // the relay's record at that revision is never taken for the common version (R25)
    expect(files["both.md"]).toMatchObject({ rev: 2, sha256: "", mtime: -1, deleted: false, force: true });
    // a deletion the restore lost: nothing here to push, the relay's edit comes back (R18)
    expect(files["dead.md"]).toMatchObject({ rev: 1, sha256: "", deleted: true });
    expect(files["dead.md"].force).toBeFalsy();
  });
});

describe("the record remembered at the cursor (R3, Python's meta cursor_mark)", () => {
  it("is kept with the cursor, read only while its seq is the cursor, written as Python writes it", () => {
    const state = emptyState();
    expect(cursorMark(state)).toBeNull();
    const mark = { fileId: "ab".repeat(16), rev: 3, sha256: "cd".repeat(32) };
    setCursor(state, 7, mark);
    expect(state.cursorMark).toBe(`7 ${mark.fileId} 3 ${mark.sha256}`);
    expect(cursorMark(state)).toEqual(mark);
    state.cursor = 0; // moved back elsewhere (new ignore rules, a quarantine retry): no mark
    expect(cursorMark(state)).toBeNull();
    setCursor(state, 9, null);
    expect(cursorMark(state)).toBeNull();
  });

  it("takes since_ahead and another record at the cursor as a restore, nothing else", () => {
    expect(isRestoredRelay(new RelayRestored("x"))).toBe(true);
    expect(isRestoredRelay(new ConflictError("x", { code: "since_ahead" }))).toBe(true);
    expect(isRestoredRelay(new ConflictError("x", { code: "conflict" }))).toBe(false);
    expect(isRestoredRelay(new Error("x"))).toBe(false);
  });
});
