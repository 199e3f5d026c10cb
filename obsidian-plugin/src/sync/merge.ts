/**
 * Three-way merge of text against the last common version (companion/sync/round/merge.py), with
 * node-diff3. Clean only when no region changed differently on both sides; never writes
 * conflict markers. Line endings: one style per input is merged on "\n" and written in the
 * local style; the final newline is its own tiny three-way choice.
 */

import { diff3Merge } from "node-diff3";
import { isUtf8 } from "../crypto/bytes";

/** Strict, and keeping a byte-order mark as U+FEFF: the person's exact bytes come back out of a
 * merge (TextDecoder drops a leading BOM by default; Python's `bytes.decode` keeps it). */
const exact = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export interface MergeResult {
  clean: boolean;
  text: string | null;
  conflicts: number;
}

/** Valid UTF-8 without NUL bytes (mergeable as text), as filestate.is_text. */
export function isText(data: Uint8Array): boolean {
  if (data.includes(0)) return false;
  return isUtf8(data);
}

function eolStyle(text: string): string | null {
  const crlf = (text.match(/\r\n/g) ?? []).length;
  const lf = (text.match(/\n/g) ?? []).length - crlf;
  const cr = (text.match(/\r/g) ?? []).length - crlf;
  if (cr) return null;
  if (crlf && lf) return null;
  return crlf ? "\r\n" : "\n";
}

function split(text: string): string[] {
  const parts = text.split("\n");
  const out = parts.slice(0, -1).map((p) => p + "\n");
  if (parts[parts.length - 1]) out.push(parts[parts.length - 1]);
  return out;
}

const pick = (base: boolean, ours: boolean, theirs: boolean) => (ours === base ? theirs : ours);

export function mergeText(base: string, ours: string, theirs: string): MergeResult {
  if (ours === theirs) return { clean: true, text: ours, conflicts: 0 };
  if (ours === base) return { clean: true, text: theirs, conflicts: 0 };
  if (theirs === base) return { clean: true, text: ours, conflicts: 0 };
  const styles = [base, ours, theirs].map(eolStyle);
  let outEol: string | null = null;
  if (!styles.includes(null)) {
    const has = [base, ours, theirs].map((t) => t.includes("\n"));
    outEol = has[1] ? styles[1] : has[2] ? styles[2] : styles[0];
    [base, ours, theirs] = [base, ours, theirs].map((t) => t.replace(/\r\n/g, "\n"));
  }
  const finals = [base, ours, theirs].map((t) => t.endsWith("\n") || t === "");
  const wantFinal = pick(finals[0], finals[1], finals[2]);
  const [b, o, t] = [base, ours, theirs].map((x, i) => split(finals[i] ? x : x + "\n"));
  const regions = diff3Merge(o, b, t, { excludeFalseConflicts: true });
  const out: string[] = [];
  let conflicts = 0;
  for (const r of regions) {
    if (r.ok) out.push(...r.ok);
    else conflicts++;
  }
  if (conflicts) return { clean: false, text: null, conflicts };
  let text = out.join("");
  if (!wantFinal && text.endsWith("\n")) text = text.slice(0, -1);
  if (outEol === "\r\n") text = text.replace(/\n/g, "\r\n");
  return { clean: true, text, conflicts: 0 };
}

export function mergeBytes(base: Uint8Array, ours: Uint8Array, theirs: Uint8Array): MergeResult {
  if (!(isText(base) && isText(ours) && isText(theirs))) return { clean: false, text: null, conflicts: 1 };
  return mergeText(exact.decode(base), exact.decode(ours), exact.decode(theirs));
}

// ------------------------------------------------------------------ the stale-save test

/** One matching block (Python's difflib `Match`): a[i:i+size] == b[j:j+size]. */
type Block = [number, number, number];

/** Python's `difflib.SequenceMatcher(None, a, b, autojunk)` matching blocks, step for step
 * (the same longest match, the same tie-breaks, the same popular-line rule), so the stale-save
 * test reads the same changes as Python's `merge.derives_from`. */
export function matchingBlocks(a: string[], b: string[], autojunk = true): Block[] {
  const b2j = new Map<string, number[]>();
  b.forEach((line, j) => {
    const at = b2j.get(line);
    if (at) at.push(j);
    else b2j.set(line, [j]);
  });
  if (autojunk && b.length >= 200) {
    const ntest = Math.floor(b.length / 100) + 1;
    for (const [line, at] of [...b2j]) if (at.length > ntest) b2j.delete(line);
  }
  const longest = (alo: number, ahi: number, blo: number, bhi: number): Block => {
    let [besti, bestj, bestsize] = [alo, blo, 0];
    let j2len = new Map<number, number>();
    for (let i = alo; i < ahi; i++) {
      const next = new Map<number, number>();
      for (const j of b2j.get(a[i]) ?? []) {
        if (j < blo) continue;
        if (j >= bhi) break;
        const k = (j2len.get(j - 1) ?? 0) + 1;
        next.set(j, k);
        if (k > bestsize) [besti, bestj, bestsize] = [i - k + 1, j - k + 1, k];
      }
      j2len = next;
    }
    while (besti > alo && bestj > blo && a[besti - 1] === b[bestj - 1]) [besti, bestj, bestsize] = [besti - 1, bestj - 1, bestsize + 1];
    while (besti + bestsize < ahi && bestj + bestsize < bhi && a[besti + bestsize] === b[bestj + bestsize]) bestsize++;
    return [besti, bestj, bestsize];
  };
  const queue: [number, number, number, number][] = [[0, a.length, 0, b.length]];
  const blocks: Block[] = [];
  while (queue.length) {
    const [alo, ahi, blo, bhi] = queue.pop()!;
    const [i, j, k] = longest(alo, ahi, blo, bhi);
    if (!k) continue;
    blocks.push([i, j, k]);
    if (alo < i && blo < j) queue.push([alo, i, blo, j]);
    if (i + k < ahi && j + k < bhi) queue.push([i + k, ahi, j + k, bhi]);
  }
  blocks.sort((x, y) => x[0] - y[0] || x[1] - y[1] || x[2] - y[2]);
  const out: Block[] = [];
  let [i1, j1, k1] = [0, 0, 0];
  for (const [i2, j2, k2] of blocks) {
    if (i1 + k1 === i2 && j1 + k1 === j2) k1 += k2;
    else {
      if (k1) out.push([i1, j1, k1]);
      [i1, j1, k1] = [i2, j2, k2];
    }
  }
  if (k1) out.push([i1, j1, k1]);
  out.push([a.length, b.length, 0]);
  return out;
}

type Opcode = ["replace" | "delete" | "insert" | "equal", number, number, number, number];

/** Python's `SequenceMatcher.get_opcodes`. */
function opcodes(a: string[], b: string[], autojunk: boolean): Opcode[] {
  let i = 0;
  let j = 0;
  const out: Opcode[] = [];
  for (const [ai, bj, size] of matchingBlocks(a, b, autojunk)) {
    const tag = i < ai && j < bj ? "replace" : i < ai ? "delete" : j < bj ? "insert" : "";
    if (tag) out.push([tag, i, ai, j, bj]);
    [i, j] = [ai + size, bj + size];
    if (size) out.push(["equal", ai, i, bj, j]);
  }
  return out;
}

/** The stretches between the lines all three share (merge3's `find_sync_regions`), as
 * (base, ours, theirs) line lists; a stretch both sides deleted alike is listed too. */
function changedRuns(base: string[], ours: string[], theirs: string[]): [string[], string[], string[]][] {
  const am = matchingBlocks(base, ours);
  const bm = matchingBlocks(base, theirs);
  const sync: [number, number, number, number, number, number][] = [];
  let ia = 0;
  let ib = 0;
  while (ia < am.length && ib < bm.length) {
    const [abase, amatch, alen] = am[ia];
    const [bbase, bmatch, blen] = bm[ib];
    const lo = Math.max(abase, bbase);
    const hi = Math.min(abase + alen, bbase + blen);
    if (lo < hi) {
      const asub = amatch + (lo - abase);
      const bsub = bmatch + (lo - bbase);
      sync.push([lo, hi, asub, asub + hi - lo, bsub, bsub + hi - lo]);
    }
    if (abase + alen < bbase + blen) ia++;
    else ib++;
  }
  sync.push([base.length, base.length, ours.length, ours.length, theirs.length, theirs.length]);
  const out: [string[], string[], string[]][] = [];
  let [iz, ja, jb] = [0, 0, 0];
  for (const [zmatch, zend, amatch, aend, bmatch, bend] of sync) {
    if (zmatch > iz || amatch > ja || bmatch > jb) out.push([base.slice(iz, zmatch), ours.slice(ja, amatch), theirs.slice(jb, bmatch)]);
    [iz, ja, jb] = [zend, aend, bend];
  }
  return out;
}

const sameLines = (x: string[], y: string[]) => x.length === y.length && x.every((l, i) => l === y[i]);

/** Whether `ours` carries one of the changes `theirs` made to `base` in one stretch (Python's
 * `merge._carries`). */
function carries(base: string[], ours: string[], theirs: string[]): boolean {
  if (sameLines(theirs, base)) return false;
  if (sameLines(ours, theirs)) return true;
  const inBase = new Set(base);
  for (const [tag, i1, i2, j1, j2] of opcodes(base, theirs, false)) {
    if (tag === "equal") continue;
    const added = theirs.slice(j1, j2);
    if (added.length) {
      if (added.every((l) => inBase.has(l))) continue; // moved or repeated lines
      const n = added.length;
      for (let i = 0; i < ours.length - n + 1; i++) if (sameLines(ours.slice(i, i + n), added)) return true;
    } else {
      const gone = base.slice(i1, i2);
      if (!gone.some((l) => ours.includes(l)) && ours.length <= base.length - gone.length) return true;
    }
  }
  return false;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Whether `local` may have been written from `prev` without having seen `head` (Python's
 * `merge.derives_from`, the stale-save test, R15): false only when `local` visibly holds
 * `head`'s version (equals it, or carries one of the changes `head` made to `prev`). Binary
 * contents: equality only. */
export function derivesFrom(prev: Uint8Array, head: Uint8Array, local: Uint8Array): boolean {
  if (equalBytes(local, prev)) return true;
  if (equalBytes(local, head) || !(isText(prev) && isText(head) && isText(local))) return false;
  const [base, ours, theirs] = [prev, local, head].map((t) => split(exact.decode(t).replace(/\r\n/g, "\n")));
  return !changedRuns(base, ours, theirs).some(([z, o, t]) => carries(z, o, t));
}

// ------------------------------------------------------------------ a rename that also edited

/** Python's `str.splitlines()`: every line break Python knows, none kept, no empty last line. */
export function splitLines(text: string): string[] {
  const parts = text.split(/\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]/);
  if (parts[parts.length - 1] === "") parts.pop();
  return parts;
}

/** Python's `difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()`: how much two line
 * lists have in common, from 0 to 1 (a renamed note that keeps at least half its lines is a
 * rename, the scanner's `edited_source`). */
export function similarity(a: string[], b: string[]): number {
  if (!a.length && !b.length) return 1;
  const matched = matchingBlocks(a, b, false).reduce((n, [, , k]) => n + k, 0);
  return (2 * matched) / (a.length + b.length);
}
