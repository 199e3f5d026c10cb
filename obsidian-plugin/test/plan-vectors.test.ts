/** tests/vectors/plan_v1.json (written by tests/test_sync_plan_vectors.py from the Python
 * planner, companion/sync/round/plan.py): the plugin's planner (src/sync/plan.ts) decides every
 * case exactly as Python's does: the same apply steps in the same order, the same local changes
 * left to push, the same push plan (issue 43; docs/protocol.md R11, R15-R19); the same admission
 * of the pulled changes (queued, held and why, skipped, quarantined, released, healed: R1, R2,
 * R4, R7, R9) and the same decisions on held and quarantined files. */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { similarity, splitLines } from "../src/sync/merge";
import { fold } from "../src/sync/paths";
import {
  type ApplyStep,
  type AdmitChange,
  type Admission,
  type AppliedRow,
  byPath,
  type HoldPolicy,
  type Incoming,
  type IndexEntry,
  type IndexView,
  isNewEdit,
  type LocalKind,
  type PlanLocal,
  planAdmission,
  planApply,
  planDecisions,
  planPush,
  type PushPlan,
} from "../src/sync/plan";

const HERE = dirname(fileURLToPath(import.meta.url));
const V = JSON.parse(readFileSync(join(HERE, "..", "..", "tests", "vectors", "plan_v1.json"), "utf-8"));

type Row = Record<string, any>;

function view(rows: Row[]): IndexView {
  const m = new Map<string, IndexEntry>(rows.map((r) => [r.path, { sha256: r.sha256, rev: r.rev, deleted: r.deleted }]));
  return {
    get: (p) => m.get(p),
    pathsWithFold: (key) => [...m].filter(([p, e]) => !e.deleted && fold(p) === key).map(([p]) => p).sort(),
  };
}

function inbox(rows: Row[]): Map<string, Incoming<null>> {
  return new Map(
    rows.map((r) => [r.path, { path: r.path, rev: r.rev, deleted: r.deleted, sha256: r.sha256, renameFrom: r.rename_from, authorKind: r.author_kind, change: null }]),
  );
}

function local(rows: Row[]): Map<string, PlanLocal> {
  return new Map(
    rows.map((r) => {
      const c: PlanLocal = { kind: r.kind as LocalKind, path: r.path };
      if (r.sha256 !== null) c.sha256 = r.sha256;
      if (r.mtime_ns !== null) c.mtime = r.mtime_ns;
      if (r.rename_from !== null) c.renameFrom = r.rename_from;
      if (r.rename_to !== null) c.renameTo = r.rename_to;
      return [r.path, c];
    }),
  );
}

/** A step in the vectors' neutral form (tests/test_sync_plan_vectors.py `_step`). */
function neutral(s: ApplyStep<null>): Row {
  switch (s.step) {
    case "Discard":
      return { step: s.step, path: s.item.path, rev: s.item.rev };
    case "MoveHere":
      return { step: s.step, old: s.old, new: s.new, old_rev: s.gone.rev, new_rev: s.came.rev, expected: s.expected.sha256 };
    case "RemoveHere":
      return { step: s.step, path: s.item.path, rev: s.item.rev, expected: s.expected ? s.expected.sha256 : null };
    case "Download":
      return { step: s.step, path: s.item.path, rev: s.item.rev, expected: s.expected ? s.expected.sha256 : null, bulk: s.bulk };
    case "Reconcile":
      return { step: s.step, path: s.item.path, rev: s.item.rev, local: s.local.kind };
    case "FollowRemoteRename":
      return { step: s.step, old: s.old, new: s.new, old_rev: s.gone.rev, new_rev: s.came.rev, local: s.local.path };
    case "FollowLocalRename":
      return { step: s.step, old: s.old, new: s.new, rev: s.item.rev, local: s.localNew.path };
    case "CaseCollision":
      return { step: s.step, path: s.item.path, rev: s.item.rev, other: s.other };
    case "Wait":
      return { step: s.step, path: s.path, rev: s.item ? s.item.rev : null };
    case "StaleSave":
      return { step: s.step, path: s.local.path, applied_ns: s.applied.appliedAt, prev_sha256: s.applied.prevSha256 };
  }
}

function pushNeutral(p: PushPlan<PlanLocal>): Row {
  return {
    uploads: p.uploads.map((u) => ({ path: u.local.path, parent_rev: u.parentRev, rename_from: u.renameFrom })),
    tombstones: p.tombstones.map((t) => ({ path: t.path, parent_rev: t.parentRev, sha256: t.sha256, rename_to: t.renameTo })),
    held_deletes: p.heldDeletes,
    kept_back: p.keptBack,
    live: p.live,
  };
}

function run(c: Row): Row {
  const o = c.options;
  const idx = view(c.index);
  const applied = new Map<string, AppliedRow>(c.applied.map((a: Row) => [a.path, { path: a.path, prevSha256: a.prev_sha256, appliedAt: a.applied_ns }]));
  const ins = inbox(c.inbox);
  const loc = local(c.local);
  const plan = planApply(ins, loc, idx, {
    unstable: c.unstable,
    applied,
    caseInsensitive: o.case_insensitive,
    agentTwins: o.agent_twins,
    window: o.window_ns,
  });
  expect(ins.size).toBe(c.inbox.length); // pure: its arguments are not changed
  expect(loc.size).toBe(c.local.length);
  const live = o.live ?? c.index.filter((r: Row) => !r.deleted).length;
  const push = planPush(plan.push, idx, { blocked: o.blocked, live, massDeleteRatio: o.mass_delete_ratio, allowMassDelete: o.allow_mass_delete });
  return { apply: plan.steps.map(neutral), left: [...plan.push.keys()].sort(), push: pushNeutral(push) };
}

function change(r: Row): AdmitChange<null> {
  return {
    fileId: r.file_id, rev: r.rev, path: r.path, deleted: r.deleted, sha256: r.sha256, renameFrom: r.rename_from,
    executable: r.executable, authorKind: r.author_kind, deviceId: r.device_id, authorName: r.device, change: null,
  };
}

/** The real admission over one case, in the vectors' neutral form (`run_admission`). */
function admit(c: Row, plan = planAdmission<null, IndexEntry>): Row {
  const holds: HoldPolicy = { deviceKind: c.policy.device_kind, enabled: c.policy.enabled, patterns: c.policy.patterns };
  const enc = new TextEncoder();
  const ignored = new Set<string>(c.ignored);
  const a: Admission<null> = plan(c.changes.map(change), c.refused.map((r: Row) => ({ fileId: r.file_id, rev: r.rev, reason: r.reason })), view(c.index), {
    queued: new Map(Object.entries(c.queued) as [string, number][]),
    held: new Map(Object.entries(c.held) as [string, number][]),
    ignored: (p) => ignored.has(p),
    holds,
    known: c.known,
    contents: new Map(Object.entries(c.contents as Record<string, string>).map(([k, v]) => [k, enc.encode(v)])),
  });
  return {
    enqueue: a.enqueue.map((e) => ({ path: e.path, file_id: e.change.fileId, rev: e.change.rev })),
    hold: a.hold.map((h) => ({ path: h.path, file_id: h.change.fileId, rev: h.change.rev, reason: h.reason })),
    skip: a.skip.map((s) => ({ path: s.path, why: s.why })),
    quarantine: a.quarantine.map((q) => ({ file_id: q.fileId, rev: q.rev, reason: q.reason })),
    release: a.release,
    healed: a.healed,
  };
}

function decide(c: Row): Row[] {
  return planDecisions(c.held as Row[], c.quarantined as Row[], c.device).map((d) =>
    d.step === "AcceptHeld" || d.step === "RefuseHeld"
      ? { step: d.step, path: d.row.path, rev: d.row.rev }
      : { step: d.step, file_id: d.row.file_id, path: d.row.path, rev: d.row.rev },
  );
}

describe("plan_v1.json", () => {
  it("sorts paths as Python does, by code point", () => {
    const paths = ["\uffff.md", "\u{1F600}.md", "a.md", "\ue000.md", "\u{1F600}a.md", "A.md", ""];
    expect([...paths].sort(byPath)).toEqual(["", "A.md", "a.md", "\ue000.md", "\uffff.md", "\u{1F600}.md", "\u{1F600}a.md"]);
  });

  it("holds enough cases to cover the planner", () => {
    expect(V.version).toBe(1);
    expect(V.cases.length).toBeGreaterThanOrEqual(50);
  });

  it("reads a save in the stale-save window as Python's is_new_edit does (R15)", () => {
    const enc = (t: string | null) => (t === null ? null : new TextEncoder().encode(t));
    expect(V.is_new_edit.length).toBeGreaterThan(10);
    for (const e of V.is_new_edit) {
      expect([e.name, isNewEdit(enc(e.prev), enc(e.head)!, enc(e.saved)!)]).toEqual([e.name, e.new_edit]);
    }
  });

  it("measures what a renamed and edited note keeps as Python's scanner does (R17)", () => {
    expect(V.rename_similarity.length).toBeGreaterThan(5);
    for (const e of V.rename_similarity) {
      expect([e.name, similarity(splitLines(e.old), splitLines(e.new))]).toEqual([e.name, e.ratio]);
    }
  });

  for (const c of V.cases) {
    it(`plans '${c.name}' as the Python planner does: ${c.about}`, () => {
      expect(run(c)).toEqual(c.expect);
    });
  }

  it("holds enough admission and decision cases", () => {
    expect(V.admission.length).toBeGreaterThanOrEqual(30);
    expect(V.decisions.length).toBeGreaterThanOrEqual(8);
  });

  it("tells a wrong admission from the right one (the replay compares every field)", () => {
    // a planner that forgets the rename-source hold, or admits the oldest record of a file
    const noRenameHold: typeof planAdmission = (ch, ref, v, o) => {
      const a = planAdmission(ch, ref, v, o);
      const moved = a.hold.filter((h) => h.reason.startsWith("is the old name"));
      return { ...a, hold: a.hold.filter((h) => !moved.includes(h)), enqueue: [...moved.map(({ path, change }) => ({ path, change })), ...a.enqueue] };
    };
    const oldest: typeof planAdmission = (ch, ref, v, o) => planAdmission([...ch].reverse(), ref, v, o);
    const byName = new Map<string, Row>(V.admission.map((c: Row) => [c.name, c]));
    expect(admit(byName.get("rename_held_with_source")!, noRenameHold)).not.toEqual(byName.get("rename_held_with_source")!.expect);
    expect(admit(byName.get("newest_per_file")!, oldest)).not.toEqual(byName.get("newest_per_file")!.expect);
  });

  for (const c of V.admission) {
    it(`admits '${c.name}' as the Python planner does: ${c.about}`, () => {
      expect(admit(c)).toEqual(c.expect);
    });
  }

  for (const c of V.decisions) {
    it(`plans the decisions of '${c.name}' as the Python planner does`, () => {
      expect(decide(c)).toEqual(c.expect);
    });
  }
});
