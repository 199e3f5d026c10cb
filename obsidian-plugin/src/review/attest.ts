/**
 * Which changes the relay's history vouches for (companion/review/attest.py): the review's
 * list, never the agent's word. Every record of the relay's feed names the device that
 * committed it; `RemoteVault` opens and verifies it, and its author counts as a person only
 * when the relay's record and the sealed one both say human. A span is one file's consecutive
 * agent revisions; its before is the file at the revision the span started from, its after the
 * file at its last revision, both fetched and verified. `.companion/` and `review/` are left out.
 * The dream's report and the agent's MCP log only add explanations to a change the history holds.
 */
import type { SyncEngine } from "../sync/engine";
import type { RemoteChange, RemoteVault } from "../sync/remote";
import * as decide from "./decide";
import * as labels from "./labels";
import { changeId, type ChangeItem, type Disagreement, disagreementId } from "./model";
import { link } from "./note";

const POINTER_RE = /<!-- review:begin -->\n[\s\S]*?<!-- review:end -->\n\n?/g;

/** `text` without Home.md's link to the newest review (rounds `pointHome`). */
const unpointed = (text: string | null): string | null => (text === null ? null : text.replace(POINTER_RE, ""));

export const EXCLUDED_PREFIXES = [".companion/", "review/"];
export const PAGE = 5000;
const AGENT = "agent";
const decoder = new TextDecoder();

export const excluded = (path: string) => EXCLUDED_PREFIXES.some((p) => path.startsWith(p));

export interface Span {
  path: string;
  fileId: string;
  first: RemoteChange;
  last: RemoteChange;
}

export interface Feed {
  spans: Span[];
  unverifiable: number;
  lastSeq: number;
}

/** The spans of revisions committed by agent devices with `fromSeq < seq <= toSeq` (and, when
 * given, committed at or after `notBefore`, relay time); `include` may admit a person's
 * device's revisions too (a dream run on a laptop). */
export async function agentSpans(
  remote: RemoteVault,
  fromSeq: number,
  toSeq: number,
  opts: { notBefore?: number | null; include?: ((ch: RemoteChange) => boolean) | null } = {},
): Promise<Feed> {
  const feed: Feed = { spans: [], unverifiable: 0, lastSeq: fromSeq };
  const open = new Map<string, Span>();
  let since = fromSeq;
  while (since < toSeq) {
    const page = await remote.client.changesPage(since, 0, PAGE);
    for (const rec of page.records) {
      if (rec.seq === null || rec.seq === undefined || rec.seq > toSeq) return feed;
      feed.lastSeq = rec.seq;
      const opened = await remote.tryOpen(rec);
      if ("reason" in opened) {
        feed.unverifiable++;
        continue;
      }
      if (excluded(opened.path)) continue;
      if (opts.notBefore !== null && opts.notBefore !== undefined && (opened.committedAt ?? 0) < opts.notBefore) continue;
      if (opened.kind === AGENT || (opts.include && opts.include(opened))) {
        const span = open.get(opened.fileId);
        if (span && span.path === opened.path) span.last = opened;
        else {
          const s = { path: opened.path, fileId: opened.fileId, first: opened, last: opened };
          open.set(opened.fileId, s);
          feed.spans.push(s);
        }
      } else open.delete(opened.fileId);
    }
    if (!page.more || page.seq <= since) break;
    since = page.seq;
  }
  return feed;
}

/** HH:MM of a relay time (unix seconds) in the time zone `tz` (UTC when unknown). */
export function clock(ts: number | null, tz: string): string {
  if (ts === null) return "--:--";
  const fmt = (zone: string) =>
    new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(new Date(ts * 1000));
  try {
    return fmt(tz || "UTC");
  } catch {
    return fmt("UTC");
  }
}

/** [before, beforeKnown, after] of each span, fetched and verified in one batch. */
export async function contents(remote: RemoteVault, spans: Span[]): Promise<[string | null, boolean, string | null][]> {
  const befores: (RemoteChange | null | false)[] = [];
  for (const s of spans) {
    if (s.first.parentRev <= 0) {
      befores.push(null);
      continue;
    }
    try {
      befores.push((await remote.record(s.path, s.first.parentRev)) ?? false);
    } catch {
      befores.push(false); // a pruned or unreadable revision: shown, never revertible
    }
  }
  const metas = [...spans.filter((s) => !s.last.meta.deleted).map((s) => s.last.meta)];
  for (const b of befores) if (b && !b.meta.deleted) metas.push(b.meta);
  const got = metas.length ? await remote.fetch(metas) : new Map<string, Uint8Array>();
  const text = (m: RemoteChange["meta"]) => (m.deleted ? null : decoder.decode(got.get(m.sha256)!));
  return spans.map((s, i) => {
    const after = text(s.last.meta);
    const b = befores[i];
    if (b === null) return [null, true, after];
    if (b === false) return [null, false, after];
    return [text(b.meta), true, after];
  });
}

export async function changes(
  remote: RemoteVault,
  feed: Feed,
  tz: string,
  explain: (span: Span, after: string | null) => string[],
): Promise<ChangeItem[]> {
  const items: ChangeItem[] = [];
  const got = await contents(remote, feed.spans);
  for (let i = 0; i < feed.spans.length; i++) {
    const span = feed.spans[i];
    const [before, known, after] = got[i];
    if (known && unpointed(before) === unpointed(after)) continue; // changed back, or only Home.md's link to the review
    const last = span.last;
    items.push({
      id: await changeId(span.fileId, span.first.parentRev, last.rev),
      path: span.path,
      fileId: span.fileId,
      fromRev: span.first.parentRev,
      toRev: last.rev,
      before,
      after,
      device: last.deviceName,
      kind: last.kind,
      at: clock(last.committedAt, tz),
      beforeKnown: known,
      notes: explain(span, after),
    });
  }
  // Python's sort by (path, to_rev): code point order of the paths
  items.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.toRev - b.toRev));
  return items;
}

/** The flag lines a change added, with the person's line right above each when there is one. */
export async function disagreements(items: ChangeItem[]): Promise<Disagreement[]> {
  const out: Disagreement[] = [];
  for (const c of items) {
    if (c.after === null) continue;
    const had = new Set((c.before ?? "").split("\n"));
    const rows = c.after.split("\n");
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      if (had.has(row) || !decide.isFlag(row)) continue;
      let mine: string | null = null;
      if (i > 0 && !decide.isFlag(rows[i - 1]) && decide.statement(rows[i - 1])) mine = decide.statement(rows[i - 1]);
      out.push({ id: await disagreementId(c.path, row), path: c.path, flag: row, new: decide.statement(row), mine });
    }
  }
  return out;
}

async function readText(engine: SyncEngine, rel: string): Promise<string | null> {
  if (!(await engine.fs.stat(rel))) return null;
  try {
    return decoder.decode(await engine.fs.read(rel));
  } catch {
    return null;
  }
}

const squash = (s: string) => s.split(/\s+/).filter(Boolean).join(" ");

/** Per vault path: what the night's dream report says of its change (its sources). */
export async function reportNotes(engine: SyncEngine, night: string, lang: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  let data: unknown;
  try {
    data = JSON.parse((await readText(engine, `.companion/dreams/${night}.json`)) ?? "null");
  } catch {
    return out;
  }
  const list = data && typeof data === "object" ? (data as { changes?: unknown }).changes : null;
  for (const ch of Array.isArray(list) ? list : []) {
    if (!ch || typeof ch !== "object" || typeof ch.note !== "string") continue;
    if (!out.has(ch.note)) out.set(ch.note, []);
    const lines = out.get(ch.note)!;
    for (const ref of Array.isArray(ch.provenance) ? ch.provenance : []) {
      if (!ref || typeof ref !== "object" || typeof ref.quote !== "string") continue;
      const quote = [...squash(ref.quote)].slice(0, 200).join("");
      const source = String(ref.source ?? "");
      if (source.startsWith(".companion/")) continue; // the dream's own report: not a source worth showing
      const where = source.endsWith(".md") && source.includes("/") ? link(source) : source;
      const line = `${labels.say(lang, "source")}: “${quote}”` + (where ? ` — ${where}` : "");
      if (!lines.includes(line) && lines.length < 3) lines.push(line);
    }
  }
  return out;
}

const DAY_FILE = /^\.companion\/agent\/(\d{4}-\d{2}-\d{2})\.[A-Za-z0-9._-]+\.jsonl$/;

/** What the agent's MCP log says of a span's writes (its stated reasons): only ever attached
 * to a change the relay's history holds. */
export async function logNotes(engine: SyncEngine, lang: string): Promise<(span: Span) => string[]> {
  const writes: { path: string; time: number; at: string; reason: string }[] = [];
  const files = Object.keys(engine.state.files).filter((p) => DAY_FILE.test(p)).sort();
  for (const f of files) {
    const text = await readText(engine, f);
    for (const raw of (text ?? "").split(/\r?\n/)) {
      let d: Record<string, unknown>;
      try {
        d = JSON.parse(raw);
      } catch {
        continue;
      }
      if (!d || typeof d !== "object" || !d.path || !d.tool) continue;
      const t = typeof d.time === "string" ? Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(d.time) ? d.time : d.time + "Z") : NaN;
      if (Number.isNaN(t)) continue;
      writes.push({ path: String(d.path), time: t / 1000, at: d.time as string, reason: typeof d.reason === "string" ? d.reason : "" });
    }
  }
  writes.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)); // oldest first, as read_writes
  return (span) => {
    const lo = (span.first.committedAt ?? 0) - 600;
    const hi = (span.last.committedAt ?? 0) + 60;
    const out: string[] = [];
    for (const w of writes) {
      if (w.path !== span.path || !(lo <= w.time && w.time <= hi) || !w.reason) continue;
      const line = `${labels.say(lang, "agent_said")}: “${[...squash(w.reason)].slice(0, 200).join("")}”`;
      if (!out.includes(line) && out.length < 2) out.push(line);
    }
    return out;
  };
}
