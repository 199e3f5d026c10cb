/** tests/vectors/rules_v1.json (written by tests/test_sync_rule_vectors.py from the Python
 * engine): the plugin folds names, reads Windows's name rule and guards mass deletions exactly
 * as the Python engine does (issue 43; docs/protocol.md R11, R14, R19). */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { fold, windowsNameVerdict } from "../src/sync/paths";
import { isMassDelete } from "../src/sync/policy";

const HERE = dirname(fileURLToPath(import.meta.url));
const V = JSON.parse(readFileSync(join(HERE, "..", "..", "tests", "vectors", "rules_v1.json"), "utf-8"));

describe("rules_v1.json", () => {
  it("folds every name as the Python engine does", () => {
    expect(V.fold.length).toBeGreaterThan(10);
    for (const f of V.fold) expect([f.in, fold(f.in)]).toEqual([f.in, f.out]);
  });

  it("refuses the names Windows refuses, for the same reason", () => {
    for (const w of V.windows_names) expect([w.path, windowsNameVerdict(w.path)]).toEqual([w.path, w.verdict]);
  });

  it("holds back the same mass deletions", () => {
    for (const m of V.mass_delete) {
      expect([m, isMassDelete(m.deletes, m.total, m.ratio, m.min_files)]).toEqual([m, m.held]);
    }
  });
});
