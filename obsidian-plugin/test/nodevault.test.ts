/** The CLI's file-system vault: bulk writes with one flush, checks, links refused, NFC renames. */
import { mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync, mkdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NodeVault } from "../src/cli/nodevault";
import { type BulkItem, ChangedSinceScan, UnusableName } from "../src/sync/vaultfs";

const t = (s: string) => new TextEncoder().encode(s);

describe("NodeVault", () => {
  it("writes many files atomically, deferring one that changed since the scan", async () => {
    const root = mkdtempSync(join(tmpdir(), "nv-"));
    mkdirSync(join(root, "a"));
    writeFileSync(join(root, "a", "typed.md"), "the person typed this");
    const v = await NodeVault.open(root);
    const items: BulkItem[] = Array.from({ length: 40 }, (_, i) => ({ path: `a/n${i}.md`, data: t(`note ${i}\n`), opts: { mtime: 1_700_000_000_000 }, expected: null }));
    items.push({ path: "a/typed.md", data: t("remote"), opts: {}, expected: null }); // we thought it absent
    const res = await v.writeMany(items);
    expect(res.filter((r) => r instanceof ChangedSinceScan)).toHaveLength(1);
    expect(readFileSync(join(root, "a", "typed.md"), "utf-8")).toBe("the person typed this");
    expect(readFileSync(join(root, "a", "n7.md"), "utf-8")).toBe("note 7\n");
    expect(statSync(join(root, "a", "n7.md")).mtimeMs).toBe(1_700_000_000_000);
    expect(readdirSync(join(root, "a")).filter((n) => n.startsWith(".companion-tmp-"))).toEqual([]);
  });

  it("writes into a folder it just removed as emptied (a delete then a write in one round)", async () => {
    const root = mkdtempSync(join(tmpdir(), "nv-"));
    const v = await NodeVault.open(root);
    await v.write("k/moved.md", t("x"));
    await v.remove("k/moved.md"); // the folder's last file: the folder goes too
    await v.write("k/z.md", t("z"));
    expect(readFileSync(join(root, "k", "z.md"), "utf-8")).toBe("z");
    await v.remove("k/z.md");
    const res = await v.writeMany([{ path: "k/w.md", data: t("w"), opts: {}, expected: null }]);
    expect(res[0]).not.toBeInstanceOf(Error);
  });

  it("reports a name the file system refuses as UnusableName, in single and bulk writes", async () => {
    const root = mkdtempSync(join(tmpdir(), "nv-"));
    const v = await NodeVault.open(root);
    const long = "n".repeat(300) + ".md"; // over ext4's 255 bytes: ENAMETOOLONG
    await expect(v.write(long, t("x"))).rejects.toBeInstanceOf(UnusableName);
    await expect(v.write(`d/${long}`, t("x"))).rejects.toBeInstanceOf(UnusableName);
    const res = await v.writeMany([
      { path: long, data: t("x"), opts: {}, expected: null },
      { path: "fine.md", data: t("fine"), opts: {}, expected: null },
    ]);
    expect(res[0]).toBeInstanceOf(UnusableName);
    expect(res[1]).not.toBeInstanceOf(Error);
    expect(readdirSync(root).sort()).toEqual(["d", "fine.md"]);
  });

  it("refuses to read or write through a symbolic link", async () => {
    const root = mkdtempSync(join(tmpdir(), "nv-"));
    const outside = mkdtempSync(join(tmpdir(), "out-"));
    symlinkSync(outside, join(root, "link"));
    const v = await NodeVault.open(root);
    await expect(v.write("link/x.md", t("x"))).rejects.toThrow(/symbolic link/);
    expect(readdirSync(outside)).toEqual([]);
    expect((await v.list()).map((f) => f.path)).toEqual([]);
  });
});
