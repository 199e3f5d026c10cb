/**
 * What a device remembers about its vault copy between rounds (the Python side's sync index,
 * in one JSON document): per path the last synced revision and the local stat at that time,
 * the change-feed cursor, queued remote changes (still sealed, verified again before use),
 * held and quarantined changes, and the rolling conflict and error lists of the status.
 */

export interface Entry {
  fileId: string;
  rev: number;
  sha256: string;
  size: number;
  /** Local mtime when last synced; -1: unknown, so the next scan hashes and compares. */
  mtime: number;
  deleted: boolean;
  executable: boolean;
  device: string;
  deviceKind: string;
  /** Push the local content on the next round even if its hash equals `sha256`. */
  force?: boolean;
}

/** A remote revision as queued: still sealed; `relayKind`/`relayName` as the relay said. */
export interface Queued {
  fileId: string;
  rev: number;
  parentRev: number;
  sealed: string;
  seq: number | null;
  deviceId: string | null;
  relayKind: string | null;
  relayName: string | null;
  committedAt: number | null;
  /** Why this device cannot apply it (a name its file system refuses); retried each round. */
  problem?: string;
  /** Admitted already: accepted by the person, or put back by the apply (a problem, a file
   * changed meanwhile). The hold rules do not judge it again: Python's inbox holds only
   * admitted changes (`plan_admission`, `plan_decisions`). */
  admitted?: boolean;
  /** A head that beat this device's push: judged alone by the hold rules, never taken along as
   * the old name of a held rename (Python's `Puller.admit_heads`, `admit_head` only, R4). */
  head?: boolean;
}

export interface Held extends Queued {
  path: string;
  reason: string;
  deleted: boolean;
  size: number;
  deviceName: string;
  deviceKind: string;
  renameFrom: string | null;
  time: number;
}

export interface Quarantined {
  fileId: string;
  rev: number;
  path: string | null;
  reason: string;
  time: number;
  reported: boolean;
}

export interface ConflictInfo {
  path: string;
  copy: string;
  kept: string;
  moved: string;
  outcome: string;
  message: string;
  time: number;
}

/** A remote change that replaced this device's version of a file at `appliedAt` (ms, the clock
 * of the vault's modification times): a save soon after may be stale (docs/protocol.md R15,
 * Python's `AppliedRow`). The replaced version is found on the relay at `prevRev` (a synced
 * version), or kept here in `prevData` (base64; a local version the round wrote over, small
 * text only); neither: unknown, so a save is taken as a new edit. */
export interface Applied {
  prevSha256: string;
  prevRev?: number;
  prevData?: string | null;
  appliedAt: number;
}

export interface ErrorInfo {
  time: number;
  kind: string;
  message: string;
}

export type SyncStateName = "synced" | "conflict" | "pending" | "syncing" | "offline" | "error" | "never_synced" | "held" | "vault_missing";

export interface SyncState {
  version: 1;
  cursor: number;
  /** The record this device saw at its cursor, "SEQ FILE_ID REV SHA256" (Python's meta
   * `cursor_mark`; absent in older states): a relay holding another one there was restored
   * from a backup (R3). Used only while SEQ is the cursor. */
  cursorMark?: string;
  ignoreSignature: string;
  files: Record<string, Entry>;
  inbox: Record<string, Queued>;
  held: Record<string, Held>;
  /** Local names that cannot sync, listed until renamed (path on disk -> why; absent in older states). */
  notSynced?: Record<string, string>;
  quarantine: Record<string, Quarantined>;
  /** File id -> the quarantined revision the person dismissed (absent in older states). */
  dismissed?: Record<string, number>;
  /** The recent applies, by path (the stale-save rule; absent in older states). */
  applied?: Record<string, Applied>;
  conflicts: ConflictInfo[];
  errors: ErrorInfo[];
  lastSync: number | null;
  lastAttempt: number | null;
  state: SyncStateName;
  pending: { upload: number; download: number };
}

export function emptyState(): SyncState {
  return {
    version: 1,
    cursor: 0,
    ignoreSignature: "",
    files: {},
    inbox: {},
    held: {},
    quarantine: {},
    conflicts: [],
    errors: [],
    lastSync: null,
    lastAttempt: null,
    state: "never_synced",
    pending: { upload: 0, download: 0 },
  };
}

/** Where the state lives: a file beside the CLI's device state, the plugin's folder, memory. */
export interface StateStore {
  load(): Promise<SyncState | null>;
  save(state: SyncState): Promise<void>;
}

export class MemoryStateStore implements StateStore {
  saved: string | null = null;
  saves = 0;
  async load(): Promise<SyncState | null> {
    return this.saved ? JSON.parse(this.saved) : null;
  }
  async save(state: SyncState): Promise<void> {
    this.saved = JSON.stringify(state);
    this.saves++;
  }
}

export const MAX_CONFLICTS = 50;
export const MAX_ERRORS = 20;

export function addError(state: SyncState, kind: string, message: string): void {
  state.errors.push({ time: Date.now() / 1000, kind, message });
  state.errors.splice(0, Math.max(0, state.errors.length - MAX_ERRORS));
}

export function addConflicts(state: SyncState, items: ConflictInfo[]): void {
  state.conflicts.push(...items);
  state.conflicts.splice(0, Math.max(0, state.conflicts.length - MAX_CONFLICTS));
}
