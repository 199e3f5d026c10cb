/**
 * Carrying out the apply steps of a pass (`plan.ts` `planApply`): remote -> local
 * (companion/sync/round/apply.py). The planner decides; this file only acts on the disk, and
 * each write is checked against what the scan saw: a file that changed since waits for the next
 * pass (its change queued again), never written over. Contents are downloaded in groups, the
 * next group while this one is written; many plain downloads are written with one flush
 * (`VaultFS.writeMany`). A file changed on both sides goes through `conflicts.resolve`, and
 * what the note does not keep goes to a conflict copy, written before the note changes.
 */

import { sha256Hex, type FileMeta } from "../crypto/records";
import { fromBase64, toBase64 } from "../crypto/bytes";
import { CompanionError, RelayUnreachable, VaultFolderMissing } from "../errors";
import { caseCollisionName, HUMAN, resolve } from "./conflicts";
import { isText } from "./merge";
import { fold } from "./paths";
import {
  type ApplyPlan,
  type CaseCollision,
  type Download,
  type FollowLocalRename,
  type FollowRemoteRename,
  type Incoming,
  isNewEdit,
  type MoveHere,
  type PlanLocal,
  type Reconcile,
  type RemoveHere,
  type StaleSave,
} from "./plan";
import { type PartialStore, pool, type RemoteChange, type RemoteVault } from "./remote";
import type { RoundReport } from "./report";
import type { ConflictInfo, Entry, Queued, SyncState } from "./state";
import { type BulkItem, type FileStat, UnusableName, type VaultFS, type WriteOptions } from "./vaultfs";

export const WRITE_PARALLEL = 16;
export const APPLY_GROUP = 1500;
export const BULK_MIN = 32; // from this many files on, one flush beats one fsync each
export const FIRST_GROUP = 250; // a small first group, so writing starts early
/** A local version the round writes over is kept for the stale-save rule up to this size
 * (Python's BASE_TEXT_LIMIT). */
export const APPLIED_TEXT_LIMIT = 1 << 20;

/** A local change as the engine scanned it (a rename split into its two halves; Python's
 * `model.Local`): what the planner reads, and the content read for the push. */
export interface Local extends PlanLocal {
  stat?: FileStat;
  data?: Uint8Array;
}

export type In = Incoming<RemoteChange>;

/** A verified remote change as the planner reads it. */
export function incoming(path: string, ch: RemoteChange): In {
  return { path, rev: ch.rev, deleted: ch.meta.deleted, sha256: ch.meta.sha256, renameFrom: ch.meta.renameFrom, authorKind: ch.kind, change: ch };
}

/** A verified change as the inbox keeps it (still sealed, verified again before use).
 * `admitted`: put back after its admission (the hold rules do not judge it again). */
export function queued(ch: RemoteChange, admitted = false): Queued {
  return {
    ...(admitted ? { admitted: true } : {}),
    fileId: ch.fileId,
    rev: ch.rev,
    parentRev: ch.parentRev,
    sealed: ch.sealedB64 ?? toBase64(ch.sealed),
    seq: ch.seq,
    deviceId: ch.deviceId,
    relayKind: ch.relayKind,
    relayName: ch.relayName,
    committedAt: ch.committedAt,
  };
}

/** What the executors need of the engine: its folder-guarded writes, its state and its relay. */
export interface Host {
  readonly fs: VaultFS;
  readonly remote: RemoteVault;
  readonly partials: PartialStore;
  readonly deviceName: string;
  readonly deviceKind: string;
  readonly state: SyncState;
  /** Agents' notes read this pass by the hold rules, by SHA-256 (no second download). */
  readonly noteCache: Map<string, Uint8Array>;
  /** Paths whose remote change could not be written this round (retried next round). */
  readonly unwritable: Set<string>;
  now(): Date;
  /** The clock of the vault's modification times (ms): when an apply happened. */
  clock(): number;
  write(path: string, data: Uint8Array, opts?: WriteOptions): Promise<FileStat>;
  remove(path: string): Promise<void>;
  rename(from: string, to: string): Promise<FileStat>;
  guard(): Promise<void>;
}

/** What carrying out a pass's apply steps did (Python's `Outcome`): `work`, something changed;
 * `back`, local changes handed back to the push plan. */
export interface Outcome {
  work: boolean;
  back: Map<string, Local>;
}

export class Applier {
  constructor(private readonly host: Host) {}

  private get state(): SyncState {
    return this.host.state;
  }

  /** Carry out `plan`'s steps. `push` is the plan's map of local changes left to push: a step
   * that consumes one half of a local rename makes the other half a plain change there. */
  async run(plan: ApplyPlan<RemoteChange, Local, Entry>, push: Map<string, Local>, report: RoundReport, touched: Set<string>): Promise<Outcome> {
    const out: Outcome = { work: false, back: new Map() };
    const later: (Download<RemoteChange, Entry> | CaseCollision<RemoteChange> | Reconcile<RemoteChange, Local>)[] = [];
    for (const step of plan.steps) {
      switch (step.step) {
        case "Discard":
          break; // already dropped from the inbox when it was opened
        case "Wait":
          report.deferred++;
          touched.add(step.path);
          if (step.item) this.state.inbox[step.path] = queued(step.item.change, true);
          break;
        case "MoveHere":
          out.work = true;
          if (!(await this.moveHere(step, report, touched))) {
            // the rename cannot be done here (the file moved on, something is at the new
            // path): a deletion and a download instead
            await this.removeHere({ step: "RemoveHere", item: step.gone, expected: step.expected }, report, touched);
            const ne = this.state.files[step.new];
            later.push({ step: "Download", item: step.came, expected: ne && !ne.deleted ? ne : null, bulk: false });
          }
          break;
        case "RemoveHere":
          out.work = true;
          await this.removeHere(step, report, touched);
          break;
        case "FollowRemoteRename":
          out.work = true;
          await this.followRemoteRename(step, report, touched);
          break;
        case "FollowLocalRename":
          out.work = true;
          await this.followLocalRename(step, out, report, touched);
          break;
        case "StaleSave":
          await this.staleSave(step, out, report, touched);
          break;
        case "Reconcile":
          out.work = true;
          if (step.item.deleted) {
            touched.add(step.item.path);
            await this.reconcile(step.item, null, step.local, push, report, touched);
          } else later.push(step);
          break;
        default:
          out.work = true;
          later.push(step);
      }
    }
    await this.withContents(later, push, report, touched);
    return out;
  }

  /** The steps that need remote contents, in groups: the next group downloads while this one
   * is written (everything verified before a write). */
  private async withContents(
    steps: (Download<RemoteChange, Entry> | CaseCollision<RemoteChange> | Reconcile<RemoteChange, Local>)[],
    push: Map<string, Local>,
    report: RoundReport,
    touched: Set<string>,
  ): Promise<void> {
    const groups: (typeof steps)[] = [];
    for (let i = 0; i < steps.length; i += i ? APPLY_GROUP : FIRST_GROUP) groups.push(steps.slice(i, i + (i ? APPLY_GROUP : FIRST_GROUP)));
    let ahead = groups.length ? this.fetchContents(groups[0].map((s) => s.item.change)) : null;
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g];
      const contents = await ahead!;
      ahead = g + 1 < groups.length ? this.fetchContents(groups[g + 1].map((s) => s.item.change)) : null;
      ahead?.catch(() => undefined);
      const bulk = this.host.fs.writeMany ? group.filter((s): s is Download<RemoteChange, Entry> => s.step === "Download" && s.bulk) : [];
      if (bulk.length >= BULK_MIN) await this.downloads(bulk, contents, report, touched);
      const done = new Set<unknown>(bulk.length >= BULK_MIN ? bulk : []);
      await pool(
        group.filter((s) => !done.has(s)),
        WRITE_PARALLEL,
        async (s) => {
          const p = s.item.path;
          const ch = s.item.change;
          touched.add(p);
          const content = contents.get(ch.meta.sha256)!;
          if (s.step === "Reconcile") await this.reconcile(s.item, content, s.local, push, report, touched);
          else if (s.step === "CaseCollision") await this.caseCollision(s, content, report);
          else await this.download(s, content, report);
        },
      );
    }
  }

  // ------------------------------------------------------------------ contents

  async fetchContents(group: RemoteChange[]): Promise<Map<string, Uint8Array>> {
    const cache = this.host.noteCache;
    const small = group.filter((c) => c.meta.chunks.length <= 1 && !cache.has(c.meta.sha256)).map((c) => c.meta);
    const out = await this.host.remote.fetch(small);
    for (const c of group) if (cache.has(c.meta.sha256)) out.set(c.meta.sha256, cache.get(c.meta.sha256)!);
    for (const ch of group) {
      if (ch.meta.chunks.length > 1 && !out.has(ch.meta.sha256)) out.set(ch.meta.sha256, await this.host.remote.fetchLarge(ch.meta, this.host.partials));
    }
    for (const ch of group) if (!ch.meta.chunks.length) out.set(ch.meta.sha256, new Uint8Array(0));
    return out;
  }

  /** The last common version of `path`: the synced revision, fetched from the relay's history
   * and verified (the relay keeps it; nothing of it is kept here). Empty for a file new on
   * both sides; null when the relay pruned it (then no merge is tried). */
  async base(path: string): Promise<Uint8Array | null> {
    const e = this.state.files[path];
    if (!e || e.deleted) return new Uint8Array(0);
    try {
      const ch = await this.host.remote.record(path, e.rev);
      if (!ch || ch.meta.deleted || ch.meta.sha256 !== e.sha256) return null;
      if (ch.meta.size > 1024 * 1024) return null;
      return (await this.fetchContents([ch])).get(ch.meta.sha256) ?? null;
    } catch (err) {
      if (err instanceof CompanionError && !(err instanceof RelayUnreachable)) return null;
      throw err;
    }
  }

  /** The last common version of `old`, for a text merge of two versions of it (else null). */
  private async textBase(old: string, a: Uint8Array, b: Uint8Array): Promise<Uint8Array | null> {
    return isText(a) && isText(b) ? this.base(old) : null;
  }

  // ------------------------------------------------------------------ the index

  record(path: string, ch: RemoteChange, st: FileStat | null): void {
    const m = ch.meta;
    this.state.files[path] = {
      fileId: ch.fileId,
      rev: ch.rev,
      sha256: m.deleted ? "" : m.sha256,
      size: m.deleted ? 0 : m.size,
      mtime: st ? st.mtime : -1,
      deleted: m.deleted,
      executable: m.executable,
      device: ch.deviceName,
      deviceKind: ch.kind,
    };
  }

  /** The local file is still what the index says (nothing typed since the scan). */
  private async unchanged(path: string): Promise<boolean> {
    const e = this.state.files[path];
    const st = await this.host.fs.stat(path);
    if (!e || e.deleted) return st === null;
    if (!st) return false;
    if (st.size === e.size && st.mtime === e.mtime) return true;
    return st.size === e.size && (await sha256Hex(await this.host.fs.read(path))) === e.sha256;
  }

  /** Whether `rel` is taken by a live file here (on a case-insensitive disk, by its fold). */
  readonly taken = (rel: string): boolean => {
    const e = this.state.files[rel];
    if (e && !e.deleted) return true;
    if (this.host.fs.caseInsensitive) {
      const f = fold(rel);
      return Object.entries(this.state.files).some(([p, x]) => !x.deleted && fold(p) === f);
    }
    return false;
  };

  private defer(path: string, ch: RemoteChange, report: RoundReport): void {
    report.deferred++;
    this.state.inbox[path] = queued(ch, true); // changed here meanwhile: the next pass resolves it
  }

  /** A remote change whose name this device's file system refuses: it stays queued with the
   * reason (status lists it, `sync` exits 1) and is tried again next round; the rest syncs. */
  private cannotWrite(p: string, ch: RemoteChange, reason: string, report: RoundReport): void {
    this.state.inbox[p] = { ...queued(ch, true), problem: reason };
    this.host.unwritable.add(p);
    report.problems.push({ path: p, reason });
  }

  conflictInfo(path: string, copy: string, kept: string, moved: string, outcome: string, message: string): ConflictInfo {
    return { path, copy, kept, moved, outcome, message, time: Date.now() / 1000 };
  }

  // ------------------------------------------------------------------ one side changed

  /** A remote rename as a local rename of the same file; false when it cannot be done here. */
  private async moveHere(step: MoveHere<RemoteChange, Entry>, report: RoundReport, touched: Set<string>): Promise<boolean> {
    const { old, new: nu } = step;
    if (!(await this.unchanged(old)) || (await this.host.fs.stat(nu))) return false;
    let st: FileStat;
    try {
      st = await this.host.rename(old, nu);
    } catch (e) {
      if (e instanceof VaultFolderMissing) throw e;
      return false;
    }
    this.record(old, step.gone.change, null);
    this.record(nu, step.came.change, st);
    report.renamedLocal.push([old, nu]);
    touched.add(old);
    touched.add(nu);
    return true;
  }

  private async removeHere(step: RemoveHere<RemoteChange, Entry>, report: RoundReport, touched: Set<string>): Promise<void> {
    const p = step.item.path;
    const ch = step.item.change;
    touched.add(p);
    const e = this.state.files[p];
    if (e && !e.deleted) {
      if (!(await this.unchanged(p))) {
        this.defer(p, ch, report);
        return;
      }
      await this.host.remove(p);
      report.deletedLocal.push(p);
    }
    this.record(p, ch, null);
  }

  private async download(step: Download<RemoteChange, Entry>, content: Uint8Array, report: RoundReport): Promise<void> {
    const p = step.item.path;
    const ch = step.item.change;
    if (!(await this.unchanged(p))) {
      // a new local file appeared since the scan, or the file changed: the next pass decides
      this.defer(p, ch, report);
      return;
    }
    const prev = this.state.files[p];
    let st: FileStat;
    try {
      st = await this.host.write(p, content, writeOpts(ch.meta));
    } catch (e) {
      if (!(e instanceof UnusableName)) throw e;
      this.cannotWrite(p, ch, e.message, report);
      return;
    }
    this.replaced(p, prev);
    this.record(p, ch, st);
    report.downloaded.push(p);
  }

  /** A download replaced `prev` (the synced version, on the relay): a save soon after may be
   * stale (R15). Python's `_replaced`. */
  private replaced(path: string, prev: Entry | undefined): void {
    if (!prev || prev.deleted) return;
    this.state.applied = this.state.applied ?? {};
    this.state.applied[path] = { prevSha256: prev.sha256, prevRev: prev.rev, appliedAt: this.host.clock() };
  }

  /** The round wrote over a local version `data` nobody else has: kept here (small text) for
   * the stale-save rule (Python's `_settle`). */
  private overwrote(path: string, data: Uint8Array | null, sha: string): void {
    if (data === null) return;
    this.state.applied = this.state.applied ?? {};
    const keep = data.length <= APPLIED_TEXT_LIMIT && isText(data) ? toBase64(data) : null;
    this.state.applied[path] = { prevSha256: sha, prevData: keep, appliedAt: this.host.clock() };
  }

  /** Many files changed only remotely, written with one flush (VaultFS.writeMany). */
  private async downloads(steps: Download<RemoteChange, Entry>[], contents: Map<string, Uint8Array>, report: RoundReport, touched: Set<string>) {
    const items: BulkItem[] = steps.map((s) => {
      const e = this.state.files[s.item.path];
      return {
        path: s.item.path,
        data: contents.get(s.item.change.meta.sha256)!,
        opts: writeOpts(s.item.change.meta),
        expected: e && !e.deleted ? { size: e.size, mtime: e.mtime } : null,
      };
    });
    await this.host.guard();
    const prevs = steps.map((st) => this.state.files[st.item.path]);
    const results = await this.host.fs.writeMany!(items);
    results.forEach((r, i) => {
      const ch = steps[i].item.change;
      const p = items[i].path;
      touched.add(p);
      if (r instanceof UnusableName) {
        this.cannotWrite(p, ch, r.message, report);
        return;
      }
      if (r instanceof Error) {
        this.defer(p, ch, report);
        return;
      }
      this.replaced(p, prevs[i]);
      this.record(p, ch, r);
      report.downloaded.push(p);
    });
  }

  /** A new remote file whose name differs only by case from another's (R11): kept under a
   * case-conflict name, which the next scan pushes as a rename of it. */
  private async caseCollision(step: CaseCollision<RemoteChange>, content: Uint8Array, report: RoundReport): Promise<void> {
    const p = step.item.path;
    const ch = step.item.change;
    const copy = caseCollisionName(p, (c) => this.taken(c));
    if ((await this.host.fs.stat(copy)) !== null) {
      this.defer(p, ch, report); // a local file took the copy's name since the scan
      return;
    }
    await this.host.write(copy, content, writeOpts(ch.meta));
    this.record(p, ch, null);
    this.state.files[p].mtime = 0; // synced but absent here: the next scan pushes the rename
    const msg = `${p}: its name differs only by case from ${step.other}; saved as '${copy}'`;
    report.conflicts.push(this.conflictInfo(p, copy, this.host.deviceName, ch.deviceName, "case_collision", msg));
  }

  // ------------------------------------------------------------------ both sides changed

  private resolveHere(path: string, localData: Uint8Array | null, ch: RemoteChange, remote: Uint8Array | null, base: Uint8Array | null) {
    return resolve(
      path,
      { data: localData, deviceName: this.host.deviceName, deviceKind: this.host.deviceKind },
      { data: remote, deviceName: ch.deviceName, deviceKind: ch.kind },
      base,
      this.host.now(),
      this.taken,
    );
  }

  private reportResolution(path: string, res: ReturnType<typeof resolve>, ch: RemoteChange, report: RoundReport): void {
    if (res.copy) {
      report.conflicts.push(
        this.conflictInfo(path, res.copy.path, res.outcome === "local_wins" ? this.host.deviceName : ch.deviceName, res.copy.deviceName, res.outcome, res.message),
      );
    } else if (res.outcome === "merged") report.merged.push(path);
  }

  private async reconcile(
    item: In,
    remoteData: Uint8Array | null,
    lc: Local,
    push: Map<string, Local>,
    report: RoundReport,
    touched: Set<string>,
  ): Promise<void> {
    const p = item.path;
    const ch = item.change;
    // the other half of a local rename this change consumed goes as a plain change
    if (lc.renameTo && push.get(lc.renameTo)) delete push.get(lc.renameTo)!.renameFrom;
    if (lc.renameFrom && push.get(lc.renameFrom)) delete push.get(lc.renameFrom)!.renameTo;
    const localData = lc.kind === "deleted" ? null : lc.data!;
    const remote = ch.meta.deleted ? null : remoteData;
    const needsBase = localData !== null && remote !== null ? isText(localData) && isText(remote) : true;
    const base = needsBase ? await this.base(p) : null;
    const res = this.resolveHere(p, localData, ch, remote, base);
    if (res.copy) {
      // the losing version is safe on disk before the note changes
      await this.host.write(res.copy.path, res.copy.data);
      touched.add(res.copy.path);
    }
    let st: FileStat | null = null;
    if (res.writeLocal) {
      if (res.note === null) await this.host.remove(p);
      else {
        st = await this.host.write(p, res.note, sameBytes(res.note, remote) ? writeOpts(ch.meta) : {});
        this.overwrote(p, localData, lc.sha256 ?? "");
      }
    } else if (res.note !== null) st = lc.stat ?? null;
    const inSync = sameBytes(res.note, remote);
    this.record(p, ch, inSync ? st : null);
    if (res.copy) this.reportResolution(p, res, ch, report);
    else if (res.outcome === "merged") report.merged.push(p);
    else if (res.outcome === "keep_edit") report.keptEdits.push(p);
    if (res.writeLocal && res.note !== null && inSync) report.downloaded.push(p);
  }

  /** Renamed there (`old` -> `new`), edited here at `old`: the local edit goes to `new`, merged
   * with the remote version against the last common version of `old`; `old` goes (Python's
   * `Applier._follow_remote`). Never the old path with the edit beside the renamed file. */
  private async followRemoteRename(step: FollowRemoteRename<RemoteChange, Local>, report: RoundReport, touched: Set<string>): Promise<void> {
    const { old, new: nu, local: lo } = step;
    const gone = step.gone.change;
    const came = step.came.change;
    const remote = (await this.fetchContents([came])).get(came.meta.sha256)!;
    const res = this.resolveHere(nu, lo.data!, came, remote, await this.textBase(old, lo.data!, remote));
    if (res.copy) {
      await this.host.write(res.copy.path, res.copy.data);
      touched.add(res.copy.path);
    }
    let st: FileStat | null = null;
    if (res.note !== null) st = await this.host.write(nu, res.note, sameBytes(res.note, remote) ? writeOpts(came.meta) : {});
    // the old path goes, unless it changed again since the scan (then it stays, as a new file)
    const now = await this.host.fs.stat(old);
    if (now && lo.stat && now.size === lo.stat.size && now.mtime === lo.stat.mtime) await this.host.remove(old);
    this.record(old, gone, null);
    this.record(nu, came, sameBytes(res.note, remote) ? st : null); // else the next scan pushes it
    report.renamedLocal.push([old, nu]);
    this.reportResolution(nu, res, came, report);
    touched.add(old);
    touched.add(nu);
  }

  /** Renamed here (`old` -> `new`, not pushed yet), edited there at `old`: the remote edit is
   * reconciled into `new` (a merge against the last common version of `old`, else the conflict
   * rules), and the rename goes out on top of the remote revision in this pass (its two halves
   * handed back to the push; Python's `Applier._follow_local` leaves them to the next scan). */
  private async followLocalRename(step: FollowLocalRename<RemoteChange, Local>, out: Outcome, report: RoundReport, touched: Set<string>): Promise<void> {
    const { old, new: nu, localNew: ln } = step;
    const ch = step.item.change;
    const remote = (await this.fetchContents([ch])).get(ch.meta.sha256)!;
    const res = this.resolveHere(nu, ln.data!, ch, remote, await this.textBase(old, ln.data!, remote));
    if (res.copy) {
      await this.host.write(res.copy.path, res.copy.data);
      touched.add(res.copy.path);
    }
    if (res.note !== null && !sameBytes(res.note, ln.data!)) {
      const st = await this.host.write(nu, res.note);
      Object.assign(ln, { data: res.note, sha256: await sha256Hex(res.note), stat: st, mtime: st.mtime });
    }
    // `old` at the remote revision: its tombstone (the rename's first half) goes on top of it
    this.record(old, ch, null);
    out.back.set(old, { kind: "deleted", path: old, renameTo: nu });
    out.back.set(nu, ln);
    this.reportResolution(nu, res, ch, report);
    if (res.outcome === "take_remote") report.downloaded.push(nu);
    touched.add(old);
    touched.add(nu);
  }

  /** A save that landed right after a remote change replaced the file (R15; Python's
   * `Applier._stale_save`): if it was made from the replaced version (it drops the change just
   * applied), it is reconciled three-way against that version, a merge or the conflict rules;
   * else it is a new edit, pushed as it is. */
  private async staleSave(step: StaleSave<Local>, out: Outcome, report: RoundReport, touched: Set<string>): Promise<void> {
    const lc = step.local;
    const path = lc.path;
    const entry = this.state.files[path];
    const data = lc.data;
    if (!entry || entry.deleted || !data) {
      out.back.set(path, lc);
      return;
    }
    const head = await this.base(path);
    const prev = await this.replacedVersion(path);
    if (head === null || isNewEdit(prev, head, data)) {
      out.back.set(path, lc); // an edit of the new version: pushed as it is
      return;
    }
    const author = entry.device || "another device";
    const kind = entry.deviceKind === HUMAN ? HUMAN : "agent";
    const res = resolve(
      path,
      { data, deviceName: this.host.deviceName, deviceKind: this.host.deviceKind },
      { data: head, deviceName: author, deviceKind: kind },
      prev ?? null,
      this.host.now(),
      this.taken,
    );
    out.work = true;
    touched.add(path);
    if (res.copy) {
      // the losing version is safe on disk before the note changes
      await this.host.write(res.copy.path, res.copy.data);
      touched.add(res.copy.path);
    }
    let st: FileStat | null = null;
    if (res.writeLocal) {
      if (res.note === null) await this.host.remove(path);
      else {
        st = await this.host.write(path, res.note);
        this.overwrote(path, data, lc.sha256 ?? "");
      }
    } else if (res.note !== null && sameBytes(res.note, data)) st = lc.stat ?? null;
    if (st !== null && sameBytes(res.note, head)) {
      // back to exactly the remote version: the index says so, nothing to push
      entry.mtime = st.mtime;
      entry.size = st.size;
    } else if (sameBytes(res.note, data)) {
      delete this.state.applied?.[path]; // the save stands as it was: an ordinary edit, pushed now
      out.back.set(path, lc);
    }
    if (res.copy) {
      report.conflicts.push(
        this.conflictInfo(path, res.copy.path, res.outcome === "local_wins" ? this.host.deviceName : author, res.copy.deviceName, res.outcome, res.message),
      );
    } else if (res.outcome === "merged") report.merged.push(path);
    else if (res.outcome === "keep_edit") report.keptEdits.push(path);
  }

  /** The version a recent apply replaced (R15): kept here, or the synced revision on the relay
   * (verified); null when unknown (pruned, too large, binary). */
  private async replacedVersion(path: string): Promise<Uint8Array | null> {
    const rec = this.state.applied?.[path];
    if (!rec) return null;
    if (rec.prevData) return fromBase64(rec.prevData);
    if (rec.prevRev === undefined) return null;
    try {
      const ch = await this.host.remote.record(path, rec.prevRev);
      if (!ch || ch.meta.deleted || ch.meta.sha256 !== rec.prevSha256 || ch.meta.size > APPLIED_TEXT_LIMIT) return null;
      const data = (await this.fetchContents([ch])).get(ch.meta.sha256) ?? null;
      return data && isText(data) ? data : null;
    } catch (err) {
      if (err instanceof CompanionError && !(err instanceof RelayUnreachable)) return null;
      throw err;
    }
  }

}

export function sameBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function writeOpts(m: FileMeta): WriteOptions {
  return { mtime: recordMtimeMs(m), executable: m.executable };
}

/** The modification time (ms) a record gives the file it writes, or undefined when no date
 * can hold it (a record from a far future or past): the time is only shown, so the file keeps
 * the time of its writing rather than failing the write (Python's `atomic.set_mtime`). */
export function recordMtimeMs(m: FileMeta): number | undefined {
  if (m.mtimeNs === null) return undefined;
  const ms = Number(m.mtimeNs / 1_000_000n);
  return Math.abs(ms) <= MAX_DATE_MS ? ms : undefined;
}

const MAX_DATE_MS = 8.64e15; // the range of a JavaScript Date
