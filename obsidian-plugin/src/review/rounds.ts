/**
 * What the plugin does with the review notes after each sync round (companion/review/rounds.py,
 * docs/review.md), as a person's (human) device:
 *
 * - a night's note still missing 10 minutes after its dream report reached the relay is
 *   written here, from the relay's history (`writeMissing`, `build`);
 * - a note an agent device wrote is checked against the relay's history over its own range,
 *   and rewritten from it (every line's state kept) when it hides or adds a change (`check`);
 * - a revert, "keep mine" or "take the new value" ticked by THIS device (the note's verified
 *   history says which device's revision made the tick) is carried out here: a revert only
 *   when the relay's history of the file still holds the change under its id and the file is
 *   still exactly what the change left; the outcome is written on the line;
 * - a tick an agent device wrote is cleared, and the line says so;
 * - proposals (apply, drop) are left to the device that dreams.
 *
 * Everything written is an ordinary edit of this device, synced by the round that follows
 * (`SyncEngine.afterRound`). The plugin has no dream settings: a note it writes takes the
 * previous note's language and time zone (else English and UTC).
 */
import { utf8 } from "../crypto/bytes";
import type { SyncEngine } from "../sync/engine";
import type { RemoteChange } from "../sync/remote";
import * as attest from "./attest";
import { ticks, type Revision, type Tick } from "./blame";
import * as decide from "./decide";
import * as labels from "./labels";
import {
  BY_TICKER,
  type Carried,
  changeId,
  type ChangeItem,
  FOLDER,
  KEEP,
  lineKey,
  type Line,
  notePath,
  type ProposalItem,
  proposalItemId,
  REVERT,
  type Review,
  TAKE,
} from "./model";
import * as notes from "./note";

export const ACTIVE_DAYS = 14;
/** A person's device writes a missing note once the night's dream report is this old (s). */
export const GRACE_S = 600;
/** A report this much older than the newest gets no note (an upgrade's backlog). */
export const RECENT_DAYS = 3;
export const BOOK = ".companion/dreams/proposals.json";
const REPORT_RE = /^\.companion\/dreams\/(\d{4}-\d{2}-\d{2})\.json$/;
export const HOME = "Home.md";
export const HOME_BEGIN = "<!-- review:begin -->";
export const HOME_END = "<!-- review:end -->";
const HUMAN = "human";
const NIGHT_RE = /^review\/(\d{4}-\d{2}-\d{2})\.md$/;

const decoder = new TextDecoder();

/** [night, vault path] of every review note this copy holds, oldest night first. */
export async function noteFiles(engine: SyncEngine, extra: Iterable<string> = []): Promise<[string, string][]> {
  const out: [string, string][] = [];
  // the review notes the index knows (they come from the relay), and any written here since
  const paths = new Set([...Object.entries(engine.state.files).filter(([, e]) => !e.deleted).map(([p]) => p), ...extra]);
  for (const p of paths) {
    const m = NIGHT_RE.exec(p);
    if (m && !Number.isNaN(Date.parse(m[1])) && (await engine.fs.stat(p))) out.push([m[1], p]);
  }
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

export async function readText(engine: SyncEngine, rel: string): Promise<string | null> {
  if (!(await engine.fs.stat(rel))) return null;
  try {
    return decoder.decode(await engine.fs.read(rel));
  } catch {
    return null;
  }
}

function days(a: string, b: string): number {
  return Math.round((Date.parse(b) - Date.parse(a)) / 86_400_000);
}

/** The note's retained revisions, oldest first, with their verified contents. */
export async function revisions(engine: SyncEngine, rel: string): Promise<Revision[]> {
  const hist = (await engine.remote.history(rel)).filter((h): h is RemoteChange => !("reason" in h)).reverse();
  const got = await engine.remote.fetch(hist.filter((h) => !h.meta.deleted).map((h) => h.meta));
  return hist.map((h) => ({
    rev: h.rev,
    deviceId: h.deviceId ?? "",
    device: h.deviceName,
    kind: h.kind,
    text: h.meta.deleted ? null : decoder.decode(got.get(h.meta.sha256)!),
  }));
}

/** The vault path a note link names (`[[knowledge/x]]` is `knowledge/x.md` unless a file has
 * that very name). */
export async function pathOf(engine: SyncEngine, target: string | null): Promise<string | null> {
  if (!target) return null;
  if (target.endsWith(".md") || (await engine.fs.stat(target))) return target;
  return target + ".md";
}

/** The change `itemId` names, found again in the relay's history of `path`: a span of its
 * revisions whose id matches, with its before and after fetched and verified. */
export async function attestedChange(engine: SyncEngine, path: string, itemId: string): Promise<ChangeItem | null> {
  let hist: RemoteChange[];
  try {
    hist = (await engine.remote.history(path)).filter((h): h is RemoteChange => !("reason" in h)).reverse();
  } catch {
    return null;
  }
  const fid = await engine.remote.fileId(path);
  for (let j = hist.length - 1; j >= 0; j--) {
    for (let i = j; i >= 0; i--) {
      const first = hist[i];
      const last = hist[j];
      if ((await changeId(fid, first.parentRev, last.rev)) !== itemId) continue;
      let before: RemoteChange | null | false = null;
      if (first.parentRev > 0) {
        try {
          before = (await engine.remote.record(path, first.parentRev)) ?? false;
        } catch {
          before = false; // pruned or unreadable: shown, never revertible
        }
      }
      const metas = [last.meta, ...(before ? [before.meta] : [])].filter((m) => !m.deleted);
      const got = metas.length ? await engine.remote.fetch(metas) : new Map<string, Uint8Array>();
      const text = (m: RemoteChange["meta"]) => (m.deleted ? null : decoder.decode(got.get(m.sha256)!));
      return {
        id: itemId,
        path,
        fileId: fid,
        fromRev: first.parentRev,
        toRev: last.rev,
        before: before ? text(before.meta) : null,
        after: text(last.meta),
        device: last.deviceName,
        kind: last.kind,
        at: "",
        beforeKnown: before !== false,
        notes: [],
      };
    }
  }
  return null;
}

/** HH:MM now in the note's time zone (its front matter's `tz`; UTC when unknown). */
export function stamp(now: Date, tz: string | undefined): string {
  const fmt = (zone: string) =>
    new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(now);
  try {
    return fmt(tz || "UTC");
  } catch {
    return fmt("UTC");
  }
}

function toInt(value: string | undefined): number {
  const n = Number.parseInt(value ?? "", 10);
  return Number.isFinite(n) && /^\s*[+-]?\d+\s*$/.test(value ?? "") ? n : 0;
}

/** The relay's newest sequence number of the vault. */
export async function relaySeq(engine: SyncEngine): Promise<number> {
  return (await engine.client.changesPage(0, 0, 1)).vaultSeq;
}

/** The first revision of `rel` the relay still holds (null: none, or it cannot be read). */
export async function oldest(engine: SyncEngine, rel: string): Promise<RemoteChange | null> {
  try {
    const hist = (await engine.remote.history(rel)).filter((h): h is RemoteChange => !("reason" in h));
    return hist.length ? hist[hist.length - 1] : null;
  } catch {
    return null;
  }
}

const listed = (texts: [string, string][]) => new Set(texts.flatMap(([, t]) => notes.parseLines(t).map((ln) => ln.id)));
const pending = (book: Record<string, unknown>[]) => book.filter((p) => p.state === "pending");
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

/** The dream's pending proposals not listed in an earlier note (rounds.py `_proposals`). */
export async function proposalsOf(book: Record<string, unknown>[], night: string, earlier: [string, string][]): Promise<ProposalItem[]> {
  const seen = listed(earlier);
  const out: ProposalItem[] = [];
  for (const p of pending(book)) {
    const item = await proposalItemId(String(p.id));
    if (String(p.night || "") > night || seen.has(item)) continue;
    out.push({
      id: item,
      pid: String(p.id),
      file: String(p.file || p.target),
      op: String(p.op || "add"),
      old: str(p.old),
      new: str(p.new),
      reason: String(p.reason || ""),
      quote: str(p.quote),
    });
  }
  return out;
}

/** Each undecided line of an earlier note, once (from the night it was first listed); a
 * proposal decided some other way is not carried (rounds.py `_carried`). */
export async function carriedOf(book: Record<string, unknown>[], earlier: [string, string][]): Promise<Carried[]> {
  const waiting = new Set<string>();
  for (const p of pending(book)) waiting.add(await proposalItemId(String(p.id)));
  const decided = new Set<string>();
  const first = new Map<string, Carried>();
  for (const [night, text] of earlier) {
    const lang = notes.frontMatter(text).lang || "en";
    for (const ln of notes.parseLines(text)) {
      const key = lineKey(ln);
      if (ln.final) {
        decided.add(key);
        continue;
      }
      if (ln.id.startsWith("n-") || first.has(key)) continue;
      if (ln.id.startsWith("p-") && !waiting.has(ln.id)) continue;
      const ctx = notes.context(text, ln, lang);
      if (ctx.night) {
        // itself carried: it belongs to the night it names
        const label = ln.label.trim();
        const cut = label.lastIndexOf(" (");
        first.set(key, { id: ln.id, code: ln.code, label: cut > 0 ? label.slice(0, cut) : label, night: ctx.night });
        continue;
      }
      let label = ln.label.trim();
      if (ctx.target && !label.includes("[[")) label = `${label}: [[${ctx.target}]]`;
      first.set(key, { id: ln.id, code: ln.code, label, night });
    }
  }
  return [...first.entries()].filter(([k]) => !decided.has(k)).map(([, c]) => c);
}

export class ReviewRounds {
  /** Note path -> the text last looked at with nothing to do (looked at again once it changes). */
  readonly seen = new Map<string, string>();
  /** Dream report path -> its first revision on the relay (who dreamt, and when). */
  readonly firsts = new Map<string, RemoteChange>();
  written = new Set<string>();
  lastError: string | null = null;

  constructor(
    readonly engine: SyncEngine,
    private readonly now: () => Date = () => new Date(),
  ) {}

  get human(): boolean {
    return this.engine.device.kind === HUMAN;
  }

  /** The review's work for one settled round; the vault paths it wrote. */
  async afterRound(): Promise<Set<string>> {
    this.written = new Set();
    try {
      await this.writeMissing();
      await this.carryOut();
      if (this.written.size) await this.pointHome();
      this.lastError = null;
    } catch (e) {
      // the review never breaks sync: said, and tried again next round
      this.lastError = (e as Error).message;
      console.warn(`review: ${this.lastError}`);
    }
    return new Set(this.written);
  }

  private read(rel: string): Promise<string | null> {
    return readText(this.engine, rel);
  }

  private async write(rel: string, text: string | null): Promise<void> {
    await this.engine.writeOwn(rel, text === null ? null : utf8(text));
    this.written.add(rel);
  }

  private files(): Promise<[string, string][]> {
    return noteFiles(this.engine, this.written);
  }

  async carryOut(): Promise<void> {
    const files = await this.files();
    if (!files.length) return;
    const newest = files[files.length - 1][0];
    for (const [night, rel] of files) {
      if (days(night, newest) > ACTIVE_DAYS) continue;
      let text = await this.read(rel);
      if (text === null || this.seen.get(rel) === text) continue;
      let waiting = notes.parseLines(text).filter((ln) => ln.ticked && !ln.final);
      if (!waiting.length && !this.human) {
        this.seen.set(rel, text);
        continue;
      }
      const revs = await revisions(this.engine, rel);
      if (!revs.length || revs[revs.length - 1].text !== text) continue; // its round comes first
      if (this.human) {
        const checked = await this.check(night, rel, text, revs);
        // rewritten: the same lines (their states kept), at other places in the note
        if (checked !== text) waiting = notes.parseLines(checked).filter((ln) => ln.ticked && !ln.final);
        text = checked;
      }
      if (!waiting.length) {
        this.seen.set(rel, text);
        continue;
      }
      const who = ticks(revs);
      const front = notes.frontMatter(text);
      const lang = front.lang || "en";
      for (const ln of waiting) {
        const tick = who.get(lineKey(ln));
        if (!tick) continue;
        if (tick.kind !== HUMAN) {
          if (this.human) {
            const notice = `${notes.NOTICE} ` + labels.say(lang, "out_agent_tick", { device: tick.device });
            text = notes.setOutcome(text, lineKey(ln), notice, false);
          }
          continue;
        }
        if (BY_TICKER.has(ln.code) && tick.deviceId === this.engine.device.deviceId) {
          text = await this.decideNote(rel, text, ln, tick, lang, front.tz);
        }
        // apply / drop: the device that dreams carries them out
      }
      if (text !== (await this.read(rel))) await this.write(rel, notes.recount(text));
      else this.seen.set(rel, text);
    }
  }

  /** Revert, keep mine or take the new value, here (the device that ticked). */
  private async decideNote(rel: string, text: string, ln: Line, tick: Tick, lang: string, tz: string | undefined): Promise<string> {
    if (ln.id.startsWith("n-")) {
      // revert the whole night: its own changes still open (not lines carried from earlier
      // nights), newest first
      for (const other of notes.parseLines(text).reverse()) {
        const own = !other.label.includes("[[");
        if (other.code === REVERT && other.id.startsWith("c-") && own && !other.final) text = (await this.one(rel, text, other, tick, lang, tz))[0];
      }
      return notes.setOutcome(text, lineKey(ln), labels.say(lang, "out_done", { time: stamp(this.now(), tz), device: tick.device }), true);
    }
    return (await this.one(rel, text, ln, tick, lang, tz))[0];
  }

  private async one(rel: string, text: string, ln: Line, tick: Tick, lang: string, tz: string | undefined): Promise<[string, boolean]> {
    let ctx = notes.context(text, ln, lang);
    const night = rel.slice(FOLDER.length + 1, -3);
    if (ctx.night && ctx.night !== night) {
      // carried: read the item where it was listed
      const earlier = (await this.read(notePath(ctx.night))) ?? "";
      const found = notes.parseLines(earlier).find((x) => lineKey(x) === lineKey(ln));
      if (found) ctx = notes.context(earlier, found, notes.frontMatter(earlier).lang || lang);
    }
    const path = await pathOf(this.engine, ctx.target);
    const time = stamp(this.now(), tz);
    let result: decide.Result;
    if (path === null) result = { ok: false, text: null, refusal: "gone" };
    else if (ln.code === REVERT) {
      const change = await attestedChange(this.engine, path, ln.id);
      result = change ? decide.revert(await this.read(path), change) : { ok: false, text: null, refusal: "gone" };
    } else {
      const d = { new: ctx.new ?? "", mine: ctx.mine };
      const fn = ln.code === KEEP ? decide.keepMine : decide.takeNew;
      result = ctx.new ? fn(await this.read(path), d) : { ok: false, text: null, refusal: "gone" };
    }
    let outcome: string;
    if (result.ok && path !== null) {
      await this.write(path, result.text);
      const key = ({ [REVERT]: "out_reverted", [KEEP]: "out_kept", [TAKE]: "out_taken" } as Record<string, string>)[ln.code];
      outcome = labels.say(lang, key, { time, device: tick.device });
    } else outcome = labels.say(lang, result.refusal === "edited" ? "out_edited" : "out_gone", { time });
    text = notes.setOutcome(text, lineKey(ln), outcome, true);
    // as rounds.py `_one`: the note the context names says where it was decided
    if (ctx.night) await this.markElsewhere(notePath(ctx.night), lineKey(ln), rel, lang);
    return [text, result.ok];
  }

  private async markElsewhere(otherRel: string, key: string, rel: string, lang: string): Promise<void> {
    const other = await this.read(otherRel);
    if (other === null) return;
    const updated = notes.setOutcome(other, key, labels.say(lang, "out_elsewhere", { link: notes.link(rel) }), true);
    if (updated !== other) await this.write(otherRel, updated);
  }

  // ---------------------------------------------------------------- writing a night's note

  /** The night's note, when its dream report is on the relay and the note is not here: the
   * device that committed the report writes it; a person's device once the report is older
   * than GRACE_S (the dream's device crashed, or is hostile). */
  async writeMissing(): Promise<void> {
    const reports = Object.keys(this.engine.state.files)
      .filter((p) => REPORT_RE.test(p) && !this.engine.state.files[p].deleted)
      .sort();
    if (!reports.length) return;
    const newest = REPORT_RE.exec(reports[reports.length - 1])![1];
    for (const key of reports) {
      const night = REPORT_RE.exec(key)![1];
      if (Number.isNaN(Date.parse(night)) || days(night, newest) > RECENT_DAYS) continue;
      const rel = notePath(night);
      if (await this.engine.fs.stat(rel)) continue;
      if (!(await this.engine.fs.stat(key))) continue;
      const first = this.firsts.get(key) ?? (await oldest(this.engine, key));
      if (!first) continue; // not on the relay yet: nothing attests it
      this.firsts.set(key, first);
      const mine = first.deviceId === this.engine.device.deviceId;
      const now = this.now().getTime() / 1000;
      const late = now - (first.committedAt ?? now) > GRACE_S;
      if (!(mine || (this.human && late))) continue;
      const review = await this.build(night, { dreamDevice: first.deviceId, reportTime: first.committedAt });
      await this.write(rel, notes.render(review));
    }
  }

  /** The night's review from the relay's history: bounds from the previous note (or given, to
   * check an existing note against its own). Language and time zone: given, else the previous
   * note's (the plugin knows no dream settings), else English and UTC. */
  async build(
    night: string,
    o: { dreamDevice: string | null; reportTime: number | null; toSeq?: number; fromSeq?: number; since?: number | null; lang?: string; tz?: string },
  ): Promise<Review> {
    const earlier = (await this.files()).filter(([n]) => n < night);
    const earlierTexts: [string, string][] = [];
    for (const [n, rel] of earlier) earlierTexts.push([n, (await this.read(rel)) ?? ""]);
    const prev = earlierTexts.length ? notes.frontMatter(earlierTexts[earlierTexts.length - 1][1]) : {};
    const lang = labels.language(o.lang ?? prev.lang ?? "en");
    const tz = o.tz ?? prev.tz ?? "UTC";
    let fromSeq = o.fromSeq;
    let since = o.since ?? null;
    if (fromSeq === undefined) {
      fromSeq = toInt(prev.to);
      since = null;
      if (!fromSeq) since = Math.trunc((o.reportTime ?? this.now().getTime() / 1000) - 36 * 3600);
    }
    const toSeq = o.toSeq ?? (await relaySeq(this.engine));
    const feed = await attest.agentSpans(this.engine.remote, fromSeq, toSeq, {
      notBefore: since,
      include: o.dreamDevice ? (ch) => ch.deviceId === o.dreamDevice : null,
    });
    const fromReport = await attest.reportNotes(this.engine, night, lang);
    const fromLog = await attest.logNotes(this.engine, lang);
    const changes = await attest.changes(this.engine.remote, feed, tz, (span) => [...(fromReport.get(span.path) ?? []), ...fromLog(span)]);
    const book = await this.book();
    return {
      night,
      fromSeq,
      toSeq,
      lang,
      tz,
      since,
      changes,
      disagreements: await attest.disagreements(changes),
      proposals: await proposalsOf(book, night, earlierTexts),
      carried: await carriedOf(book, earlierTexts),
    };
  }

  private async book(): Promise<Record<string, unknown>[]> {
    try {
      const data = JSON.parse((await this.read(BOOK)) ?? "null");
      const list = data && typeof data === "object" ? (data as { proposals?: unknown }).proposals : null;
      return Array.isArray(list)
        ? list.filter((p) => p && typeof p === "object" && typeof p.id === "string" && ["memory", "user"].includes(p.target))
        : [];
    } catch {
      return [];
    }
  }

  // ---------------------------------------------------------------- checking a note

  /** A person's device: the note's changes against the relay's history over the note's own
   * range; a note that hides, adds or alters a change is rewritten from the history, its
   * decision lines kept, and says so (rounds.py `_check`). */
  async check(night: string, rel: string, text: string, revs: Revision[]): Promise<string> {
    if (revs.every((r) => r.kind === HUMAN)) return text; // only people's devices wrote it
    const front = notes.frontMatter(text);
    const earlier = (await this.files()).filter(([n]) => n < night);
    const prevTo = earlier.length ? toInt(notes.frontMatter((await this.read(earlier[earlier.length - 1][1])) ?? "").to) : 0;
    let fromSeq = toInt(front.from);
    let toSeq = toInt(front.to);
    const since = toInt(front.since) || null;
    const problems: string[] = [];
    if (earlier.length && fromSeq !== prevTo) {
      problems.push(`its range starts at ${fromSeq}, the previous review ends at ${prevTo}`);
      fromSeq = prevTo;
    }
    const writer = [...revs].reverse().find((r) => r.kind !== HUMAN)?.device ?? "?";
    const report = await oldest(this.engine, `.companion/dreams/${night}.json`);
    if (toSeq <= 0) toSeq = await relaySeq(this.engine);
    const truth = await this.build(night, {
      dreamDevice: report ? report.deviceId : null,
      reportTime: null,
      toSeq,
      fromSeq,
      since,
      lang: front.lang || "en",
      tz: front.tz || "UTC",
    });
    const shown = new Set(notes.parseLines(text).filter((ln) => ln.id.startsWith("c-")).map((ln) => ln.id));
    const real = new Set(truth.changes!.map((c) => c.id));
    const carriedIds = new Set(notes.parseLines(text).filter((ln) => ln.label.includes("[[")).map((ln) => ln.id));
    const hidden = [...real].filter((x) => !shown.has(x));
    const forged = [...shown].filter((x) => !real.has(x) && !carriedIds.has(x));
    if (hidden.length) problems.push(`${hidden.length} change(s) left out`);
    if (forged.length) problems.push(`${forged.length} change(s) the history does not hold`);
    const shownBlocks = notes.changeBlocks(text);
    const trueBlocks = notes.changeBlocks(notes.render(truth));
    const same = (a?: string[], b?: string[]) => !!a && !!b && a.length === b.length && a.every((x, i) => x === b[i]);
    const altered = [...real].filter((x) => shown.has(x) && !same(shownBlocks.get(x), trueBlocks.get(x)));
    if (altered.length) problems.push(`${altered.length} change(s) shown otherwise than the history holds`);
    if (!problems.length) return text;
    truth.carried = truth.carried!.filter((c) => !real.has(c.id));
    truth.notice = labels.say(truth.lang!, "repaired", { device: this.engine.device.deviceName, writer, what: problems.join("; ") });
    const fixed = notes.render(truth, notes.statesOf(text));
    console.warn(`review: ${rel} did not match the relay's history (${problems.join("; ")}): rewritten`);
    await this.write(rel, fixed);
    return fixed;
  }

  /** Home.md starts with a link to the newest note that has something waiting, or nothing. */
  async pointHome(): Promise<void> {
    const home = await this.read(HOME);
    if (home === null) return;
    let newest: [string, string, string] | null = null;
    const files = await this.files();
    for (const [night, rel] of files.reverse()) {
      const text = (await this.read(rel)) ?? "";
      if (notes.parseLines(text).some((ln) => !ln.final)) {
        newest = [night, rel, notes.frontMatter(text).lang || "en"];
        break;
      }
    }
    let block = "";
    if (newest) {
      const [night, rel, lang] = newest;
      block = `${HOME_BEGIN}\n> [!todo] [[${rel.slice(0, -3)}|${labels.say(lang, "title", { night })}]]\n${HOME_END}\n\n`;
    }
    const start = home.indexOf(HOME_BEGIN);
    const end = home.indexOf(HOME_END);
    let updated: string;
    if (start !== -1 && end !== -1) updated = home.slice(0, start) + block + home.slice(end + HOME_END.length).replace(/^\n+/, "");
    else updated = block ? block + home : home;
    if (updated !== home) await this.write(HOME, updated);
  }
}

/** Run the review's work after each round of `engine` that settles (one `ReviewRounds` kept
 * across rounds: a note is looked at again only when its text changed). */
export function installReview(engine: SyncEngine, now?: () => Date): ReviewRounds {
  const rounds = new ReviewRounds(engine, now);
  engine.afterRound.push(() => rounds.afterRound());
  return rounds;
}
