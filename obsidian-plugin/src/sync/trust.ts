/**
 * Who wrote a record, by the person's roster (docs/trust.md §2, §3, §5; the Python side is
 * companion/sync/trust.py), pinned by tests/vectors/roster_v1.json.
 *
 * - `parseEntry`: a roster file's JSON, strictly (an entry that does not parse is "not
 *   vouched", with why);
 * - `evaluate`: the trusted set T from the device's anchor and the entries, by signatures only
 *   (where a roster file came from never matters: an agent can write one, not make it verify);
 * - `Trust`: this device's view (its own key, its anchor, the current T) and `judge`, the
 *   author kind of one opened record: with no anchor, null (version 1's rule stands); with one,
 *   the roster kind when the record's `sig` verifies under its device's key in T, `agent` when
 *   the device is not in T or the record is unsigned, and TamperedRecord when a vouched
 *   device's record carries a signature that does not verify.
 */

import { fromUtf8 } from "../crypto/bytes";
import { Float, isInt, parseJson } from "../crypto/json";
import type { FileMeta } from "../crypto/records";
import {
  type DeviceKey,
  entryMessage,
  fingerprint,
  fromB64u,
  KINDS,
  PUBLIC_SIZE,
  recordMessage,
  ROSTER_DIR,
  type RosterEntry,
  verify,
} from "../crypto/signing";
import { CompanionError, TamperedRecord } from "../errors";
import type { Kind } from "./policy";

export interface Anchor {
  deviceId: string;
  /** Unpadded base64url of the 32-byte public key. */
  key: string;
}

export interface TrustedDevice {
  deviceId: string;
  key: Uint8Array;
  kind: Kind;
  name: string;
  by: string;
  at: bigint | null;
}

export interface NotVouched {
  source: string;
  deviceId: string | null;
  why: string;
}

export interface Evaluation {
  trusted: Map<string, TrustedDevice>;
  notVouched: NotVouched[];
}

const FIELDS = ["at", "by", "device_id", "key", "kind", "name", "sig", "v", "vault_id"];

/** One roster file's entry; throws Error(why) when it is not a well-formed version 1 entry. */
export function parseEntry(data: Uint8Array | string): RosterEntry {
  let o: unknown;
  try {
    o = parseJson(typeof data === "string" ? data : fromUtf8(data));
  } catch (e) {
    throw new Error(`not JSON (${(e as Error).message})`);
  }
  if (o === null || typeof o !== "object" || Array.isArray(o) || o instanceof Float) throw new Error("not a JSON object");
  const r = o as Record<string, unknown>;
  for (const k of FIELDS) if (!(k in r)) throw new Error(`lacks '${k}'`);
  if (r.v !== 1) throw new Error(`version ${String(r.v)} is not 1`);
  for (const k of ["vault_id", "device_id", "key", "kind", "name", "by", "sig"]) {
    if (typeof r[k] !== "string") throw new Error(`'${k}' is not a string`);
  }
  if (r.at instanceof Float || !isInt(r.at) || BigInt(r.at as number | bigint) < 0n) throw new Error("'at' is not a non-negative integer");
  if (!(KINDS as readonly string[]).includes(r.kind as string)) throw new Error(`kind '${String(r.kind)}' is not human, agent or revoked`);
  fromB64u(r.key, PUBLIC_SIZE, "key");
  return {
    v: 1,
    vault_id: r.vault_id as string,
    device_id: r.device_id as string,
    key: r.key as string,
    kind: r.kind as string,
    name: r.name as string,
    by: r.by as string,
    at: BigInt(r.at as number | bigint),
    sig: r.sig as string,
  };
}

export interface Candidate {
  /** Where it was read (a vault path, "incoming …"): for `trust show` only. */
  source: string;
  entry: RosterEntry | null;
  /** Why it did not parse. */
  error?: string;
}

/** Strings as Python compares them (by code point; the spec's ASCII byte order). */
function cmp(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0)! - y[i].codePointAt(0)!;
    if (d) return d;
  }
  return x.length - y.length;
}

/** The trusted set from `anchor` and the candidates (docs/trust.md §2, Evaluation): one
 * replay in (at, device_id, sig) order of this vault's entries for devices other than the
 * anchor; an entry applies when its signer is a human device in T at that point and its
 * signature verifies under the signer's key there; it sets its device (or, revoked, removes
 * it). The anchor's key and kind never change. */
export function evaluate(vaultId: string, anchor: Anchor, candidates: Candidate[]): Evaluation {
  const trusted = new Map<string, TrustedDevice>();
  trusted.set(anchor.deviceId, {
    deviceId: anchor.deviceId,
    key: fromB64u(anchor.key, PUBLIC_SIZE, "the anchor's key"),
    kind: "human",
    name: "",
    by: anchor.deviceId,
    at: null,
  });
  const ordered = candidates
    .filter((c) => c.entry && c.entry.vault_id === vaultId && c.entry.device_id !== anchor.deviceId)
    .sort((a, b) => {
      const x = a.entry!;
      const y = b.entry!;
      return x.at < y.at ? -1 : x.at > y.at ? 1 : cmp(x.device_id, y.device_id) || cmp(x.sig, y.sig);
    });
  const why = new Map<Candidate, string>();
  for (const c of ordered) {
    const e = c.entry!;
    const signer = trusted.get(e.by);
    if (!signer) {
      why.set(c, "signed by a device that is not vouched for");
      continue;
    }
    if (signer.kind !== "human") {
      why.set(c, "signed by a device vouched for as an agent");
      continue;
    }
    if (!verify(signer.key, entryMessage(e), e.sig)) {
      why.set(c, "its signature does not verify");
      continue;
    }
    if (e.kind === "revoked") trusted.delete(e.device_id);
    else {
      trusted.set(e.device_id, {
        deviceId: e.device_id,
        key: fromB64u(e.key, PUBLIC_SIZE, "key"),
        kind: e.kind as Kind,
        name: e.name,
        by: e.by,
        at: e.at,
      });
    }
  }
  const notVouched: NotVouched[] = [];
  for (const c of candidates) {
    const e = c.entry;
    if (!e) {
      notVouched.push({ source: c.source, deviceId: null, why: c.error ?? "does not parse" });
      continue;
    }
    let reason = why.get(c) ?? null;
    if (e.vault_id !== vaultId) reason = "written for another vault";
    else if (e.device_id === anchor.deviceId) reason = null; // the anchor is trusted by its key alone
    else if (reason === null) {
      const now = trusted.get(e.device_id);
      const stands = e.kind === "revoked" ? !now : !!now && now.at === e.at && now.kind === e.kind && now.by === e.by;
      if (!stands) reason = "replaced by a newer entry";
    }
    if (reason) notVouched.push({ source: c.source, deviceId: e.device_id, why: reason });
  }
  return { trusted, notVouched };
}

/** A roster file's candidate: its entry, unless it does not parse or its file is not
 * `<device_id>.json` of its own entry (docs/trust.md §2). */
export function rosterCandidate(path: string, data: Uint8Array, source = path): Candidate {
  try {
    const entry = parseEntry(data);
    const base = path.slice(path.lastIndexOf("/") + 1);
    if (base !== `${entry.device_id}.json`) return { source, entry: null, error: `its file is not named ${entry.device_id}.json` };
    return { source, entry };
  } catch (e) {
    return { source, entry: null, error: (e as Error).message };
  }
}

export function rosterPath(deviceId: string): string {
  return `${ROSTER_DIR}/${deviceId}.json`;
}

export function isRosterPath(path: string): boolean {
  return path.startsWith(`${ROSTER_DIR}/`) && path.endsWith(".json") && !path.slice(ROSTER_DIR.length + 1).includes("/");
}

/** This device's trust: its key (null until made), its anchor (null: version 1's rule) and
 * the trusted set last evaluated. */
export class Trust {
  evaluation: Evaluation = { trusted: new Map(), notVouched: [] };

  constructor(
    readonly vaultId: string,
    readonly self: { deviceId: string; kind: Kind },
    public key: DeviceKey | null,
    public anchor: Anchor | null,
  ) {}

  get anchored(): boolean {
    return this.anchor !== null;
  }

  /** Evaluate again from these roster files (no anchor: T stays empty). */
  refresh(candidates: Candidate[]): void {
    this.evaluation = this.anchor ? evaluate(this.vaultId, this.anchor, candidates) : { trusted: new Map(), notVouched: [] };
  }

  kindOf(deviceId: string): Kind | null {
    return this.evaluation.trusted.get(deviceId)?.kind ?? null;
  }

  /** The author kind of an opened record (docs/trust.md §5): null without an anchor. */
  judge(meta: FileMeta, fileId: string, rev: number): Kind | null {
    if (!this.anchor) return null;
    const where = `record rev ${rev} of file ${fileId.slice(0, 12)}`;
    const t = this.evaluation.trusted.get(meta.deviceId);
    // this device knows its own key: its own records are its own kind, vouched yet or not
    const own = meta.deviceId === this.self.deviceId && this.key ? { key: this.key.publicKey, kind: this.self.kind } : null;
    const signer = t ?? own;
    if (!signer) return "agent";
    if (meta.sig === undefined || meta.sig === null) return "agent";
    const msg = recordMessage({ ...meta, vaultId: this.vaultId, fileId, rev });
    if (verify(signer.key, msg, meta.sig)) return signer.kind;
    if (own && t && verify(own.key, msg, meta.sig)) return own.kind;
    throw new TamperedRecord(`${where} claims device ${meta.deviceId.slice(0, 12)}, vouched in the roster, but its signature does not verify`);
  }

  /** The fingerprint of this device's key (null until made). */
  get fingerprint(): string | null {
    return this.key ? this.key.fingerprint : null;
  }

  /** A stored anchor, checked: a damaged one stops sync (docs/trust.md §3) rather than fall
   * back to version 1's rule. Throws CompanionError naming `where`. */
  static checkAnchor(value: unknown, where: string): Anchor {
    const o = value as { deviceId?: unknown; key?: unknown } | null;
    try {
      if (!o || typeof o !== "object" || typeof o.deviceId !== "string" || !o.deviceId) throw new Error("no device id");
      fromB64u(o.key, PUBLIC_SIZE, "its key");
      return { deviceId: o.deviceId, key: o.key as string };
    } catch (e) {
      throw new CompanionError(
        `this device's trust anchor (${where}) is damaged (${(e as Error).message}): sync stops rather than fall back to version 1's rule; run trust-accept again`,
      );
    }
  }

  static anchorFingerprint(a: Anchor): string {
    return fingerprint(fromB64u(a.key, PUBLIC_SIZE, "the anchor's key"));
  }
}
