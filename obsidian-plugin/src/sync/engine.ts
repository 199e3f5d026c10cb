/**
 * The sync core of one vault copy (companion/sync/round/engine.py, apply.py, push.py), behind the
 * `VaultFS` interface so Obsidian, the headless CLI and tests run the same code.
 *
 * A round is a loop of passes (at most 10). Each pass:
 * 1. pull: records after the cursor, verified; the newest revision of each file this device
 *    lacks is queued in the inbox (still sealed) and the cursor advances, saved together.
 *    A record that fails verification is quarantined for its file only;
 * 2. scan the vault (everything, or the paths an event named plus the inbox's);
 * 3. apply the inbox: renames as renames, deletions, writes; changes on both sides go through
 *    `resolve` (human precedence, three-way merge, conflict copies). Agent-authored changes
 *    to Obsidian's behavioural config (and anything that sets the exec bit) are held;
 * 4. push local changes: blobs the relay lacks, then records with a compare-and-swap each.
 */

import type { VaultKey } from "../crypto/keys";
import { makeMeta, sha256Hex, type ChunkRef, type FileMeta } from "../crypto/records";
import { fromBase64, toBase64 } from "../crypto/bytes";
import {
  AuthError,
  CompanionError,
  ConflictError,
  InputError,
  MassDeleteRefused,
  RelayUnreachable,
  RolledBack,
  TamperDetected,
  VaultFolderMissing,
} from "../errors";
import type { RelayClient, WireRecord } from "../relay/client";
import { conflictCopyName, caseCollisionName, unicodeTwinName, conflictViews, type CopyView, HUMAN, isKeptCopy, resolve } from "./conflicts";
import { FOLDER_MARKER, folderMissingMessage, markerText, parseMarker } from "./folder";
import { IGNORE_FILE, IgnoreRules } from "./ignore";
import { isText } from "./merge";
import { fold, normalize, pathProblem, tryNormalize } from "./paths";
import { readAgentNotes } from "./noteread";
import { configFolders, holdFold, holdReason, isMassDelete, type Kind } from "./policy";
import { announcementJson, KEYS_DIR } from "../crypto/signing";
import { type Candidate, isRosterPath, rosterCandidate, type Trust } from "./trust";
import { invalidScopes, MAX_SCOPES_BYTES, readScopes, SCOPES_FILE, type Scopes } from "./scopes";
import { MemoryPartials, type Outgoing, type PartialStore, pool, type RemoteChange, RemoteVault } from "./remote";
import { RoundReport } from "./report";
import { cursorMark, isRestoredRelay, resyncRestoredRelay, setCursor } from "./resync";
import {
  addConflicts,
  addError,
  type ConflictInfo,
  emptyState,
  type Entry,
  type Queued,
  type StateStore,
  type SyncState,
} from "./state";
import { type BulkItem, type FileStat, UnusableName, type VaultFS, type WriteOptions } from "./vaultfs";

export const MAX_PASSES = 10;
export const CHUNK_SIZE = 4 * 1024 * 1024;
const WRITE_PARALLEL = 16;
/** Quarantined files asked about again per round (Python's QUARANTINE_RETRIES). */
const QUARANTINE_RETRIES = 50;
const APPLY_GROUP = 1500;
const BULK_MIN = 32; // from this many files on, one flush beats one fsync each
const FIRST_GROUP = 250; // a small first group, so writing starts early

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
  /** This device's key and anchor (trust.ts): records it seals are signed, and with an anchor
   * the roster decides who wrote what it opens. */
  trust?: Trust | null;
}

interface Local {
  kind: "created" | "modified" | "deleted";
  path: string;
  stat?: FileStat;
  data?: Uint8Array;
  sha256?: string;
  renameFrom?: string;
  renameTo?: string;
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

function queued(ch: RemoteChange): Queued {
  return {
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
  private verified = new Map<string, RemoteChange>();
  private approved = new Set<string>();
  /** Agents' notes the hold rules read this pass, by SHA-256 (`readAgentNotes`): what the
   * rules see, and the real contents kept for the apply. */
  private noteRead = new Map<string, Uint8Array>();
  /** The scope rule's file, read by each apply that has changes to decide (`loadScopes`). */
  private scopes: Scopes | null = null;
  private noteCache = new Map<string, Uint8Array>();
  /** Paths whose remote change could not be written this round: not retried until the next. */
  private unwritable = new Set<string>();
  private running: Promise<unknown> = Promise.resolve();
  private loaded = false;
  stopped = false;
  /** Work after each round that settles (the review's, src/review/rounds.ts): each returns the
   * vault paths it wrote, which one more round syncs (companion/sync/round/engine.py `after_round`). */
  readonly afterRound: ((engine: SyncEngine, report: RoundReport) => Promise<Iterable<string>>)[] = [];
  private inAfterRound = false;

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
      // mtime (this engine has no stale-save window to leave; Python drops its "applied" rows)
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
    const applied = await this.applyInbox(local, report, touched);
    const pushed = await this.push(local, allowMassDelete, report, touched);
    await this.save();
    const waiting = Object.keys(this.state.inbox).some((p) => !this.unwritable.has(p));
    return { work: pulled > 0 || applied || pushed || waiting, touched };
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
      // admitted as the feed would admit it; a blob that does not open quarantines it again
      this.state.inbox[path] = queued(ch);
      this.verified.set(path, ch);
      admitted.push(path);
    }
    if (rows.length) await this.save();
    return admitted;
  }

  private async pull(report: RoundReport, scope: Set<string> | null = null): Promise<number> {
    const since = this.state.cursor;
    await this.refreshTrust();
    let pulled;
    let restored = false;
    try {
      pulled = await this.remote.pull(since, 0, cursorMark(this.state));
    } catch (e) {
      if (isRestoredRelay(e)) {
        // the relay was reset or restored from a backup (its sequence is behind the cursor, or
        // it holds another record there): read its whole feed again, renumber what it holds
        // and offer again what it lost, never older than this device's (R3)
        pulled = await this.remote.pull(0);
        const reoffered = resyncRestoredRelay(this.state, pulled.changes);
        if (scope) for (const p of reoffered) scope.add(p);
        report.relayRestored = true;
        restored = true; // what the inbox held before is no measure of the relay's feed now
      } else throw e;
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
    let n = 0;
    for (const ch of newest.values()) {
      const path = tryNormalize(ch.meta.path);
      if (!path) {
        // a record naming no path a device can hold (absolute, "..", a name over 255 bytes):
        // quarantined with the reason (status lists it, `sync` exits 1), never skipped silently
        this.quarantine(ch.fileId, ch.rev, `its path is not a vault path: ${pathProblem(ch.meta.path)}`, report);
        continue;
      }
      const q = this.state.quarantine[ch.fileId];
      if (q && ch.rev > q.rev) delete this.state.quarantine[ch.fileId];
      const entry = this.state.files[path];
      const inQueue = restored ? 0 : (this.state.inbox[path]?.rev ?? 0);
      const best = Math.max(entry?.rev ?? 0, inQueue);
      if (best && ch.rev < best) continue; // refused above: unreachable
      if (entry && ch.rev <= entry.rev) continue;
      if (ch.rev <= inQueue) continue;
      if (this.ignore.isIgnored(path)) continue;
      const held = this.state.held[path];
      if (held && held.rev >= ch.rev) continue;
      this.state.inbox[path] = queued(ch);
      this.verified.set(path, ch);
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
        if (twin) p = unicodeTwinName(nfc, (c) => onDisk.has(c) || seen.has(c) || this.taken(c));
        try {
          st = await this.rename(st.path, p);
        } catch (e) {
          if (e instanceof VaultFolderMissing) throw e;
          report.skipped.push(`${st.path}: could not be renamed to ${p} (${e instanceof Error ? e.message : String(e)}); not synced`);
          continue;
        }
        if (twin) {
          const msg = `${nfc}: another file had the same name in decomposed Unicode (as macOS writes it); both are kept, that one as '${p}'`;
          report.conflicts.push(this.conflictInfo(nfc, p, this.device.deviceName, this.device.deviceName, "unicode_twin", msg));
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
      const c: Local = { kind: live ? "modified" : "created", path: p, stat: st, data, sha256: sha };
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
    return out;
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

  /** The hold rules' view of the vault (policy.ts `holdReason`, companion/sync/round/holds.py):
   * which folders have Obsidian's config shape, among the files known here (held ones too),
   * the incoming paths and this device's own config folder. */
  private configDirs(incoming: string[]): Set<string> {
    const known = Object.entries(this.state.files)
      .filter(([p, e]) => !e.deleted && p.startsWith(".") && p.includes("/"))
      .map(([p]) => p);
    const dirs = configFolders([...known, ...Object.keys(this.state.held), ...incoming]);
    if (!this.configDir.includes("/")) dirs.add(holdFold(this.configDir));
    return dirs;
  }

  private holdReason(path: string, ch: RemoteChange, dirs: Set<string>): string | null {
    const same = (p: string | null | undefined) => {
      const e = p ? this.state.files[p] : undefined;
      return !!e && !e.deleted && e.sha256 === ch.meta.sha256;
    };
    return holdReason({
      localKind: this.device.kind,
      remoteKind: ch.kind,
      path,
      renameFrom: ch.meta.renameFrom,
      deleted: ch.meta.deleted,
      executable: ch.meta.executable,
      configDirs: dirs,
      content: this.noteRead.get(ch.meta.sha256) ?? null,
      unchanged: !ch.meta.deleted && (same(path) || same(ch.meta.renameFrom)),
      patterns: this.holdPatterns,
      scopes: this.scopes,
      deviceId: ch.deviceId,
      authorName: ch.deviceName,
    });
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

  private async applyInbox(local: Map<string, Local>, report: RoundReport, touched: Set<string>): Promise<boolean> {
    // what could not be written this round stays queued until the next
    const paths = Object.keys(this.state.inbox).filter((p) => !this.unwritable.has(p)).sort();
    this.noteCache.clear();
    this.noteRead.clear();
    if (!paths.length) return false;
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
    const notes = await readAgentNotes(this.remote, this.partials, this.device.kind, opened.filter(([p]) => !this.approved.has(p)));
    for (const [, ch, why] of notes.bad) this.quarantine(ch.fileId, ch.rev, why, report);
    const unverified = new Set(notes.bad.map(([p]) => p));
    this.noteRead = notes.read;
    this.noteCache = notes.cache;
    const dirs = this.configDirs(opened.map(([p]) => p));
    this.scopes = this.device.kind === "human" && opened.length ? await this.loadScopes() : null;
    const whys = new Map<string, string | null>();
    for (const [p, ch] of opened) whys.set(p, unverified.has(p) || this.approved.has(p) ? null : this.holdReason(p, ch, dirs));
    // a held rename's tombstone waits with it (plan.py `hold_rename_sources`)
    const byPath = new Map(opened);
    for (const [p, ch] of opened) {
      const src = ch.meta.renameFrom && !ch.meta.deleted ? tryNormalize(ch.meta.renameFrom) : null;
      const old = src ? byPath.get(src) : undefined;
      if (!whys.get(p) || !src || !old || !old.meta.deleted || old.deviceId !== ch.deviceId) continue;
      if (unverified.has(src) || this.approved.has(src) || whys.get(src)) continue;
      whys.set(src, `is the old name of a held rename to ${p}`);
    }
    for (const [p, ch] of opened) {
      if (unverified.has(p)) continue;
      const q = sealed.get(p)!;
      const why = whys.get(p) ?? null;
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
      this.approved.delete(p);
      if (this.state.held[p] && this.state.held[p].rev < ch.rev) delete this.state.held[p];
      todo.set(p, ch);
    }
    this.verified.clear();
    if (!todo.size) return true;
    await this.applyRenames(todo, local, report, touched);
    await this.followLocalRenames(todo, local, report, touched);
    for (const [p, ch] of [...todo]) {
      if (!ch.meta.deleted) continue;
      todo.delete(p);
      touched.add(p);
      const lc = local.get(p);
      if (lc) await this.applyConflict(p, ch, null, lc, local, report, touched);
      else await this.applyDelete(p, ch, report);
    }
    const writes = [...todo.values()];
    const groups: RemoteChange[][] = [];
    for (let i = 0; i < writes.length; i += i ? APPLY_GROUP : FIRST_GROUP) groups.push(writes.slice(i, i + (i ? APPLY_GROUP : FIRST_GROUP)));
    // the next group downloads while this one is written (everything verified before a write)
    let ahead = groups.length ? this.fetchContents(groups[0]) : null;
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g];
      const contents = await ahead!;
      ahead = g + 1 < groups.length ? this.fetchContents(groups[g + 1]) : null;
      ahead?.catch(() => undefined);
      // an agent's case-only twin goes one by one, through applyWrite's collision rule (R11)
      const folds = new Map<string, number>();
      for (const ch of group) folds.set(fold(ch.meta.path), (folds.get(fold(ch.meta.path)) ?? 0) + 1);
      const mayTwin = (ch: RemoteChange) =>
        this.device.kind === HUMAN && ch.kind !== HUMAN && ((folds.get(fold(ch.meta.path)) ?? 0) > 1 || this.twinOf(normalize(ch.meta.path), ch) !== null);
      const bulk = this.fs.writeMany && !this.fs.caseInsensitive ? group.filter((ch) => !local.has(normalize(ch.meta.path)) && !mayTwin(ch)) : [];
      if (bulk.length >= BULK_MIN) await this.applyBulk(bulk, contents, report, touched);
      const done = new Set(bulk.length >= BULK_MIN ? bulk : []);
      await pool(group.filter((ch) => !done.has(ch)), WRITE_PARALLEL, async (ch) => {
        const p = normalize(ch.meta.path);
        touched.add(p);
        const content = contents.get(ch.meta.sha256)!;
        const lc = local.get(p);
        if (lc) await this.applyConflict(p, ch, content, lc, local, report, touched);
        else await this.applyWrite(p, ch, content, report);
      });
    }
    return true;
  }

  /** Many files changed only remotely, written with one flush (VaultFS.writeMany). */
  private async applyBulk(group: RemoteChange[], contents: Map<string, Uint8Array>, report: RoundReport, touched: Set<string>) {
    const items: BulkItem[] = group.map((ch) => {
      const p = normalize(ch.meta.path);
      const e = this.state.files[p];
      return {
        path: p,
        data: contents.get(ch.meta.sha256)!,
        opts: this.writeOpts(ch.meta),
        expected: e && !e.deleted ? { size: e.size, mtime: e.mtime } : null,
      };
    });
    await this.guard();
    const results = await this.fs.writeMany!(items);
    results.forEach((r, i) => {
      const ch = group[i];
      const p = items[i].path;
      touched.add(p);
      if (r instanceof UnusableName) {
        this.cannotWrite(p, ch, r.message, report);
        return;
      }
      if (r instanceof Error) {
        report.deferred++;
        this.state.inbox[p] = queued(ch); // changed here meanwhile: the next pass resolves it
        return;
      }
      this.record(p, ch, r);
      report.downloaded.push(p);
    });
  }

  private async fetchContents(group: RemoteChange[]): Promise<Map<string, Uint8Array>> {
    const small = group.filter((c) => c.meta.chunks.length <= 1 && !this.noteCache.has(c.meta.sha256)).map((c) => c.meta);
    const out = await this.remote.fetch(small);
    for (const c of group) if (this.noteCache.has(c.meta.sha256)) out.set(c.meta.sha256, this.noteCache.get(c.meta.sha256)!);
    for (const ch of group) {
      if (ch.meta.chunks.length > 1 && !out.has(ch.meta.sha256)) out.set(ch.meta.sha256, await this.remote.fetchLarge(ch.meta, this.partials));
    }
    for (const ch of group) if (!ch.meta.chunks.length) out.set(ch.meta.sha256, new Uint8Array(0));
    return out;
  }

  private record(path: string, ch: RemoteChange, st: FileStat | null): void {
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
    const st = await this.fs.stat(path);
    if (!e || e.deleted) return st === null;
    if (!st) return false;
    if (st.size === e.size && st.mtime === e.mtime) return true;
    return st.size === e.size && (await sha256Hex(await this.fs.read(path))) === e.sha256;
  }

  private async applyDelete(p: string, ch: RemoteChange, report: RoundReport): Promise<void> {
    const e = this.state.files[p];
    if (e && !e.deleted) {
      if (!(await this.unchanged(p))) {
        report.deferred++;
        this.state.inbox[p] = queued(ch);
        return;
      }
      await this.remove(p);
      report.deletedLocal.push(p);
    }
    this.record(p, ch, null);
  }

  private taken = (rel: string): boolean => {
    const e = this.state.files[rel];
    if (e && !e.deleted) return true;
    if (this.fs.caseInsensitive) {
      const f = fold(rel);
      return Object.entries(this.state.files).some(([p, x]) => !x.deleted && fold(p) === f);
    }
    return false;
  };

  /** The live file whose name `p` (new here) differs from only by case, when that is a case
   * collision: on a case-insensitive disk, and on a person's device for an agent's file
   * whatever the disk (issue 44: an agent's `Home.MD` is no second `Home.md`). */
  private twinOf(p: string, ch: RemoteChange): string | null {
    const e = this.state.files[p];
    if (e && !e.deleted) return null;
    if (!this.fs.caseInsensitive && !(this.device.kind === HUMAN && ch.kind !== HUMAN)) return null;
    const f = fold(p);
    const other = Object.entries(this.state.files).find(([q, x]) => q !== p && !x.deleted && fold(q) === f);
    return other ? other[0] : null;
  }

  private async applyWrite(p: string, ch: RemoteChange, content: Uint8Array, report: RoundReport): Promise<void> {
    // Checked before the disk is: on a case-insensitive disk, stat(p) finds the other file,
    // which would look like a new local file at p and defer the change for ever (R11).
    {
      const other = this.twinOf(p, ch);
      if (other !== null) {
        const copy = caseCollisionName(p, (c) => this.taken(c));
        if ((await this.fs.stat(copy)) !== null) {
          report.deferred++; // a local file took the copy's name since the scan
          this.state.inbox[p] = queued(ch);
          return;
        }
        await this.write(copy, content, this.writeOpts(ch.meta));
        this.record(p, ch, null);
        this.state.files[p].mtime = 0; // synced but absent here: the next scan pushes the rename
        const msg = `${p}: its name differs only by case from ${other}; saved as '${copy}'`;
        report.conflicts.push(this.conflictInfo(p, copy, this.device.deviceName, ch.deviceName, "case_collision", msg));
        return;
      }
    }
    if (!(await this.unchanged(p))) {
      // a new local file appeared since the scan, or the file changed: the next pass decides
      report.deferred++;
      this.state.inbox[p] = queued(ch);
      return;
    }
    let st: FileStat;
    try {
      st = await this.write(p, content, this.writeOpts(ch.meta));
    } catch (e) {
      if (!(e instanceof UnusableName)) throw e;
      this.cannotWrite(p, ch, e.message, report);
      return;
    }
    this.record(p, ch, st);
    report.downloaded.push(p);
  }

  /** A remote change whose name this device's file system refuses: it stays queued with the
   * reason (status lists it, `sync` exits 1) and is tried again next round; the rest syncs. */
  private cannotWrite(p: string, ch: RemoteChange, reason: string, report: RoundReport): void {
    this.state.inbox[p] = { ...queued(ch), problem: reason };
    this.unwritable.add(p);
    report.problems.push({ path: p, reason });
  }

  private writeOpts(m: FileMeta) {
    return { mtime: recordMtimeMs(m), executable: m.executable };
  }

  private conflictInfo(path: string, copy: string, kept: string, moved: string, outcome: string, message: string): ConflictInfo {
    return { path, copy, kept, moved, outcome, message, time: Date.now() / 1000 };
  }

  private async applyRenames(todo: Map<string, RemoteChange>, local: Map<string, Local>, report: RoundReport, touched: Set<string>) {
    for (const [nu, ch] of [...todo].sort()) {
      const old = ch.meta.renameFrom ? tryNormalize(ch.meta.renameFrom) : null;
      if (ch.meta.deleted || !old) continue;
      const oldCh = todo.get(old);
      if (!oldCh || !oldCh.meta.deleted) continue;
      const oe = this.state.files[old];
      const ne = this.state.files[nu];
      const lo = local.get(old);
      if (lo?.kind === "modified" && !local.has(nu) && !(ne && !ne.deleted) && !this.caseTaken(nu, old) && !(await this.fs.stat(nu))) {
        // renamed there, edited here: the edit follows the rename (plan.FollowRemoteRename)
        await this.followRemoteRename(old, nu, oldCh, ch, lo, local, report, touched);
        todo.delete(old);
        todo.delete(nu);
        continue;
      }
      if (local.has(old) || local.has(nu)) continue;
      if (!oe || oe.deleted || oe.sha256 !== ch.meta.sha256) continue;
      if (ne && !ne.deleted) continue;
      if (!(await this.unchanged(old)) || (await this.fs.stat(nu))) continue;
      let st: FileStat;
      try {
        st = await this.rename(old, nu);
      } catch (e) {
        if (e instanceof VaultFolderMissing) throw e;
        continue;
      }
      todo.delete(old);
      todo.delete(nu);
      this.record(old, oldCh, null);
      this.record(nu, ch, st);
      report.renamedLocal.push([old, nu]);
      touched.add(old);
      touched.add(nu);
    }
  }

  /** On a case-insensitive disk, another live file whose name folds like `path`'s. */
  private caseTaken(path: string, except: string): boolean {
    if (!this.fs.caseInsensitive) return false;
    const f = fold(path);
    return Object.entries(this.state.files).some(([q, x]) => q !== path && q !== except && !x.deleted && fold(q) === f);
  }

  private resolveHere(path: string, localData: Uint8Array, ch: RemoteChange, remote: Uint8Array, base: Uint8Array | null) {
    return resolve(
      path,
      { data: localData, deviceName: this.device.deviceName, deviceKind: this.device.kind },
      { data: remote, deviceName: ch.deviceName, deviceKind: ch.kind },
      base,
      this.now(),
      this.taken,
    );
  }

  private reportResolution(path: string, res: ReturnType<typeof resolve>, ch: RemoteChange, report: RoundReport): void {
    if (res.copy) {
      report.conflicts.push(
        this.conflictInfo(path, res.copy.path, res.outcome === "local_wins" ? this.device.deviceName : ch.deviceName, res.copy.deviceName, res.outcome, res.message),
      );
    } else if (res.outcome === "merged") report.merged.push(path);
  }

  /** The last common version of `old`, for a text merge of two versions of it (else null). */
  private async textBase(old: string, a: Uint8Array, b: Uint8Array): Promise<Uint8Array | null> {
    return isText(a) && isText(b) ? this.base(old) : null;
  }

  /** Renamed there (`old` -> `nu`), edited here at `old`: the local edit goes to `nu`, merged
   * with the remote version against the last common version of `old`; `old` goes (Python's
   * `Applier._follow_remote`). Never the old path with the edit beside the renamed file. */
  private async followRemoteRename(
    old: string,
    nu: string,
    gone: RemoteChange,
    came: RemoteChange,
    lo: Local,
    local: Map<string, Local>,
    report: RoundReport,
    touched: Set<string>,
  ): Promise<void> {
    const remote = (await this.fetchContents([came])).get(came.meta.sha256)!;
    const res = this.resolveHere(nu, lo.data!, came, remote, await this.textBase(old, lo.data!, remote));
    if (res.copy) {
      await this.write(res.copy.path, res.copy.data);
      touched.add(res.copy.path);
    }
    let st: FileStat | null = null;
    if (res.note !== null) st = await this.write(nu, res.note, sameBytes(res.note, remote) ? this.writeOpts(came.meta) : {});
    // the old path goes, unless it changed again since the scan (then it stays, as a new file)
    const now = await this.fs.stat(old);
    if (now && lo.stat && now.size === lo.stat.size && now.mtime === lo.stat.mtime) await this.remove(old);
    this.record(old, gone, null);
    this.record(nu, came, sameBytes(res.note, remote) ? st : null); // else the next scan pushes it
    local.delete(old);
    report.renamedLocal.push([old, nu]);
    this.reportResolution(nu, res, came, report);
    touched.add(old);
    touched.add(nu);
  }

  /** Renamed here (`old` -> `nu`, not pushed yet), edited there at `old`: the remote edit is
   * reconciled into `nu` (a merge against the last common version of `old`, else the conflict
   * rules), and the rename goes out on top of the remote revision (Python's
   * `Applier._follow_local`). Never the old path with the edit beside the renamed file. */
  private async followLocalRenames(todo: Map<string, RemoteChange>, local: Map<string, Local>, report: RoundReport, touched: Set<string>) {
    for (const [old, ch] of [...todo].sort()) {
      if (ch.meta.deleted) continue;
      const lo = local.get(old);
      const nu = lo?.kind === "deleted" ? lo.renameTo : undefined;
      const ln = nu ? local.get(nu) : undefined;
      if (!nu || !ln || ln.kind === "deleted" || todo.has(nu)) continue;
      const remote = (await this.fetchContents([ch])).get(ch.meta.sha256)!;
      const res = this.resolveHere(nu, ln.data!, ch, remote, await this.textBase(old, ln.data!, remote));
      if (res.copy) {
        await this.write(res.copy.path, res.copy.data);
        touched.add(res.copy.path);
      }
      if (res.note !== null && !sameBytes(res.note, ln.data!)) {
        const st = await this.write(nu, res.note);
        Object.assign(ln, { data: res.note, sha256: await sha256Hex(res.note), stat: st });
      }
      // `old` at the remote revision: its tombstone (the rename's first half) goes on top of it
      this.record(old, ch, null);
      todo.delete(old);
      this.reportResolution(nu, res, ch, report);
      if (res.outcome === "take_remote") report.downloaded.push(nu);
      touched.add(old);
      touched.add(nu);
    }
  }

  /** The last common version of `path`: the synced revision, fetched from the relay's history
   * and verified (the relay keeps it; nothing of it is kept here). Empty for a file new on
   * both sides; null when the relay pruned it (then no merge is tried). */
  private async base(path: string): Promise<Uint8Array | null> {
    const e = this.state.files[path];
    if (!e || e.deleted) return new Uint8Array(0);
    try {
      const ch = await this.remote.record(path, e.rev);
      if (!ch || ch.meta.deleted || ch.meta.sha256 !== e.sha256) return null;
      if (ch.meta.size > 1024 * 1024) return null;
      return (await this.fetchContents([ch])).get(ch.meta.sha256) ?? null;
    } catch (err) {
      if (err instanceof CompanionError && !(err instanceof RelayUnreachable)) return null;
      throw err;
    }
  }

  private async applyConflict(
    p: string,
    ch: RemoteChange,
    remoteData: Uint8Array | null,
    lc: Local,
    local: Map<string, Local>,
    report: RoundReport,
    touched: Set<string>,
  ): Promise<void> {
    local.delete(p);
    if (lc.renameTo) local.get(lc.renameTo) && delete local.get(lc.renameTo)!.renameFrom;
    if (lc.renameFrom) local.get(lc.renameFrom) && delete local.get(lc.renameFrom)!.renameTo;
    const localData = lc.kind === "deleted" ? null : lc.data!;
    const remote = ch.meta.deleted ? null : remoteData;
    const needsBase = localData !== null && remote !== null ? isText(localData) && isText(remote) : true;
    const base = needsBase ? await this.base(p) : null;
    const res = resolve(
      p,
      { data: localData, deviceName: this.device.deviceName, deviceKind: this.device.kind },
      { data: remote, deviceName: ch.deviceName, deviceKind: ch.kind },
      base,
      this.now(),
      this.taken,
    );
    if (res.copy) {
      // the losing version is safe on disk before the note changes
      await this.write(res.copy.path, res.copy.data);
      touched.add(res.copy.path);
    }
    let st: FileStat | null = null;
    if (res.writeLocal) {
      if (res.note === null) await this.remove(p);
      else st = await this.write(p, res.note, sameBytes(res.note, remote) ? this.writeOpts(ch.meta) : {});
    } else if (res.note !== null) st = lc.stat ?? null;
    const inSync = sameBytes(res.note, remote);
    this.record(p, ch, inSync ? st : null);
    if (res.copy) {
      report.conflicts.push(
        this.conflictInfo(p, res.copy.path, res.outcome === "local_wins" ? this.device.deviceName : ch.deviceName, res.copy.deviceName, res.outcome, res.message),
      );
    } else if (res.outcome === "merged") report.merged.push(p);
    else if (res.outcome === "keep_edit") report.keptEdits.push(p);
    if (res.writeLocal && res.note !== null && inSync) report.downloaded.push(p);
  }

  // ------------------------------------------------------------------ pushing

  private blocked(path: string, fid: string | undefined): boolean {
    if (this.state.held[path]) return true;
    return !!(fid && this.state.quarantine[fid]);
  }

  private async push(local: Map<string, Local>, allowMassDelete: boolean, report: RoundReport, touched: Set<string>): Promise<boolean> {
    report.heldDeletes = 0;
    for (const [p] of [...local]) {
      const fid = this.state.files[p]?.fileId || (await this.remote.fileId(p));
      if (this.blocked(p, fid)) local.delete(p);
    }
    report.pendingUpload = local.size;
    if (!local.size) return false;
    await this.guard();
    const deletes = [...local.values()].filter((c) => c.kind === "deleted" && !c.renameTo).map((c) => c.path);
    const live = this.liveCount();
    const heldDel = new Set(deletes.length && !allowMassDelete && isMassDelete(deletes.length, live, this.massDeleteRatio) ? deletes : []);
    report.heldDeletes = heldDel.size;
    report.heldOf = live;
    const prepared = new Map<string, { out: Outgoing; local: Local }>();
    const tombstones = new Map<string, Outgoing>();
    const small = new Map<string, Uint8Array>();
    for (const c of [...local.values()].sort((a, b) => (a.path < b.path ? -1 : 1))) {
      if (this.stopped) return false;
      if (heldDel.has(c.path)) continue;
      const e = this.state.files[c.path];
      if (c.kind === "deleted") {
        if (!e || e.deleted) continue;
        tombstones.set(c.path, {
          meta: makeMeta({
            path: c.path,
            size: 0,
            sha256: e.sha256.length === 64 ? e.sha256 : "",
            deleted: true,
            deviceId: this.device.deviceId,
            deviceName: this.device.deviceName,
            deviceKind: this.device.kind,
          }),
          parentRev: e.rev,
        });
        continue;
      }
      const data = c.data!;
      const chunks: ChunkRef[] = [];
      if (data.length > this.chunkSize) {
        for (let off = 0; off < data.length; off += this.chunkSize) {
          const part = data.subarray(off, off + this.chunkSize);
          const bid = await this.remote.blobId(part);
          chunks.push({ blobId: bid, length: part.length });
          // one chunk at a time: an interrupted upload resumes with the chunks the relay lacks
          await this.remote.upload(new Map([[bid, part]]));
        }
      } else if (data.length) {
        const bid = await this.remote.blobId(data);
        small.set(bid, data);
        chunks.push({ blobId: bid, length: data.length });
      }
      const executable = this.fs.tracksExec ? !!c.stat?.executable : !!(e && !e.deleted && e.executable);
      const meta = makeMeta({
        path: c.path,
        size: data.length,
        sha256: c.sha256!,
        chunks,
        mtimeNs: c.stat ? BigInt(Math.max(0, Math.round(c.stat.mtime))) * 1_000_000n : null,
        executable,
        deviceId: this.device.deviceId,
        deviceName: this.device.deviceName,
        deviceKind: this.device.kind,
        renameFrom: c.renameFrom ?? null,
      });
      prepared.set(c.path, { out: { meta, parentRev: e ? e.rev : 0 }, local: c });
    }
    if (!prepared.size && !tombstones.size) return false;
    await this.remote.upload(small);
    const groups: Outgoing[][] = [];
    const used = new Set<string>();
    for (const { out } of prepared.values()) {
      const old = out.meta.renameFrom;
      if (old && tombstones.has(old) && !used.has(old)) {
        groups.push([tombstones.get(old)!, out]);
        used.add(old);
      } else groups.push([out]);
    }
    for (const [p, t] of tombstones) if (!used.has(p)) groups.push([t]);
    const reupload = async (ids: string[]) => {
      const want = new Set(ids);
      const again = new Map<string, Uint8Array>();
      for (const { local: c, out } of prepared.values()) {
        for (let i = 0, off = 0; i < out.meta.chunks.length; off += out.meta.chunks[i].length, i++) {
          const ref = out.meta.chunks[i];
          if (want.has(ref.blobId)) again.set(ref.blobId, c.data!.subarray(off, off + ref.length));
        }
      }
      await this.remote.upload(again);
    };
    const result = await this.remote.commit(groups, reupload);
    for (const b of result.bad) this.quarantine(b.fileId, b.rev, b.reason, report);
    for (const [p, rev] of result.committed) {
      const fid = await this.remote.fileId(p);
      const t = tombstones.get(p);
      if (t) {
        this.state.files[p] = { fileId: fid, rev, sha256: "", size: 0, mtime: 0, deleted: true, executable: false, device: this.device.deviceName, deviceKind: this.device.kind };
        if (!local.get(p)?.renameTo) report.deletedRemote.push(p);
        continue;
      }
      const { out, local: c } = prepared.get(p)!;
      this.state.files[p] = {
        fileId: fid,
        rev,
        sha256: out.meta.sha256,
        size: out.meta.size,
        mtime: c.stat!.mtime,
        deleted: false,
        executable: out.meta.executable,
        device: this.device.deviceName,
        deviceKind: this.device.kind,
      };
      report.uploaded.push(p);
    }
    report.pendingUpload = local.size - result.committed.size;
    for (const [p, head] of result.conflicts) {
      touched.add(p);
      if (head) {
        this.state.inbox[p] = queued(head);
        this.verified.set(p, head);
      }
    }
    return result.committed.size > 0 || result.conflicts.size > 0;
  }

  // ------------------------------------------------------------------ held and quarantined

  /** Apply a held change the person approved (the next round writes it). */
  acceptHeld(path: string): Promise<RoundReport> {
    return this.exclusive(async () => {
      await this.load();
      const h = this.state.held[path];
      if (!h) throw new InputError(`no held change for ${path}`);
      delete this.state.held[path];
      const { path: _p, reason: _r, deleted: _d, size: _s, deviceName: _n, deviceKind: _k, renameFrom: _f, time: _t, ...q } = h;
      this.state.inbox[path] = q;
      this.approved.add(path);
      if (h.renameFrom) {
        const from = this.state.held[h.renameFrom];
        if (from) {
          delete this.state.held[h.renameFrom];
          const { path: _a, reason: _b, deleted: _c, size: _e, deviceName: _g, deviceKind: _h, renameFrom: _i, time: _j, ...q2 } = from;
          this.state.inbox[h.renameFrom] = q2;
          this.approved.add(h.renameFrom);
        }
      }
      await this.save();
    }).then(() => this.round({ paths: [path] }));
  }

  /** Refuse a held change: this device's version is committed on top of it, everywhere. */
  refuseHeld(path: string): Promise<RoundReport> {
    return this.exclusive(async () => {
      await this.load();
      const h = this.state.held[path];
      if (!h) throw new InputError(`no held change for ${path}`);
      delete this.state.held[path];
      const e = this.state.files[path];
      const ch = await this.remote.open(wire(h));
      // adopt the held revision as the parent, but not its content: the scan then pushes ours
      this.state.files[path] = {
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
      await this.save();
    }).then(() => this.round({ paths: [path] }));
  }

  /** Replace a quarantined record by this device's own version of the file (human devices). */
  supersede(fileId: string): Promise<RoundReport> {
    return this.exclusive(async () => {
      await this.load();
      const q = this.state.quarantine[fileId];
      if (!q) throw new InputError("no quarantined record with that id");
      if (this.device.kind !== HUMAN) throw new InputError("only a person's device can supersede a quarantined record");
      const path = q.path ?? Object.entries(this.state.files).find(([, e]) => e.fileId === fileId)?.[0];
      if (!path || !(await this.fs.stat(path))) throw new InputError("this device has no version of that file to commit");
      delete this.state.quarantine[fileId];
      const e = this.state.files[path];
      this.state.files[path] = { ...e, rev: Math.max(e.rev, q.rev), mtime: -1, force: true };
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
      delete this.state.quarantine[q.fileId];
      this.state.dismissed = { ...(this.state.dismissed ?? {}), [q.fileId]: q.rev };
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
    const content = (await this.fetchContents([ch])).get(ch.meta.sha256)!;
    await this.exclusive(() => this.write(rel, content));
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
    return conflictCopyName(path, device, this.now(), this.taken);
  }
}

function sameBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export type { Entry };

/** The modification time (ms) a record gives the file it writes, or undefined when no date
 * can hold it (a record from a far future or past): the time is only shown, so the file keeps
 * the time of its writing rather than failing the write (Python's `atomic.set_mtime`). */
export function recordMtimeMs(m: FileMeta): number | undefined {
  if (m.mtimeNs === null) return undefined;
  const ms = Number(m.mtimeNs / 1_000_000n);
  return Math.abs(ms) <= MAX_DATE_MS ? ms : undefined;
}

const MAX_DATE_MS = 8.64e15; // the range of a JavaScript Date
