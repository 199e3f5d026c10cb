/**
 * The person's trust actions on this device (docs/trust.md §3; the Python side is `companion
 * trust show|init|accept|vouch`), over a `VaultFS` so the CLI and the settings tab share them:
 *
 * - `trustShow`: this device's fingerprint, its anchor, the vouched devices, the roster files
 *   that are not vouched (with why) and the announced keys;
 * - `trustInit`: the person's first device signs its own entry and anchors on its own key;
 * - `trustAccept`: anchor on the announced key whose fingerprint the person read on a trusted
 *   human device;
 * - `trustVouch`: sign an entry for another device's announced key, only if its fingerprint is
 *   the one the person read on that device.
 *
 * Each writes roster files into the vault (they sync as any file) and returns the new anchor
 * for the caller to keep in its per-device state (never in the vault). Errors are InputError
 * with a sentence for the person.
 */

import { fromUtf8 } from "../crypto/bytes";
import { parseJson } from "../crypto/json";
import {
  b64u,
  entryJson,
  fingerprint,
  fromB64u,
  KEYS_DIR,
  normalizeFingerprint,
  PUBLIC_SIZE,
  ROSTER_DIR,
  type RosterEntry,
  signEntry,
} from "../crypto/signing";
import { InputError } from "../errors";
import type { SyncEngine } from "./engine";
import { type Anchor, type Candidate, rosterCandidate, rosterPath, Trust } from "./trust";

export interface Announcement {
  path: string;
  deviceId: string;
  key: string;
  name: string;
  fingerprint: string;
}

/** `trust-show --json`: the keys of `companion trust show --json` (trust_summary), plus
 * `summary` and every announced key with its state. */
export interface TrustReport {
  device_id: string;
  kind: string;
  fingerprint: string | null;
  anchored: boolean;
  anchor: { device_id: string; name: string; fingerprint: string } | null;
  /** "device keys: not set up" without an anchor (version 1's rule). */
  summary: string;
  trusted: { device_id: string; kind: string; name: string; fingerprint: string; by: string; key: string }[];
  not_vouched: { file: string; device_id: string | null; why: string }[];
  unvouched_devices: { device_id: string; name: string; fingerprint: string }[];
  announced: { device_id: string; name: string; fingerprint: string; status: string }[];
}

function need(engine: SyncEngine): Trust {
  const t = engine.trust;
  if (!t) throw new InputError("this device has no device key yet: run sync once");
  return t;
}

/** Every announcement in the vault (`.companion/keys/*.json`) that parses. */
export async function announcements(engine: SyncEngine): Promise<Announcement[]> {
  const out: Announcement[] = [];
  for (const st of await engine.fs.list()) {
    if (!st.path.startsWith(`${KEYS_DIR}/`) || !st.path.endsWith(".json")) continue;
    try {
      const o = parseJson(fromUtf8(await engine.fs.read(st.path))) as Record<string, unknown>;
      if (o === null || typeof o !== "object" || o.v !== 1 || typeof o.device_id !== "string" || typeof o.name !== "string") continue;
      const pub = fromB64u(o.key, PUBLIC_SIZE, "key");
      out.push({ path: st.path, deviceId: o.device_id, key: o.key as string, name: o.name, fingerprint: fingerprint(pub) });
    } catch {
      continue;
    }
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** Every roster file in the vault, synced or not. */
async function rosterFiles(engine: SyncEngine): Promise<Candidate[]> {
  const out: Candidate[] = [];
  for (const st of await engine.fs.list()) {
    if (!st.path.startsWith(`${ROSTER_DIR}/`) || !st.path.endsWith(".json")) continue;
    const data = await engine.fs.read(st.path).catch(() => null);
    if (data) out.push(rosterCandidate(st.path, data));
  }
  return out;
}

export async function trustShow(engine: SyncEngine): Promise<TrustReport> {
  const t = engine.trust;
  const anns = await announcements(engine);
  const names = new Map(anns.map((x) => [x.deviceId, x.name]));
  if (t?.anchored) t.refresh(await rosterFiles(engine));
  const ev = t?.anchored ? t.evaluation : null;
  const trusted = ev
    ? [...ev.trusted.values()]
        .sort((x, y) => (x.deviceId < y.deviceId ? -1 : 1))
        .map((d) => ({
          device_id: d.deviceId,
          kind: d.kind,
          name: names.get(d.deviceId) ?? d.name,
          fingerprint: fingerprint(d.key),
          by: d.by,
          key: b64u(d.key),
        }))
    : [];
  const anchor = t?.anchor ?? null;
  return {
    device_id: engine.device.deviceId,
    kind: engine.device.kind,
    fingerprint: t?.fingerprint ?? null,
    anchored: !!anchor,
    anchor: anchor ? { device_id: anchor.deviceId, name: names.get(anchor.deviceId) ?? "", fingerprint: Trust.anchorFingerprint(anchor) } : null,
    summary: anchor
      ? `device keys: anchored on ${names.get(anchor.deviceId) ?? anchor.deviceId} (${Trust.anchorFingerprint(anchor)}); ${trusted.length} vouched device(s)`
      : "device keys: not set up (who wrote what is the relay's word and the record's, as in version 1)",
    trusted,
    not_vouched: ev ? ev.notVouched.map((n) => ({ file: n.source, device_id: n.deviceId, why: n.why })) : [],
    unvouched_devices: ev
      ? anns.filter((x) => !ev.trusted.has(x.deviceId) && x.deviceId !== engine.device.deviceId).map((x) => ({ device_id: x.deviceId, name: x.name, fingerprint: x.fingerprint }))
      : [],
    announced: anns.map((x) => {
      const d = ev?.trusted.get(x.deviceId);
      const status = !ev ? "unknown (not set up)" : !d ? "not vouched" : fingerprint(d.key) === x.fingerprint ? d.kind : "announces another key than vouched";
      return { device_id: x.deviceId, name: x.name, fingerprint: x.fingerprint, status };
    }),
  };
}

function nowNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

async function writeEntry(engine: SyncEngine, e: RosterEntry): Promise<string> {
  const path = rosterPath(e.device_id);
  await engine.writeOwn(path, new TextEncoder().encode(entryJson(e)));
  engine.extraRosterPaths.add(path);
  return path;
}

/** The person's first device: its own entry, signed by itself, and its own key as anchor. */
export async function trustInit(engine: SyncEngine): Promise<{ anchor: Anchor; path: string }> {
  const t = need(engine);
  if (!t.key) throw new InputError("this device has no device key yet: run sync once");
  if (t.anchor && t.anchor.key !== t.key.publicB64) {
    throw new InputError(
      "this device already trusts another device's roster; `trust-init` would start another. Vouch for devices from there (see trust-show)",
    );
  }
  const me = engine.device;
  const entry = signEntry(t.key, {
    vault_id: t.vaultId,
    device_id: me.deviceId,
    key: t.key.publicB64,
    kind: "human",
    name: me.deviceName,
    by: me.deviceId,
    at: nowNs(),
  });
  const path = await writeEntry(engine, entry);
  await engine.ensureAnnouncement(true);
  const anchor = { deviceId: me.deviceId, key: t.key.publicB64 };
  t.anchor = anchor;
  return { anchor, path };
}

function findByFingerprint(anns: Announcement[], fp: string): Announcement[] {
  return anns.filter((a) => a.fingerprint === fp);
}

function checkedFingerprint(text: string): string {
  const fp = normalizeFingerprint(text);
  if (!fp) throw new InputError(`'${text}' is not a fingerprint (28 letters A-Z and digits 2-7, as ABCD-EFGH-…)`);
  return fp;
}

/** Anchor on the announced key with the fingerprint the person read on a trusted device. */
export async function trustAccept(engine: SyncEngine, fpText: string): Promise<{ anchor: Anchor; name: string }> {
  const t = need(engine);
  const fp = checkedFingerprint(fpText);
  const found = findByFingerprint(await announcements(engine), fp);
  if (!found.length) {
    throw new InputError(`no device of this vault announces a key with fingerprint ${fp}; sync first, and check the fingerprint on that device`);
  }
  const a = found[0];
  const anchor = { deviceId: a.deviceId, key: a.key };
  t.anchor = anchor;
  await engine.ensureAnnouncement(true); // at once, so the person can vouch for this device
  return { anchor, name: a.name };
}

/** Vouch for DEVICE (its id or its announced name) as `kind`, if its announced key has `fp`. */
export async function trustVouch(engine: SyncEngine, device: string, kind: string, fpText: string | undefined): Promise<{ entry: RosterEntry; path: string }> {
  const t = need(engine);
  if (!["human", "agent", "revoked"].includes(kind)) throw new InputError(`--kind is human, agent or revoked, not '${kind}'`);
  if (!t.key) throw new InputError("this device has no device key yet: run sync once");
  if (!t.anchored) throw new InputError("device keys are not set up on this device: run trust-init (first device) or trust-accept FINGERPRINT first");
  t.refresh(await rosterFiles(engine));
  const me = t.evaluation.trusted.get(engine.device.deviceId);
  if (!me || me.kind !== "human" || fingerprint(me.key) !== t.key.fingerprint) {
    throw new InputError("this device is not vouched as a human device in the roster: vouch for it from a trusted human device first, and sync");
  }
  const anns = await announcements(engine);
  const matches = anns.filter((a) => a.deviceId === device || a.name === device);
  if (device === engine.device.deviceId || (matches.length && matches.every((a) => a.deviceId === engine.device.deviceId))) {
    throw new InputError("a device never vouches for itself: vouch for it from another trusted human device");
  }
  const ids = new Set(matches.map((a) => a.deviceId));
  if (ids.size > 1) throw new InputError(`several devices are named '${device}': give its device id`);
  let key: string;
  let name: string;
  let deviceId: string;
  if (fpText === undefined) {
    if (kind !== "revoked") throw new InputError("give the fingerprint shown on that device (trust-show there)");
    // withdrawing needs no comparison: the entry names the key that was trusted
    const known = t.evaluation.trusted.get(device) ?? [...t.evaluation.trusted.values()].find((d) => d.name === device);
    const a = matches[0];
    if (!known && !a) throw new InputError(`no device '${device}' is vouched or announced in this vault`);
    deviceId = known?.deviceId ?? a.deviceId;
    key = known ? b64u(known.key) : a.key;
    name = known?.name || a?.name || "";
  } else {
    const fp = checkedFingerprint(fpText);
    if (!matches.length) throw new InputError(`no device '${device}' announces a key in this vault (.companion/keys/); sync first`);
    const a = matches.find((x) => x.fingerprint === fp);
    if (!a) {
      throw new InputError(
        `the key '${device}' announces has fingerprint ${matches[0].fingerprint}, not ${fp}: not vouched (compare the fingerprint on the device itself)`,
      );
    }
    deviceId = a.deviceId;
    key = a.key;
    name = a.name;
  }
  let at = nowNs();
  const prev = t.evaluation.trusted.get(deviceId)?.at;
  if (prev !== null && prev !== undefined && at <= prev) at = prev + 1n;
  const entry = signEntry(t.key, { vault_id: t.vaultId, device_id: deviceId, key, kind, name, by: engine.device.deviceId, at });
  const path = await writeEntry(engine, entry);
  t.refresh(await rosterFiles(engine));
  return { entry, path };
}
