/**
 * The encrypted, verified view of the relay (companion/sync/remote/vault.py). Everything returned
 * has been opened under its vault id, file id and revision, names the path its id belongs to,
 * and (when the relay says who committed it) carries the kind the relay recorded. Records that
 * fail are returned apart as `bad`, so the caller quarantines that one file and goes on.
 */

import type { VaultKey } from "../crypto/keys";
import {
  assemble,
  blobId,
  checkMeta,
  fileId,
  type FileMeta,
  openBlob,
  openRecord,
  sealBlob,
  sealRecord,
  sha256Hex,
} from "../crypto/records";
import {
  ConflictError,
  CryptoError,
  KindMismatch,
  MissingBlobsError,
  RelayLostRevision,
  RelayRestored,
  RolledBack,
  TamperDetected,
  TamperedBlob,
  TamperedRecord,
} from "../errors";
import { recordMessage } from "../crypto/signing";
import type { RelayClient, SeqMark, WireRecord } from "../relay/client";
import { effectiveKind, kindMismatch, type Kind } from "./policy";
import type { Trust } from "./trust";

export const DOWNLOAD_BATCH = 250;
export const DOWNLOAD_PARALLEL = 4;
/** Bytes of sealed blobs per download request: bounded for Android's `requestUrl` memory. */
export const DOWNLOAD_BATCH_BYTES = 8 * 1024 * 1024;

export interface RemoteChange {
  path: string;
  fileId: string;
  rev: number;
  parentRev: number;
  meta: FileMeta;
  sealed: Uint8Array;
  sealedB64?: string;
  seq: number | null;
  deviceId: string | null;
  /** The kind that counts: with an anchor, the roster's (trust.ts `judge`); else the relay's
   * when it says, else the sealed one. */
  kind: Kind;
  deviceName: string;
  relayKind: string | null;
  relayName: string | null;
  committedAt: number | null;
}

export interface BadRecord {
  fileId: string;
  rev: number;
  reason: string;
}

export interface Pulled {
  changes: RemoteChange[];
  bad: BadRecord[];
  seq: number;
  vaultSeq: number;
  /** The record at `seq` when the feed listed one (remembered with the cursor). */
  mark: SeqMark | null;
}

/** A record's `SeqMark`: what the relay's `at_since` names it by. */
export async function seqMark(rec: WireRecord): Promise<SeqMark> {
  return { fileId: rec.fileId, rev: rec.rev, sha256: await sha256Hex(rec.sealed) };
}

export interface Outgoing {
  meta: FileMeta;
  parentRev: number;
}

export interface PushResult {
  committed: Map<string, number>;
  conflicts: Map<string, RemoteChange | null>;
  bad: BadRecord[];
}

/** Where verified chunks of a large download wait, so an interrupted download resumes. */
export interface PartialStore {
  get(sha256: string, index: number): Promise<Uint8Array | null>;
  put(sha256: string, index: number, data: Uint8Array): Promise<void>;
  drop(sha256: string): Promise<void>;
}

export class MemoryPartials implements PartialStore {
  data = new Map<string, Uint8Array>();
  async get(sha: string, i: number) {
    return this.data.get(`${sha}/${i}`) ?? null;
  }
  async put(sha: string, i: number, d: Uint8Array) {
    this.data.set(`${sha}/${i}`, d);
  }
  async drop(sha: string) {
    for (const k of [...this.data.keys()]) if (k.startsWith(sha + "/")) this.data.delete(k);
  }
}

async function pool<T, R>(items: T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  });
  await Promise.all(workers);
  return out;
}

export { pool };

export class RemoteVault {
  private fidCache = new Map<string, string>();
  /** This device's key and roster view: signs what it seals, judges who wrote what it opens
   * (null: unsigned records and version 1's rule, as before device keys). */
  trust: Trust | null = null;
  constructor(
    readonly client: RelayClient,
    readonly key: VaultKey,
    readonly vaultId: string,
  ) {}

  async fileId(path: string): Promise<string> {
    let fid = this.fidCache.get(path);
    if (!fid) {
      fid = await fileId(this.key, path);
      this.fidCache.set(path, fid);
    }
    return fid;
  }

  blobId(chunk: Uint8Array): Promise<string> {
    return blobId(this.key, chunk);
  }

  /** Verify one record; throws a TamperDetected (or CryptoError) when it is not what it claims. */
  async open(rec: WireRecord): Promise<RemoteChange> {
    if (rec.rev !== rec.parentRev + 1) {
      throw new TamperedRecord(`record rev ${rec.rev} of file ${rec.fileId.slice(0, 12)} claims parent ${rec.parentRev}`);
    }
    const meta = await openRecord(this.key, this.vaultId, rec.fileId, rec.rev, rec.sealed);
    // version 1's consistency check runs first on every device (docs/trust.md §5): the sealed
    // author must be the device whose token committed the record (companion/sync/remote.py
    // `_check_author`); a relay can make records fail, never count as someone else's
    const where = `record rev ${rec.rev} of file ${rec.fileId.slice(0, 12)}`;
    if (kindMismatch(rec.deviceKind, meta.deviceKind)) {
      throw new KindMismatch(`${where} claims device kind '${meta.deviceKind}', but the relay recorded its device as '${rec.deviceKind}'`);
    }
    if (rec.deviceId && meta.deviceId && rec.deviceId !== meta.deviceId) {
      throw new TamperedRecord(
        `${where} was sealed by device ${meta.deviceId.slice(0, 12)} but committed with the token of device ${rec.deviceId.slice(0, 12)}: refused as tampering`,
      );
    }
    if (rec.deviceName !== null && rec.deviceName !== undefined && rec.deviceName !== meta.deviceName) {
      throw new TamperedRecord(`${where} claims to come from '${meta.deviceName}', but the relay registered the device that committed it as '${rec.deviceName}'`);
    }
    // anchored: the person's roster decides who wrote it (docs/trust.md §5)
    const judged = this.trust ? this.trust.judge(meta, rec.fileId, rec.rev) : null;
    return {
      path: meta.path,
      fileId: rec.fileId,
      rev: rec.rev,
      parentRev: rec.parentRev,
      meta,
      sealed: rec.sealed,
      sealedB64: rec.sealedB64,
      seq: rec.seq ?? null,
      deviceId: rec.deviceId ?? null,
      kind: judged ?? effectiveKind(rec.deviceKind, meta.deviceKind),
      deviceName: rec.deviceName || meta.deviceName || "another device",
      relayKind: rec.deviceKind ?? null,
      relayName: rec.deviceName ?? null,
      committedAt: rec.committedAt ?? null,
    };
  }

  /** `open`, turning a verification failure into a BadRecord instead of an exception. */
  async tryOpen(rec: WireRecord): Promise<RemoteChange | BadRecord> {
    try {
      return await this.open(rec);
    } catch (e) {
      if (e instanceof CryptoError) return { fileId: rec.fileId, rev: rec.rev, reason: e.message };
      throw e;
    }
  }

  /** Every record after `since`, verified; per-file failures come back in `bad`. `mark`: the
   * record this device saw at `since`; a relay naming another one there (`atSince`) throws
   * `RelayRestored`; one naming none (pruned, an older relay) is not checked. */
  async pull(since: number, waitS = 0, mark: SeqMark | null = null): Promise<Pulled> {
    let page = await this.client.changesPage(since, waitS);
    const at = page.atSince;
    if (mark && at && (at.fileId !== mark.fileId || at.rev !== mark.rev || at.sha256 !== mark.sha256)) {
      throw new RelayRestored(
        `the relay holds revision ${at.rev} of file ${at.fileId.slice(0, 12)} at seq ${since}, where this device saw revision ${mark.rev} of file ${mark.fileId.slice(0, 12)}: it was restored from a backup`,
        { code: "restored" },
      );
    }
    const records = [...page.records];
    while (page.more) {
      page = await this.client.changesPage(page.seq, 0);
      records.push(...page.records);
    }
    const opened = await pool(records, 8, (r) => this.tryOpen(r));
    const changes: RemoteChange[] = [];
    const bad: BadRecord[] = [];
    const newest = new Map<string, number>();
    for (const o of opened) {
      if ("reason" in o) {
        bad.push(o);
        continue;
      }
      const prev = newest.get(o.fileId);
      if (prev !== undefined && o.rev <= prev) {
        bad.push({ fileId: o.fileId, rev: o.rev, reason: new RolledBack(`the relay listed revision ${o.rev} of file ${o.fileId.slice(0, 12)} after revision ${prev}: a replayed older revision`).message });
        continue;
      }
      newest.set(o.fileId, o.rev);
      changes.push(o);
    }
    // the mark only of a record that verified: one altered in transit (a lying relay) would
    // otherwise name bytes the relay does not hold, and the next pull would take it for a restore
    const last = records.length ? records[records.length - 1] : null;
    const verified = last !== null && changes.some((c) => c.fileId === last.fileId && c.rev === last.rev);
    const lastMark = last && verified && last.seq === page.seq ? await seqMark(last) : null;
    return { changes, bad, seq: page.seq, vaultSeq: page.vaultSeq, mark: lastMark };
  }

  async waitForChanges(since: number, waitS: number): Promise<boolean> {
    const page = await this.client.changesPage(since, waitS, 1);
    return page.records.length > 0;
  }

  async record(path: string, rev: number): Promise<RemoteChange | null> {
    const fid = await this.fileId(path);
    const rec = await this.client.record(fid, rev);
    if (!rec) return null;
    if (rec.rev !== rev || rec.fileId !== fid) throw new TamperedRecord(`asked the relay for revision ${rev}, it sent another record`);
    return this.open(rec);
  }

  async history(path: string, limit = 1000): Promise<(RemoteChange | BadRecord)[]> {
    const fid = await this.fileId(path);
    const recs = await this.client.history(fid, limit);
    for (let i = 1; i < recs.length; i++) {
      if (recs[i].rev >= recs[i - 1].rev) throw new TamperedRecord("the relay's history of a file is out of order");
    }
    return pool(
      recs.filter((r) => r.fileId === fid),
      8,
      (r) => this.tryOpen(r),
    );
  }

  // ---------------------------------------------------------------- content

  /** Contents of live single-chunk-or-small files by SHA-256, every blob and file verified. */
  async fetch(metas: FileMeta[]): Promise<Map<string, Uint8Array>> {
    const sizes = new Map<string, number>();
    for (const m of metas) if (!m.deleted) for (const c of m.chunks) sizes.set(c.blobId, c.length);
    const ids = [...sizes.keys()];
    const batches: string[][] = [];
    let cur: string[] = [];
    let bytes = 0;
    for (const id of ids) {
      const n = sizes.get(id)! + 64;
      if (cur.length && (cur.length >= DOWNLOAD_BATCH || bytes + n > DOWNLOAD_BATCH_BYTES)) {
        batches.push(cur);
        cur = [];
        bytes = 0;
      }
      cur.push(id);
      bytes += n;
    }
    if (cur.length) batches.push(cur);
    const chunks = new Map<string, Uint8Array>();
    await pool(batches, DOWNLOAD_PARALLEL, async (batch) => {
      const got = await this.client.getBlobBatch(batch);
      for (const bid of batch) {
        const sealed = got.get(bid);
        if (!sealed) throw new TamperDetected(`the relay did not send blob ${bid.slice(0, 12)}`);
        chunks.set(bid, await openBlob(this.key, this.vaultId, bid, sealed));
      }
    });
    const out = new Map<string, Uint8Array>();
    for (const m of metas) {
      if (m.deleted || out.has(m.sha256)) continue;
      out.set(m.sha256, await assemble(m, m.chunks.map((c) => chunks.get(c.blobId)!)));
    }
    return out;
  }

  /** A large file chunk by chunk, resuming from verified chunks kept in `partials`. */
  async fetchLarge(meta: FileMeta, partials: PartialStore): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    for (let i = 0; i < meta.chunks.length; i++) {
      const ref = meta.chunks[i];
      let chunk = await partials.get(meta.sha256, i);
      if (chunk && (chunk.length !== ref.length || (await this.blobId(chunk)) !== ref.blobId)) chunk = null;
      if (!chunk) {
        chunk = await openBlob(this.key, this.vaultId, ref.blobId, await this.client.getBlob(ref.blobId));
        await partials.put(meta.sha256, i, chunk);
      }
      parts.push(chunk);
    }
    const content = await assemble(meta, parts).catch(async (e) => {
      await partials.drop(meta.sha256);
      throw e instanceof TamperDetected ? e : new TamperedBlob(String(e));
    });
    await partials.drop(meta.sha256);
    return content;
  }

  /** Make sure the relay has these chunks (by blob id): one existence check, sealed batches. */
  async upload(chunks: Map<string, Uint8Array>): Promise<number> {
    if (!chunks.size) return 0;
    const missing = (await this.client.missingBlobs([...chunks.keys()])).filter((b) => chunks.has(b));
    const sealed: [string, Uint8Array][] = [];
    for (const bid of missing) {
      const s = await sealBlob(this.key, this.vaultId, chunks.get(bid)!);
      sealed.push([bid, s.sealed]);
    }
    try {
      await this.client.putBlobs(sealed);
    } catch (e) {
      // "taken": the same plaintext was uploaded by another attempt with another nonce: as good
      if (!(e instanceof ConflictError && e.code === "blob_id_taken")) throw e;
      const still = new Set(await this.client.missingBlobs(missing));
      await this.client.putBlobs(sealed.filter(([b]) => still.has(b)));
    }
    return missing.length;
  }

  // ---------------------------------------------------------------- committing

  /** Commit groups (a rename's two halves together); conflicts come back verified. */
  async commit(groups: Outgoing[][], reupload: (ids: string[]) => Promise<void>, now = () => BigInt(Date.now()) * 1_000_000n): Promise<PushResult> {
    const limit = (await this.client.limits()).max_records_per_commit ?? 1000;
    const result: PushResult = { committed: new Map(), conflicts: new Map(), bad: [] };
    let batch: Outgoing[] = [];
    for (const g of groups) {
      if (batch.length && batch.length + g.length > limit) {
        await this.commitBatch(batch, result, reupload, now());
        batch = [];
      }
      batch.push(...g);
    }
    if (batch.length) await this.commitBatch(batch, result, reupload, now());
    return result;
  }

  private async commitBatch(batch: Outgoing[], result: PushResult, reupload: (ids: string[]) => Promise<void>, now: bigint) {
    const byFid = new Map<string, { out: Outgoing; rec: WireRecord }>();
    for (const out of batch) {
      const meta = { ...out.meta, recordedNs: out.meta.recordedNs ?? now, sig: null as string | null };
      checkMeta(meta);
      const rev = out.parentRev + 1;
      const signer = this.trust?.key;
      if (signer) {
        // every record this device seals is signed by it (docs/trust.md §4)
        meta.sig = signer.sign(recordMessage({ ...meta, vaultId: this.vaultId, fileId: await this.fileId(meta.path), rev }));
      }
      const { fileId: fid, sealed } = await sealRecord(this.key, this.vaultId, rev, meta);
      this.fidCache.set(meta.path, fid);
      byFid.set(fid, { out, rec: { fileId: fid, rev, parentRev: out.parentRev, sealed, blobs: meta.chunks.map((c) => c.blobId) } });
    }
    let todo = [...byFid.keys()];
    for (let attempt = 0; attempt < 4 && todo.length; attempt++) {
      let res;
      try {
        res = await this.client.commit(todo.map((f) => byFid.get(f)!.rec));
      } catch (e) {
        if (e instanceof MissingBlobsError) {
          await reupload(e.missing);
          continue;
        }
        throw e;
      }
      const retry: string[] = [];
      for (const r of res.results) {
        const item = byFid.get(r.fileId);
        if (!item) continue;
        if (r.status === "conflict") {
          result.conflicts.set(item.out.meta.path, await this.conflictHead(item.out, r.head, result));
        } else if (r.status === "duplicate" || (res.committed && r.status === "committed")) {
          result.committed.set(item.out.meta.path, r.rev);
        } else retry.push(r.fileId);
      }
      if (res.committed) return;
      todo = retry;
    }
  }

  private async conflictHead(out: Outgoing, head: WireRecord | null, result: PushResult): Promise<RemoteChange | null> {
    const lost = `the relay has no revision of a file this device synced at revision ${out.parentRev}: it lost data or was restored from an older backup`;
    if (!head) {
      if (out.parentRev > 0) throw new RelayLostRevision(lost);
      return null;
    }
    // what it lost, whatever it holds from before: the round resyncs (engine.ts `pass`)
    if (head.rev < out.parentRev) throw new RelayLostRevision(`${lost} (its head is revision ${head.rev})`);
    const opened = await this.tryOpen(head);
    if ("reason" in opened) {
      result.bad.push(opened);
      return null;
    }
    if ((await this.fileId(opened.path)) !== (await this.fileId(out.meta.path))) {
      throw new TamperedRecord("the relay answered a commit with another file's head");
    }
    return opened; // its revision is the one checked above: opening verifies it
  }
}
