/**
 * Error types, mirroring companion/errors.py, companion/crypto/errors.py and
 * companion/relayclient/errors.py so both implementations report the same things the same way.
 * Messages are for a person and never contain a key, a token, a passphrase or note content.
 */

export class CompanionError extends Error {
  /** Exit status for the headless CLI (same contract as `companion sync`). */
  exitCode = 1;
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

export class InputError extends CompanionError {
  exitCode = 2;
}

// crypto ---------------------------------------------------------------------------------------
export class CryptoError extends CompanionError {}
export class TamperDetected extends CryptoError {}
export class TamperedRecord extends TamperDetected {}
export class TamperedBlob extends TamperDetected {}
export class TamperedWrappedKey extends TamperDetected {}
export class RolledBack extends TamperDetected {}
/** A commit refused with no relay revision at or after the one this device committed on (its
 * head older, or none): a restore the pull did not notice (R3). The round resyncs once, as for
 * `since_ahead` (Python's `RelayLostRevision`); the same refusal after that stops it. */
export class RelayLostRevision extends RolledBack {}
/** A record whose device kind disagrees with the relay's record of the committing device. */
export class KindMismatch extends TamperDetected {}
export class WrongPassphrase extends CryptoError {}
export class WeakPassphrase extends CryptoError {
  exitCode = 2;
}
export class UnsafeKdfParams extends CryptoError {}
export class BadRecoveryKey extends CryptoError {
  exitCode = 2;
}
export class UnsupportedVersion extends CryptoError {}
/** The platform's crypto failed its start-up self-test: never sync with it. */
export class SelfTestFailed extends CryptoError {}

// relay ----------------------------------------------------------------------------------------
export class RelayError extends CompanionError {
  status: number | null;
  code: string | null;
  constructor(message: string, opts: { status?: number | null; code?: string | null } = {}) {
    super(message);
    this.status = opts.status ?? null;
    this.code = opts.code ?? null;
  }
}
/** No answer, or a proxy saying the relay is down: queue and retry (exit status 5). */
export class RelayUnreachable extends RelayError {
  exitCode = 5;
}
/** 429 or 503: the relay asks us to wait `retryAfterS` seconds; keep running, then retry. */
export class RelayBusy extends RelayUnreachable {
  retryAfterS: number;
  constructor(message: string, retryAfterS: number, opts: { status?: number; code?: string | null } = {}) {
    super(message, opts);
    this.retryAfterS = retryAfterS;
  }
}
export class AuthError extends RelayError {}
export class ConflictError extends RelayError {}
export class NotFoundError extends RelayError {}
/** The relay holds another record at this device's cursor than the one this device saw there:
 * restored from a backup, and others committed past the cursor since (R3). Handled like
 * `since_ahead` (Python's `RelayRestored`). */
export class RelayRestored extends RelayError {}
export class MissingBlobsError extends RelayError {
  missing: string[];
  constructor(message: string, missing: string[], opts: { status?: number; code?: string | null } = {}) {
    super(message, opts);
    this.missing = missing;
  }
}

// sync -----------------------------------------------------------------------------------------
export class MassDeleteRefused extends CompanionError {
  exitCode = 3;
  nDeletes: number;
  nTotal: number;
  constructor(nDeletes: number, nTotal: number, ratio: number) {
    const share = nTotal ? nDeletes / nTotal : 1;
    super(
      `this sync would delete ${nDeletes} of ${nTotal} files (${Math.round(share * 100)}%) on your other ` +
        `devices, more than the ${Math.round(ratio * 100)}% allowed; check that the vault is the right one, ` +
        "then, if the deletion is intended, confirm it (plugin: \"Sync now, allowing mass deletion\"; " +
        "CLI: sync --allow-mass-delete)",
    );
    this.nDeletes = nDeletes;
    this.nTotal = nTotal;
  }
}
export class Locked extends CompanionError {
  exitCode = 4;
}
export class NotConverged extends CompanionError {}
/** The vault folder is missing, or is not this copy's (issue #42): nothing is written to it,
 * deleted from it or derived from it until it is back (exit status 6, as `companion sync`). */
export class VaultFolderMissing extends CompanionError {
  exitCode = 6;
}
