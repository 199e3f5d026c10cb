/**
 * tests/vectors/review_v1.json (written by tests/test_review.py) replayed by the plugin's port
 * of the review's pure rules (src/review/): ids, the note's bytes, its lines, who ticked them,
 * what a decision does, the diff; and the labels table is the Python package's own file.
 */
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ticks, type Revision } from "../src/review/blame";
import { keepMine, revert, takeNew } from "../src/review/decide";
import { diffLines, hunk, MAX_LINES } from "../src/review/diff";
import * as labels from "../src/review/labels";
import { changeId, disagreementId, keyOf, nightId, proposalItemId, type Review } from "../src/review/model";
import { changeBlocks, context, frontMatter, parseLines, recount, render, setOutcome, setTicked, statesOf } from "../src/review/note";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..");
const V = JSON.parse(readFileSync(join(ROOT, "tests", "vectors", "review_v1.json"), "utf-8"));

const FLAG = "- ⚠ Disagrees with your line (2026-11-28): The prune runs on Sundays at 02:00.";

/** tests/test_review.py `_review()`, the input the vector's note was rendered from. */
async function review(lang = "en"): Promise<Review> {
  const before = "# Backups\n\n<!-- dream:begin -->\n- Restic runs nightly.\n<!-- dream:end -->\n";
  const after = before.replace("- Restic runs nightly.\n", "- Restic runs nightly.\n- The prune runs on Saturdays.\n" + FLAG + "\n");
  return {
    night: "2026-11-29",
    fromSeq: 12,
    toSeq: 40,
    lang,
    tz: "Europe/Madrid",
    changes: [
      {
        id: await changeId("f1", 3, 4),
        path: "knowledge/Backups.md",
        fileId: "f1",
        fromRev: 3,
        toRev: 4,
        before,
        after,
        device: "server",
        kind: "agent",
        at: "03:12",
        beforeKnown: true,
        notes: [labels.say(lang, "source") + ": “I moved the prune to Sundays” — [[journal/2026-11-28]]"],
      },
      {
        id: await changeId("f2", 0, 1),
        path: "knowledge/New ```fenced``` idea.md",
        fileId: "f2",
        fromRev: 0,
        toRev: 1,
        before: null,
        after: "# Idea\n\n```sh\nrm -rf /tmp/x\n```\n",
        device: "server",
        kind: "agent",
        at: "03:13",
        beforeKnown: true,
        notes: [],
      },
    ],
    disagreements: [
      {
        id: await disagreementId("knowledge/Backups.md", FLAG),
        path: "knowledge/Backups.md",
        flag: FLAG,
        new: "The prune runs on Sundays at 02:00.",
        mine: "The prune runs on Saturdays.",
      },
    ],
    proposals: [
      {
        id: await proposalItemId("abc123"),
        pid: "abc123",
        file: "MEMORY.md",
        op: "replace",
        old: "Backups prune on Saturdays.",
        new: "Backups prune on Sundays at 02:00.",
        reason: "replaces",
        quote: "I moved the prune to Sundays",
      },
    ],
    carried: [{ id: "c-1111111111", code: "r", label: "Revert this change: [[knowledge/Old]]", night: "2026-11-28" }],
  };
}

const snake = (ln: ReturnType<typeof parseLines>[number]) => ({ ...ln });

describe("review_v1.json", () => {
  it("the labels are companion/review/labels.json itself (its sha256 is the vector's)", () => {
    const bytes = readFileSync(join(ROOT, "companion", "review", "labels.json"));
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(V.labels_sha256);
    expect(labels.table()).toEqual(JSON.parse(bytes.toString("utf-8")));
  });

  it("ids", async () => {
    const fns: Record<string, (...a: never[]) => Promise<string> | string> = {
      change: changeId as never,
      disagreement: disagreementId as never,
      proposal: proposalItemId as never,
      night: nightId as never,
    };
    expect(V.ids.length).toBe(4);
    for (const v of V.ids) expect(await fns[v.kind](...(v.args as never[]))).toBe(v.id);
  });

  it("render gives the same bytes as Python", async () => {
    expect(render(await review())).toBe(V.note);
  });

  it("parse, tick and decide lines", () => {
    expect(setTicked(V.note, keyOf(V.ticked.key[0], V.ticked.key[1]))).toBe(V.ticked.text);
    const decided = setOutcome(V.ticked.text, keyOf(V.decided.key[0], V.decided.key[1]), V.decided.outcome, true);
    expect(decided).toBe(V.decided.text);
    expect(parseLines(decided).map(snake)).toEqual(V.parsed);
    expect(frontMatter(V.note)).toEqual(V.front_matter);
    expect(recount(decided)).toBe(V.recounted);
    expect(Object.fromEntries(changeBlocks(V.note))).toEqual(V.blocks);
  });

  it("contexts", () => {
    const lines = parseLines(V.note);
    expect(lines.length).toBe(V.contexts.length);
    for (const [i, c] of V.contexts.entries()) {
      const ln = lines[i];
      expect([ln.id, ln.code]).toEqual(c.key);
      expect(context(V.note, ln, "en")).toEqual({ target: c.target, mine: c.mine, new: c.new, night: c.night });
    }
  });

  it("blame", () => {
    const revs: Revision[] = V.blame.revisions.map((r: Record<string, unknown>) => ({
      rev: r.rev,
      deviceId: r.device_id,
      device: r.device,
      kind: r.kind,
      text: r.text,
    }));
    const got = Object.fromEntries(
      [...ticks(revs)].map(([k, t]) => [k, { rev: t.rev, device_id: t.deviceId, device: t.device, kind: t.kind }]),
    );
    expect(got).toEqual(V.blame.ticks);
  });

  it("decide", () => {
    expect(V.decide.length).toBe(6);
    for (const v of V.decide) {
      let got;
      if (v.op === "revert") got = revert(v.current, { before: v.change.before, after: v.change.after, beforeKnown: v.change.before_known });
      else got = (v.op === "keep" ? keepMine : takeNew)(v.current, { mine: v.mine, new: v.new });
      expect(got).toEqual(v.result);
    }
  });

  it("diffs", () => {
    for (const v of V.diffs) expect(diffLines(v.before, v.after)).toEqual([v.lines, v.more]);
    expect(hunk("a\nb\nc\n", "a\nx\nc\n")).toEqual([["b"], ["x"]]);
    const [lines, more] = diffLines(null, Array.from({ length: 50 }, (_, i) => `${i}\n`).join(""));
    expect([lines.length, more]).toEqual([MAX_LINES, 10]);
  });
});

describe("the note's rules beyond the vector", () => {
  it.each(["es", "fr", "de", "pt", "it"])("a note in %s has that language's words", async (lang) => {
    const text = render({ ...(await review(lang)), carried: [] });
    for (const key of ["changes", "disagreements", "proposals", "revert", "keep", "take", "apply", "drop"]) {
      expect(text).toContain(labels.table()[lang][key] as string);
    }
  });

  it("states survive a new rendering, and a notice is not a decision", async () => {
    const r = await review();
    const key = keyOf(r.changes![0].id, "r");
    const text = setOutcome(render(r), key, "reverted 08:14 from phone", true);
    const again = render(r, statesOf(text));
    const ln = parseLines(again).find((x) => keyOf(x.id, x.code) === key)!;
    expect([ln.ticked, ln.final, ln.outcome]).toEqual([true, true, "reverted 08:14 from phone"]);
    expect(again).toContain("Waiting for you: 1 change,");
    const [notice] = parseLines("- [ ] Revert this change `c-0123456789/r` — ⚠ a tick written by server, an agent device, was ignored\n");
    expect(notice.final).toBe(false);
    expect(notice.outcome!.startsWith("⚠")).toBe(true);
  });

  it("nothing to review; a line inside a fence is text", () => {
    const text = render({ night: "2026-11-29", fromSeq: 1, toSeq: 2 });
    expect(text).toContain("Nothing to review.");
    expect(parseLines(text)).toEqual([]);
    expect(parseLines("```\n- [ ] x `c-9999999999/r`\n```\n")).toEqual([]);
  });
});
