/**
 * The resync after a relay restored from a backup (companion/sync/round/plan.py `plan_resync`
 * and pull.py `_resync_restored_relay`; docs/protocol.md R3).
 *
 * A relay whose sequence is behind this device's cursor (`since_ahead`), or that holds another
 * record at the cursor than the one this device saw there (`RelayRestored`, from the changes
 * page's `at_since`: others committed past the cursor after the restore), was reset or restored
 * and lost what was committed since. Its whole feed is read again, and each file this device
 * synced is compared with the head the relay now has:
 * - newer there: no step, it is applied as usual, unless the relay's record at this device's
 *   revision (read for the paths `resyncChecks` names) is another version: `diverged`;
 * - the same (same bytes, or both deleted or lost) at another revision: `renumber`, the entry
 *   takes the relay's revision;
 * - a live head at this device's very revision with other bytes, or against this device's
 *   deletion: `diverged`, both changed the file (the restore lost this device's version and
 *   another device committed on the restored relay): the relay's head is queued against this
 *   device's version and the ordinary apply reconciles them (R20; no common version, R25);
 * - anything else (the relay lost this device's version, or holds an older one, which may be
 *   this device's own past version): `reoffer`, this device's version is committed again on
 *   top of the relay's revision.
 * Nothing older than what this device holds is ever applied, so a relay faking a restore cannot
 * roll a file back. `planResync` is pure and replays `tests/vectors/resync_v1.json`.
 */

import { ConflictError, RelayRestored, TamperDetected } from "../errors";
import type { SeqMark } from "../relay/client";
import { tryNormalize } from "./paths";
import type { RemoteChange } from "./remote";
import { addError, type Entry, type SyncState } from "./state";

/** What the planner needs of one synced file (an index entry). */
export interface ResyncEntry {
  path: string;
  rev: number;
  sha256: string;
  deleted: boolean;
}

/** What the planner needs of the relay's newest revision of a path. */
export interface ResyncHead {
  rev: number;
  sha256: string;
  deleted: boolean;
}

export type ResyncStep =
  /** The relay holds this device's version (or both lost the file) at another revision. */
  | { step: "renumber"; path: string; rev: number }
  /** The relay lost this device's version: commit it again on top of `relayRev`. */
  | { step: "reoffer"; path: string; relayRev: number }
  /** The relay holds another version at this device's revision: reconcile the two. */
  | { step: "diverged"; path: string; relayRev: number };

/** The record this device saw at its cursor (null: not known, or the mark is another seq's). */
export function cursorMark(state: SyncState): SeqMark | null {
  const parts = (state.cursorMark ?? "").split(" ");
  if (parts.length !== 4 || parts[0] !== String(state.cursor) || state.cursor <= 0) return null;
  const rev = Number(parts[2]);
  return Number.isSafeInteger(rev) ? { fileId: parts[1], rev, sha256: parts[3] } : null;
}

/** Move the cursor to `seq`, remembering the record there when known. */
export function setCursor(state: SyncState, seq: number, mark: SeqMark | null): void {
  state.cursor = seq;
  state.cursorMark = mark ? `${seq} ${mark.fileId} ${mark.rev} ${mark.sha256}` : "";
}

/** Whether a pull's error says the relay was reset or restored from a backup. */
export function isRestoredRelay(e: unknown): boolean {
  return e instanceof RelayRestored || (e instanceof ConflictError && e.code === "since_ahead");
}

/** Whether this device knows which version it synced ("": a re-offer still pending). */
const known = (e: ResyncEntry): boolean => e.deleted || e.sha256 !== "";

/** Whether the relay's record `r`, at this device's revision, is another version. */
const other = (e: ResyncEntry, r: ResyncHead): boolean => (e.deleted || r.deleted ? e.deleted !== r.deleted : r.sha256 !== e.sha256);

/** The paths whose relay record at this device's revision the resync must read (Python's
 * `resync_checks`): a live file the relay's head is newer than and holds other bytes of. */
export function resyncChecks(entries: Iterable<ResyncEntry>, heads: ReadonlyMap<string, ResyncHead>): string[] {
  const out: string[] = [];
  for (const e of entries) {
    const h = heads.get(e.path);
    if (e.deleted || !known(e) || !h || h.rev <= e.rev) continue;
    if (h.deleted || h.sha256 !== e.sha256) out.push(e.path);
  }
  return out;
}

/** The steps, in the order of `entries` (Python's `plan_resync`); `atRev`: the relay's record
 * at this device's revision of the paths `resyncChecks` named, where it has one that opens. */
export function planResync(
  entries: Iterable<ResyncEntry>,
  heads: ReadonlyMap<string, ResyncHead>,
  atRev: ReadonlyMap<string, ResyncHead> = new Map(),
): ResyncStep[] {
  const out: ResyncStep[] = [];
  for (const e of entries) {
    const h = heads.get(e.path);
    const relayRev = h ? h.rev : 0;
    if (h && h.rev > e.rev) {
      // newer there: applied as usual, unless it was committed over another version
      const was = atRev.get(e.path);
      if (was && was.rev === e.rev && known(e) && other(e, was)) out.push({ step: "diverged", path: e.path, relayRev });
      continue;
    }
    const same = !!h && !h.deleted && !e.deleted && h.sha256 === e.sha256;
    const gone = !h || h.deleted;
    if (same || (e.deleted && gone)) {
      if (relayRev !== e.rev) out.push({ step: "renumber", path: e.path, rev: relayRev });
      continue;
    }
    if (h && !h.deleted && h.rev === e.rev && known(e)) {
      out.push({ step: "diverged", path: e.path, relayRev });
      continue;
    }
    out.push({ step: "reoffer", path: e.path, relayRev });
  }
  return out;
}

/** Record the steps in this device's files (`state.files`), as Python's pull does in one
 * transaction with the cursor: a renumbered entry keeps everything but its revision; a
 * re-offered one takes the relay's revision with an unknown local state (Python's
 * `take_over`), so the next scan sees this device's file, or its absence, as a change and
 * commits it on top of that revision. A diverged one goes just below the relay's revision, so
 * the pull queues the relay's head: a live one as a forced change with no hash (its synced
 * revision is then never fetched as a common version, `Applier.base`), reconciled with the
 * head; a deleted one as a deletion with nothing to push, so the relay's edit comes back
 * (R18). Returns the paths offered again or reconciled. */
export function recordResync(files: Record<string, Entry>, steps: readonly ResyncStep[]): string[] {
  const reoffered: string[] = [];
  for (const s of steps) {
    const e = files[s.path];
    if (!e) continue;
    if (s.step === "renumber") {
      files[s.path] = { ...e, rev: s.rev };
      continue;
    }
    if (s.step === "diverged" && e.deleted) {
      files[s.path] = { ...e, rev: s.relayRev - 1, sha256: "", size: 0, mtime: 0, deleted: true, force: false };
    } else {
      const rev = s.step === "diverged" ? s.relayRev - 1 : s.relayRev;
      files[s.path] = { ...e, rev, sha256: "", size: -1, mtime: -1, deleted: false, force: true };
    }
    reoffered.push(s.path);
  }
  return reoffered;
}

/** The message `status` keeps, Python's words. */
export function restoredMessage(reoffered: number): string {
  return `the relay was reset or restored from a backup (it lost records this device saw); ${reoffered} file(s) it lost are offered again`;
}

/** The relay's head of each path in its whole feed (`changes` in relay order: the last wins). */
export function relayHeads(changes: Iterable<RemoteChange>): Map<string, ResyncHead> {
  const heads = new Map<string, ResyncHead>();
  for (const ch of changes) {
    const path = tryNormalize(ch.meta.path);
    if (path) heads.set(path, { rev: ch.rev, sha256: ch.meta.sha256, deleted: ch.meta.deleted });
  }
  return heads;
}

/** The relay's record of `path` at `rev` (`RemoteVault.record`), or null where it has none. */
export type RecordAt = (path: string, rev: number) => Promise<RemoteChange | null>;

/** Python's `Puller._resync_restored_relay` on this device's state, given the relay's whole
 * feed read again from 0: read the relay's record at this device's revision of the files
 * `resyncChecks` names (one request each; one pruned, or that does not open, is left out),
 * plan, record, move the cursor back to 0 and keep the message for `status`. Returns the paths
 * offered again or reconciled (the round's scan must look at them). */
export async function resyncRestoredRelay(state: SyncState, changes: Iterable<RemoteChange>, recordAt: RecordAt): Promise<string[]> {
  const entries = Object.entries(state.files).map(([path, e]) => ({ path, rev: e.rev, sha256: e.sha256, deleted: e.deleted }));
  const heads = relayHeads(changes);
  const atRev = new Map<string, ResyncHead>();
  for (const path of resyncChecks(entries, heads)) {
    try {
      const ch = await recordAt(path, state.files[path].rev);
      if (ch) atRev.set(path, { rev: ch.rev, sha256: ch.meta.sha256, deleted: ch.meta.deleted });
    } catch (err) {
      if (!(err instanceof TamperDetected)) throw err;
    }
  }
  const reoffered = recordResync(state.files, planResync(entries, heads, atRev));
  setCursor(state, 0, null);
  addError(state, "relay_restored", restoredMessage(reoffered.length));
  return reoffered;
}
