/** Issue #42, the plugin's parts: the vault folder's identity, the person's exact bytes in a
 * merge, a rename racing an edit, conflict copies listed from the vault, the weak-KDF hatch. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestRelay } from "./relay";
import { pair, text } from "./helpers";
import { InputError, VaultFolderMissing } from "../src/errors";
import { FOLDER_MARKER, markerText } from "../src/sync/folder";
import { mergeBytes } from "../src/sync/merge";
import { conflictViews, isKeptCopy } from "../src/sync/conflicts";
import { IgnoreRules } from "../src/sync/ignore";
import { weakKdfRequested } from "../src/cli/testmode";

let relay: TestRelay;
beforeAll(async () => {
  relay = await TestRelay.start();
});
afterAll(async () => {
  await relay.stop();
});

const BOM = new Uint8Array([0xef, 0xbb, 0xbf]);
const withBom = (s: string) => new Uint8Array([...BOM, ...text(s)]);
const keys = (m: Map<string, unknown>) => [...m.keys()].sort();

describe("the vault folder's identity", () => {
  it("is marked at the first round and never synced", async () => {
    const [h, a] = await pair(relay);
    await h.vault.put("n.md", "x\n");
    await h.engine.round();
    await a.engine.round();
    const m = JSON.parse(h.vault.text(FOLDER_MARKER)!);
    expect(m.vault_id).toBe(h.engine.remote.vaultId);
    expect(m.device_id).toBe(h.engine.device.deviceId);
    expect(typeof m.created).toBe("number");
    // the agent has its own marker, not the phone's
    expect(JSON.parse(a.vault.text(FOLDER_MARKER)!).device_id).toBe(a.engine.device.deviceId);
    expect(new IgnoreRules().isIgnored(FOLDER_MARKER)).toBe(true);
  });

  it("a folder swapped for an empty one: nothing written or deleted; back: a full rescan", async () => {
    const [h, a] = await pair(relay);
    await h.vault.put("keep.md", "keep\n");
    await h.vault.put("other.md", "other\n");
    await h.engine.round();
    await a.engine.round();
    const real = h.vault.files;
    h.vault.files = new Map(); // the empty mount point under the real folder
    await a.vault.put("new.md", "from the agent\n");
    await a.engine.round();
    const err = await h.engine.round().catch((e) => e);
    expect(err).toBeInstanceOf(VaultFolderMissing);
    expect(err.exitCode).toBe(6);
    expect(h.vault.files.size).toBe(0); // nothing written into the wrong folder
    expect(h.engine.state.state).toBe("vault_missing");
    // and again: each round checks
    expect(await h.engine.round({ paths: ["new.md"] }).catch((e) => e)).toBeInstanceOf(VaultFolderMissing);
    expect(h.vault.files.size).toBe(0);
    await a.engine.round();
    expect(a.vault.text("keep.md")).toBe("keep\n"); // nothing deleted elsewhere
    expect(a.vault.text("other.md")).toBe("other\n");
    // the real folder is back, with an edit made in it meanwhile
    h.vault.files = real;
    await h.vault.put("other.md", "other\nedited while away\n");
    const r = await h.engine.round({ paths: [] }); // an event-scoped round: the scan is full anyway
    expect(h.vault.text("new.md")).toBe("from the agent\n");
    expect(r.uploaded).toContain("other.md");
    expect(h.engine.state.state).toBe("synced");
    await a.engine.round();
    expect(a.vault.text("other.md")).toBe("other\nedited while away\n");
    expect(keys(a.vault.files).filter((p) => p !== FOLDER_MARKER)).toEqual(["keep.md", "new.md", "other.md"]);
    expect(keys(h.vault.files)).toEqual(keys(a.vault.files));
  });

  it("a folder that is gone, or another copy's folder, is missing too", async () => {
    const [h, a] = await pair(relay);
    await h.vault.put("n.md", "x\n");
    await h.engine.round();
    await a.engine.round();
    const real = h.vault.files;
    h.vault.present = false;
    h.vault.files = new Map();
    expect(await h.engine.round().catch((e) => e)).toBeInstanceOf(VaultFolderMissing);
    expect(h.vault.files.size).toBe(0); // no marker written into nothing
    // another device's copy of the same vault mounted at this path
    h.vault.present = true;
    h.vault.files = new Map(a.vault.files);
    await h.vault.put("n.md", "changed in the other copy\n");
    expect(await h.engine.round().catch((e) => e)).toBeInstanceOf(VaultFolderMissing);
    expect(h.vault.text(FOLDER_MARKER)).toBe(a.vault.text(FOLDER_MARKER));
    await a.engine.round();
    expect(a.vault.text("n.md")).toBe("x\n");
    h.vault.files = real;
    await h.engine.round();
    expect(h.engine.state.state).toBe("synced");
  });

  it("a copy synced before markers gets one when its files are there, else it is missing", async () => {
    const [h, a] = await pair(relay);
    await h.vault.put("n.md", "x\n");
    await h.engine.round();
    await a.engine.round();
    h.vault.files.delete(FOLDER_MARKER); // joined before markers
    await h.vault.put("m.md", "y\n");
    const r = await h.engine.round();
    expect(r.uploaded).toEqual(["m.md"]);
    expect(JSON.parse(h.vault.text(FOLDER_MARKER)!).device_id).toBe(h.engine.device.deviceId);
    // no marker and none of the files it knows: not this copy's folder
    const real = h.vault.files;
    h.vault.files = new Map([["unrelated.md", { data: text("?"), mtime: 1, executable: false }]]);
    expect(await h.engine.round().catch((e) => e)).toBeInstanceOf(VaultFolderMissing);
    expect(keys(h.vault.files)).toEqual(["unrelated.md"]);
    await a.engine.round();
    expect(keys(a.vault.files)).toEqual([FOLDER_MARKER, "m.md", "n.md"]);
    h.vault.files = real;
    await h.engine.round();
  });

  it("a marker that does not parse is not this copy's", async () => {
    const [h] = await pair(relay);
    await h.vault.put("n.md", "x\n");
    await h.engine.round();
    await h.vault.put(FOLDER_MARKER, "{not json");
    expect(await h.engine.round().catch((e) => e)).toBeInstanceOf(VaultFolderMissing);
    await h.vault.put(FOLDER_MARKER, markerText(h.engine.remote.vaultId, h.engine.device.deviceId, 1));
    await h.engine.round();
  });
});

describe("the person's exact bytes", () => {
  it("a three-way merge keeps the UTF-8 byte-order mark", async () => {
    const m = mergeBytes(withBom("a\nb\nc\nd\n"), withBom("A\nb\nc\nd\n"), withBom("a\nb\nc\nD\n"));
    expect(m.clean).toBe(true);
    expect(m.text).toBe("\ufeffA\nb\nc\nD\n");
    const [h, a] = await pair(relay);
    await h.vault.put("bom.md", withBom("one\ntwo\nthree\nfour\n"));
    await h.engine.round();
    await a.engine.round();
    await a.vault.put("bom.md", withBom("one\ntwo\nthree\nfour, the agent's\n"));
    await h.vault.put("bom.md", withBom("one, mine\ntwo\nthree\nfour\n"));
    await a.engine.round();
    const r = await h.engine.round();
    expect(r.merged).toEqual(["bom.md"]);
    const want = withBom("one, mine\ntwo\nthree\nfour, the agent's\n");
    expect(h.vault.files.get("bom.md")!.data).toEqual(want);
    await a.engine.round();
    expect(a.vault.files.get("bom.md")!.data).toEqual(want);
  });
});

describe("a rename racing an edit", () => {
  it("renamed here, edited there: the edit follows the rename, no duplicate", async () => {
    const [h, a] = await pair(relay);
    await h.vault.put("a.md", "one\ntwo\nthree\n");
    await h.vault.put("keep.md", "k\n");
    await h.engine.round();
    await a.engine.round();
    await a.vault.put("a.md", "one\ntwo\nthree\nthe agent's line\n");
    await a.engine.round();
    await h.vault.rename("a.md", "notes/b.md");
    const r = await h.engine.round();
    expect(r.downloaded).toEqual(["notes/b.md"]);
    expect(h.vault.files.has("a.md")).toBe(false);
    expect(h.vault.text("notes/b.md")).toBe("one\ntwo\nthree\nthe agent's line\n");
    const r2 = await a.engine.round();
    expect(r2.renamedLocal).toEqual([["a.md", "notes/b.md"]]); // went out as a rename
    expect(keys(a.vault.files)).toEqual([FOLDER_MARKER, "keep.md", "notes/b.md"]);
    expect(a.vault.text("notes/b.md")).toBe("one\ntwo\nthree\nthe agent's line\n");
    await h.engine.round();
    expect(keys(h.vault.files)).toEqual(keys(a.vault.files));
    expect(h.engine.state.state).toBe("synced");
  });

  it("renamed and edited here, edited there: the edits merge at the new name (R17)", async () => {
    // a rename made together with an edit is still a rename when the note keeps at least half
    // its lines (Python's scanner, edited_source): no deletion beside a new file
    const [h, a] = await pair(relay);
    await h.vault.put("a.md", "one\ntwo\nthree\n");
    await h.engine.round();
    await a.engine.round();
    await a.vault.put("a.md", "one\ntwo\nTHREE\n");
    await a.engine.round();
    await h.vault.rename("a.md", "b.md");
    await h.vault.put("b.md", "ONE\ntwo\nthree\n");
    const r = await h.engine.round();
    expect(r.merged).toEqual(["b.md"]);
    expect(keys(h.vault.files)).toEqual([FOLDER_MARKER, "b.md"]);
    expect(h.vault.text("b.md")).toBe("ONE\ntwo\nTHREE\n");
    await a.engine.round();
    expect(keys(a.vault.files)).toEqual([FOLDER_MARKER, "b.md"]);
    expect(a.vault.text("b.md")).toBe("ONE\ntwo\nTHREE\n");
  });

  it("a note renamed and rewritten here is a deletion and a new file", async () => {
    const [h, a] = await pair(relay);
    await h.vault.put("a.md", "one\ntwo\nthree\n");
    await h.engine.round();
    await a.engine.round();
    await h.vault.rename("a.md", "b.md");
    await h.vault.put("b.md", "something\nelse\nentirely\n");
    await h.engine.round();
    const rec = await h.engine.remote.record("b.md", h.engine.state.files["b.md"].rev);
    expect(rec!.meta.renameFrom).toBeNull();
    await a.engine.round();
    expect(keys(a.vault.files)).toEqual([FOLDER_MARKER, "b.md"]);
  });

  it("renamed there, edited here: the edit follows the rename, no duplicate", async () => {
    const [h, a] = await pair(relay);
    await h.vault.put("a.md", "one\ntwo\nthree\n");
    await h.engine.round();
    await a.engine.round();
    await a.vault.rename("a.md", "b.md");
    await a.engine.round();
    await h.vault.put("a.md", "one\ntwo\nthree\nmine\n");
    const r = await h.engine.round();
    expect(r.renamedLocal).toEqual([["a.md", "b.md"]]);
    expect(h.vault.files.has("a.md")).toBe(false);
    expect(h.vault.text("b.md")).toBe("one\ntwo\nthree\nmine\n");
    await a.engine.round();
    expect(keys(a.vault.files)).toEqual([FOLDER_MARKER, "b.md"]);
    expect(a.vault.text("b.md")).toBe("one\ntwo\nthree\nmine\n");
  });
});

describe("status", () => {
  it("lists every conflict copy in the vault, with what this device knows of it", () => {
    expect(isKeptCopy("plan (conflict server 2025-01-15 0905).md")).toBe(true);
    expect(isKeptCopy("plan (conflict server 2025-01-15 0905 2).md")).toBe(true);
    expect(isKeptCopy("Note (case conflict).md")).toBe(true);
    expect(isKeptCopy("naïve (unicode conflict 2).md")).toBe(true);
    expect(isKeptCopy("plan (conflict).md")).toBe(false);
    const known = { path: "a.md", copy: "a (conflict x 2025-01-15 0905).md", kept: "phone", moved: "x", outcome: "local_wins", message: "m", time: 1 };
    const v = conflictViews(["a (conflict x 2025-01-15 0905).md", "d/b (conflict laptop 2025-02-01 1200).txt"], [known]);
    expect(v[0]).toEqual(known);
    expect(v[1]).toEqual({
      path: "d/b.txt",
      copy: "d/b (conflict laptop 2025-02-01 1200).txt",
      kept: "",
      moved: "laptop",
      outcome: "",
      message: "d/b (conflict laptop 2025-02-01 1200).txt holds another version of d/b.txt",
      time: null,
    });
  });
});

describe("conflict copies on every device", () => {
  it("the engine lists the copies in the vault, not only those it made", async () => {
    const [h, a] = await pair(relay);
    await a.vault.put("x (conflict laptop 2025-01-15 0905).md", "the laptop's\n");
    await a.engine.round();
    await h.engine.round();
    expect(h.engine.state.conflicts).toEqual([]);
    const v = await h.engine.conflictCopies();
    expect(v.map((c) => [c.path, c.copy, c.moved])).toEqual([["x.md", "x (conflict laptop 2025-01-15 0905).md", "laptop"]]);
    h.vault.files = new Map();
    expect(await h.engine.conflictCopies()).toEqual([]); // not from a folder that is not the vault
  });
});

describe("COMPANION_TEST_WEAK_KDF", () => {
  it("is honoured only inside a test suite with COMPANION_HOME, refused elsewhere", () => {
    expect(weakKdfRequested({})).toBe(false);
    expect(weakKdfRequested({ COMPANION_TEST_WEAK_KDF: "0" })).toBe(false);
    expect(weakKdfRequested({ COMPANION_TEST_WEAK_KDF: "1", PYTEST_CURRENT_TEST: "t", COMPANION_HOME: "/tmp/h" })).toBe(true);
    expect(weakKdfRequested({ COMPANION_TEST_WEAK_KDF: "1", VITEST: "true", COMPANION_HOME: "/tmp/h" })).toBe(true);
    expect(() => weakKdfRequested({ COMPANION_TEST_WEAK_KDF: "1" })).toThrow(InputError);
    expect(() => weakKdfRequested({ COMPANION_TEST_WEAK_KDF: "1", PYTEST_CURRENT_TEST: "t" })).toThrow(/only for the companion's own test suite/);
  });
});
