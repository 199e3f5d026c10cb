/**
 * The relay's HTTP API (docs/relay.md), as companion/relayclient/client.py speaks it. Every failure
 * is a typed RelayError; a conflicting commit is a result, not an error. The token never
 * appears in an error message.
 */

import { fromBase64, toBase64, utf8 } from "../crypto/bytes";
import { sha256Hex } from "../crypto/records";
import {
  AuthError,
  ConflictError,
  MissingBlobsError,
  NotFoundError,
  RelayBusy,
  RelayError,
  RelayUnreachable,
} from "../errors";
import { decodeFrames, encodeFrames, FRAMES_TYPE } from "./frames";
import { type HttpResponse, type Transport, TransportError } from "./transport";

export type Kind = "human" | "agent";

export interface WireRecord {
  fileId: string;
  rev: number;
  parentRev: number;
  sealed: Uint8Array;
  /** The sealed bytes as the relay sent them (base64), kept to queue them without re-encoding. */
  sealedB64?: string;
  blobs: string[];
  seq?: number | null;
  deviceId?: string | null;
  committedAt?: number | null;
  /** The relay's record of the committing device (relays from security issue #12 on). */
  deviceKind?: string | null;
  deviceName?: string | null;
}

export interface RecordResult {
  fileId: string;
  rev: number;
  status: "committed" | "duplicate" | "conflict" | "aborted";
  seq: number | null;
  head: WireRecord | null;
}

export interface CommitResult {
  committed: boolean;
  seq: number;
  results: RecordResult[];
}

/** The record at one sequence number of the feed: its file, its revision and the SHA-256 (hex)
 * of its sealed bytes (Python's `SeqMark`). */
export interface SeqMark {
  fileId: string;
  rev: number;
  sha256: string;
}

export interface ChangesPage {
  records: WireRecord[];
  seq: number;
  vaultSeq: number;
  more: boolean;
  /** The record the relay holds at `seq == since`; null when since is 0, when none is there
   * (retention pruned it) or from a relay that predates the field. */
  atSince: SeqMark | null;
}

function seqMarkFromJson(v: unknown): SeqMark | null {
  if (!v || typeof v !== "object") return null;
  const o = v as Record<string, unknown>;
  if (typeof o.file_id !== "string" || typeof o.rev !== "number" || typeof o.sha256 !== "string") return null;
  return { fileId: o.file_id, rev: o.rev, sha256: o.sha256 };
}

export interface JoinResult {
  token: string;
  deviceId: string;
  vaultId: string;
  isNewVault: boolean;
  /** The kind the relay fixed for this device, when the relay says (issue #12 relays). */
  kind: Kind | null;
}

export interface DeviceInfo {
  deviceId: string;
  name: string;
  kind: string;
  created: number;
  revoked: number | null;
}

export type Limits = Record<string, number>;

const DEFAULT_LIMITS: Limits = {
  max_blobs_per_batch: 1000,
  max_batch_bytes: 64 * 1024 * 1024,
  max_blob_bytes: 16 * 1024 * 1024,
  max_records_per_commit: 1000,
};

/** Retry-After in seconds (delta or HTTP date); null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v);
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : Math.max(0, (t - now) / 1000);
}

function recordFromJson(r: Record<string, unknown>): WireRecord {
  return {
    fileId: String(r.file_id),
    rev: Number(r.rev),
    parentRev: Number(r.parent_rev),
    sealed: fromBase64(String(r.sealed)),
    sealedB64: String(r.sealed),
    blobs: Array.isArray(r.blobs) ? r.blobs.map(String) : [],
    seq: typeof r.seq === "number" ? r.seq : null,
    deviceId: typeof r.device_id === "string" ? r.device_id : null,
    committedAt: typeof r.committed_at === "number" ? r.committed_at : null,
    deviceKind: typeof r.device_kind === "string" ? r.device_kind : null,
    deviceName: typeof r.device_name === "string" ? r.device_name : null,
  };
}

export class RelayClient {
  readonly baseUrl: string;
  vaultId: string | null;
  private token: string | null;
  private limitsCache: Limits | null = null;
  timeoutMs: number;

  constructor(
    baseUrl: string,
    private readonly transport: Transport,
    opts: { token?: string | null; vaultId?: string | null; timeoutMs?: number } = {},
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = opts.token ?? null;
    this.vaultId = opts.vaultId ?? null;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
  }

  setToken(token: string): void {
    this.token = token;
  }

  get hasToken(): boolean {
    return !!this.token;
  }

  private vaultPath(suffix: string): string {
    if (!this.vaultId || !this.token) throw new AuthError("this device has not joined a vault on the relay yet");
    return `/v1/vaults/${this.vaultId}${suffix}`;
  }

  async request(
    method: string,
    path: string,
    opts: {
      json?: unknown;
      body?: Uint8Array;
      contentType?: string;
      headers?: Record<string, string>;
      accept?: number[];
      longPoll?: boolean;
      extraTimeoutMs?: number;
    } = {},
  ): Promise<HttpResponse> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (this.token) headers["Authorization"] = `Bearer ${this.token}`;
    let body = opts.body;
    if (opts.json !== undefined) {
      body = utf8(JSON.stringify(opts.json));
      headers["Content-Type"] = "application/json";
    } else if (opts.contentType) {
      headers["Content-Type"] = opts.contentType;
    }
    let resp: HttpResponse;
    try {
      resp = await this.transport({
        method,
        url: this.baseUrl + path,
        headers,
        body,
        longPoll: opts.longPoll,
        timeoutMs: this.timeoutMs + (opts.extraTimeoutMs ?? 0),
      });
    } catch (e) {
      if (e instanceof TransportError) throw new RelayUnreachable(`the relay at ${this.baseUrl} ${e.message}`);
      throw e;
    }
    if (resp.status >= 400 && !(opts.accept ?? []).includes(resp.status)) this.raise(resp);
    return resp;
  }

  private raise(resp: HttpResponse): never {
    const status = resp.status;
    let code: string | null = null;
    let message = "";
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(new TextDecoder().decode(resp.body));
      code = String(body.error);
      message = String(body.message);
    } catch {
      message = new TextDecoder().decode(resp.body.subarray(0, 200));
    }
    const text = `relay refused the request (${status} ${code}): ${message}`;
    if (status === 429 || status === 503) {
      const after = parseRetryAfter(resp.headers["retry-after"]);
      throw new RelayBusy(
        status === 429 ? `the relay at ${this.baseUrl} asks this device to slow down (429)` : `the relay at ${this.baseUrl} is busy (503)`,
        after ?? 5,
        { status, code },
      );
    }
    if (status === 502 || status === 504) throw new RelayUnreachable(`the relay at ${this.baseUrl} is unavailable (${status})`, { status });
    if (status === 401 || status === 403 || status === 410) throw new AuthError(text, { status, code });
    if (status === 404) throw new NotFoundError(text, { status, code });
    if (status === 409) throw new ConflictError(text, { status, code });
    if (code === "missing_blobs") {
      throw new MissingBlobsError(text, Array.isArray(body.missing) ? body.missing.map(String) : [], { status, code });
    }
    throw new RelayError(text, { status, code });
  }

  private json(resp: HttpResponse): Record<string, unknown> {
    try {
      const v = JSON.parse(new TextDecoder().decode(resp.body));
      if (v && typeof v === "object") return v;
    } catch {
      /* fall through */
    }
    throw new RelayError(`the relay at ${this.baseUrl} sent an answer this client cannot read`);
  }

  // relay and devices ---------------------------------------------------------------------------
  async health(): Promise<Record<string, unknown>> {
    return this.json(await this.request("GET", "/v1/health"));
  }

  async limits(): Promise<Limits> {
    if (!this.limitsCache) {
      const h = await this.health();
      this.limitsCache = { ...DEFAULT_LIMITS, ...((h.limits as Limits) ?? {}) };
    }
    return this.limitsCache;
  }

  /** Redeem a one-time invite. The caller decides when (and whether) to keep the token. */
  async join(invite: string, deviceName: string, kind: Kind): Promise<JoinResult> {
    const out = this.json(
      await this.request("POST", "/v1/join", { json: { invite, device_name: deviceName, kind } }),
    );
    this.token = String(out.token);
    this.vaultId = String(out.vault_id);
    const k = out.kind === "human" || out.kind === "agent" ? (out.kind as Kind) : null;
    return { token: this.token, deviceId: String(out.device_id), vaultId: this.vaultId, isNewVault: !!out.new_vault, kind: k };
  }

  /** Revoke this device's own token (`POST /leave`); false when the relay has no such route. */
  async leave(): Promise<boolean> {
    try {
      await this.request("POST", this.vaultPath("/leave"), { json: {} });
      return true;
    } catch (e) {
      if (e instanceof NotFoundError || (e instanceof RelayError && e.status === 405)) return false;
      throw e;
    }
  }

  async devices(): Promise<DeviceInfo[]> {
    const out = this.json(await this.request("GET", this.vaultPath("/devices")));
    return ((out.devices as Record<string, unknown>[]) ?? []).map((d) => ({
      deviceId: String(d.device_id),
      name: String(d.name),
      kind: String(d.kind),
      created: Number(d.created),
      revoked: d.revoked == null ? null : Number(d.revoked),
    }));
  }

  // the wrapped vault key ---------------------------------------------------------------------
  async getKeyBlob(): Promise<Uint8Array | null> {
    try {
      const out = this.json(await this.request("GET", this.vaultPath("/key")));
      return fromBase64(String(out.key));
    } catch (e) {
      if (e instanceof NotFoundError && e.code === "key_not_set") return null;
      throw e;
    }
  }

  async putKeyBlob(blob: Uint8Array, replaces: Uint8Array | null = null): Promise<void> {
    const ifMatch = replaces ? await sha256Hex(replaces) : null;
    await this.request("PUT", this.vaultPath("/key"), { json: { key: toBase64(blob), if_match: ifMatch } });
  }

  // records -----------------------------------------------------------------------------------
  async commit(records: WireRecord[]): Promise<CommitResult> {
    const payload = {
      records: records.map((r) => ({
        file_id: r.fileId,
        rev: r.rev,
        parent_rev: r.parentRev,
        sealed: toBase64(r.sealed),
        blobs: r.blobs,
      })),
    };
    const out = this.json(await this.request("POST", this.vaultPath("/commit"), { json: payload, accept: [409] }));
    return {
      committed: !!out.committed,
      seq: Number(out.seq ?? 0),
      results: ((out.results as Record<string, unknown>[]) ?? []).map((r) => ({
        fileId: String(r.file_id),
        rev: Number(r.rev),
        status: r.status as RecordResult["status"],
        seq: typeof r.seq === "number" ? r.seq : null,
        head: r.head ? recordFromJson(r.head as Record<string, unknown>) : null,
      })),
    };
  }

  async changesPage(since: number, waitS = 0, limit = 1000): Promise<ChangesPage> {
    const q = `?since=${since}&wait=${waitS}&limit=${limit}`;
    const out = this.json(
      await this.request("GET", this.vaultPath("/changes") + q, { longPoll: waitS > 0, extraTimeoutMs: waitS * 1000 }),
    );
    return {
      records: ((out.records as Record<string, unknown>[]) ?? []).map(recordFromJson),
      seq: Number(out.seq),
      vaultSeq: Number(out.vault_seq),
      more: !!out.more,
      atSince: seqMarkFromJson(out.at_since),
    };
  }

  async head(fid: string): Promise<WireRecord | null> {
    try {
      return recordFromJson(this.json(await this.request("GET", this.vaultPath(`/files/${fid}`))));
    } catch (e) {
      if (e instanceof NotFoundError) return null;
      throw e;
    }
  }

  async history(fid: string, limit = 100): Promise<WireRecord[]> {
    try {
      const out = this.json(await this.request("GET", this.vaultPath(`/files/${fid}/history?limit=${limit}`)));
      return ((out.records as Record<string, unknown>[]) ?? []).map(recordFromJson);
    } catch (e) {
      if (e instanceof NotFoundError) return [];
      throw e;
    }
  }

  async record(fid: string, rev: number): Promise<WireRecord | null> {
    try {
      return recordFromJson(this.json(await this.request("GET", this.vaultPath(`/files/${fid}/revs/${rev}`))));
    } catch (e) {
      if (e instanceof NotFoundError) return null;
      throw e;
    }
  }

  // blobs -------------------------------------------------------------------------------------
  async missingBlobs(ids: string[]): Promise<string[]> {
    const uniq = [...new Set(ids)];
    const step = (await this.limits()).max_blobs_per_batch;
    const missing: string[] = [];
    for (let i = 0; i < uniq.length; i += step) {
      const out = this.json(await this.request("POST", this.vaultPath("/blobs-missing"), { json: { ids: uniq.slice(i, i + step) } }));
      missing.push(...((out.missing as string[]) ?? []));
    }
    return missing;
  }

  async putBlob(id: string, data: Uint8Array): Promise<boolean> {
    const out = this.json(
      await this.request("PUT", this.vaultPath(`/blobs/${id}`), {
        body: data,
        contentType: "application/octet-stream",
        headers: { "X-Content-SHA256": await sha256Hex(data) },
      }),
    );
    return !!out.created;
  }

  async getBlob(id: string): Promise<Uint8Array> {
    const resp = await this.request("GET", this.vaultPath(`/blobs/${id}`));
    if (resp.headers["x-content-sha256"] !== (await sha256Hex(resp.body))) {
      throw new RelayError(`blob ${id} arrived damaged (checksum mismatch)`);
    }
    return resp.body;
  }

  /** Upload many blobs in batches bounded by the relay's limits (and `maxBytes`). */
  async putBlobs(items: [string, Uint8Array][], maxBytes = 8 * 1024 * 1024): Promise<void> {
    const lim = await this.limits();
    const cap = Math.min(lim.max_batch_bytes, maxBytes);
    let batch: { id: string; sha256: string; data: Uint8Array }[] = [];
    let size = 0;
    const flush = async () => {
      if (!batch.length) return;
      await this.request("POST", this.vaultPath("/blobs-upload"), { body: encodeFrames(batch), contentType: FRAMES_TYPE });
      batch = [];
      size = 0;
    };
    for (const [id, data] of items) {
      const frame = data.length + id.length + 41;
      if (batch.length && (size + frame > cap || batch.length >= lim.max_blobs_per_batch)) await flush();
      batch.push({ id, sha256: await sha256Hex(data), data });
      size += frame;
    }
    await flush();
  }

  /** Download blobs in one batched request (ids at most the relay's batch limit). */
  async getBlobBatch(ids: string[]): Promise<Map<string, Uint8Array>> {
    const lim = await this.limits();
    const resp = await this.request("POST", this.vaultPath("/blobs-download"), { json: { ids } });
    let frames;
    try {
      frames = decodeFrames(resp.body, lim.max_blob_bytes);
    } catch (e) {
      throw new RelayError(`the relay sent a malformed blob batch: ${(e as Error).message}`);
    }
    const out = new Map<string, Uint8Array>();
    for (const f of frames) {
      if ((await sha256Hex(f.data)) !== f.sha256) throw new RelayError(`blob ${f.id} arrived damaged`);
      out.set(f.id, f.data);
    }
    if (out.size < new Set(ids).size) {
      const gone = await this.missingBlobs(ids.filter((i) => !out.has(i)));
      if (gone.length) {
        throw new NotFoundError(
          `the relay no longer has ${gone.length} blob(s) (${gone.slice(0, 3).join(", ")}): damaged or removed on the relay`,
        );
      }
      throw new RelayError(`the relay sent ${out.size} of ${ids.length} blobs`);
    }
    return out;
  }
}
