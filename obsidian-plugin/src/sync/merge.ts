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
