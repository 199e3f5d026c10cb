/** The build check refuses Node APIs in the mobile bundle, and the built bundle passes it. */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const check = (file: string) => spawnSync("node", ["scripts/check-bundle.mjs", file], { encoding: "utf-8" });

describe("check-bundle", () => {
  const dir = mkdtempSync(join(tmpdir(), "bundle-"));
  it.each([
    ['const fs = require("fs");', "require"],
    ['const c = require("node:crypto");', "crypto"],
    ["const b = Buffer.from('x');", "Buffer"],
    ["if (process.env.X) {}", "process"],
    ["console.log(__dirname)", "__dirname"],
  ])("fails on %s", (src, word) => {
    const f = join(dir, `${word}.js`);
    writeFileSync(f, src);
    const r = check(f);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(word);
  });

  it("passes plain browser code and the built main.js", () => {
    const f = join(dir, "ok.js");
    writeFileSync(f, "const x = crypto.subtle; const y = new TextEncoder(); module.exports = {x, y};");
    expect(check(f).status).toBe(0);
    if (!existsSync("dist/main.js")) execFileSync("npm", ["run", "build"], { stdio: "ignore" });
    expect(check("dist/main.js").status).toBe(0);
  });
});
