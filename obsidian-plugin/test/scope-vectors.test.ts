/** tests/vectors/scopes_v1.json (written by tests/test_sync_scope_vectors.py): the plugin holds
 * an agent's change outside its scope exactly as the Python laptop does (issue 44, agents with
 * scopes). */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { configFolders, holdReason } from "../src/sync/policy";
import { defaultScopesText, readScopes } from "../src/sync/scopes";

const HERE = dirname(fileURLToPath(import.meta.url));
const V = JSON.parse(readFileSync(join(HERE, "..", "..", "tests", "vectors", "scopes_v1.json"), "utf-8"));

interface Case {
  file: number | null;
  device_id: string;
  author: "human" | "agent";
  path: string;
  rename_from: string | null;
  deleted: boolean;
  reason: string | null;
}

describe("scopes_v1.json", () => {
  it("writes the default scopes byte for byte as the Python engine", () => {
    expect(defaultScopesText()).toBe(V.files[0]);
  });

  it("holds what the Python laptop holds, for the same reason", () => {
    expect((V.cases as Case[]).length).toBeGreaterThan(100);
    for (const c of V.cases as Case[]) {
      const got = holdReason({
        localKind: "human",
        remoteKind: c.author,
        path: c.path,
        renameFrom: c.rename_from,
        deleted: c.deleted,
        executable: false,
        configDirs: configFolders([c.path]),
        content: new Uint8Array(),
        unchanged: false,
        scopes: c.file === null ? null : readScopes(V.files[c.file]),
        deviceId: c.device_id,
        authorName: "server",
      });
      expect([c.file, c.device_id, c.path, c.rename_from, got]).toEqual([c.file, c.device_id, c.path, c.rename_from, c.reason]);
    }
  });
});
