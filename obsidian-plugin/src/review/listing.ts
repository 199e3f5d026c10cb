/**
 * The review's items as data (companion/review/listing.py), for `dist/cli.js review list`
 * and the "Review last night" view. Read from the review note (the decision lines and what they
 * refer to); a change's before and after come from the relay's history of the file (never from
 * the note's text), and who decided a line from the note's own verified history (`blame`).
 * `Item` has the field names of Python's `Item.to_dict()`.
 */
import type { SyncEngine } from "../sync/engine";
import { ticks, type Tick } from "./blame";
import { keyOf, lineKey, type Line, NAMES, proposalItemId, REVERT } from "./model";
import * as notes from "./note";
import { attestedChange, noteFiles, pathOf, readText, revisions } from "./rounds";

export const KINDS: Record<string, string> = { c: "change", k: "disagreement", p: "proposal", n: "night" };
export const BOOK = ".companion/dreams/proposals.json";

export interface Item {
  id: string;
  kind: string;
  note: string;
  file: string | null;
  decisions: string[];
  state: "open" | "ticked" | "decided" | "ignored";
  outcome: string | null;
  decided_by: string | null;
  decided_by_kind: string | null;
  label: string;
  before: string | null;
  after: string | null;
  explanation: string[];
}

/** What the items are read from besides the note: the file system and the relay (the view's
 * quick rendering passes none, and shows the note's own words). */
export interface Sources {
  engine?: SyncEngine;
  /** Who ticked each line (`ID/CODE`), from the note's verified revisions. */
  who?: Map<string, Tick>;
}

export async function newestNote(engine: SyncEngine, night?: string): Promise<[string, string] | null> {
  let files = await noteFiles(engine);
  if (night !== undefined) files = files.filter((f) => f[0] === night);
  return files.length ? files[files.length - 1] : null;
}

/** Every item of the review note `text` (at `rel`), in the note's order. */
export async function itemsOf(text: string, rel: string, src: Sources = {}): Promise<Item[]> {
  const lang = notes.frontMatter(text).lang || "en";
  const out = new Map<string, Item>();
  let book: Record<string, unknown>[] | null = null;
  for (const ln of notes.parseLines(text)) {
    let item = out.get(ln.id);
    if (!item) {
      const ctx = notes.context(text, ln, lang);
      const kind = KINDS[ln.id[0]] ?? "change";
      item = {
        id: ln.id,
        kind,
        note: rel,
        file: src.engine ? await pathOf(src.engine, ctx.target) : ctx.target ? (ctx.target.endsWith(".md") ? ctx.target : ctx.target + ".md") : null,
        decisions: [],
        state: "open",
        outcome: null,
        decided_by: null,
        decided_by_kind: null,
        label: ln.label,
        before: null,
        after: null,
        explanation: [],
      };
      if (kind === "disagreement") [item.before, item.after] = [ctx.mine, ctx.new];
      else if (kind === "change" && ln.code === REVERT && item.file && src.engine) {
        const change = await attestedChange(src.engine, item.file, ln.id);
        if (change) [item.before, item.after, item.explanation] = [change.before, change.after, change.notes];
      } else if (kind === "proposal" && src.engine) {
        book ??= await loadBook(src.engine);
        await proposal(book, item);
      }
      out.set(ln.id, item);
    }
    item.decisions.push(NAMES[ln.code]);
    setState(item, ln, src.who?.get(lineKey(ln)));
  }
  return [...out.values()];
}

/** The items of review note `rel` of this vault, with the relay's account of each change. */
export async function items(engine: SyncEngine, rel: string): Promise<Item[]> {
  const text = (await readText(engine, rel)) ?? "";
  return itemsOf(text, rel, { engine, who: ticks(await revisions(engine, rel)) });
}

async function loadBook(engine: SyncEngine): Promise<Record<string, unknown>[]> {
  try {
    const data = JSON.parse((await readText(engine, BOOK)) ?? "null");
    const list = data && typeof data === "object" ? (data as { proposals?: unknown }).proposals : null;
    return Array.isArray(list)
      ? list.filter((p) => p && typeof p === "object" && typeof p.id === "string" && ["memory", "user"].includes(p.target))
      : [];
  } catch {
    return [];
  }
}

async function proposal(book: Record<string, unknown>[], item: Item): Promise<void> {
  for (const p of book) {
    if ((await proposalItemId(String(p.id))) !== item.id) continue;
    item.file = String(p.file ?? p.target);
    item.before = typeof p.old === "string" ? p.old : null;
    item.after = typeof p.new === "string" ? p.new : null;
    if (typeof p.quote === "string") item.explanation = [p.quote];
  }
}

function setState(item: Item, ln: Line, tick: Tick | undefined): void {
  if (ln.final) [item.state, item.outcome] = ["decided", ln.outcome];
  else if (ln.outcome) {
    // a notice: an agent's tick was ignored
    if (item.state === "open") [item.state, item.outcome] = ["ignored", ln.outcome];
  } else if (ln.ticked && (item.state === "open" || item.state === "ignored")) item.state = "ticked";
  if (tick && (ln.final || ln.ticked)) [item.decided_by, item.decided_by_kind] = [tick.device, tick.kind];
}

export function findLine(text: string, itemId: string, code: string): Line | null {
  return notes.parseLines(text).find((ln) => lineKey(ln) === keyOf(itemId, code)) ?? null;
}

/** How many items wait for a decision, by kind (the night's batch lines not counted). */
export function counts(all: Item[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const it of all) if ((it.state === "open" || it.state === "ignored") && it.kind !== "night") out[it.kind] = (out[it.kind] ?? 0) + 1;
  return out;
}

/** The line deciding `itemId` ticked (what a tap does): the first line with that id and code
 * not yet decided (`text`: null when there is none; `known`: some line has the id). */
export function tickIn(text: string, itemId: string, code: string): { known: boolean; text: string | null } {
  let known = false;
  for (const ln of notes.parseLines(text)) {
    if (ln.id !== itemId) continue;
    known = true;
    if (ln.code !== code || ln.final) continue;
    return { known, text: ln.ticked ? text : notes.setTicked(text, lineKey(ln)) };
  }
  return { known, text: null };
}
