/**
 * Carrying out the push plan (`plan.ts` `planPush`): chunk, upload, commit with a
 * compare-and-swap each, record (companion/sync/round/push.py). Small files become one blob
 * each, uploaded together; a large one is chunked and uploaded chunk by chunk, so an
 * interrupted upload resumes with the chunks the relay lacks. The two halves of a rename are
 * committed together. A record that loses its compare-and-swap brings back the head, verified,
 * into the inbox for the next pass.
 */

import { makeMeta, type ChunkRef } from "../crypto/records";
import { queued, type Local } from "./apply";
import type { PushPlan } from "./plan";
import type { Outgoing, RemoteChange, RemoteVault } from "./remote";
import type { RoundReport } from "./report";
import type { SyncState } from "./state";
import type { VaultFS } from "./vaultfs";

export interface PushHost {
  readonly fs: VaultFS;
  readonly remote: RemoteVault;
  readonly state: SyncState;
  readonly deviceId: string;
  readonly deviceName: string;
  readonly deviceKind: string;
  readonly chunkSize: number;
  readonly stopped: boolean;
  quarantine(fileId: string, rev: number, reason: string, report: RoundReport): void;
  /** A head that beat one of our commits, verified: kept for the next pass's apply. */
  verified(path: string, head: RemoteChange): void;
}

export class Pusher {
  constructor(private readonly host: PushHost) {}

  /** Commit what `plan` says; `pending`: the local changes the plan covers (for the report).
   * Returns whether something was committed or came back. */
  async run(plan: PushPlan<Local>, pending: number, report: RoundReport, touched: Set<string>): Promise<boolean> {
    const h = this.host;
    const state = h.state;
    const prepared = new Map<string, { out: Outgoing; local: Local }>();
    const tombstones = new Map<string, { out: Outgoing; renameTo: string | null }>();
    const small = new Map<string, Uint8Array>();
    for (const t of plan.tombstones) {
      const meta = makeMeta({
        path: t.path,
        size: 0,
        sha256: t.sha256,
        deleted: true,
        deviceId: h.deviceId,
        deviceName: h.deviceName,
        deviceKind: h.deviceKind,
      });
      tombstones.set(t.path, { out: { meta, parentRev: t.parentRev }, renameTo: t.renameTo });
    }
    for (const up of plan.uploads) {
      if (h.stopped) return false;
      const c = up.local;
      const e = state.files[c.path];
      const data = c.data!;
      const chunks: ChunkRef[] = [];
      if (data.length > h.chunkSize) {
        for (let off = 0; off < data.length; off += h.chunkSize) {
          const part = data.subarray(off, off + h.chunkSize);
          const bid = await h.remote.blobId(part);
          chunks.push({ blobId: bid, length: part.length });
          // one chunk at a time: an interrupted upload resumes with the chunks the relay lacks
          await h.remote.upload(new Map([[bid, part]]));
        }
      } else if (data.length) {
        const bid = await h.remote.blobId(data);
        small.set(bid, data);
        chunks.push({ blobId: bid, length: data.length });
      }
      const executable = h.fs.tracksExec ? !!c.stat?.executable : !!(e && !e.deleted && e.executable);
      const meta = makeMeta({
        path: c.path,
        size: data.length,
        sha256: c.sha256!,
        chunks,
        mtimeNs: c.stat ? BigInt(Math.max(0, Math.round(c.stat.mtime))) * 1_000_000n : null,
        executable,
        deviceId: h.deviceId,
        deviceName: h.deviceName,
        deviceKind: h.deviceKind,
        renameFrom: up.renameFrom,
      });
      prepared.set(c.path, { out: { meta, parentRev: up.parentRev }, local: c });
    }
    if (!prepared.size && !tombstones.size) return false;
    await h.remote.upload(small);
    const groups: Outgoing[][] = [];
    const used = new Set<string>();
    for (const { out } of prepared.values()) {
      const old = out.meta.renameFrom;
      if (old && tombstones.has(old) && !used.has(old)) {
        groups.push([tombstones.get(old)!.out, out]);
        used.add(old);
      } else groups.push([out]);
    }
    for (const [p, t] of tombstones) if (!used.has(p)) groups.push([t.out]);
    const reupload = async (ids: string[]) => {
      const want = new Set(ids);
      const again = new Map<string, Uint8Array>();
      for (const { local: c, out } of prepared.values()) {
        for (let i = 0, off = 0; i < out.meta.chunks.length; off += out.meta.chunks[i].length, i++) {
          const ref = out.meta.chunks[i];
          if (want.has(ref.blobId)) again.set(ref.blobId, c.data!.subarray(off, off + ref.length));
        }
      }
      await h.remote.upload(again);
    };
    const result = await h.remote.commit(groups, reupload);
    for (const b of result.bad) h.quarantine(b.fileId, b.rev, b.reason, report);
    for (const [p, rev] of result.committed) {
      const fid = await h.remote.fileId(p);
      const t = tombstones.get(p);
      if (t) {
        state.files[p] = { fileId: fid, rev, sha256: "", size: 0, mtime: 0, deleted: true, executable: false, device: h.deviceName, deviceKind: h.deviceKind };
        if (!t.renameTo) report.deletedRemote.push(p);
        continue;
      }
      const { out, local: c } = prepared.get(p)!;
      state.files[p] = {
        fileId: fid,
        rev,
        sha256: out.meta.sha256,
        size: out.meta.size,
        mtime: c.stat!.mtime,
        deleted: false,
        executable: out.meta.executable,
        device: h.deviceName,
        deviceKind: h.deviceKind,
      };
      report.uploaded.push(p);
    }
    report.pendingUpload = pending - result.committed.size;
    for (const [p, head] of result.conflicts) {
      touched.add(p);
      if (head) {
        state.inbox[p] = { ...queued(head), head: true };
        h.verified(p, head);
      }
    }
    return result.committed.size > 0 || result.conflicts.size > 0;
  }
}
