/** Pure pieces: conflict names, merge, the record JSON, trust rules, Obsidian's transport. */
import { describe, expect, it } from "vitest";
import { conflictCopyName, resolve, sanitizeDevice } from "../src/sync/conflicts";
import { mergeText } from "../src/sync/merge";
import { utf8 } from "../src/crypto/bytes";
import { parseJson, pyDumps } from "../src/crypto/json";
import { metaFromJson } from "../src/crypto/records";
import { recordMtimeMs } from "../src/sync/engine";
import { CONFIG, effectiveKind, holdReason, isMassDelete, kindMismatch, pathReason } from "../src/sync/policy";
import { normalize, UnsafePath, windowsNameProblem } from "../src/sync/paths";
import { nameError, UnusableName } from "../src/sync/vaultfs";
import { IgnoreRules } from "../src/sync/ignore";
import { obsidianTransport } from "../src/obsidian/transport";
import { parseRetryAfter } from "../src/relay/client";

const t = (s: string) => new TextEncoder().encode(s);

describe("conflicts", () => {
  it("names copies like the Python side", () => {
    const when = new Date(2025, 0, 15, 9, 5);
    expect(conflictCopyName("notes/plan.md", "Ana's laptop", when)).toBe("notes/plan (conflict Ana's laptop 2025-01-15 0905).md");
    expect(conflictCopyName(".hidden", "x", when)).toBe(".hidden (conflict x 2025-01-15 0905)");
    const taken = new Set(["a (conflict s 2025-01-15 0905).md"]);
    expect(conflictCopyName("a.md", "s", when, (p) => taken.has(p))).toBe("a (conflict s 2025-01-15 0905 2).md");
    expect(sanitizeDevice(' my:\tphone/"x" ')).toBe("my_ phone_x_");
  });

  it("keeps a human's version over an agent's, and the first committer between equals", () => {
    const when = new Date();
    const human = { data: t("h"), deviceName: "phone", deviceKind: "human" };
    const agent = { data: t("a"), deviceName: "server", deviceKind: "agent" };
    expect(resolve("n.md", human, agent, null, when).outcome).toBe("local_wins");
    expect(resolve("n.md", agent, human, null, when).outcome).toBe("remote_wins");
    expect(resolve("n.md", { ...human, data: t("h2") }, human, null, when).outcome).toBe("remote_wins");
    expect(resolve("n.md", { ...human, data: null }, agent, t("x"), when).outcome).toBe("keep_edit");
  });
});

describe("merge", () => {
  it("merges separate edits, keeps CRLF, refuses overlapping ones", () => {
    expect(mergeText("a\nb\nc\n", "A\nb\nc\n", "a\nb\nC\n")).toEqual({ clean: true, text: "A\nb\nC\n", conflicts: 0 });
    expect(mergeText("a\r\nb\r\nc\r\n", "A\r\nb\r\nc\r\n", "a\nb\nC\n").text).toBe("A\r\nb\r\nC\r\n");
    expect(mergeText("a\r\nb\r\n", "A\r\nb\r\n", "a\nB\n").clean).toBe(false); // adjacent: as merge3
    expect(mergeText("a\nb", "a\nb\nc", "x\nb").text).toBe("x\nb\nc");
    expect(mergeText("a\n", "b\n", "c\n").clean).toBe(false);
  });
});

describe("record JSON", () => {
  it("keeps nanosecond integers exact and writes like Python", () => {
    const v = parseJson('{"b":1736930000123456789,"a":"caf\\u00e9\\n","c":[1,2.5]}') as Record<string, unknown>;
    expect(v.b).toBe(1736930000123456789n);
    expect(pyDumps({ b: 1736930000123456789n, a: "café\n\u0001\u2028", z: null, y: true })).toBe(
      '{"a":"café\\n\\u0001\u2028","b":1736930000123456789,"y":true,"z":null}',
    );
    expect(() => parseJson('{"a":1} x')).toThrow();
  });

  it("refuses a record whose strings hold a lone surrogate, as Python does", () => {
    const sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    const record = (path: string, extra = "") => utf8(`{"chunks":[],"path":"${path}","sha256":"${sha}","size":0${extra}}`);
    expect(metaFromJson(record("ok.md")).path).toBe("ok.md");
    expect(() => metaFromJson(record("bad\\udcff.md"))).toThrow(/path is not valid Unicode/);
    expect(() => metaFromJson(record("ok.md", ',"device_name":"srv\\ud800"'))).toThrow(/device_name is not valid Unicode/);
    expect(() => metaFromJson(record("ok.md", ',"rename_from":"\\udc80old.md"'))).toThrow(/rename_from/);
    expect(metaFromJson(record("emoji-\\ud83d\\ude00.md")).path).toBe("emoji-\u{1F600}.md"); // a pair
  });
});

describe("trust rules", () => {
  it("holds an agent's change to any config folder, its own included", () => {
    for (const p of [".obsidian/plugins/x/main.js", ".Obsidian/snippets/a.css", ".obsidian/appearance.json", ".obsidian/bookmarks.json"]) {
      expect(pathReason(p)).toBe(CONFIG);
    }
    for (const p of ["notes/plugins/x.md", ".config/bookmarks.json"]) expect(pathReason(p)).toBeNull();
    expect(pathReason(".config/bookmarks.json", new Set([".config"]))).toBe(CONFIG);
  });

  it("holds only agent changes on a human device", () => {
    const base = { path: ".obsidian/app.json", deleted: false, executable: false };
    expect(holdReason({ ...base, localKind: "human", remoteKind: "agent" })).toBe(CONFIG);
    expect(holdReason({ ...base, localKind: "human", remoteKind: "human" })).toBeNull();
    expect(holdReason({ ...base, localKind: "agent", remoteKind: "agent" })).toBeNull();
    expect(holdReason({ path: "run.sh", deleted: false, executable: true, localKind: "human", remoteKind: "agent" })).toMatch(/executable/);
    expect(holdReason({ path: "n.png", renameFrom: ".obsidian/plugins/x/a.js", deleted: false, executable: false, localKind: "human", remoteKind: "agent" })).not.toBeNull();
  });

  it("uses the relay's kind, falls back to the sealed one, and spots a mismatch", () => {
    expect(effectiveKind("agent", "human")).toBe("agent");
    expect(effectiveKind(null, "human")).toBe("human");
    expect(effectiveKind(undefined, "robot")).toBe("agent");
    expect(kindMismatch("agent", "human")).toBe(true);
    expect(kindMismatch(null, "human")).toBe(false);
    expect(isMassDelete(9, 10, 0.5)).toBe(false);
    expect(isMassDelete(11, 20, 0.5)).toBe(true);
    // every synced file at once (an emptied or unmounted folder) asks at any size
    expect(isMassDelete(2, 3, 0.5)).toBe(false);
    expect(isMassDelete(3, 3, 0.5)).toBe(true);
    expect(isMassDelete(1, 1, 0.5)).toBe(true);
    expect(isMassDelete(4, 3, 0.5)).toBe(true);
    expect(isMassDelete(3, 3, 1)).toBe(false);
    expect(isMassDelete(0, 0, 0.5)).toBe(false);
  });

  it("parses Retry-After in seconds and as a date", () => {
    expect(parseRetryAfter("12")).toBe(12);
    expect(parseRetryAfter(new Date(Date.now() + 30_000).toUTCString())).toBeGreaterThan(25);
    expect(parseRetryAfter(undefined)).toBeNull();
  });
});

describe("paths and ignore rules", () => {
  it("normalises like pathsafe and ignores like the defaults", () => {
    expect(normalize("notas\\cafe\u0301.md")).toBe("notas/caf\u00e9.md");
    for (const bad of ["/etc/passwd", "a/../b", "a//b", "a/.companion-tmp-1", "a\u0007"]) expect(() => normalize(bad)).toThrow(UnsafePath);
    // a ':' is a name character, also after a first letter (issue 42.2): not a drive here
    for (const ok of ["Q: open questions.md", "C:x", "C:/Windows/x"]) expect(normalize(ok)).toBe(ok);
    // a lone surrogate (JSON can spell one) is no name any disk or device can hold
    for (const bad of ["caf\udce9.md", "lone-\ud800-high.md"]) expect(() => normalize(bad)).toThrow(/not valid UTF-8/);
    expect(normalize("emoji-\u{1F600}.md")).toBe("emoji-\u{1F600}.md"); // a pair is fine
    // a name over 255 bytes is a vault path, as in Python (R12): where a disk cannot hold it,
    // the write's refusal makes it a problem of that file (UnusableName), written elsewhere
    expect(normalize("d/" + "n".repeat(253) + ".md")).toBe("d/" + "n".repeat(253) + ".md");
    expect(normalize("é".repeat(128))).toBe("é".repeat(128)); // 256 bytes of UTF-8
    const r = new IgnoreRules(["secret/"], [".obsidian/plugins/vault-companion/data.json"]);
    for (const p of [".obsidian/workspace.json", ".trash/x.md", ".git/HEAD", "a.swp", "secret/x.md", ".obsidian/plugins/vault-companion/data.json"]) expect(r.isIgnored(p)).toBe(true);
    for (const p of ["Home.md", ".obsidian/app.json", ".companionignore", ".companion/report.json"]) expect(r.isIgnored(p)).toBe(false);
    r.load("drafts/\n!keep.md\n");
    expect(r.isIgnored("drafts/x.md")).toBe(true);
  });
});

describe("names Windows and Android refuse", () => {
  it("names the character, the trailing dot or space, or the device name; nothing else", () => {
    const cases: [string, RegExp | null][] = [
      ["notes/What is X?.md", /contains '\?'/],
      ["Meeting 10:30.md", /contains ':'/],
      ['a "quote".md', /contains '"'/],
      ["a<b>.md", /contains '<'/],
      ["pipe|d.md", /contains '\|'/],
      ["star*.md", /contains '\*'/],
      ["trailing./x.md", /ends with a dot or a space/],
      ["x/trailing .md ", /ends with a dot or a space/],
      ["CON.md", /device name/],
      ["sub/lpt1", /device name/],
      ["nul.tar.gz", /device name/],
      ["CONSOLE.md", null],
      ["COM10.md", null],
      ["notes/café 10h30.md", null],
      [".obsidian/app.json", null],
    ];
    for (const [path, want] of cases) {
      const got = windowsNameProblem(path);
      if (want) expect(got, path).toMatch(want);
      else expect(got, path).toBeNull();
    }
  });

  it("turns a file system's refusal of a name into UnusableName, and nothing else", () => {
    const named = (code: string) => Object.assign(new Error(code), { code });
    for (const code of ["EINVAL", "ENAMETOOLONG", "EILSEQ"]) expect(nameError(named(code), "a.md")).toBeInstanceOf(UnusableName);
    for (const code of ["ENOSPC", "EACCES", "EIO"]) expect(nameError(named(code), "a.md")).not.toBeInstanceOf(UnusableName);
    expect(nameError("not an error", "a.md")).toBe("not an error");
  });
});

describe("record times", () => {
  it("gives a file its record's time, or the time of writing when no date holds it", () => {
    const meta = (mtimeNs: bigint | null) => metaFromJson(utf8(`{"chunks":[],"path":"a.md","sha256":"${"0".repeat(64)}","size":0,"mtime_ns":${mtimeNs === null ? "null" : mtimeNs}}`));
    expect(recordMtimeMs(meta(1_736_930_000_123_456_789n))).toBe(1_736_930_000_123);
    expect(recordMtimeMs(meta(-86_400_000_000_000n))).toBe(-86_400_000); // 1969 is a date
    expect(recordMtimeMs(meta(null))).toBeUndefined();
    expect(recordMtimeMs(meta(10n ** 30n))).toBeUndefined();
    expect(recordMtimeMs(meta(-(10n ** 30n)))).toBeUndefined();
  });
});

describe("Obsidian transport", () => {
  it("sends bounded requests through requestUrl and falls back from a failing native fetch", async () => {
    const calls: string[] = [];
    const requestUrl = async (r: { url: string; method?: string; contentType?: string }) => {
      calls.push(`${r.method} ${r.url} ${r.contentType ?? ""}`);
      return { status: 200, headers: { "X-A": "1" }, arrayBuffer: new TextEncoder().encode("{}").buffer, json: {}, text: "{}" } as never;
    };
    const badFetch = (async () => {
      throw new TypeError("Failed to fetch (CORS)");
    }) as unknown as typeof fetch;
    const tr = obsidianTransport(requestUrl as never, badFetch);
    const r1 = await tr({ method: "POST", url: "https://r/v1/x", headers: { "Content-Type": "application/json" }, body: t("{}"), timeoutMs: 1000 });
    expect(r1.headers["x-a"]).toBe("1");
    await tr({ method: "GET", url: "https://r/v1/changes?wait=25", headers: {}, longPoll: true, timeoutMs: 1000 });
    expect(calls).toEqual(["POST https://r/v1/x application/json", "GET https://r/v1/changes?wait=25 "]);
  });
});

describe("join against a relay that fixed the device kind (issue #12)", () => {
  it("explains a 409 kind_mismatch", async () => {
    const { RelayClient } = await import("../src/relay/client");
    const { joinVault } = await import("../src/sync/join");
    const client = new RelayClient("http://relay", async () => ({
      status: 409,
      headers: {},
      body: t(JSON.stringify({ error: "kind_mismatch", message: "this invite admits an agent device" })),
    }));
    const err = await joinVault({ client, invite: "v-s", deviceName: "phone", passphrase: "p", persist: async () => {} }).catch((e) => e);
    expect(err.message).toMatch(/--kind human/);
    expect(err.exitCode).toBe(2);
  });
});
