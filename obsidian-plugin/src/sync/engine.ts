/**
 * The sync core of one vault copy (companion/sync/round/engine.py), behind the `VaultFS`
 * interface so Obsidian, the headless CLI and tests run the same code. A pass is scan -> plan
 * -> execute -> record, as Python's: this file pulls, scans, admits and records; `plan.ts` is
 * the pure planner, `apply.ts` and `push.ts` carry its steps out.
 *
 * A round is a loop of passes (at most 10). Each pass:
 * 1. pull: records after the cursor, verified; the newest revision of each file this device
 *    lacks is queued in the inbox (still sealed) and the cursor advances, saved together, as
 *    `planAdmission` decides. A record that fails verification, or names no vault path, is
 *    quarantined for its file only;
 * 2. scan the vault (everything, or the paths an event named plus the inbox's); a rename is a
 *    deleted path and a created one with its content, or most of its lines (R17);
 * 3. admit the inbox (`planAdmission` under this device's `HoldPolicy`): agent-authored
 *    changes to Obsidian's behavioural config (and anything that sets the exec bit, or lies
 *    outside the agent's scope) are held, a held rename's old name with it;
 * 4. plan (`planApply`) and apply (`Applier`): renames as renames, deletions, writes; changes on
 *    both sides go through `resolve` (human precedence, three-way merge, conflict copies); a
 *    save soon after an apply is checked as a stale save (R15);
 * 5. plan (`planPush`) and push (`Pusher`): blobs the relay lacks, then records with a
 *    compare-and-swap each; a mass deletion and held or quarantined files wait.
 */

import type { VaultKey } from "../crypto/keys";
import { sha256Hex } from "../crypto/records";
import { fromBase64 } from "../crypto/bytes";
import {
  AuthError,
  ConflictError,
  InputError,
  MassDeleteRefused,
  RelayLostRevision,
  RelayUnreachable,
  RolledBack,
  TamperDetected,
  VaultFolderMissing,
} from "../errors";
import type { RelayClient, WireRecord } from "../relay/client";
import { conflictCopyName, unicodeTwinName, conflictViews, type CopyView, HUMAN, isKeptCopy } from "./conflicts";
import { FOLDER_MARKER, folderMissingMessage, markerText, parseMarker } from "./folder";
import { IGNORE_FILE, IgnoreRules } from "./ignore";
import { isText, similarity, splitLines } from "./merge";
import { fold, normalize, pathProblem, tryNormalize } from "./paths";
import { readAgentNotes } from "./noteread";
import type { Kind } from "./policy";
import { announcementJson, KEYS_DIR } from "../crypto/signing";
import { type Candidate, isRosterPath, rosterCandidate, type Trust } from "./trust";
import { invalidScopes, MAX_SCOPES_BYTES, readScopes, SCOPES_FILE, type Scopes } from "./scopes";
import { MemoryPartials, type PartialStore, type RemoteChange, RemoteVault } from "./remote";
import { RoundReport } from "./report";
import { cursorMark, isRestoredRelay, resyncRestoredRelay, setCursor } from "./resync";
import {
  addConflicts,
  addError,
  emptyState,
  type Entry,
  type Queued,
  type StateStore,
  type SyncState,
} from "./state";
import type { FileStat, VaultFS, WriteOptions } from "./vaultfs";
import { Applier, incoming, type Local, queued, recordMtimeMs } from "./apply";
import {
  type AdmitChange,
  byPath,
  type HoldPolicy,
  type IndexView,
  planAdmission,
  planApply,
  planDecisions,
  planPush,
  RENAME_HELD,
  STALE_SAVE_WINDOW_MS,
} from "./plan";
import { Pusher } from "./push";

export const MAX_PASSES = 10;
export const CHUNK_SIZE = 4 * 1024 * 1024;
/** A renamed-and-edited note keeps at least half its lines (Python's scanner SIMILAR_*). */
const SIMILAR_RATIO = 0.5;
const SIMILAR_MAX_BYTES = 1 << 20;
const SIMILAR_CANDIDATES = 8;
/** Quarantined files asked about again per round (Python's QUARANTINE_RETRIES). */
const QUARANTINE_RETRIES = 50;

export interface DeviceInfo {
  deviceId: string;
  deviceName: string;
  kind: Kind;
}

export interface EngineOptions {
  fs: VaultFS;
  client: RelayClient;
  key: VaultKey;
  vaultId: string;
  device: DeviceInfo;
  store: StateStore;
  partials?: PartialStore;
  /** Extra ignore patterns from this device's settings. */
  ignore?: string[];
  /** This device's own files that never sync (plugin state, its settings file). */
  localIgnore?: string[];
  configDir?: string;
  massDeleteRatio?: number;
  /** Extra paths held when an agent changes them (gitignore syntax; Python's sync.hold_patterns). */
  holdPatterns?: string[];
  chunkSize?: number;
  maxFileBytes?: number;
  now?: () => Date;
  /** The clock the vault's modification times use, in ms (Date.now for a real disk): when a
   * remote change was applied, for the stale-save rule (R15). */
  clock?: () => number;
  /** This device's key and anchor (trust.ts): records it seals are signed, and with an anchor
   * the roster decides who wrote what it opens. */
  trust?: Trust | null;
}

export interface HistoryRow {
  rev: number;
  time: number | null;
  device: string;
  kind: string;
  size: number;
  deleted: boolean;
  sha256: string;
  renameFrom: string | null;
  error?: string;
}

/** What admission reads of a verified change (plan.ts `AdmitChange`). */
function admitChange(ch: RemoteChange): AdmitChange<RemoteChange> {
  return {
    fileId: ch.fileId,
    rev: ch.rev,
    path: ch.meta.path,
    deleted: ch.meta.deleted,
    sha256: ch.meta.sha256,
    renameFrom: ch.meta.renameFrom ?? null,
    executable: ch.meta.executable,
    authorKind: ch.kind,
    deviceId: ch.deviceId,
    authorName: ch.deviceName,
    change: ch,
  };
}

function wire(q: Queued): WireRecord {
  return {
    fileId: q.fileId,
    rev: q.rev,
    parentRev: q.parentRev,
    sealed: fromBase64(q.sealed),
    blobs: [],
    seq: q.seq,
    deviceId: q.deviceId,
    deviceKind: q.relayKind,
    deviceName: q.relayName,
    committedAt: q.committedAt,
  };
}

export class SyncEngine {
  readonly fs: VaultFS;
  readonly remote: RemoteVault;
  readonly device: DeviceInfo;
  state: SyncState = emptyState();
  readonly ignore: IgnoreRules;
  private readonly store: StateStore;
  private readonly partials: PartialStore;
  private readonly configDir: string;
  readonly massDeleteRatio: number;
  readonly holdPatterns: string[];
  readonly chunkSize: number;
  readonly maxFileBytes: number;
  private readonly now: () => Date;
  private readonly clock: () => number;
  private verified = new Map<string, RemoteChange>();
  /** Agents' notes the hold rules read this pass, by SHA-256 (`readAgentNotes`): what the
   * rules see, and the real contents kept for the apply. */
  private noteRead = new Map<string, Uint8Array>();
  /** The scope rule's file, read by each apply that has changes to decide (`loadScopes`). */
  private scopes: Scopes | null = null;
  private noteCache = new Map<string, Uint8Array>();
  /** Paths whose remote change could not be written this round: not retried until the next. */
  private readonly unwritable = new Set<string>();
  private running: Promise<unknown> = Promise.resolve();
  private loaded = false;
  stopped = false;
  /** Work after each round that settles (the review's, src/review/rounds.ts): each returns the
   * vault paths it wrote, which one more round syncs (companion/sync/round/engine.py `after_round`). */
  readonly afterRound: ((engine: SyncEngine, report: RoundReport) => Promise<Iterable<string>>)[] = [];
  private inAfterRound = false;
  private readonly applier: Applier;
  private readonly pusher: Pusher;

  constructor(opts: EngineOptions) {
    this.fs = opts.fs;
    this.remote = new RemoteVault(opts.client, opts.key, opts.vaultId);
    this.remote.trust = opts.trust ?? null;
    this.device = opts.device;
    this.store = opts.store;
    this.partials = opts.partials ?? new MemoryPartials();
    this.configDir = opts.configDir ?? ".obsidian";
    this.ignore = new IgnoreRules(opts.ignore ?? [], opts.localIgnore ?? []);
    this.massDeleteRatio = opts.massDeleteRatio ?? 0.5;
    this.holdPatterns = opts.holdPatterns ?? [];
    this.chunkSize = opts.chunkSize ?? CHUNK_SIZE;
    this.maxFileBytes = opts.maxFileBytes ?? 200 * 1024 * 1024;
    this.now = opts.now ?? (() => new Date());
    this.clock = opts.clock ?? (() => Date.now());
    // the executors (apply.ts, push.ts) act through this engine's folder-guarded writes
    const engine = this;
    this.applier = new Applier({
      fs: this.fs,
      remote: this.remote,
      partials: this.partials,
      deviceName: this.device.deviceName,
      deviceKind: this.device.kind,
      get state() {
        return engine.state;
      },
      get noteCache() {
        return engine.noteCache;
      },
      unwritable: this.unwritable,
      now: () => this.now(),
      clock: () => this.clock(),
      write: (path, data, o) => this.write(path, data, o),
      remove: (path) => this.remove(path),
      rename: (from, to) => this.rename(from, to),
      guard: () => this.guard(),
    });
    this.pusher = new Pusher({
      fs: this.fs,
      remote: this.remote,
      get state() {
        return engine.state;
      },
      deviceId: this.device.deviceId,
      deviceName: this.device.deviceName,
      deviceKind: this.device.kind,
      get chunkSize() {
        return engine.chunkSize;
      },
      get stopped() {
        return engine.stopped;
      },
      quarantine: (fileId, rev, reason, report) => this.quarantine(fileId, rev, reason, report),
      verified: (path, head) => void this.verified.set(path, head),
    });
  }

  /** The planner's view of this copy's index (`plan.ts` `IndexView`). */
  private indexView(): IndexView<Entry> {
    const files = this.state.files;
    let folds: Map<string, string[]> | null = null;
    return {
      get: (p) => files[p],
      pathsWithFold: (key) => {
        if (folds === null) {
          folds = new Map();
          for (const [p, e] of Object.entries(files)) {
            if (e.deleted) continue;
            const k = fold(p);
            folds.set(k, [...(folds.get(k) ?? []), p]);
          }
          for (const v of folds.values()) v.sort(byPath);
        }
        return [...(folds.get(key) ?? [])];
      },
    };
  }

  get client(): RelayClient {
    return this.remote.client;
  }

  async load(): Promise<void> {
    if (this.loaded) return;
    this.state = (await this.store.load()) ?? emptyState();
    this.loaded = true;
  }

  private async save(): Promise<void> {
    await this.store.save(this.state);
  }

  /** Run `fn` after any round in progress (one round at a time). */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.running.then(fn, fn);
    this.running = next.catch(() => undefined);
    return next;
  }

  // ------------------------------------------------------------------ the round

  round(opts: { paths?: string[]; allowMassDelete?: boolean; maxPasses?: number } = {}): Promise<RoundReport> {
    return this.exclusive(async () => {
      const report = await this.doRound(opts);
      if (report.converged && this.afterRound.length && !this.inAfterRound && !this.stopped) await this.runAfterRound(report, opts);
      return report;
    });
  }

  /** The hooks, then one more round for what they wrote (its work added to `report`). */
  private async runAfterRound(report: RoundReport, opts: { allowMassDelete?: boolean; maxPasses?: number }): Promise<void> {
    this.inAfterRound = true;
    try {
      const wrote = new Set<string>();
      for (const hook of this.afterRound) for (const p of await hook(this, report)) wrote.add(p);
      if (!wrote.size) return;
      // written on purpose after the round: the next scan reads them whatever their size and
      // mtime, and no stale-save rule applies to them (Python drops its "applied" rows too)
      this.dropApplied(wrote);
      for (const p of wrote) {
        const e = this.state.files[p];
        if (e) e.mtime = -1;
      }
      const more = await this.doRound({ ...opts, paths: [...wrote] });
      report.uploaded.push(...more.uploaded);
      report.downloaded.push(...more.downloaded);
      report.deletedRemote.push(...more.deletedRemote);
      report.conflicts.push(...more.conflicts);
      report.passes += more.passes;
      report.converged = more.converged;
    } finally {
      this.inAfterRound = false;
    }
  }

  /** Write (or delete, `null`) a vault file on this device's own behalf between rounds (the
   * review's outcomes and reverts): guarded as every write of the round is. */
  async writeOwn(path: string, data: Uint8Array | null): Promise<void> {
    this.dropApplied([path]);
    if (data !== null) await this.write(path, data);
    else if (await this.fs.stat(path)) await this.remove(path);
  }

  private async doRound(opts: { paths?: string[]; allowMassDelete?: boolean; maxPasses?: number }): Promise<RoundReport> {
    await this.load();
    const t0 = Date.now();
    const report = new RoundReport();
    // back after the folder was missing: everything is scanned again, whatever the round was for
    const wasMissing = this.state.state === "vault_missing";
    this.state.state = "syncing";
    this.state.lastAttempt = Date.now() / 1000;
    this.unwritable.clear();
    try {
      await this.ensureFolder();
      await this.checkIgnoreRules();
      this.pruneApplied();
      let scope: Set<string> | null =
        opts.paths && !wasMissing ? new Set(opts.paths.map((p) => tryNormalize(p)).filter((p): p is string => !!p)) : null;
      for (let i = 0; i < (opts.maxPasses ?? MAX_PASSES); i++) {
        if (this.stopped) break;
        report.passes++;
        if (i === 0) for (const t of await this.retryQuarantined(report)) scope?.add(t);
        const { work, touched } = await this.pass(scope, !!opts.allowMassDelete, report);
        if (!work) {
          report.converged = !report.heldDeletes;
          break;
        }
        if (scope) for (const t of touched) scope.add(t);
        else scope = null;
      }
      report.pendingDownload = Object.keys(this.state.inbox).length;
      report.liveFiles = this.liveCount();
      // what `status` lists as not synced from here: a full scan says all of it, a scoped one
      // only about the paths it looked at (as Python's `not_synced`)
      const listed = opts.paths && !wasMissing ? { ...(this.state.notSynced ?? {}) } : {};
      if (opts.paths && !wasMissing) for (const p of opts.paths) delete listed[p];
      for (const n of report.notSynced) listed[n.path] = n.reason;
      this.state.notSynced = listed;
    } catch (e) {
      report.elapsedS = (Date.now() - t0) / 1000;
      if (e instanceof VaultFolderMissing) {
        // nothing derived from this round's scan counts: back to the state saved before it
        // (the queued remote changes, the cursor), then only the condition is recorded
        this.state = (await this.store.load()) ?? emptyState();
        this.verified.clear();
        this.state.state = "vault_missing";
        this.state.lastAttempt = Date.now() / 1000;
        addError(this.state, "vault_missing", e.message);
        await this.save();
        throw e;
      }
      addConflicts(this.state, report.conflicts);
      const kind =
        e instanceof RelayUnreachable ? "offline" : e instanceof AuthError ? "auth" : e instanceof TamperDetected ? "tamper" : "error";
      this.state.state = kind === "offline" ? "offline" : "error";
      addError(this.state, kind, (e as Error).message);
      await this.save();
      if (e instanceof TamperDetected) {
        const err = new (e.constructor as typeof TamperDetected)(
          `refused data from the relay: ${e.message}. Nothing from it was written to the vault`,
        );
        throw err;
      }
      throw e;
    }
    report.elapsedS = (Date.now() - t0) / 1000;
    addConflicts(this.state, report.conflicts);
    this.state.pending = { upload: report.pendingUpload, download: report.pendingDownload };
    if (report.converged && !report.problems.length) {
      this.state.lastSync = Date.now() / 1000;
      this.state.state = Object.keys(this.state.held).length ? "held" : report.conflicts.length ? "conflict" : "synced";
    } else this.state.state = "pending";
    if (report.heldDeletes) {
      const err = new MassDeleteRefused(report.heldDeletes, Math.max(report.heldOf, report.heldDeletes), this.massDeleteRatio);
      addError(this.state, "mass_delete", err.message);
      this.state.state = "error";
      await this.save();
      throw err;
    }
    await this.save();
    return report;
  }

  /** Forget the applies too old for a save to be stale (Python's `prune_applied`). */
  private pruneApplied(): void {
    const since = this.clock() - STALE_SAVE_WINDOW_MS;
    for (const [p, a] of Object.entries(this.state.applied ?? {})) if (a.appliedAt < since) delete this.state.applied![p];
  }

  /** Written here on purpose (the review's outcomes, a restore): not an editor saving a stale
   * buffer over what a round just applied (Python's `drop_applied`). */
  private dropApplied(paths: Iterable<string>): void {
    for (const p of paths) delete this.state.applied?.[p];
  }

  private liveCount(): number {
    let n = 0;
    for (const e of Object.values(this.state.files)) if (!e.deleted) n++;
    return n;
  }

  // ------------------------------------------------------------------ the vault folder

  /** "ok": the folder at the vault's path is this copy's (its marker names this vault and
   * device); "unmarked": no marker, but the folder holds a file the state knows as live, or the
   * state knows none (a copy from before markers, a fresh one); else "missing" (sync/folder.ts). */
  async folderStatus(): Promise<"ok" | "unmarked" | "missing"> {
    await this.load();
    if (this.fs.rootExists && !(await this.fs.rootExists())) return "missing";
    const st = await this.fs.stat(FOLDER_MARKER);
    if (st) {
      let m = null;
      try {
        m = parseMarker(await this.fs.read(FOLDER_MARKER));
      } catch {
        m = null;
      }
      return m && m.vault_id === this.remote.vaultId && m.device_id === this.device.deviceId ? "ok" : "missing";
    }
    const live = Object.entries(this.state.files).filter(([, e]) => !e.deleted);
    if (!live.length) return "unmarked";
    for (const [p] of live) if (await this.fs.stat(p)) return "unmarked";
    return "missing";
  }

  private folderMissing(): VaultFolderMissing {
    return new VaultFolderMissing(folderMissingMessage(this.fs.location ?? "the vault folder"));
  }

  /** At the start of a round: the folder must be this copy's (an unmarked one gets its marker). */
  private async ensureFolder(): Promise<void> {
    const s = await this.folderStatus();
    if (s === "missing") throw this.folderMissing();
    if (s === "unmarked") {
      await this.fs.write(FOLDER_MARKER, new TextEncoder().encode(markerText(this.remote.vaultId, this.device.deviceId, Date.now() / 1000)));
      if ((await this.folderStatus()) !== "ok") throw this.folderMissing();
    }
  }

  /** Before anything is written, deleted or renamed here, or sent from a scan. */
  private async guard(): Promise<void> {
    if ((await this.folderStatus()) !== "ok") throw this.folderMissing();
  }

  private async write(path: string, data: Uint8Array, opts?: WriteOptions): Promise<FileStat> {
    await this.guard();
    return this.fs.write(path, data, opts);
  }

  private async remove(path: string): Promise<void> {
    await this.guard();
    await this.fs.remove(path);
  }

  private async rename(from: string, to: string): Promise<FileStat> {
    await this.guard();
    return this.fs.rename(from, to);
  }

  private async checkIgnoreRules(): Promise<void> {
    let text: string | null = null;
    const st = await this.fs.stat(IGNORE_FILE);
    if (st) {
      try {
        text = new TextDecoder().decode(await this.fs.read(IGNORE_FILE));
      } catch {
        text = null;
      }
    }
    this.ignore.load(text);
    const sig = this.ignore.signature;
    if (this.state.ignoreSignature !== sig) {
      // files once skipped may count now: read the relay's feed again
      if (this.state.ignoreSignature) this.state.cursor = 0;
      this.state.ignoreSignature = sig;
    }
  }

  // ------------------------------------------------------------------ device keys, roster

  get trust(): Trust | null {
    return this.remote.trust;
  }

  /** Whether this copy holds a roster file (synced, or written here) or this device has an
   * anchor (docs/trust.md §1): until then nobody can
   * vouch, and the vault stays as version 1 left it (no announcement), as on the laptop. */
  private hasRoster(): boolean {
    if (this.extraRosterPaths.size || this.remote.trust?.anchored) return true;
    return Object.entries(this.state.files).some(([p, e]) => !e.deleted && isRosterPath(p));
  }

  /** This device's key announcement (`.companion/keys/<device_id>.json`, docs/trust.md §1),
   * written once the vault has a roster, when missing or different, so it syncs like any
   * file; its path when written. */
  async ensureAnnouncement(force = false): Promise<string | null> {
    const t = this.remote.trust;
    if (!t?.key || !(force || this.hasRoster())) return null;
    const path = `${KEYS_DIR}/${this.device.deviceId}.json`;
    const want = new TextEncoder().encode(announcementJson(this.device.deviceId, t.key.publicKey, this.device.deviceName));
    try {
      if (await this.fs.stat(path)) {
        try {
          const have = await this.fs.read(path);
          if (have.length === want.length && have.every((b, i) => b === want[i])) return null;
        } catch {
          // unreadable: written again below
        }
      }
      await this.write(path, want);
    } catch (e) {
      // a folder (or anything unwritable) where the announcement goes does not stop the round
      // (as the laptop); the person can still vouch once it is fixed
      if (e instanceof VaultFolderMissing) throw e;
      return null;
    }
    return path;
  }

  /** The roster files this copy holds (synced or written here), as evaluation candidates. */
  async localRoster(): Promise<Candidate[]> {
    const paths = new Set(Object.entries(this.state.files).filter(([p, e]) => !e.deleted && isRosterPath(p)).map(([p]) => p));
    for (const st of this.extraRosterPaths) paths.add(st);
    const out: Candidate[] = [];
    for (const p of [...paths].sort()) {
      let data: Uint8Array;
      try {
        if (!(await this.fs.stat(p))) continue;
        data = await this.fs.read(p);
      } catch {
        continue;
      }
      out.push(rosterCandidate(p, data));
    }
    return out;
  }

  /** Roster files written here and not synced yet (`trust-vouch`, `trust-init`). */
  readonly extraRosterPaths = new Set<string>();

  /** Evaluate the roster again from this copy's files, at the start of every pass: a record
   * is judged against the roster this copy holds when it opens it (docs/trust.md §5), so a
   * device's changes arriving in the same pull as its first entry count as an agent's. */
  async refreshTrust(): Promise<void> {
    const t = this.remote.trust;
    if (!t?.anchored) return;
    t.refresh(await this.localRoster());
  }

  private async pass(scope: Set<string> | null, allowMassDelete: boolean, report: RoundReport) {
    const touched = new Set<string>();
    // after a pass that brought the first roster file: announce this device's key
    const announced = await this.ensureAnnouncement();
    if (announced && scope) scope.add(announced);
    const pulled = await this.pull(report, scope);
    const inboxPaths = Object.keys(this.state.inbox);
    const local = await this.scan(scope ? new Set([...scope, ...inboxPaths]) : null, report);
    await this.guard(); // the scan was of this copy's folder: no deletion from another one
    const { admitted, todo } = await this.admitInbox(local, report);
    // plan (plan.ts, as Python's planner decides), then carry it out (apply.ts, push.ts)
    const inbox = new Map([...todo].map(([p, ch]) => [p, incoming(p, ch)]));
    const applied = new Map(Object.entries(this.state.applied ?? {}).map(([p, a]) => [p, { path: p, prevSha256: a.prevSha256, appliedAt: a.appliedAt }]));
    const plan = planApply(inbox, local, this.indexView(), {
      applied,
      caseInsensitive: !!this.fs.caseInsensitive,
      agentTwins: this.device.kind === HUMAN,
      window: STALE_SAVE_WINDOW_MS,
    });
    const done = plan.steps.length ? await this.applier.run(plan, plan.push, report, touched) : { work: false, back: new Map<string, Local>() };
    for (const [p, c] of done.back) plan.push.set(p, c);
    let pushed: boolean;
    try {
      pushed = await this.push(plan.push, allowMassDelete, report, touched);
    } catch (e) {
      // a commit the relay could not place on anything at or after this device's revision: a
      // restore the pull did not notice (R3). Resync as the pull does, once a round: the same
      // refusal after that stops it (Python's `SyncEngine._pass`)
      if (!(e instanceof RelayLostRevision) || report.relayRestored) throw e;
      const again = new Set<string>();
      await this.pull(report, again, true);
      for (const p of [...again, ...Object.keys(this.state.inbox)]) touched.add(p);
      await this.save();
      return { work: true, touched };
    }
    await this.save();
    const waiting = Object.keys(this.state.inbox).some((p) => !this.unwritable.has(p));
    return { work: pulled > 0 || admitted || done.work || pushed || waiting, touched };
  }

  // ------------------------------------------------------------------ pulling

  private quarantine(fileId: string, rev: number, reason: string, report: RoundReport): void {
    const old = this.state.quarantine[fileId];
    if (old && old.rev >= rev) return;
    if ((this.state.dismissed?.[fileId] ?? -1) >= rev) return; // the person dismissed this one
    const path = Object.entries(this.state.files).find(([, e]) => e.fileId === fileId)?.[0] ?? null;
    this.state.quarantine[fileId] = { fileId, rev, path, reason, time: Date.now() / 1000, reported: false };
    report.quarantined.push(path ?? `file ${fileId.slice(0, 12)}`);
  }

  /** Once per round, ask the relay again for the head of up to QUARANTINE_RETRIES quarantined
   * files (Python's `Puller.retry_quarantined`, docs/protocol.md R9): a record damaged in
   * transit, or a file since superseded, heals on its own. A head the relay no longer has
   * means its feed listed a file that is not there: the feed is read again from the start.
   * Returns the paths admitted again. */
  private async retryQuarantined(report: RoundReport): Promise<string[]> {
    const admitted: string[] = [];
    const rows = Object.values(this.state.quarantine).slice(0, QUARANTINE_RETRIES);
    for (const q of rows) {
      const rec = await this.remote.client.head(q.fileId);
      if (rec === null) {
        delete this.state.quarantine[q.fileId];
        this.state.cursor = 0;
        continue;
      }
      const ch = await this.remote.tryOpen(rec);
      if ("reason" in ch) {
        if (ch.rev !== q.rev) this.quarantine(ch.fileId, ch.rev, ch.reason, report);
        continue;
      }
      if (ch.fileId !== q.fileId) continue;
      const path = tryNormalize(ch.meta.path);
      if (!path) continue; // still no vault path: it stays quarantined with its reason
      delete this.state.quarantine[q.fileId];
      const entry = this.state.files[path];
      if (entry && ch.rev <= entry.rev) continue;
      // admitted as a head is (Python's `admit_heads`): judged alone by the hold rules; a blob
      // that does not open quarantines it again
      this.state.inbox[path] = { ...queued(ch), head: true };
      this.verified.set(path, ch);
      admitted.push(path);
    }
    if (rows.length) await this.save();
    return admitted;
  }

  /** `restored`: the relay is known to have been restored (a commit it could not place, `pass`):
   * resync with it without asking. */
  private async pull(report: RoundReport, scope: Set<string> | null = null, restored = false): Promise<number> {
    const since = this.state.cursor;
    await this.refreshTrust();
    let pulled = restored
      ? null
      : await this.remote.pull(since, 0, cursorMark(this.state)).catch((e: unknown) => {
          if (isRestoredRelay(e)) return null;
          throw e;
        });
    if (!pulled) {
      // the relay was reset or restored from a backup (its sequence is behind the cursor, or
      // it holds another record there): read its whole feed again, renumber what it holds
      // and offer again what it lost, never older than this device's (R3)
      pulled = await this.remote.pull(0);
      const reoffered = await resyncRestoredRelay(this.state, pulled.changes, (p, rev) => this.remote.record(p, rev));
      if (scope) for (const p of reoffered) scope.add(p);
      report.relayRestored = true;
      restored = true; // what the inbox held before is no measure of the relay's feed now
    }
    for (const b of pulled.bad) this.quarantine(b.fileId, b.rev, b.reason, report);
    const newest = new Map<string, RemoteChange>();
    for (const ch of pulled.changes) {
      const before = newest.get(ch.fileId);
      if (before && ch.rev < before.rev) {
        throw new RolledBack(`the relay listed revision ${ch.rev} of a file after its revision ${before.rev}`);
      }
      newest.set(ch.fileId, ch);
    }
    // A genuine but older revision than this device has seen: the relay is replaying. The
    // round stops before anything of this feed is queued, as Python's does (R3), and `sync`
    // says the relay's data was refused; the cursor stays, so the feed is read again.
    for (const ch of newest.values()) {
      const path = tryNormalize(ch.meta.path);
      if (!path) continue;
      const best = Math.max(this.state.files[path]?.rev ?? 0, restored ? 0 : (this.state.inbox[path]?.rev ?? 0));
      if (best && ch.rev < best) {
        throw new RolledBack(`${path}: the relay offered revision ${ch.rev}, older than revision ${best} this device has seen`);
      }
    }
    // Admission (plan.ts `planAdmission`, Python's `plan_admission`): the newest change of each
    // file is queued, or skipped (already here, already queued, held at that revision,
    // ignored); a record naming no path a device can hold (absolute, "..", a name over 255
    // bytes) is quarantined with the reason (status lists it, `sync` exits 1), never skipped
    // silently. The hold rules run
    // when the inbox is opened (`admitInbox`), over the same planner, with the agents' notes
    // read once for both the rules and the apply.
    const queuedRevs = new Map<string, number>(restored ? [] : Object.entries(this.state.inbox).map(([p, q]) => [p, q.rev]));
    const plan = planAdmission(pulled.changes.map(admitChange), [], this.indexView(), {
      queued: queuedRevs,
      held: new Map(Object.entries(this.state.held).map(([p, h]) => [p, h.rev])),
      ignored: (p) => this.ignore.isIgnored(p),
      holds: { ...this.holdPolicy(), enabled: false },
    });
    for (const q of plan.quarantine) this.quarantine(q.fileId, q.rev, q.reason, report);
    // a file whose newest record verified is out of quarantine, at any revision (R9): the
    // record is admitted as usual, so what is wrong with it still (its content) quarantines
    // it again; a record naming no vault path never verifies here, so it stays listed
    for (const fid of plan.healed) delete this.state.quarantine[fid];
    let n = 0;
    for (const { path, change } of plan.enqueue) {
      this.state.inbox[path] = queued(change.change);
      this.verified.set(path, change.change);
      n++;
    }
    if (pulled.seq !== this.state.cursor) setCursor(this.state, pulled.seq, pulled.mark);
    await this.save();
    return n;
  }

  // ------------------------------------------------------------------ scanning

  private async scan(scope: Set<string> | null, report: RoundReport): Promise<Map<string, Local>> {
    const listing: FileStat[] = [];
    if (scope) {
      for (const p of scope) {
        const st = await this.fs.stat(p);
        if (st) listing.push(st);
      }
    } else listing.push(...(await this.fs.list()));
    const seen = new Map<string, FileStat>();
    const onDisk = new Set(listing.map((s) => s.path));
    for (let st of listing) {
      let p = tryNormalize(st.path);
      if (!p) {
        // a name no device could share (a control or bidirectional character, a backslash, a
        // look-alike dot): listed each round until it is renamed, never dropped silently (R13)
        const line = `${pathProblem(st.path) ?? "not a vault path"}; not synced until it is renamed`;
        if (!report.skipped.includes(line)) {
          report.skipped.push(line); // once per round, not per pass
          report.notSynced.push({ path: st.path, reason: pathProblem(st.path) ?? "not a vault path" });
        }
        continue;
      }
      if (this.ignore.isIgnored(p)) continue;
      if (p !== st.path) {
        // a decomposed (NFD) name, e.g. from macOS: rename it to its NFC spelling in place;
        // when the NFC spelling exists too, both are kept, this one under a new name (R10)
        const twin = onDisk.has(p) || seen.has(p);
        const nfc = p;
        if (twin) p = unicodeTwinName(nfc, (c) => onDisk.has(c) || seen.has(c) || this.applier.taken(c));
        try {
          st = await this.rename(st.path, p);
        } catch (e) {
          if (e instanceof VaultFolderMissing) throw e;
          report.skipped.push(`${st.path}: could not be renamed to ${p} (${e instanceof Error ? e.message : String(e)}); not synced`);
          continue;
        }
        if (twin) {
          const msg = `${nfc}: another file had the same name in decomposed Unicode (as macOS writes it); both are kept, that one as '${p}'`;
          report.conflicts.push(this.applier.conflictInfo(nfc, p, this.device.deviceName, this.device.deviceName, "unicode_twin", msg));
        }
      }
      seen.set(p, st);
    }
    const out = new Map<string, Local>();
    const created: Local[] = [];
    for (const [p, st] of seen) {
      const e = this.state.files[p];
      const live = e && !e.deleted;
      if (live && !e.force && e.size === st.size && e.mtime === st.mtime) continue;
      if (st.size > this.maxFileBytes) {
        report.skipped.push(`${p}: larger than the ${Math.round(this.maxFileBytes / 1048576)} MB limit, not synced`);
        continue;
      }
      let data: Uint8Array;
      try {
        data = await this.fs.read(p);
      } catch {
        continue;
      }
      const sha = await sha256Hex(data);
      if (live && !e.force && sha === e.sha256) {
        e.mtime = st.mtime;
        e.size = st.size;
        continue;
      }
      const c: Local = { kind: live ? "modified" : "created", path: p, stat: st, mtime: st.mtime, data, sha256: sha };
      out.set(p, c);
      if (!live) created.push(c);
    }
    const candidates = scope ? [...scope] : Object.keys(this.state.files);
    const deleted: string[] = [];
    for (const p of candidates) {
      const e = this.state.files[p];
      if (!e || e.deleted || seen.has(p) || this.ignore.isIgnored(p)) continue;
      if (scope && (await this.fs.stat(p))) continue;
      out.set(p, { kind: "deleted", path: p });
      deleted.push(p);
    }
    // renames: a deleted path and a created one with the same content
    const free = new Set(deleted);
    for (const c of created) {
      const same = [...free].filter((d) => this.state.files[d].sha256 === c.sha256);
      if (!same.length) continue;
      const folder = (x: string) => x.slice(0, Math.max(0, x.lastIndexOf("/")));
      const from =
        same.find((d) => fold(d) === fold(c.path)) ?? same.find((d) => folder(d) === folder(c.path)) ?? (same.length === 1 ? same[0] : same.sort()[0]);
      free.delete(from);
      c.renameFrom = from;
      out.get(from)!.renameTo = c.path;
    }
    // a rename that also edited the note (Python's scanner, `edited_source`, R17)
    const left = [...free].sort(byPath);
    for (const c of [...created].sort((x, y) => byPath(x.path, y.path))) {
      if (c.renameFrom || !left.length) continue;
      const from = await this.editedSource(c, left);
      if (from === null) continue;
      left.splice(left.indexOf(from), 1);
      c.renameFrom = from;
      out.get(from)!.renameTo = c.path;
    }
    return out;
  }

  /** A deleted note `c` was renamed from and then edited (Python's scanner `edited_source`):
   * the same name in another folder, or the same folder under another name, and at least half
   * its lines in common with the version last synced (read from the relay's history, as every
   * merge base of the plugin, R25), the best of the first SIMILAR_CANDIDATES. */
  private async editedSource(c: Local, deleted: string[]): Promise<string | null> {
    const data = c.data;
    if (!data || data.length > SIMILAR_MAX_BYTES || !isText(data)) return null;
    const split = (p: string) => {
      const i = p.lastIndexOf("/");
      return i < 0 ? ["", p] : [p.slice(0, i), p.slice(i + 1)];
    };
    const [folder, name] = split(c.path);
    const cands = deleted.filter((d) => split(d)[1] === name);
    cands.push(...deleted.filter((d) => split(d)[0] === folder && !cands.includes(d)));
    if (!cands.length) return null;
    const lines = splitLines(new TextDecoder().decode(data));
    let best: string | null = null;
    let bestRatio = SIMILAR_RATIO;
    for (const cand of cands.slice(0, SIMILAR_CANDIDATES)) {
      const old = await this.applier.base(cand);
      if (old === null || !isText(old)) continue;
      const ratio = similarity(splitLines(new TextDecoder().decode(old)), lines);
      if (ratio >= bestRatio) [best, bestRatio] = [cand, ratio];
    }
    return best;
  }

  // ------------------------------------------------------------------ applying

  private async openQueued(path: string, q: Queued, report: RoundReport): Promise<RemoteChange | null> {
    const cached = this.verified.get(path);
    if (cached && cached.fileId === q.fileId && cached.rev === q.rev) return cached;
    const o = await this.remote.tryOpen(wire(q));
    if ("reason" in o) {
      this.quarantine(o.fileId, o.rev, o.reason, report);
      return null;
    }
    return o;
  }

  /** The hold rules of this device (plan.ts `HoldPolicy`, companion/sync/round/holds.py). */
  private holdPolicy(): HoldPolicy {
    return { deviceKind: this.device.kind, enabled: true, patterns: this.holdPatterns, scopes: this.scopes };
  }

  /** The files known here in top-level hidden folders, held ones too (with the incoming paths,
   * they tell which folders have Obsidian's config shape: `configFolders`). */
  private hiddenKnown(): string[] {
    const known = Object.entries(this.state.files)
      .filter(([p, e]) => !e.deleted && p.startsWith(".") && p.includes("/"))
      .map(([p]) => p);
    return [...known, ...Object.keys(this.state.held)];
  }

  /** This device's copy of `.companion/scopes.json` (scopes.ts; null: none, so no scope rule). */
  private async loadScopes(): Promise<Scopes | null> {
    const st = await this.fs.stat(SCOPES_FILE);
    if (!st) return null;
    if (st.size > MAX_SCOPES_BYTES) return invalidScopes("larger than 1 MB");
    try {
      return readScopes(new TextDecoder().decode(await this.fs.read(SCOPES_FILE)));
    } catch (e) {
      return invalidScopes(`unreadable (${e instanceof Error ? e.message : String(e)})`);
    }
  }

  /** The queued remote changes, opened and verified, through the hold rules (Python's
   * admission, `plan_admission`): the changes to apply this pass, by path. A held change's
   * local counterpart waits with it (out of `local`). */
  private async admitInbox(local: Map<string, Local>, report: RoundReport): Promise<{ admitted: boolean; todo: Map<string, RemoteChange> }> {
    // what could not be written this round stays queued until the next
    const paths = Object.keys(this.state.inbox).filter((p) => !this.unwritable.has(p)).sort();
    this.noteCache.clear();
    this.noteRead.clear();
    if (!paths.length) return { admitted: false, todo: new Map() };
    const todo = new Map<string, RemoteChange>();
    const opened: [string, RemoteChange][] = [];
    const sealed = new Map<string, Queued>();
    for (const p of paths) {
      const q = this.state.inbox[p];
      const ch = await this.openQueued(p, q, report);
      delete this.state.inbox[p];
      if (!ch) continue;
      const e = this.state.files[p];
      if (e && ch.rev <= e.rev) continue;
      opened.push([p, ch]);
      sealed.set(p, q);
    }
    const admitted = new Set(opened.filter(([p]) => sealed.get(p)!.admitted).map(([p]) => p));
    const notes = await readAgentNotes(this.remote, this.partials, this.device.kind, opened.filter(([p]) => !admitted.has(p)));
    for (const [, ch, why] of notes.bad) this.quarantine(ch.fileId, ch.rev, why, report);
    const unverified = new Set(notes.bad.map(([p]) => p));
    this.noteRead = notes.read;
    this.noteCache = notes.cache;
    this.scopes = this.device.kind === "human" && opened.length ? await this.loadScopes() : null;
    // the hold rules (plan.ts `planAdmission` with this device's `HoldPolicy`, a held rename's
    // tombstone with it); what was admitted already (accepted, put back by the apply) is not
    // judged again
    const judged = opened.filter(([p]) => !unverified.has(p) && !admitted.has(p));
    const others = opened.filter(([p]) => unverified.has(p) || admitted.has(p)).map(([p]) => p);
    // a head that beat this device's push is judged on its own (Python's `admit_heads`, with
    // `admit_head` only): it met this device's own change of that path, which must not wait
    // as the old name of an agent's held rename (R4)
    const isHead = ([p]: [string, RemoteChange]) => !!sealed.get(p)!.head;
    const opts = {
      holds: this.holdPolicy(),
      known: [...this.hiddenKnown(), ...others, ...judged.filter(isHead).map(([p]) => p)],
      contents: this.noteRead,
      configDir: this.configDir,
    };
    const plan = planAdmission(judged.filter((j) => !isHead(j)).map(([, ch]) => admitChange(ch)), [], this.indexView(), {
      ...opts,
      held: new Map(Object.entries(this.state.held).map(([p, h]) => [p, h.rev])),
    });
    for (const j of judged.filter(isHead)) plan.hold.push(...planAdmission([admitChange(j[1])], [], this.indexView(), opts).hold);
    const whys = new Map<string, string>(plan.hold.map((h) => [h.path, h.reason]));
    for (const p of plan.release) delete this.state.held[p];
    for (const [p, ch] of opened) {
      if (unverified.has(p)) continue;
      const q = sealed.get(p)!;
      const why = whys.get(p);
      if (why) {
        this.state.held[p] = {
          ...q,
          path: p,
          reason: why,
          deleted: ch.meta.deleted,
          size: ch.meta.size,
          deviceName: ch.deviceName,
          deviceKind: ch.kind,
          renameFrom: ch.meta.renameFrom,
          time: Date.now() / 1000,
        };
        report.held.push(p);
        local.delete(p);
        continue;
      }
      todo.set(p, ch);
    }
    this.verified.clear();
    return { admitted: true, todo };
  }

  // ------------------------------------------------------------------ pushing

  private blocked(path: string, fid: string | undefined): boolean {
    if (this.state.held[path]) return true;
    return !!(fid && this.state.quarantine[fid]);
  }

  /** Plan the push of what the apply left (`planPush`) and carry it out (push.ts). */
  private async push(local: Map<string, Local>, allowMassDelete: boolean, report: RoundReport, touched: Set<string>): Promise<boolean> {
    report.heldDeletes = 0;
    const blocked: string[] = [];
    for (const [p] of local) {
      const fid = this.state.files[p]?.fileId || (await this.remote.fileId(p));
      if (this.blocked(p, fid)) blocked.push(p);
    }
    const pending = local.size - blocked.length;
    report.pendingUpload = pending;
    if (!pending) return false;
    await this.guard();
    const plan = planPush(local, this.indexView(), { blocked, live: this.liveCount(), massDeleteRatio: this.massDeleteRatio, allowMassDelete });
    report.heldDeletes = plan.heldDeletes.length;
    report.heldOf = plan.live;
    if (!plan.uploads.length && !plan.tombstones.length) return false;
    return this.pusher.run(plan, pending, report, touched);
  }

  // ------------------------------------------------------------------ held and quarantined

  /** Apply a held change the person approved (the next round writes it). Accepting a rename
   * accepts its old name too when that waits for it (RENAME_HELD), as Python's `record_held`;
   * carried out as plan.ts `planDecisions` decides. */
  acceptHeld(path: string): Promise<RoundReport> {
    return this.exclusive(async () => {
      await this.load();
      const h = this.state.held[path];
      if (!h) throw new InputError(`no held change for ${path}`);
      const halves = Object.values(this.state.held).filter((r) => r.path !== path && r.reason === RENAME_HELD(path));
      const rows = [h, ...halves].map((r) => ({ ...r, decision: "accept" }));
      for (const d of planDecisions(rows, [], this.device.kind)) {
        if (d.step !== "AcceptHeld") continue;
        const { path: p, reason: _r, deleted: _d, size: _s, deviceName: _n, deviceKind: _k, renameFrom: _f, time: _t, decision: _c, ...q } = d.row;
        delete this.state.held[p];
        // one that no longer verifies (this copy's state altered since it was held) is dropped,
        // as Python's `carry_out` drops it, not quarantined as a relay's fault
        if (!(await this.verifies(q))) continue;
        this.state.inbox[p] = { ...q, admitted: true };
      }
      await this.save();
    }).then(() => this.round({ paths: [path] }));
  }

  /** A held row's record, opened again for the person's decision (null: it no longer verifies). */
  private async verifies(q: Queued): Promise<RemoteChange | null> {
    try {
      return await this.remote.open(wire(q));
    } catch (err) {
      if (err instanceof TamperDetected) return null;
      throw err;
    }
  }

  /** Refuse a held change: this device's version is committed on top of it, everywhere.
   * Refusing a rename refuses its old name too when that waits for it (RENAME_HELD), as
   * Python's `record_held`: the note stays where it was, on every device. */
  refuseHeld(path: string): Promise<RoundReport> {
    return this.exclusive(async () => {
      await this.load();
      const held = this.state.held[path];
      if (!held) throw new InputError(`no held change for ${path}`);
      const halves = Object.values(this.state.held).filter((r) => r.path !== path && r.reason === RENAME_HELD(path));
      const rows = [held, ...halves].map((r) => ({ ...r, decision: "refuse" }));
      const paths: string[] = [];
      for (const d of planDecisions(rows, [], this.device.kind)) {
        if (d.step !== "RefuseHeld") continue;
        const h = d.row;
        const p = h.path;
        delete this.state.held[p];
        paths.push(p);
        const e = this.state.files[p];
        // one that no longer verifies (this copy's state was altered since it was held) is
        // dropped, as Python's `carry_out` drops it: no row left waiting, no error for a refusal
        const ch = await this.verifies(h);
        if (!ch) continue;
        // adopt the held revision as the parent, but not its content: the scan then pushes ours
        this.state.files[p] = {
          fileId: h.fileId,
          rev: h.rev,
          sha256: ch.meta.deleted ? "" : ch.meta.sha256,
          size: ch.meta.deleted ? 0 : ch.meta.size,
          mtime: -1,
          deleted: ch.meta.deleted,
          executable: e ? e.executable : false,
          device: ch.deviceName,
          deviceKind: ch.kind,
          force: !ch.meta.deleted,
        };
      }
      await this.save();
      return paths;
    }).then((paths) => this.round({ paths: paths.length ? paths : [path] }));
  }

  /** Replace a quarantined record by this device's own version of the file, or by a deletion
   * when it has none (human devices; Python's `take_over`): its revision becomes the parent of
   * what the next round commits. Carried out as plan.ts `planDecisions` decides. */
  supersede(fileId: string): Promise<RoundReport> {
    return this.exclusive(async () => {
      await this.load();
      const q = this.state.quarantine[fileId];
      if (!q) throw new InputError("no quarantined record with that id");
      if (this.device.kind !== HUMAN) throw new InputError("only a person's device can supersede a quarantined record");
      const path = q.path ?? Object.entries(this.state.files).find(([, e]) => e.fileId === fileId)?.[0];
      if (!path) throw new InputError("this device does not know which file that is: dismiss it instead");
      for (const d of planDecisions([], [{ ...q, path, decision: "supersede" }], this.device.kind)) {
        delete this.state.quarantine[fileId];
        if (d.step !== "Supersede") continue;
        const e = this.state.files[path];
        const rev = Math.max(e?.rev ?? 0, q.rev);
        // live at that revision: the scan commits this device's file on top, or its absence
        this.state.files[path] = e
          ? { ...e, rev, mtime: -1, deleted: false, force: true }
          : { fileId, rev, sha256: "", size: 0, mtime: -1, deleted: false, executable: false, device: "", deviceKind: HUMAN, force: true };
      }
      await this.save();
      return path;
    }).then((path) => this.round({ paths: [path] }));
  }

  /** Forget a quarantined record without replacing it (Python's `companion quarantine
   * dismiss`): the file keeps this device's version, `status` stops listing it, and that
   * revision is not quarantined again; a newer revision is admitted as usual. */
  dismissQuarantine(target: string): Promise<string> {
    return this.exclusive(async () => {
      await this.load();
      const q = this.state.quarantine[target] ?? Object.values(this.state.quarantine).find((x) => x.path === target);
      if (!q) throw new InputError(`no quarantined record for '${target}' (give a file id or a path from \`status\`)`);
      for (const d of planDecisions([], [{ ...q, decision: "dismiss" }], this.device.kind)) {
        if (d.step !== "Dismiss") continue;
        delete this.state.quarantine[q.fileId];
        // this device's own memory of it: that revision is not quarantined again
        this.state.dismissed = { ...(this.state.dismissed ?? {}), [q.fileId]: q.rev };
      }
      await this.save();
      return q.path ?? q.fileId;
    });
  }

  /** Mark every quarantined record as reported (the status shows each once). */
  async markReported(): Promise<void> {
    for (const q of Object.values(this.state.quarantine)) q.reported = true;
    await this.save();
  }

  // ------------------------------------------------------------------ history and restore

  async history(path: string): Promise<HistoryRow[]> {
    const rel = normalize(path);
    const revs = await this.remote.history(rel);
    return revs.map((r) => {
      if ("reason" in r) return { rev: r.rev, time: null, device: "?", kind: "?", size: 0, deleted: false, sha256: "", renameFrom: null, error: r.reason };
      const m = r.meta;
      return {
        rev: r.rev,
        time: r.committedAt ?? (m.recordedNs !== null ? Number(m.recordedNs / 1_000_000n) / 1000 : null),
        device: r.deviceName,
        kind: r.kind,
        size: m.size,
        deleted: m.deleted,
        sha256: m.sha256,
        renameFrom: m.renameFrom,
      };
    });
  }

  /** Bring back revision `rev` as a new edit (the current version is synced first). */
  async restore(path: string, rev: number): Promise<RoundReport> {
    const rel = normalize(path);
    await this.round();
    const ch = await this.remote.record(rel, rev);
    if (!ch) throw new InputError(`the relay has no revision ${rev} of '${rel}' (old revisions are pruned after the relay's retention period)`);
    if (ch.meta.deleted) throw new InputError(`revision ${rev} of '${rel}' is a deletion; restore an earlier revision`);
    const content = (await this.applier.fetchContents([ch])).get(ch.meta.sha256)!;
    await this.exclusive(async () => {
      await this.write(rel, content);
      this.dropApplied([rel]); // the person's choice, not a stale save
    });
    return this.round({ paths: [rel] });
  }

  async waitForChanges(waitS: number): Promise<boolean> {
    try {
      return await this.remote.waitForChanges(this.state.cursor, waitS);
    } catch (e) {
      // the relay is behind this device's cursor (restored from a backup): the next round
      // resyncs with it (R3), so the long-poll wakes one instead of failing until a rescan
      if (e instanceof ConflictError && e.code === "since_ahead") return true;
      throw e;
    }
  }

  /** Every conflict copy (and name-collision copy) in the vault, with what this device knows
   * of it: those other devices made too (views.copy_paths); none while the folder is missing. */
  async conflictCopies(): Promise<CopyView[]> {
    if ((await this.folderStatus()) === "missing") return [];
    const copies = (await this.fs.list())
      .map((f) => f.path)
      .filter((p) => isKeptCopy(p.slice(p.lastIndexOf("/") + 1)) && !this.ignore.isIgnored(p));
    return conflictViews(copies, this.state.conflicts);
  }

  conflictCopyName(path: string, device: string): string {
    return conflictCopyName(path, device, this.now(), this.applier.taken);
  }
}

export type { Entry };
export { recordMtimeMs };
