/** tests/vectors/holds_v1.json (written by tests/test_sync_hold_vectors.py): the plugin holds
 * exactly what the Python laptop holds (issue 44, findings 1, 3, 4, 5). */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { configFolders, holdFold, holdReason, noteCode } from "../src/sync/policy";

const HERE = dirname(fileURLToPath(import.meta.url));
const V = JSON.parse(readFileSync(join(HERE, "..", "..", "tests", "vectors", "holds_v1.json"), "utf-8"));

interface Case {
  device: "human" | "agent";
  author: "human" | "agent";
  path: string;
  rename_from: string | null;
  deleted: boolean;
  executable: boolean;
  content: string | null;
  unchanged: boolean;
  known: string[];
  patterns: string[];
  reason: string | null;
}

describe("holds_v1.json", () => {
  it("folds names as a case-insensitive file system opens them", () => {
    for (const f of V.fold) expect([f.in, holdFold(f.in)]).toEqual([f.in, f.out]);
  });

  it("finds every folder with Obsidian's config shape", () => {
    for (const c of V.config_folders) expect([c.known, [...configFolders(c.known)].sort()]).toEqual([c.known, c.folders]);
  });

  it("finds the code a plugin runs in a note", () => {
    for (const n of V.note_code) expect([n.text, noteCode(n.text)]).toEqual([n.text, n.what]);
  });

  it("holds what the Python laptop holds, for the same reason", () => {
    for (const c of V.cases as Case[]) {
      const got = holdReason({
        localKind: c.device,
        remoteKind: c.author,
        path: c.path,
        renameFrom: c.rename_from,
        deleted: c.deleted,
        executable: c.executable,
        configDirs: configFolders([...c.known, c.path]),
        content: c.content === null ? null : new TextEncoder().encode(c.content),
        unchanged: c.unchanged,
        patterns: c.patterns,
      });
      expect([c.path, c.content, got]).toEqual([c.path, c.content, c.reason]);
    }
  });
});
