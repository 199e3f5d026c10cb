/**
 * A review note as Markdown (companion/review/note.py): `render` writes it, `parseLines`
 * reads its decision lines back. Each decision is a task line ending in `` `ID/CODE` ``; a
 * recorded decision follows the id after ` — `; an outcome starting with `⚠` is a notice (an
 * ignored tick), not a decision. Pure: the same input gives the same bytes as Python.
 */
import * as labels from "./labels";
import { diffLines, fenceFor } from "./diff";
import { APPLY, type ChangeItem, DROP, FORMAT, KEEP, keyOf, type Line, lineKey, nightId, notePath, REVERT, type Review, TAKE } from "./model";

export const DASH = " — ";
export const NOTICE = "⚠";
// `[^\n]` where Python has `.`: JavaScript's dot also stops at \r, U+2028 and U+2029
const LINE_RE = /^(\s*[-*+] \[)([ xX])\] ([^\n]*?)`([cknp]-[0-9a-z]+)\/([rktad])`([^\n]*)$/;
const FRONT_RE = /^---\n([\s\S]*?)\n---\n/;
export const LINK_RE = /\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]/g;

/** A line's state carried into a new rendering: [ticked, outcome], by `ID/CODE`. */
export type State = [boolean, string | null];
export type States = Map<string, State>;

/** An Obsidian link to a vault file (Markdown notes without their extension). */
export function link(path: string): string {
  return `[[${path.endsWith(".md") ? path.slice(0, -3) : path}]]`;
}

export function decisionLine(label: string, itemId: string, code: string, state?: State | null): string {
  const [ticked, outcome] = state ?? [false, null];
  const line = `- [${ticked ? "x" : " "}] ${label} \`${itemId}/${code}\``;
  return line + (outcome ? DASH + outcome : "");
}

const isFinal = (state: State | undefined | null) => !!(state && state[1] && !state[1].startsWith(NOTICE));
const inline = (text: string) => text.split(/\s+/).filter(Boolean).join(" ");
const linesOf = (text: string | null | undefined) => (text === null || text === undefined ? [] : text.split("\n"));

function counts(review: Review, open: Set<string>): string {
  const lang = review.lang ?? "en";
  const changes = review.changes ?? [];
  const dis = review.disagreements ?? [];
  const props = review.proposals ?? [];
  const carried = review.carried ?? [];
  if (!(changes.length || props.length || dis.length || carried.length)) return labels.say(lang, "nothing");
  const n: [string, number][] = [
    ["n_changes", changes.filter((c) => open.has(keyOf(c.id, REVERT))).length],
    ["n_disagreements", dis.filter((d) => open.has(keyOf(d.id, KEEP))).length],
    ["n_proposals", props.filter((p) => open.has(keyOf(p.id, APPLY))).length],
    ["n_carried", new Set(carried.filter((c) => open.has(keyOf(c.id, c.code))).map((c) => c.id)).size],
  ];
  return countLine(lang, n);
}

function countLine(lang: string, n: [string, number][]): string {
  const parts = n.filter(([, k]) => k).map(([key, k]) => labels.count(lang, key, k));
  if (!parts.length) return labels.say(lang, "decided_all");
  return labels.say(lang, "waiting", { counts: labels.join(lang, parts) });
}

/** `text` with its line of counts saying what is still open (after decisions were written on
 * its lines): the first line after the title that is not a notice, and the same line again
 * at the end (note.py `recount`). */
export function recount(text: string): string {
  const lang = frontMatter(text).lang || "en";
  const lines = parseLines(text);
  if (!lines.length) return text;
  const open = lines.filter((ln) => !ln.final);
  const carried = new Set(open.filter((ln) => ln.label.includes("[[")).map((ln) => ln.id));
  const ids = (prefix: string) => new Set(open.filter((ln) => ln.id.startsWith(prefix) && !carried.has(ln.id)).map((ln) => ln.id)).size;
  const fresh = countLine(lang, [
    ["n_changes", ids("c-")],
    ["n_disagreements", ids("k-")],
    ["n_proposals", ids("p-")],
    ["n_carried", carried.size],
  ]);
  const rows = text.split("\n");
  const title = rows.findIndex((r) => r.startsWith("# "));
  if (title < 0) return text;
  for (let i = title + 1; i < rows.length; i++) {
    if (!rows[i].trim() || rows[i].startsWith(NOTICE)) continue;
    if (rows[i].startsWith("- [") || rows[i].startsWith("## ")) return text;
    const old = rows[i];
    return rows.map((r) => (r === old ? fresh : r)).join("\n");
  }
  return text;
}

/** Per change id: what the note shows of it that the relay's history decides (its heading,
 * when and by which device, its diff), to compare a note with the history (note.py
 * `change_blocks`). */
export function changeBlocks(text: string): Map<string, string[]> {
  const rows = text.replace(/\r\n/g, "\n").split("\n");
  const out = new Map<string, string[]>();
  let shown: string[] = [];
  let fence: string | null = null;
  for (const row of rows) {
    if (fence !== null) {
      shown.push(row);
      if (row.trim() === fence) fence = null;
      continue;
    }
    if (row.startsWith("#")) {
      shown = row.startsWith("### ") ? [row] : [];
      continue;
    }
    const stripped = row.trim();
    if (stripped.startsWith("```") && shown.length) {
      fence = stripped.slice(0, stripped.length - stripped.replace(/^`+/, "").length);
      shown.push(row);
      continue;
    }
    const m = LINE_RE.exec(row);
    if (m && m[4].startsWith("c-") && !m[3].includes("[[") && shown.length) {
      out.set(m[4], [...shown]);
      continue;
    }
    // the "when · by" line, without the time (the relay's clock, not the history's)
    if (shown.length && stripped && !stripped.startsWith("- ")) shown.push(row.includes(" · ") ? row.slice(row.indexOf(" · ") + 3) : row);
  }
  return out;
}

type LineFn = (labelKey: string, itemId: string, code: string) => string;

function changeBlock(c: ChangeItem, lang: string, line: LineFn): string[] {
  const say = labels.say;
  const kind = say(lang, c.kind === "agent" ? "kind_agent" : "kind_human");
  let what = "";
  if (c.before === null && c.beforeKnown) what = ` · ${say(lang, "created")}`;
  else if (c.after === null) what = ` · ${say(lang, "deleted")}`;
  const out = [`### ${link(c.path)}`, "", `${c.at} · ${say(lang, "by", { device: c.device, kind })}${what}`, ""];
  const [shown, more] = diffLines(c.beforeKnown ? c.before : null, c.after);
  if (shown.length) {
    const fence = fenceFor(shown);
    out.push(`${fence}diff`, ...shown);
    if (more) out.push(say(lang, "more_lines", { n: more }));
    out.push(fence, "");
  }
  if (c.notes.length) out.push(...c.notes.map((n) => `- ${n}`), "");
  if (c.beforeKnown) out.push(line("revert", c.id, REVERT), "");
  return out;
}

/** The note for `review`, with the decision lines in `states` as they were. */
export function render(review: Review, states: States = new Map()): string {
  const lang = review.lang ?? "en";
  const say = labels.say;
  const changes = review.changes ?? [];
  const dis = review.disagreements ?? [];
  const props = review.proposals ?? [];
  const carried = review.carried ?? [];
  const line: LineFn = (labelKey, itemId, code) => decisionLine(say(lang, labelKey), itemId, code, states.get(keyOf(itemId, code)));

  const keys: string[] = [
    ...changes.filter((c) => c.beforeKnown).map((c) => keyOf(c.id, REVERT)),
    ...dis.flatMap((d) => [keyOf(d.id, KEEP), keyOf(d.id, TAKE)]),
    ...props.flatMap((p) => [keyOf(p.id, APPLY), keyOf(p.id, DROP)]),
    ...carried.map((c) => keyOf(c.id, c.code)),
  ];
  const open = new Set(keys.filter((k) => !isFinal(states.get(k))));

  const out = [
    "---",
    `review: ${FORMAT}`,
    `night: ${review.night}`,
    `from: ${review.fromSeq}`,
    `to: ${review.toSeq}`,
    `lang: ${labels.language(lang)}`,
    `tz: ${review.tz ?? "UTC"}`,
    ...(review.since !== null && review.since !== undefined ? [`since: ${review.since}`] : []),
    "---",
    `# ${say(lang, "title", { night: review.night })}`,
    "",
  ];
  if (review.notice) out.push(review.notice, "");
  out.push(counts(review, open), "");
  const nid = nightId(review.night);
  const batch: string[] = [];
  if (changes.some((c) => c.beforeKnown)) batch.push(line("batch_revert", nid, REVERT));
  if (props.length) batch.push(line("batch_apply", nid, APPLY));
  if (batch.length) out.push(...batch, "", say(lang, "how"), "");

  if (changes.length) {
    out.push(`## ${say(lang, "changes")}`, "");
    for (const c of changes) out.push(...changeBlock(c, lang, line));
  }
  if (dis.length) {
    out.push(`## ${say(lang, "disagreements")}`, "");
    for (const d of dis) {
      out.push(`### ${link(d.path)}`, "");
      if (d.mine !== null) out.push(`- ${say(lang, "your_line")}: ${inline(d.mine)}`);
      out.push(`- ${say(lang, "new_value")}: ${inline(d.new)}`, "");
      out.push(line("keep", d.id, KEEP), line("take", d.id, TAKE), "");
    }
  }
  if (props.length) {
    out.push(`## ${say(lang, "proposals")}`, "");
    for (const p of props) {
      const op = ["add", "replace", "remove"].includes(p.op) ? say(lang, `op_${p.op}`) : p.op;
      out.push(`### ${p.file} · ${op}`, "");
      const body = [...linesOf(p.old).map((x) => `- ${x}`), ...linesOf(p.new).map((x) => `+ ${x}`)];
      const fence = fenceFor(body);
      out.push(`${fence}diff`, ...body, fence, "");
      const whyKey = `why_${p.reason}`;
      if (labels.has(lang, whyKey)) out.push(`- ${say(lang, "why")}: ${say(lang, whyKey, { file: p.file })}`);
      if (p.quote) out.push(`- ${say(lang, "source")}: “${inline(p.quote)}”`);
      out.push("", line("apply", p.id, APPLY), line("drop", p.id, DROP), "");
    }
  }
  if (carried.length) {
    out.push(`## ${say(lang, "carried")}`, "");
    for (const k of carried) {
      const label = `${k.label} (${say(lang, "from_note", { link: link(notePath(k.night)) })})`;
      out.push(decisionLine(label, k.id, k.code, states.get(keyOf(k.id, k.code))));
    }
    out.push("");
  }
  while (out.length && out[out.length - 1] === "") out.pop();
  if (changes.length || props.length || dis.length || carried.length) out.push("", "---", "", counts(review, open)); // and again at the end
  return out.join("\n") + "\n";
}

/** Python's `str.lstrip()` of whitespace. */
const lstrip = (s: string) => s.replace(/^\s+/, "");

/** Every decision line of a note, in order (lines inside fenced blocks are text). */
export function parseLines(text: string): Line[] {
  const out: Line[] = [];
  let fence: string | null = null;
  const rows = text.replace(/\r\n/g, "\n").split("\n");
  for (let i = 0; i < rows.length; i++) {
    const raw = rows[i];
    const stripped = lstrip(raw);
    if (stripped.startsWith("```") || stripped.startsWith("~~~")) {
      const ch = stripped[0];
      let n = 0;
      while (n < stripped.length && stripped[n] === ch) n++;
      const marker = stripped.slice(0, n);
      if (fence === null) fence = marker;
      else if (marker.startsWith(fence) && stripped.trim() === marker) fence = null;
      continue;
    }
    if (fence !== null) continue;
    const m = LINE_RE.exec(raw);
    if (!m) continue;
    const tail = m[6];
    const cut = tail.indexOf(DASH);
    const outcome = cut >= 0 ? tail.slice(cut + DASH.length).trim() : null;
    out.push({
      index: i,
      id: m[4],
      code: m[5],
      ticked: m[2] === "x" || m[2] === "X",
      label: m[3].trim(),
      outcome: outcome || null,
      final: !!outcome && !outcome.startsWith(NOTICE),
    });
  }
  return out;
}

export function frontMatter(text: string): Record<string, string> {
  const m = FRONT_RE.exec(text.replace(/\r\n/g, "\n"));
  if (!m) return {};
  const out: Record<string, string> = {};
  for (const row of m[1].split("\n")) {
    const at = row.indexOf(":");
    if (at >= 0) out[row.slice(0, at).trim()] = row.slice(at + 1).trim();
  }
  return out;
}

export function statesOf(text: string): States {
  return new Map(parseLines(text).map((ln) => [lineKey(ln), [ln.ticked, ln.outcome] as State]));
}

/** `text` with every decision line `key` (`ID/CODE`) marked `ticked` and ending in `outcome`. */
export function setOutcome(text: string, key: string, outcome: string, ticked: boolean): string {
  const rows = text.split("\n");
  for (const ln of parseLines(text)) {
    if (lineKey(ln) !== key) continue;
    const m = LINE_RE.exec(rows[ln.index])!;
    const tail = m[6];
    const cut = tail.indexOf(DASH);
    const keep = cut >= 0 ? tail.slice(0, cut) : tail;
    rows[ln.index] = `${m[1]}${ticked ? "x" : " "}] ${m[3]}\`${ln.id}/${ln.code}\`${keep}${DASH}${outcome}`;
  }
  return rows.join("\n");
}

/** `text` with decision line `key` ticked (what a person's tap does); unknown key: the same. */
export function setTicked(text: string, key: string, ticked = true): string {
  const rows = text.split("\n");
  for (const ln of parseLines(text)) {
    if (lineKey(ln) !== key) continue;
    const m = LINE_RE.exec(rows[ln.index])!;
    rows[ln.index] = `${m[1]}${ticked ? "x" : " "}] ${m[3]}\`${ln.id}/${ln.code}\`${m[6]}`;
  }
  return rows.join("\n");
}

export function openLines(lines: Line[]): Line[] {
  return lines.filter((ln) => !ln.final);
}

/** What a decision line refers to, read from the note around it. */
export interface Context {
  target: string | null;
  mine: string | null;
  new: string | null;
  night: string | null;
}

const links = (s: string) => [...s.matchAll(LINK_RE)].map((m) => m[1]);

export function context(text: string, line: Line, lang: string): Context {
  const rows = text.replace(/\r\n/g, "\n").split("\n");
  const labelLinks = links(line.label);
  if (labelLinks.length) {
    // a carried line: "<label>: [[note]] (from [[review/DAY]])"
    let night: string | null = null;
    for (const x of links(rows[line.index])) if (x.startsWith("review/")) night = x.split("/").slice(1).join("/");
    return { target: labelLinks[0], mine: null, new: null, night };
  }
  let target: string | null = null;
  let start = 0;
  for (let i = line.index; i >= 0; i--) {
    if (rows[i].startsWith("### ")) {
      target = links(rows[i])[0] ?? null;
      start = i;
      break;
    }
    if (rows[i].startsWith("## ")) break;
  }
  let mine: string | null = null;
  let neu: string | null = null;
  const mineP = `- ${labels.say(lang, "your_line")}: `;
  const newP = `- ${labels.say(lang, "new_value")}: `;
  for (const row of rows.slice(start + 1, line.index)) {
    if (row.startsWith(mineP)) mine = row.slice(mineP.length);
    else if (row.startsWith(newP)) neu = row.slice(newP.length);
  }
  return { target, mine, new: neu, night: null };
}
