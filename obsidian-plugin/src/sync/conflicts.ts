/**
 * What to do when a file changed here and on another device: a pure decision, the same rules
 * as companion/sync/round/conflicts.py (docs/sync.md §3):
 *
 * 1. same content (or both deleted): nothing; 2. one side unchanged since the common version:
 * take the other; 3. deleted on one side, edited on the other: keep the edit; 4. text with a
 * common version: three-way merge; 5. otherwise a person's version stays in the note and an
 * agent's goes to `Note (conflict DEVICE YYYY-MM-DD HHMM).md`; same kind: the remote head
 * (first to reach the relay) stays.
 */

import { equalBytes, utf8 } from "../crypto/bytes";
import { isText, mergeBytes } from "./merge";

export const HUMAN = "human";
export const AGENT = "agent";
export const KINDS = [HUMAN, AGENT];
const MAX_NAME_BYTES = 255;

/** Unknown or missing kinds count as agent: the less trusted side. */
export function deviceKind(value: string | null | undefined): "human" | "agent" {
  return value === HUMAN ? HUMAN : AGENT;
}

export interface Version {
  data: Uint8Array | null;
  deviceName: string;
  deviceKind: string;
}

export type Outcome =
  | "identical"
  | "both_deleted"
  | "take_remote"
  | "keep_local"
  | "keep_edit"
  | "merged"
  | "local_wins"
  | "remote_wins";

export interface ConflictCopy {
  path: string;
  data: Uint8Array;
  deviceName: string;
  deviceKind: string;
}

export interface Resolution {
  outcome: Outcome;
  note: Uint8Array | null;
  writeLocal: boolean;
  push: boolean;
  copy: ConflictCopy | null;
  message: string;
}

export function sanitizeDevice(name: string): string {
  let clean = name.normalize("NFC").split(/\s+/).filter(Boolean).join(" ");
  clean = clean.replace(/[<>:"/\\|?*\x00-\x1f\x7f]+/g, "_").replace(/^[ .]+|[ .]+$/g, "");
  clean = Array.from(clean).slice(0, 40).join("").replace(/^[ .]+|[ .]+$/g, "");
  return clean || "unknown device";
}

function splitExt(name: string): [string, string] {
  // posixpath.splitext: a leading dot is not an extension
  const i = name.lastIndexOf(".");
  let j = 0;
  while (j < name.length && name[j] === ".") j++;
  if (i <= j - 1 || i < j) return [name, ""];
  return [name.slice(0, i), name.slice(i)];
}

function fit(stem: string, suffix: string, ext: string): string {
  const budget = MAX_NAME_BYTES - utf8(suffix + ext).length;
  let short = "";
  let used = 0;
  for (const ch of stem) {
    const n = utf8(ch).length;
    if (used + n > Math.max(budget, 1)) break;
    short += ch;
    used += n;
  }
  return short + suffix + ext;
}

function variant(path: string, tag: string, taken: (p: string) => boolean): string {
  const slash = path.lastIndexOf("/");
  const folder = slash < 0 ? "" : path.slice(0, slash);
  const name = path.slice(slash + 1);
  const [stem, ext] = splitExt(name);
  for (let n = 1; ; n++) {
    const label = n === 1 ? tag : `${tag} ${n}`;
    const candName = fit(stem, ` (${label})`, ext);
    const cand = folder ? `${folder}/${candName}` : candName;
    if (!taken(cand)) return cand;
  }
}

const pad = (n: number) => String(n).padStart(2, "0");

export function conflictCopyName(path: string, device: string, when: Date, taken: (p: string) => boolean = () => false): string {
  const stamp = `${when.getFullYear()}-${pad(when.getMonth() + 1)}-${pad(when.getDate())} ${pad(when.getHours())}${pad(when.getMinutes())}`;
  return variant(path, `conflict ${sanitizeDevice(device)} ${stamp}`, taken);
}

export function caseCollisionName(path: string, taken: (p: string) => boolean = () => false): string {
  return variant(path, "case conflict", taken);
}

/** A name for the decomposed (NFD) twin of the NFC file `path` in the same folder:
 * `naïve (unicode conflict).md` (Python's `unicode_twin_name`). */
export function unicodeTwinName(path: string, taken: (p: string) => boolean = () => false): string {
  return variant(path, "unicode conflict", taken);
}

const same = (a: Uint8Array | null, b: Uint8Array | null) => (a === null || b === null ? a === b : equalBytes(a, b));

function done(outcome: Outcome, local: Version, remote: Version, note: Uint8Array | null, message: string, copy: ConflictCopy | null = null): Resolution {
  return { outcome, note, writeLocal: !same(note, local.data), push: !same(note, remote.data), copy, message };
}

export function resolve(
  path: string,
  local: Version,
  remote: Version,
  base: Uint8Array | null,
  when: Date,
  taken: (p: string) => boolean = () => false,
): Resolution {
  const ours = local.data;
  const theirs = remote.data;
  if (ours === null && theirs === null) return done("both_deleted", local, remote, null, `${path}: deleted on both sides`);
  if (same(ours, theirs)) return done("identical", local, remote, ours, `${path}: same content on both sides`);
  if (base !== null) {
    if (ours !== null && equalBytes(ours, base)) return done("take_remote", local, remote, theirs, `${path}: updated from ${remote.deviceName}`);
    if (theirs !== null && equalBytes(theirs, base)) return done("keep_local", local, remote, ours, `${path}: local change kept`);
  }
  if (ours === null || theirs === null) {
    const editor = ours === null ? remote : local;
    const deleter = ours === null ? local : remote;
    return done(
      "keep_edit",
      local,
      remote,
      editor.data,
      `${path}: deleted on ${deleter.deviceName} but edited on ${editor.deviceName}; the edit is kept`,
    );
  }
  if (base !== null && isText(base) && isText(ours) && isText(theirs)) {
    const merged = mergeBytes(base, ours, theirs);
    if (merged.clean && merged.text !== null) {
      return done("merged", local, remote, utf8(merged.text), `${path}: merged edits from ${local.deviceName} and ${remote.deviceName}`);
    }
  }
  const localWins = local.deviceKind === HUMAN && remote.deviceKind === AGENT;
  const [winner, loser] = localWins ? [local, remote] : [remote, local];
  const copyPath = conflictCopyName(path, loser.deviceName, when, taken);
  const copy: ConflictCopy = { path: copyPath, data: loser.data!, deviceName: loser.deviceName, deviceKind: loser.deviceKind };
  const why =
    winner.deviceKind === HUMAN && loser.deviceKind === AGENT
      ? "a person's edit wins over an agent's"
      : "the version that reached the relay first wins";
  return done(
    localWins ? "local_wins" : "remote_wins",
    local,
    remote,
    winner.data,
    `${path}: conflict; kept ${winner.deviceName}'s version (${why}), ${loser.deviceName}'s saved as '${copyPath}'`,
    copy,
  );
}
// What `conflictCopyName` and `caseCollisionName` write, read back (companion/sync/round/conflicts.py
// is_kept_copy and views.py): "<stem> (conflict <device> <date> <HHMM>[ N])<ext>", and the
// names kept after a case or Unicode-spelling collision.
const COPY_NAME = /^(?<stem>.+) \((?:conflict (?<device>.+) \d{4}-\d{2}-\d{2} \d{4}|(?:case|unicode) conflict)(?: \d+)?\)(?<ext>\.[^.]*)?$/u;

/** A conflict copy, or a file kept under another name after a name collision: what `status`
 * lists as conflicts to look at, on every device (not only the one that made it). */
export function isKeptCopy(name: string): boolean {
  return COPY_NAME.test(name);
}

function split(copy: string): [string, RegExpMatchArray | null] {
  const slash = copy.lastIndexOf("/");
  return [slash < 0 ? "" : copy.slice(0, slash + 1), copy.slice(slash + 1).match(COPY_NAME)];
}

export interface CopyView {
  path: string;
  copy: string;
  kept: string;
  moved: string;
  outcome: string;
  message: string;
  time: number | null;
}

/** The conflict copies in the vault (sorted), each with what this device knows of it (the round
 * that made it) or else what its name says (views.conflict_views). */
export function conflictViews(copies: string[], recent: readonly CopyView[]): CopyView[] {
  const known = new Map(recent.filter((c) => c.copy).map((c) => [c.copy, c]));
  return [...copies].sort().map((copy) => {
    const k = known.get(copy);
    if (k) return { ...k };
    const [folder, m] = split(copy);
    const original = m ? folder + m.groups!.stem + (m.groups!.ext ?? "") : copy;
    return { path: original, copy, kept: "", moved: m?.groups?.device ?? "", outcome: "", message: `${copy} holds another version of ${original}`, time: null };
  });
}
