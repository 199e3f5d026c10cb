/**
 * The trust rules of security issue #12, each in one small function so the Python side can be
 * aligned with them one for one:
 *
 * - `effectiveKind`: precedence and history use the relay's record of the committing device
 *   (`device_kind` on RecordOut) when the relay sends it, else the kind sealed in the record.
 * - `kindMismatch`: a sealed kind that disagrees with the relay's is refused as tampering.
 * - `mustHold`: on a human device, agent-authored changes to Obsidian's executable or
 *   behavioural configuration, and any change that sets the executable bit, wait for the
 *   person's approval.
 * - `isMassDelete`: the mass-deletion guard (companion/sync/guard.py).
 * - `Backoff` / `retryDelay`: back off on 429/503 (honouring Retry-After) and keep running.
 */

import { AGENT, deviceKind, HUMAN } from "./conflicts";

export type Kind = "human" | "agent";

export function effectiveKind(relayKind: string | null | undefined, sealedKind: string): Kind {
  if (relayKind === HUMAN || relayKind === AGENT) return relayKind;
  return deviceKind(sealedKind);
}

/** True when the relay names a kind and the sealed record claims another. */
export function kindMismatch(relayKind: string | null | undefined, sealedKind: string): boolean {
  if (relayKind !== HUMAN && relayKind !== AGENT) return false;
  return deviceKind(sealedKind) !== relayKind;
}

/** Obsidian configuration that runs code or changes what the app does. */
export function isBehaviouralConfig(path: string, configDir = ".obsidian"): boolean {
  for (const dir of new Set([".obsidian", configDir])) {
    const prefix = dir + "/";
    if (!path.startsWith(prefix)) continue;
    const rest = path.slice(prefix.length);
    if (/^(plugins|snippets|themes)\//.test(rest)) return true;
    if (["community-plugins.json", "hotkeys.json", "app.json"].includes(rest)) return true;
  }
  return false;
}

export interface HoldInput {
  localKind: Kind;
  remoteKind: Kind;
  path: string;
  /** Old path of a rename (its tombstone is classified too). */
  renameFrom?: string | null;
  /** The remote revision sets the executable bit where the last synced one had it clear. */
  setsExec: boolean;
  configDir?: string;
}

/** Why a remote change must wait for the person, or null when it may be applied. */
export function mustHold(h: HoldInput): string | null {
  if (h.localKind !== HUMAN || h.remoteKind !== AGENT) return null;
  if (h.setsExec) return "an agent device made this file executable";
  if (isBehaviouralConfig(h.path, h.configDir) || (h.renameFrom && isBehaviouralConfig(h.renameFrom, h.configDir))) {
    return "an agent device changed Obsidian's plugins, themes, snippets, hotkeys or app settings";
  }
  return null;
}

export const MASS_DELETE_MIN_FILES = 10;

/** True when deleting `nDeletes` of `nTotal` synced files needs confirmation (the rule of
 * companion/sync/guard.py): more than `ratio` of them, never fewer than `minFiles` unless they
 * are every synced file (an emptied or unmounted folder, whatever the vault's size). */
export function isMassDelete(nDeletes: number, nTotal: number, ratio: number, minFiles = MASS_DELETE_MIN_FILES): boolean {
  const everyFile = nDeletes >= Math.max(nTotal, 1);
  if (nDeletes < Math.max(minFiles, 1) && !everyFile) return false;
  return nDeletes > ratio * Math.max(nTotal, nDeletes);
}

/** Exponential backoff with jitter (0.5 s doubling to `max`), reset on success. */
export class Backoff {
  failures = 0;
  constructor(
    readonly first = 0.5,
    readonly max = 60,
    private readonly random: () => number = Math.random,
  ) {}

  next(): number {
    this.failures++;
    const cap = Math.min(this.max, this.first * 2 ** (this.failures - 1));
    return cap / 2 + this.random() * (cap / 2);
  }

  reset(): void {
    this.failures = 0;
  }
}

/** Seconds to wait before the next attempt after `err`: Retry-After wins when it is longer. */
export function retryDelay(backoff: Backoff, retryAfterS: number | null): number {
  const d = backoff.next();
  return retryAfterS !== null && retryAfterS > d ? Math.min(retryAfterS, 3600) : d;
}
