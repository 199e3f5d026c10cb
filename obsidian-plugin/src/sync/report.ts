/** What one round did (the Python RoundReport, same field names in `summary()`). */

import type { ConflictInfo } from "./state";

export class RoundReport {
  passes = 0;
  converged = false;
  downloaded: string[] = [];
  deletedLocal: string[] = [];
  renamedLocal: [string, string][] = [];
  uploaded: string[] = [];
  deletedRemote: string[] = [];
  conflicts: ConflictInfo[] = [];
  merged: string[] = [];
  keptEdits: string[] = [];
  skipped: string[] = [];
  /** Local files the scans of this round did not sync, by their name on disk (R13). */
  notSynced: { path: string; reason: string }[] = [];
  /** Remote changes this device cannot apply (kept queued, retried next round). */
  problems: { path: string; reason: string }[] = [];
  /** Remote changes newly held for the person's approval this round. */
  held: string[] = [];
  /** Records newly quarantined this round (file id prefixes, or paths when known). */
  quarantined: string[] = [];
  /** The relay was reset or restored from a backup: what it lost was offered again (R3). */
  relayRestored = false;
  deferred = 0;
  heldDeletes = 0;
  heldOf = 0;
  liveFiles = 0;
  pendingUpload = 0;
  pendingDownload = 0;
  elapsedS = 0;

  get changed(): boolean {
    return !!(
      this.downloaded.length ||
      this.deletedLocal.length ||
      this.renamedLocal.length ||
      this.uploaded.length ||
      this.deletedRemote.length ||
      this.conflicts.length
    );
  }

  summary(): Record<string, unknown> {
    return {
      passes: this.passes,
      converged: this.converged,
      downloaded: this.downloaded,
      deleted_local: this.deletedLocal,
      renamed_local: this.renamedLocal,
      uploaded: this.uploaded,
      deleted_remote: this.deletedRemote,
      conflicts: this.conflicts,
      merged: this.merged,
      kept_edits: this.keptEdits,
      skipped: this.skipped,
      problems: this.problems,
      held: this.held,
      quarantined: this.quarantined,
      deferred: this.deferred,
      held_deletes: this.heldDeletes,
      held_of: this.heldOf,
      live_files: this.liveFiles,
      pending_upload: this.pendingUpload,
      pending_download: this.pendingDownload,
      elapsed_s: this.elapsedS,
    };
  }
}
