/** Devices for the sync-core tests: an in-memory vault each, joined to a real relay. */
import { RelayClient } from "../src/relay/client";
import { fetchTransport, type HttpRequest, type HttpResponse, type Transport } from "../src/relay/transport";
import { SyncEngine } from "../src/sync/engine";
import { joinVault } from "../src/sync/join";
import { MemoryPartials } from "../src/sync/remote";
import { MemoryStateStore } from "../src/sync/state";
import { MemoryVault, type VaultFS } from "../src/sync/vaultfs";
import { TEST_KDF_PARAMS } from "../src/crypto/wrap";
import type { TestRelay } from "./relay";
import { DeviceKey } from "../src/crypto/signing";
import { Trust } from "../src/sync/trust";

export const PASS = "correct horse battery staple";

/** A transport that lets a test rewrite the relay's answers (the wire is the boundary). */
export class Wire {
  rewrite: ((req: HttpRequest, resp: HttpResponse) => HttpResponse) | null = null;
  requests: HttpRequest[] = [];
  constructor(private readonly inner: Transport = fetchTransport()) {}
  transport: Transport = async (req) => {
    this.requests.push(req);
    const resp = await this.inner(req);
    return this.rewrite ? this.rewrite(req, resp) : resp;
  };
}

export interface Device {
  engine: SyncEngine;
  vault: MemoryVault;
  wire: Wire;
  store: MemoryStateStore;
  partials: MemoryPartials;
  name: string;
}

export async function device(
  relay: TestRelay,
  invite: string,
  name: string,
  kind: "human" | "agent",
  opts: { chunkSize?: number; vault?: MemoryVault; transport?: Transport; signs?: boolean; fs?: VaultFS; sealAs?: { deviceId?: string; kind?: "human" | "agent" }; clock?: (vault: MemoryVault) => number } = {},
): Promise<Device> {
  const wire = new Wire(opts.transport);
  const client = new RelayClient(relay.url, wire.transport);
  const joined = await joinVault({ client, invite, deviceName: name, kind, passphrase: PASS, kdf: TEST_KDF_PARAMS, persist: async () => {} });
  const vault = opts.vault ?? new MemoryVault();
  const store = new MemoryStateStore();
  const partials = new MemoryPartials();
  const engine = new SyncEngine({
    fs: opts.fs ?? vault,
    client,
    key: joined.key,
    vaultId: joined.vaultId,
    device: { deviceId: opts.sealAs?.deviceId ?? joined.deviceId, deviceName: name, kind: opts.sealAs?.kind ?? kind },
    store,
    partials,
    chunkSize: opts.chunkSize,
    clock: opts.clock ? () => opts.clock!(vault) : undefined,
    // a device key (docs/trust.md) when asked: no anchor until the test sets one
    trust: opts.signs ? new Trust(joined.vaultId, { deviceId: joined.deviceId, kind }, DeviceKey.generate(), null) : null,
  });
  return { engine, vault, wire, store, partials, name };
}

export async function pair(relay: TestRelay): Promise<[Device, Device]> {
  const vaultInvite = await relay.newVault();
  const human = await device(relay, vaultInvite, "phone", "human");
  const vid = human.engine.remote.vaultId;
  const agent = await device(relay, await relay.invite(vid, "agent"), "server", "agent");
  return [human, agent];
}

export const text = (s: string) => new TextEncoder().encode(s);
