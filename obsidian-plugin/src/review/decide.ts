/**
 * What a decision does to a note's text (companion/review/decide.py): revert a change, keep
 * the person's line, take the new value. Each returns the new text (null: delete the file) or
 * a refusal: `edited` (the file is no longer what the change left), `gone` (the line is gone).
 */
import type { Disagreement } from "./model";

export const FLAG = "⚠";

export interface Result {
  ok: boolean;
  text: string | null;
  refusal: string;
}

const ok = (text: string | null): Result => ({ ok: true, text, refusal: "" });
const refuse = (refusal: string): Result => ({ ok: false, text: null, refusal });

export interface Revertible {
  before: string | null;
  after: string | null;
  beforeKnown: boolean;
}

/** Back to what the file was before the change, if it is still what the change left. */
export function revert(current: string | null, change: Revertible): Result {
  if (!change.beforeKnown) return refuse("gone");
  if (current !== change.after) return refuse("edited");
  return ok(change.before);
}

const SRC_RE = /[ \t]*<!-- src: [^\n]*? -->[ \t]*$/;
const BULLET_RE = /^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?/;
const FLAG_RE = /^⚠\ufe0f? [^\n]*?\(\d{4}-\d{2}-\d{2}\): /;

const squash = (s: string) => s.split(/\s+/).filter(Boolean).join(" ");

/** A note line as a statement: no bullet, no provenance comment, no flag label. */
export function statement(row: string): string {
  const text = row.replace(BULLET_RE, "").replace(SRC_RE, "").trim();
  return text.replace(FLAG_RE, "").trim();
}

export function isFlag(row: string): boolean {
  return FLAG_RE.test(row.replace(BULLET_RE, "").replace(SRC_RE, "").trim());
}

type Wanted = Pick<Disagreement, "new" | "mine">;

function findFlag(rows: string[], d: Wanted): number | null {
  for (let i = 0; i < rows.length; i++) {
    if (isFlag(rows[i]) && squash(statement(rows[i])) === squash(d.new)) return i;
  }
  return null;
}

/** The flagged line goes; the person's line stays as it is. */
export function keepMine(current: string | null, d: Wanted): Result {
  if (current === null) return refuse("gone");
  const rows = current.split("\n");
  const i = findFlag(rows, d);
  if (i === null) return refuse("gone");
  return ok([...rows.slice(0, i), ...rows.slice(i + 1)].join("\n"));
}

/** The person's line right above the flag takes the new value (her bullet kept), and the
 * flag line goes; with no line of hers next to it, the flag line becomes a plain line. */
export function takeNew(current: string | null, d: Wanted): Result {
  if (current === null) return refuse("gone");
  const rows = current.split("\n");
  const i = findFlag(rows, d);
  if (i === null) return refuse("gone");
  if (d.mine !== null && i > 0 && !isFlag(rows[i - 1])) {
    const prev = rows[i - 1];
    if (squash(statement(prev)) === squash(d.mine)) {
      const lead = BULLET_RE.exec(prev)?.[0] ?? "";
      return ok([...rows.slice(0, i - 1), `${lead}${d.new}`, ...rows.slice(i + 1)].join("\n"));
    }
  }
  const lead = BULLET_RE.exec(rows[i])?.[0] ?? "";
  return ok([...rows.slice(0, i), `${lead}${d.new}`, ...rows.slice(i + 1)].join("\n"));
}
