/**
 * The planner (companion/sync/round/plan.py): what a round must do, decided from the pulled
 * changes, the local scan, the queued remote changes and the index. Pure: no file, no network,
 * no engine; the engine records admission and carries out decisions, `apply.ts` and `push.ts`
 * execute the steps. Its steps are named as Python's and it decides as Python's does:
 * `obsidian-plugin/test/plan-vectors.test.ts` replays every case of `tests/vectors/plan_v1.json`
 * (written from the Python planner) and compares exactly.
 *
 * - Admission (`planAdmission`, with `admitHead` and `holdRenameSources`): each verified remote
 *   change is queued, held for the person (`HoldPolicy`, the rules of policy.ts), skipped
 *   (have, queued, held at that revision, ignored) or quarantined (no vault path); held paths a newer admissible
 *   change replaces are released, quarantined files whose newest record verified healed.
 * - Decisions (`planDecisions`): the person's decisions on held and quarantined files.
 * - Apply (`planApply`): each queued remote change against the local scan: `Download`,
 *   `RemoveHere`, `MoveHere` (a remote rename of a file unchanged here); `Reconcile` (changed on
 *   both sides); a rename racing an edit (`FollowRemoteRename`, `FollowLocalRename`); `Wait` (a
 *   file being written here); `CaseCollision`; `Discard` (already here); and `StaleSave`: a local
 *   save within the window after a remote change replaced the file (docs/protocol.md R15).
 * - Push (`planPush`): each remaining local change becomes an `Upload` or a `Tombstone` (a
 *   rename as the two together); deletions beyond the mass-deletion ratio are held back; changes
 *   to held or quarantined files wait for the person.
 *
 * Times (`mtime`, `appliedAt`, `window`) are in whatever unit the caller picks, the same for
 * all three: the plugin's engine uses milliseconds, the vectors nanoseconds.
 */

import { HUMAN } from "./conflicts";
import { derivesFrom } from "./merge";
import { fold, pathProblem, tryNormalize } from "./paths";
import { configFolders, holdFold, holdReason, isMassDelete } from "./policy";
import type { Scopes } from "./scopes";

/** A save this soon after an apply may be stale (Python's STALE_SAVE_WINDOW_NS), in ms. */
export const STALE_SAVE_WINDOW_MS = 10_000;

export type LocalKind = "created" | "modified" | "deleted";

/** A local change as the scan reports it (a rename split into its two halves). */
export interface PlanLocal {
  kind: LocalKind;
  path: string;
  sha256?: string;
  /** When it was saved (absent for a deletion). */
  mtime?: number;
  renameFrom?: string;
  renameTo?: string;
}

/** One queued remote change, verified: what the planner reads of it, and the executor's own
 * record of it (`change`). */
export interface Incoming<C = unknown> {
  path: string;
  rev: number;
  deleted: boolean;
  sha256: string;
  /** As the record says (not normalised yet). */
  renameFrom: string | null;
  authorKind: string;
  change: C;
}

/** What the planner reads of an index row. */
export interface IndexEntry {
  sha256: string;
  rev: number;
  deleted: boolean;
}

export interface IndexView<E extends IndexEntry = IndexEntry> {
  get(path: string): E | undefined;
  /** Live paths whose fold is `key`, sorted (case-collision detection). */
  pathsWithFold(key: string): string[];
}

/** The local version a remote change replaced at `appliedAt` (`prevData`: its content when it
 * is small text; Python's `AppliedRow`). */
export interface AppliedRow {
  path: string;
  prevSha256: string;
  prevData?: Uint8Array | null;
  appliedAt: number;
}

export interface Discard<C> { step: "Discard"; item: Incoming<C> }
export interface MoveHere<C, E> { step: "MoveHere"; old: string; new: string; gone: Incoming<C>; came: Incoming<C>; expected: E }
export interface RemoveHere<C, E> { step: "RemoveHere"; item: Incoming<C>; expected: E | null }
export interface Download<C, E> { step: "Download"; item: Incoming<C>; expected: E | null; bulk: boolean }
export interface Reconcile<C, L> { step: "Reconcile"; item: Incoming<C>; local: L }
export interface FollowRemoteRename<C, L> { step: "FollowRemoteRename"; old: string; new: string; gone: Incoming<C>; came: Incoming<C>; local: L }
export interface FollowLocalRename<C, L> { step: "FollowLocalRename"; old: string; new: string; item: Incoming<C>; localNew: L }
export interface CaseCollision<C> { step: "CaseCollision"; item: Incoming<C>; other: string }
export interface Wait<C> { step: "Wait"; path: string; item: Incoming<C> | null }
export interface StaleSave<L> { step: "StaleSave"; local: L; applied: AppliedRow }

export type ApplyStep<C = unknown, L extends PlanLocal = PlanLocal, E extends IndexEntry = IndexEntry> =
  | Discard<C>
  | MoveHere<C, E>
  | RemoveHere<C, E>
  | Download<C, E>
  | Reconcile<C, L>
  | FollowRemoteRename<C, L>
  | FollowLocalRename<C, L>
  | CaseCollision<C>
  | Wait<C>
  | StaleSave<L>;

export interface ApplyPlan<C = unknown, L extends PlanLocal = PlanLocal, E extends IndexEntry = IndexEntry> {
  /** In the order to run them. */
  steps: ApplyStep<C, L, E>[];
  /** The local changes left to push. */
  push: Map<string, L>;
}

export interface ApplyOptions {
  /** Files being written here (their remote changes wait, R16). */
  unstable?: Iterable<string>;
  /** The recent applies, by path (the stale-save rule, R15). */
  applied?: ReadonlyMap<string, AppliedRow> | null;
  /** A disk that opens names case-insensitively (R11). */
  caseInsensitive?: boolean;
  /** A person's device: an agent's new file whose name differs from another's only by case is
   * a case collision on any disk, never a second note (R11, issue 44). */
  agentTwins?: boolean;
  /** The stale-save window, in the unit of `mtime` and `appliedAt`. */
  window?: number;
}

/** Python's string order (code points), not JavaScript's UTF-16 units: at the first unit
 * that differs, a surrogate (half of a code point above U+FFFF) sorts after every other unit. */
export function byPath(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codeRank(x) - codeRank(y);
  }
  return a.length - b.length;
}

function codeRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  return unit >= 0xe000 ? unit - 0x800 : unit;
}

function sortedKeys<T>(m: Map<string, T>): string[] {
  return [...m.keys()].sort(byPath);
}

function renameSource(item: Incoming<unknown>): string | null {
  if (item.deleted || !item.renameFrom) return null;
  return tryNormalize(item.renameFrom);
}

function entryState<E extends IndexEntry>(e: E | undefined): E | null {
  return e === undefined || e.deleted ? null : e;
}

/** The stale-save rule on the contents (Python's `is_new_edit`): whether a save in the window
 * after `head` replaced `prev` is a new edit of `head` (pushed as it is) rather than a stale
 * one. Only a save that drops the change just applied is stale; one that holds it (`head`
 * itself, a line `head` added, the same deletion) is new, even when it edits the line right
 * next to that change (`merge.derivesFrom`). Without `prev` (too large to keep) nothing says
 * otherwise. */
export function isNewEdit(prev: Uint8Array | null | undefined, head: Uint8Array, saved: Uint8Array): boolean {
  return prev === null || prev === undefined || !derivesFrom(prev, head, saved);
}

const ORDER = ["Discard", "MoveHere", "RemoveHere", "FollowRemoteRename", "FollowLocalRename", "Wait"];

/** Plan one pass (Python's `plan_apply`): `local` holds the scan's changes (renames as two
 * halves). Neither argument is changed. */
export function planApply<C, L extends PlanLocal, E extends IndexEntry>(
  inbox: ReadonlyMap<string, Incoming<C>>,
  local: ReadonlyMap<string, L>,
  view: IndexView<E>,
  opts: ApplyOptions = {},
): ApplyPlan<C, L, E> {
  const caseInsensitive = !!opts.caseInsensitive;
  const agentTwins = !!opts.agentTwins;
  const window = opts.window ?? STALE_SAVE_WINDOW_MS;
  const todo = new Map(inbox);
  const left = new Map(local);
  const busy = new Set(opts.unstable ?? []);
  const steps: ApplyStep<C, L, E>[] = [];

  for (const path of sortedKeys(todo)) {
    const item = todo.get(path)!;
    const entry = view.get(path);
    if (entry !== undefined && item.rev <= entry.rev) {
      steps.push({ step: "Discard", item });
      todo.delete(path);
    }
  }

  // remote renames: a tombstone of `old` with a record of `new` naming it
  for (const nu of sortedKeys(todo)) {
    const came = todo.get(nu);
    if (came === undefined) continue; // consumed by an earlier rename of this loop
    const old = renameSource(came);
    const gone = old !== null ? todo.get(old) : undefined;
    if (old === null || gone === undefined || !gone.deleted) continue;
    if (busy.has(old) || busy.has(nu)) {
      // one half being written here: both wait, so the next pass meets the rename whole
      for (const [half, item] of [[old, gone], [nu, came]] as const) {
        steps.push({ step: "Wait", path: half, item });
        left.delete(half);
        todo.delete(half);
      }
      continue;
    }
    const oldEntry = view.get(old);
    const newEntry = view.get(nu);
    const newFree =
      (newEntry === undefined || newEntry.deleted) && !(caseInsensitive && view.pathsWithFold(fold(nu)).some((p) => p !== old));
    const lo = left.get(old);
    if (left.has(nu) || !newFree) continue; // something at `new` here: resolved there
    if (lo !== undefined && lo.kind === "modified") {
      steps.push({ step: "FollowRemoteRename", old, new: nu, gone, came, local: lo });
      left.delete(old);
      todo.delete(old);
      todo.delete(nu);
      continue;
    }
    if (lo !== undefined) continue; // deleted or renamed here too: both deletions meet below
    const expected = entryState(oldEntry);
    if (expected === null || expected.sha256 !== came.sha256) continue;
    steps.push({ step: "MoveHere", old, new: nu, gone, came, expected });
    todo.delete(old);
    todo.delete(nu);
  }

  // renamed here, edited there: the edit follows the rename
  for (const path of sortedKeys(todo)) {
    const item = todo.get(path)!;
    const lo = left.get(path);
    if (item.deleted || lo === undefined || lo.kind !== "deleted") continue;
    const target = lo.renameTo;
    const ln = target ? left.get(target) : undefined;
    if (!target || ln === undefined || todo.has(target) || busy.has(target)) continue;
    steps.push({ step: "FollowLocalRename", old: path, new: target, item, localNew: ln });
    left.delete(path);
    left.delete(target);
    todo.delete(path);
  }

  const paths = sortedKeys(todo);
  const deletions = paths.filter((p) => todo.get(p)!.deleted);
  const writes = paths.filter((p) => !todo.get(p)!.deleted);
  const newFolds = new Map<string, string>(); // new files planned in this pass, by fold
  for (const path of [...deletions, ...writes]) {
    const item = todo.get(path)!;
    if (busy.has(path)) {
      steps.push({ step: "Wait", path, item });
      left.delete(path);
      continue;
    }
    const lc = left.get(path);
    if (lc !== undefined) {
      left.delete(path);
      steps.push({ step: "Reconcile", item, local: lc });
      continue;
    }
    const expected = entryState(view.get(path));
    if (item.deleted) {
      steps.push({ step: "RemoveHere", item, expected });
      continue;
    }
    if ((caseInsensitive || agentTwins) && expected === null) {
      const key = fold(path);
      const others = view.pathsWithFold(key).filter((p) => p !== path);
      const planned = newFolds.get(key);
      if (planned !== undefined) others.push(planned);
      if (others.length && (caseInsensitive || item.authorKind !== HUMAN)) {
        steps.push({ step: "CaseCollision", item, other: others[0] });
        continue;
      }
      if (planned === undefined) newFolds.set(key, path);
    }
    steps.push({ step: "Download", item, expected, bulk: !caseInsensitive });
  }

  for (const path of sortedKeys(left)) {
    const lc = left.get(path)!;
    const rec = opts.applied?.get(path);
    if (rec === undefined || lc.kind !== "modified" || lc.mtime === undefined) continue;
    const after = lc.mtime - rec.appliedAt;
    if (after >= 0 && after <= window) {
      steps.push({ step: "StaleSave", local: lc, applied: rec });
      left.delete(path);
    }
  }

  const rank = (s: ApplyStep<C, L, E>) => {
    const i = ORDER.indexOf(s.step);
    return i < 0 ? ORDER.length : i;
  };
  return { steps: steps.map((s, i) => [s, i] as const).sort((a, b) => rank(a[0]) - rank(b[0]) || a[1] - b[1]).map(([s]) => s), push: left };
}

// ------------------------------------------------------------------ push

export interface Upload<L> {
  step: "Upload";
  local: L;
  parentRev: number;
  /** The rename this upload is the new half of (null when it goes as a plain creation). */
  renameFrom: string | null;
}

export interface Tombstone {
  step: "Tombstone";
  path: string;
  parentRev: number;
  sha256: string;
  /** The rename this tombstone is the old half of. */
  renameTo: string | null;
}

export interface PushPlan<L> {
  uploads: Upload<L>[];
  tombstones: Tombstone[];
  /** Deletions held by the mass-deletion guard. */
  heldDeletes: string[];
  /** Held or quarantined here: they wait for the person. */
  keptBack: string[];
  /** Live files when the deletions were counted. */
  live: number;
}

export interface PushOptions {
  blocked?: Iterable<string>;
  live: number;
  massDeleteRatio: number;
  allowMassDelete?: boolean;
}

/** What to commit of the local changes left after applying (Python's `plan_push`). */
export function planPush<L extends PlanLocal, E extends IndexEntry>(local: ReadonlyMap<string, L>, view: IndexView<E>, opts: PushOptions): PushPlan<L> {
  const plan: PushPlan<L> = { uploads: [], tombstones: [], heldDeletes: [], keptBack: [], live: opts.live };
  const todo = new Map(local);
  const renameFrom = new Map<string, string | null>();
  const blocked = [...new Set(opts.blocked ?? [])].filter((p) => todo.has(p)).sort(byPath);
  for (const path of blocked) {
    const lc = todo.get(path)!;
    todo.delete(path);
    // the other half goes as a plain creation
    if (lc.renameTo && todo.has(lc.renameTo)) renameFrom.set(lc.renameTo, null);
    plan.keptBack.push(path);
  }
  const deletes = [...todo.values()].filter((c) => c.kind === "deleted" && !c.renameTo).map((c) => c.path);
  if (deletes.length && !opts.allowMassDelete && isMassDelete(deletes.length, opts.live, opts.massDeleteRatio)) {
    plan.heldDeletes = deletes.sort(byPath);
  }
  const held = new Set(plan.heldDeletes);
  for (const path of sortedKeys(todo)) {
    if (held.has(path)) continue;
    const c = todo.get(path)!;
    const entry = view.get(path);
    if (c.kind === "deleted") {
      if (entry === undefined || entry.deleted) continue; // never reached the relay, or deleted there
      const sha = entry.sha256.length === 64 ? entry.sha256 : "";
      plan.tombstones.push({ step: "Tombstone", path, parentRev: entry.rev, sha256: sha, renameTo: c.renameTo ?? null });
      continue;
    }
    const from = renameFrom.has(path) ? renameFrom.get(path)! : (c.renameFrom ?? null);
    plan.uploads.push({ step: "Upload", local: c, parentRev: entry !== undefined ? entry.rev : 0, renameFrom: from });
  }
  return plan;
}

// ------------------------------------------------------------------------------ 1. admission

/** A verified remote change as admission reads it (Python's `RemoteChange`), carrying the
 * executor's own record of it (`change`). */
export interface AdmitChange<C = unknown> {
  fileId: string;
  rev: number;
  /** As the record names it (not normalised yet). */
  path: string;
  deleted: boolean;
  sha256: string;
  /** As the record says (not normalised yet). */
  renameFrom: string | null;
  executable: boolean;
  /** The effective kind of the device that wrote it. */
  authorKind: string;
  deviceId: string | null;
  authorName: string;
  change: C;
}

/** Which remote changes this device holds for the person (Python's `HoldPolicy`): active on a
 * person's device with holding on. */
export interface HoldPolicy {
  deviceKind: string;
  enabled: boolean;
  /** Extra held paths (gitignore syntax, case-insensitive: `sync.hold_patterns`). */
  patterns: readonly string[];
  /** The vault's scopes file as this device has it (null: no scope rule). */
  scopes?: Scopes | null;
}

/** A record this device could not open or verify, or one naming no vault path: quarantined. */
export interface Refused {
  fileId: string;
  rev: number;
  reason: string;
}

export interface Enqueue<C> { path: string; change: AdmitChange<C> }
export interface Hold<C> { path: string; change: AdmitChange<C>; reason: string }
export interface Skip { path: string; why: "have" | "queued" | "held" | "ignored" }

/** Where each pulled change goes (Python's `Admission`). `release`: held paths a newer,
 * admissible change replaces; `healed`: the file ids whose newest record verified. */
export interface Admission<C> {
  enqueue: Enqueue<C>[];
  hold: Hold<C>[];
  skip: Skip[];
  quarantine: Refused[];
  release: string[];
  healed: string[];
}

export interface AdmissionOptions {
  /** The inbox's revision of each path. */
  queued?: ReadonlyMap<string, number>;
  /** The revision of each path held here now: a change at that very revision is skipped
   * ("held": the held row is that change, waiting for the person); an older or a newer one is
   * admitted as usual, a newer admissible one releasing the hold. */
  held?: ReadonlyMap<string, number>;
  ignored?: (path: string) => boolean;
  holds: HoldPolicy;
  /** The vault's (and the held) files in top-level hidden folders: with the incoming paths,
   * they tell which folders have Obsidian's config shape (`configFolders`). */
  known?: Iterable<string>;
  /** The content of each agent-written note, by SHA-256 (`needsContent`; empty for one known
   * to hold no code); one missing is held as unchecked. */
  contents?: ReadonlyMap<string, Uint8Array>;
  /** The folder Obsidian on this device takes its config from (a platform difference: the
   * plugin knows it; docs/protocol.md R4): a config folder whatever its shape. */
  configDir?: string | null;
}

const NO_VAULT_PATH = "its path is not a vault path: ";
export const RENAME_HELD = (to: string) => `is the old name of a held rename to ${to}`;

function policyActive(p: HoldPolicy): boolean {
  return p.enabled && p.deviceKind === HUMAN;
}

function changeSource(ch: AdmitChange<unknown>): string | null {
  if (ch.deleted || !ch.renameFrom) return null;
  return tryNormalize(ch.renameFrom);
}

/** Admit the newest verified change of each file (`changes` in relay order; Python's
 * `plan_admission`): into the inbox, held (`HoldPolicy`, and a held rename's tombstone with it),
 * skipped (already here, already queued, held at that revision, ignored) or quarantined (no
 * vault path). Pure. */
export function planAdmission<C, E extends IndexEntry>(
  changes: Iterable<AdmitChange<C>>,
  refused: Iterable<Refused>,
  view: IndexView<E>,
  opts: AdmissionOptions,
): Admission<C> {
  const newest = new Map<string, AdmitChange<C>>();
  for (const ch of changes) newest.set(ch.fileId, ch);
  const active = policyActive(opts.holds);
  const configDirs = new Set<string>();
  if (active) {
    for (const d of configFolders([...(opts.known ?? []), ...[...newest.values()].map((ch) => ch.path)])) configDirs.add(d);
    if (opts.configDir && !opts.configDir.includes("/")) configDirs.add(holdFold(opts.configDir));
  }
  const out: Admission<C> = { enqueue: [], hold: [], skip: [], quarantine: [...refused], release: [], healed: [] };
  const byPathSteps = new Map<string, Enqueue<C> | Hold<C>>();
  for (const ch of newest.values()) {
    const path = tryNormalize(ch.path);
    if (path === null) {
      // a malformed record: listed, never a silent skip
      out.quarantine.push({ fileId: ch.fileId, rev: ch.rev, reason: NO_VAULT_PATH + pathProblem(ch.path) });
      continue;
    }
    out.healed.push(ch.fileId);
    const entry = view.get(path);
    if (entry !== undefined && ch.rev <= entry.rev) {
      out.skip.push({ path, why: "have" });
      continue;
    }
    if (ch.rev <= (opts.queued?.get(path) ?? 0)) {
      out.skip.push({ path, why: "queued" });
      continue;
    }
    if (ch.rev === opts.held?.get(path)) {
      out.skip.push({ path, why: "held" });
      continue;
    }
    if (opts.ignored?.(path)) {
      out.skip.push({ path, why: "ignored" });
      continue;
    }
    byPathSteps.set(path, admitHead(path, ch, opts.holds, configDirs, opts.contents?.get(ch.sha256) ?? null, view));
  }
  holdRenameSources(byPathSteps);
  for (const s of byPathSteps.values()) {
    if ("reason" in s) out.hold.push(s);
    else out.enqueue.push(s);
  }
  out.release = out.enqueue.map((s) => s.path).filter((p) => opts.held?.has(p)).sort(byPath);
  return out;
}

/** A held rename's tombstone waits with it (Python's `hold_rename_sources`): the same device's
 * deletion of the path it was renamed from is held too. Changes `steps` in place. */
export function holdRenameSources<C>(steps: Map<string, Enqueue<C> | Hold<C>>): void {
  for (const step of [...steps.values()]) {
    if (!("reason" in step)) continue;
    const src = changeSource(step.change);
    const old = src !== null ? steps.get(src) : undefined;
    if (old !== undefined && !("reason" in old) && old.change.deleted && old.change.deviceId === step.change.deviceId) {
      steps.set(old.path, { path: old.path, change: old.change, reason: RENAME_HELD(step.path) });
    }
  }
}

/** One head (a pulled change, or one that beat this device's commit): into the inbox or held
 * (Python's `admit_head`). `view` tells whether this device already has the head's exact bytes
 * (at its path, or at the path it was renamed from): then its content brings nothing new. */
export function admitHead<C, E extends IndexEntry>(
  path: string,
  head: AdmitChange<C>,
  holds: HoldPolicy,
  configDirs: ReadonlySet<string>,
  content: Uint8Array | null,
  view?: IndexView<E>,
): Enqueue<C> | Hold<C> {
  let unchanged = false;
  if (view !== undefined && !head.deleted) {
    for (const p of [path, changeSource(head)]) {
      const e = p ? view.get(p) : undefined;
      if (e !== undefined && !e.deleted && e.sha256 === head.sha256) unchanged = true;
    }
  }
  const reason = policyActive(holds)
    ? holdReason({
        localKind: HUMAN,
        remoteKind: head.authorKind === HUMAN ? HUMAN : "agent",
        path,
        renameFrom: head.renameFrom,
        deleted: head.deleted,
        executable: head.executable,
        configDirs,
        content,
        unchanged,
        patterns: holds.patterns,
        scopes: holds.scopes ?? null,
        deviceId: head.deviceId,
        authorName: head.authorName,
      })
    : null;
  return reason === null ? { path, change: head } : { path, change: head, reason };
}

// ------------------------------------------------------------------------------ 2. decisions

/** A held row as the decisions read it: the person's recorded decision ("accept", "refuse"). */
export interface DecidedHeld { decision?: string | null }
/** A quarantined row: the decision ("supersede", "dismiss") and its path ("" or null: unknown). */
export interface DecidedQuarantine { decision?: string | null; path?: string | null }

export type Decision<H, Q> =
  | { step: "AcceptHeld"; row: H }
  | { step: "RefuseHeld"; row: H }
  | { step: "Supersede"; row: Q }
  | { step: "Dismiss"; row: Q };

/** The person's recorded decisions, in order: held changes, then quarantined files (Python's
 * `plan_decisions`). A supersede needs a known path and a person's device; otherwise it only
 * forgets the report. */
export function planDecisions<H extends DecidedHeld, Q extends DecidedQuarantine>(
  held: Iterable<H>,
  quarantined: Iterable<Q>,
  deviceKind: string,
): Decision<H, Q>[] {
  const out: Decision<H, Q>[] = [];
  for (const h of held) {
    if (h.decision === "accept") out.push({ step: "AcceptHeld", row: h });
    else if (h.decision === "refuse") out.push({ step: "RefuseHeld", row: h });
  }
  for (const q of quarantined) {
    if (q.decision === "supersede" && q.path && deviceKind === HUMAN) out.push({ step: "Supersede", row: q });
    else if (q.decision) out.push({ step: "Dismiss", row: q });
  }
  return out;
}
