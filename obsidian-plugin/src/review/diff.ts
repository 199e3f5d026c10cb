/**
 * The diff a review shows (companion/review/diff.py): the lines between the common head and
 * tail, removed then added; no heuristics, so both engines draw the same lines.
 */
export const MAX_LINES = 40;

export function linesOf(text: string | null | undefined): string[] {
  if (!text) return [];
  const rows = text.replace(/\r\n/g, "\n").split("\n");
  return text.endsWith("\n") ? rows.slice(0, -1) : rows;
}

/** [removed, added]: the differing middle of the two texts' lines. */
export function hunk(before: string | null | undefined, after: string | null | undefined): [string[], string[]] {
  const a = linesOf(before);
  const b = linesOf(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  return [a.slice(head, a.length - tail), b.slice(head, b.length - tail)];
}

/** The `-`/`+` lines shown (at most MAX_LINES) and how many more there were. */
export function diffLines(before: string | null | undefined, after: string | null | undefined): [string[], number] {
  const [removed, added] = hunk(before, after);
  const out = [...removed.map((x) => (x ? `- ${x}` : "-")), ...added.map((x) => (x ? `+ ${x}` : "+"))];
  return [out.slice(0, MAX_LINES), Math.max(0, out.length - MAX_LINES)];
}

/** A code fence longer than any run of backticks in `lines`. */
export function fenceFor(lines: string[]): string {
  let longest = 0;
  for (const line of lines) {
    let run = 0;
    for (const ch of line) {
      run = ch === "`" ? run + 1 : 0;
      longest = Math.max(longest, run);
    }
  }
  return "`".repeat(Math.max(3, longest + 1));
}
