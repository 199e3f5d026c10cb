/**
 * The headless entry of the plugin's sync core: `node dist/cli.js join|sync|watch|status|held`.
 * Same conventions and exit statuses as `companion init/sync/watch` (docs/sync.md): 0 done;
 * 1 failed (relay refused, tampering, still pending, quarantined files); 2 bad input; 3 mass
 * deletion held back; 4 another companion holds the lock; 5 relay unreachable (changes stay
 * queued); 6 the vault folder is missing or not this copy's (nothing written, deleted or sent).
 */
import { promises as fsp, watch as fsWatch, realpathSync } from "node:fs";
import * as path from "node:path";
import { fromHex, toHex, utf8 } from "../crypto/bytes";
import { VaultKey } from "../crypto/keys";
import { DEFAULT_KDF_PARAMS, ensureSelfTest, TEST_KDF_PARAMS } from "../crypto/wrap";
import { DeviceKey, signingKeyName } from "../crypto/signing";
import {
  AuthError,
  CompanionError,
  InputError,
  MassDeleteRefused,
  NotConverged,
  RelayBusy,
  RelayError,
  RelayUnreachable,
  TamperDetected,
  VaultFolderMissing,
} from "../errors";
import { RelayClient } from "../relay/client";
import { items as reviewItems, newestNote, tickIn } from "../review/listing";
import { CODES } from "../review/model";
import { installReview, noteFiles, readText } from "../review/rounds";
import { fetchTransport } from "../relay/transport";
import { SyncEngine } from "../sync/engine";
import { FOLDER_MARKER, folderMissingMessage, markerText } from "../sync/folder";
import { ensureLayoutFolders, joinVault } from "../sync/join";
import { WROTE_DEFAULT, writeDefaultScopes } from "../sync/scopes";
import { Backoff, retryDelay } from "../sync/policy";
import type { RoundReport } from "../sync/report";
import { Trust } from "../sync/trust";
import { trustAccept, trustInit, trustShow, trustVouch } from "../sync/trustactions";
import { copyDir, type DeviceFile, FilePartials, FileStateStore, loadDevice, readPassphraseFile, saveDevice, SecretsFile, VaultLock } from "./home";
import { NodeVault } from "./nodevault";
import { weakKdfRequested } from "./testmode";

const USAGE = `usage:
  node dist/cli.js join VAULT --relay URL --invite CODE --device-name NAME [--recovery-key-file F]
  node dist/cli.js sync VAULT [--allow-mass-delete] [--json] [--hold-patterns P,P]
  node dist/cli.js watch VAULT [--rescan-minutes M] [--allow-mass-delete]
  node dist/cli.js status VAULT [--json] [--offline]
  node dist/cli.js held VAULT [--accept PATH | --refuse PATH]
  node dist/cli.js quarantine VAULT [--dismiss ID|PATH | --supersede ID|PATH]
  node dist/cli.js review list VAULT [--json] [--night YYYY-MM-DD]
  node dist/cli.js review decide VAULT ID revert|keep|take|apply|drop [--night YYYY-MM-DD]
  node dist/cli.js trust-show VAULT [--json]
  node dist/cli.js trust-init VAULT
  node dist/cli.js trust-accept VAULT FINGERPRINT
  node dist/cli.js trust-vouch VAULT DEVICE --kind human|agent|revoked [FINGERPRINT]
The passphrase comes from COMPANION_PASSPHRASE_FILE (an owner-only file) or a prompt;
state lives under COMPANION_HOME (as for the Python companion).`;

function parseArgs(argv: string[]): { cmd: string; pos: string[]; opts: Record<string, string | true> } {
  const [cmd = "", ...rest] = argv;
  const pos: string[] = [];
  const opts: Record<string, string | true> = {};
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a.startsWith("--")) {
      const [k, v] = a.slice(2).split("=", 2);
      if (v !== undefined) opts[k] = v;
      else if (["allow-mass-delete", "json", "help", "offline"].includes(k)) opts[k] = true;
      else {
        if (i + 1 >= rest.length) throw new InputError(`--${k} needs a value`);
        opts[k] = rest[++i];
      }
    } else pos.push(a);
  }
  return { cmd, pos, opts };
}

function str(opts: Record<string, string | true>, k: string): string | undefined {
  const v = opts[k];
  return typeof v === "string" ? v : undefined;
}

async function passphrase(): Promise<string> {
  const file = process.env.COMPANION_PASSPHRASE_FILE;
  if (file) return readPassphraseFile(file);
  if (!process.stdin.isTTY) {
    throw new InputError("no passphrase: set COMPANION_PASSPHRASE_FILE to an owner-only file holding it, or run in a terminal");
  }
  process.stderr.write("Enter the vault passphrase: ");
  return new Promise((resolve) => {
    const stdin = process.stdin;
    stdin.setRawMode(true);
    let buf = "";
    const onData = (d: Buffer) => {
      const s = d.toString("utf-8");
      for (const ch of s) {
        if (ch === "\r" || ch === "\n") {
          stdin.setRawMode(false);
          stdin.off("data", onData);
          stdin.pause();
          process.stderr.write("\n");
          resolve(buf);
          return;
        }
        if (ch === "\u0003") process.exit(130);
        buf = ch === "\u007f" ? buf.slice(0, -1) : buf + ch;
      }
    };
    stdin.on("data", onData);
    stdin.resume();
  });
}

async function join(pos: string[], opts: Record<string, string | true>): Promise<void> {
  const vault = pos[0];
  const relay = str(opts, "relay");
  const invite = str(opts, "invite");
  const name = str(opts, "device-name");
  if (!vault || !relay || !invite || !name) throw new InputError("join needs VAULT --relay URL --invite CODE --device-name NAME");
  const weak = weakKdfRequested(process.env); // refused outside the test suite, before anything
  await fsp.mkdir(vault, { recursive: true });
  const root = realpathSync(vault);
  const dir = copyDir(root);
  try {
    await fsp.access(path.join(dir, "device.json"));
    throw new InputError(`${root} is already set up for sync; run \`node dist/cli.js sync ${root}\``);
  } catch (e) {
    if (e instanceof InputError) throw e;
  }
  const recFile = str(opts, "recovery-key-file");
  const recoveryKey = recFile ? readPassphraseFile(recFile) : undefined;
  const secrets = new SecretsFile();
  const client = new RelayClient(relay, fetchTransport());
  await ensureSelfTest();
  const joined = await joinVault({
    client,
    invite,
    deviceName: name,
    kind: "human",
    passphrase: recoveryKey ? undefined : await passphrase(),
    recoveryKey,
    kdf: weak ? TEST_KDF_PARAMS : DEFAULT_KDF_PARAMS,
    persist: async (j) => {
      // the device key is made here, beside the token (docs/trust.md §1)
      await secrets.set({
        [`relay-token-${j.deviceId}`]: j.token,
        [`vault-key-${j.vaultId}`]: toHex(j.key.toBytes()),
        [signingKeyName(j.vaultId)]: DeviceKey.generate().stored(),
      });
      await saveDevice(dir, {
        vaultRoot: root,
        relayUrl: relay.replace(/\/+$/, ""),
        vaultId: j.vaultId,
        deviceId: j.deviceId,
        deviceName: name,
        kind: j.kind,
        keyFingerprint: j.key.fingerprint,
        created: Date.now() / 1000,
      });
    },
  });
  // this copy's folder marker (sync/folder.ts): a folder swapped under it is never taken for it
  await fsp.writeFile(path.join(root, FOLDER_MARKER), markerText(joined.vaultId, joined.deviceId, Date.now() / 1000));
  const folders = {
    exists: (p: string) => fsp.lstat(path.join(root, p)).then(() => true, () => false),
    mkdir: (p: string) => fsp.mkdir(path.join(root, p)),
    write: (p: string, data: string) => fsp.writeFile(path.join(root, p), data, { flag: "wx" }),
  };
  await ensureLayoutFolders(folders);
  console.log(`${joined.createdVault ? "created" : "joined"} vault ${joined.vaultId} as '${name}' (human)`);
  if (joined.createdVault && (await writeDefaultScopes(folders))) console.log(WROTE_DEFAULT);
  console.log(`key fingerprint: ${joined.key.fingerprint} (the same on every device of this vault)`);
  console.log(`next: node dist/cli.js sync ${root}`);
}

/** This device's signing key (made on its first sync when it joined before device keys). */
async function deviceKey(secrets: SecretsFile, vaultId: string): Promise<DeviceKey> {
  const stored = await secrets.get(signingKeyName(vaultId));
  if (stored) return DeviceKey.fromStored(stored);
  const key = DeviceKey.generate();
  await secrets.set({ [signingKeyName(vaultId)]: key.stored() });
  return key;
}

async function openEngine(
  vault: string | undefined,
  probeCase = true,
  holdPatterns: string[] = [],
): Promise<{ engine: SyncEngine; lockDir: string; dev: DeviceFile }> {
  if (!vault) throw new InputError("give the vault folder");
  let root: string;
  try {
    root = realpathSync(vault);
  } catch {
    // a folder set up for sync that is gone (an unmounted drive): missing, not a typo
    const gone = path.resolve(vault);
    if (await fsp.access(path.join(copyDir(gone), "device.json")).then(() => true, () => false)) {
      throw new VaultFolderMissing(folderMissingMessage(gone));
    }
    throw new InputError(`the vault folder '${vault}' does not exist`);
  }
  const dir = copyDir(root);
  const dev = await loadDevice(dir, vault);
  const secrets = new SecretsFile();
  const token = await secrets.get(`relay-token-${dev.deviceId}`);
  const keyHex = await secrets.get(`vault-key-${dev.vaultId}`);
  if (!token || !keyHex) throw new CompanionError(`this device's token or vault key is missing from ${secrets.file}; join again with a new invite`);
  const client = new RelayClient(dev.relayUrl, fetchTransport(), { token, vaultId: dev.vaultId });
  const fs = await NodeVault.open(root, false);
  const anchor = dev.trustAnchor == null ? null : Trust.checkAnchor(dev.trustAnchor, path.join(dir, "device.json"));
  const trust = new Trust(dev.vaultId, { deviceId: dev.deviceId, kind: dev.kind }, await deviceKey(secrets, dev.vaultId), anchor);
  const engine = new SyncEngine({
    trust,
    fs,
    client,
    key: await VaultKey.fromBytes(fromHex(keyHex)),
    vaultId: dev.vaultId,
    device: { deviceId: dev.deviceId, deviceName: dev.deviceName, kind: dev.kind },
    store: new FileStateStore(path.join(dir, "state.json")),
    partials: new FilePartials(path.join(dir, "partial")),
    holdPatterns,
  });
  await engine.load();
  // the morning review's work after each round, as `companion sync` and `watch` do
  installReview(engine);
  // the case probe writes a temp file: only into a folder that is this copy's
  if (probeCase && (await engine.folderStatus()) !== "missing") await fs.probeCase();
  return { engine, lockDir: dir, dev };
}

function printReport(r: RoundReport): void {
  const parts: string[] = [];
  for (const [label, items] of [
    ["downloaded", r.downloaded],
    ["deleted here", r.deletedLocal],
    ["renamed here", r.renamedLocal],
    ["uploaded", r.uploaded],
    ["deleted on other devices", r.deletedRemote],
    ["merged", r.merged],
    ["held for approval", r.held],
  ] as [string, unknown[]][]) {
    if (items.length) parts.push(`${items.length} ${label}`);
  }
  console.log("synced: " + (parts.length ? parts.join(", ") : "no changes"));
  for (const c of r.conflicts) console.log(`conflict: ${c.message}`);
  for (const p of r.held) console.log(`held: ${p} (an agent's change; approve with: held VAULT --accept ${p})`);
  for (const q of r.quarantined) console.error(`quarantined: ${q}: a record failed verification and was not applied`);
  for (const s of r.skipped) console.error(`skipped: ${s}`);
  for (const p of r.problems) console.error(`cannot write here: ${p.path}: ${p.reason}`);
}

/** `--hold-patterns "private/,*.pdf"`: extra paths held when an agent changes them (gitignore
 * syntax, comma-separated; Python's `sync.hold_patterns`). */
function holdPatterns(opts: Record<string, string | true>): string[] {
  return (str(opts, "hold-patterns") ?? "").split(",").map((p) => p.trim()).filter((p) => p);
}

async function sync(pos: string[], opts: Record<string, string | true>): Promise<void> {
  const { engine, lockDir } = await openEngine(pos[0], true, holdPatterns(opts));
  const lock = new VaultLock(lockDir);
  lock.acquire(`cli.js sync ${pos[0]}`);
  let report: RoundReport;
  try {
    report = await engine.round({ allowMassDelete: !!opts["allow-mass-delete"] });
    await engine.markReported();
  } finally {
    lock.release();
  }
  const quarantined = Object.values(engine.state.quarantine);
  if (opts.json) {
    console.log(
      JSON.stringify(
        {
          ...report.summary(),
          quarantined_files: quarantined.map((q) => q.path ?? q.fileId),
          problem_files: Object.entries(engine.state.inbox).flatMap(([path, q]) => (q.problem ? [{ path, reason: q.problem }] : [])),
        },
        null,
        2,
      ),
    );
  } else printReport(report);
  if (report.problems.length) {
    const names = report.problems.slice(0, 3).map((p) => p.path).join(", ");
    const more = report.problems.length > 3 ? ` and ${report.problems.length - 3} more` : "";
    throw new CompanionError(`synced, except ${report.problems.length} remote change(s) this device cannot write: ${names}${more}`);
  }
  if (quarantined.length) {
    // as `companion sync`: a file whose newest record cannot be opened is not in sync
    const names = quarantined.slice(0, 3).map((q) => q.path ?? `id ${q.fileId.slice(0, 12)}`).join(", ");
    const more = quarantined.length > 3 ? ` and ${quarantined.length - 3} more` : "";
    throw new CompanionError(
      `synced, except ${quarantined.length} quarantined file(s) whose newest record cannot be opened: ${names}${more} (see \`node dist/cli.js held VAULT\`)`,
    );
  }
  if (!report.converged) {
    throw new NotConverged(`changes still pending after ${report.passes} passes; run sync again`);
  }
}

/** The relay answers (and how many records are newer than the cursor), with a short timeout:
 * `status` never says "synced" about a relay it cannot reach (statusview._probe). */
async function probe(engine: SyncEngine): Promise<{ online: boolean; newer: number | null }> {
  engine.client.timeoutMs = 3000; // a one-shot look: never wait long for an answer
  try {
    const page = await engine.client.changesPage(engine.state.cursor, 0, 1000);
    return { online: true, newer: page.records.length };
  } catch (e) {
    if (e instanceof RelayUnreachable) return { online: false, newer: null };
    if (e instanceof RelayError) return { online: true, newer: null };
    throw e;
  }
}

async function status(pos: string[], opts: Record<string, string | true>): Promise<void> {
  const { engine } = await openEngine(pos[0], false);
  const s = engine.state;
  const root = (engine.fs as NodeVault).root;
  const missing = (await engine.folderStatus()) === "missing";
  // every conflict copy in the vault, not only those this device made (views.copy_paths)
  const conflicts = await engine.conflictCopies();
  const problems = Object.entries(s.inbox).flatMap(([path, q]) => (q.problem ? [{ path, reason: q.problem }] : []));
  const { online, newer } = opts.offline ? { online: null, newer: null } : await probe(engine);
  let state: string = s.state;
  if (missing) state = "vault_missing";
  else if (state === "vault_missing") state = "pending"; // back: the next round rescans it
  else if (state === "synced" || state === "conflict") state = problems.length ? "pending" : conflicts.length ? "conflict" : "synced";
  const out = {
    vault: root,
    state,
    online,
    relay: engine.client.baseUrl,
    last_sync: s.lastSync,
    pending: { upload: s.pending.upload, download: Object.keys(s.inbox).length + (newer ?? 0) },
    held: Object.values(s.held).map((h) => ({ path: h.path, reason: h.reason, device: h.deviceName, rev: h.rev })),
    quarantined: Object.values(s.quarantine).map((q) => ({ file_id: q.fileId, path: q.path, rev: q.rev, reason: q.reason })),
    conflicts,
    problems,
    not_synced: Object.entries(s.notSynced ?? {}).map(([path, reason]) => ({ path, reason })),
    errors: s.errors,
    device: engine.device,
    device_keys: await deviceKeys(engine),
  };
  if (opts.json) console.log(JSON.stringify(out, null, 2));
  else {
    const net = { true: "online", false: "offline: the relay cannot be reached", null: "not checked" }[String(online) as "true" | "false" | "null"];
    console.log(`vault:   ${root}`);
    console.log(`device:  ${engine.device.deviceName} (${engine.device.kind})`);
    console.log(`relay:   ${out.relay} (${net})`);
    console.log(`state:   ${missing ? `vault folder missing: ${root} is missing or is not this copy's folder` : state}`);
    console.log(`device keys: ${keysLine(out.device_keys)}`);
    console.log(`held:    ${out.held.length}, quarantined: ${out.quarantined.length}, conflicts: ${conflicts.length}`);
    for (const c of conflicts.slice(-10)) console.log(`conflict: ${c.message}`);
    for (const p of out.problems) console.log(`cannot write here: ${p.path}: ${p.reason}`);
    if (out.not_synced.length) console.log(`not synced from here (${out.not_synced.length}):`);
    for (const n of out.not_synced.slice(0, 10)) console.log(`  ${n.reason}`);
  }
}

/** `status`'s view of the device keys, with the keys of `companion status --json`. */
async function deviceKeys(engine: SyncEngine): Promise<{ anchored: boolean; anchor: { device_id: string; name: string; fingerprint: string } | null; unvouched: number }> {
  if (!engine.trust?.anchored) return { anchored: false, anchor: null, unvouched: 0 };
  const r = await trustShow(engine);
  return { anchored: true, anchor: r.anchor, unvouched: r.unvouched_devices.length };
}

function keysLine(k: Awaited<ReturnType<typeof deviceKeys>>): string {
  if (!k.anchored || !k.anchor) return "not set up (`trust-init` / `trust-accept`)";
  const n = k.unvouched;
  const more = n ? `; ${n} device${n === 1 ? "" : "s"} not vouched for (\`trust-show\`)` : "";
  return `anchored on ${k.anchor.name || k.anchor.device_id} (${k.anchor.fingerprint})${more}`;
}

async function held(pos: string[], opts: Record<string, string | true>): Promise<void> {
  const { engine, lockDir } = await openEngine(pos[0]);
  const accept = str(opts, "accept");
  const refuse = str(opts, "refuse");
  if (!accept && !refuse) {
    for (const h of Object.values(engine.state.held)) console.log(`${h.path}\t${h.deviceName}\trev ${h.rev}\t${h.reason}`);
    return;
  }
  const lock = new VaultLock(lockDir);
  lock.acquire(`cli.js held ${pos[0]}`);
  try {
    const r = accept ? await engine.acceptHeld(accept) : await engine.refuseHeld(refuse!);
    printReport(r);
  } finally {
    lock.release();
  }
}

/** `quarantine VAULT [--dismiss ID|PATH | --supersede ID|PATH]` (as `companion quarantine`):
 * list the files whose newest record cannot be opened, forget one (it keeps this device's
 * version), or replace it with this device's version (a person's device). */
async function quarantine(pos: string[], opts: Record<string, string | true>): Promise<void> {
  const { engine, lockDir } = await openEngine(pos[0]);
  const dismiss = str(opts, "dismiss");
  const supersede = str(opts, "supersede");
  if (!dismiss && !supersede) {
    for (const q of Object.values(engine.state.quarantine)) console.log(`${q.fileId.slice(0, 16)}\t${q.path ?? "-"}\trev ${q.rev}\t${q.reason}`);
    return;
  }
  const lock = new VaultLock(lockDir);
  lock.acquire(`cli.js quarantine ${pos[0]}`);
  try {
    if (dismiss) console.log(`dismissed: ${await engine.dismissQuarantine(dismiss)}`);
    else {
      const q = engine.state.quarantine[supersede!] ?? Object.values(engine.state.quarantine).find((x) => x.path === supersede || x.fileId.startsWith(supersede!));
      if (!q) throw new InputError(`no quarantined record for '${supersede}'`);
      printReport(await engine.supersede(q.fileId));
    }
  } finally {
    lock.release();
  }
}

/** `review list VAULT [--json] [--night DAY]`: the items of the newest review note (as
 * `companion review list`): changes' before and after from the relay's history, and who
 * decided each line from the note's own verified history. */
async function reviewList(pos: string[], opts: Record<string, string | true>): Promise<void> {
  const { engine } = await openEngine(pos[0], false);
  const night = str(opts, "night");
  const found = await newestNote(engine, night);
  if (!found) {
    if (opts.json) {
      console.log(JSON.stringify({ note: null, items: [] }, null, 2));
      return;
    }
    throw new InputError(`no review note${night ? ` for ${night}` : ""} in ${pos[0]}/review/`);
  }
  const rel = found[1];
  const rows = await reviewItems(engine, rel);
  if (opts.json) {
    console.log(JSON.stringify({ note: rel, items: rows }, null, 2));
    return;
  }
  console.log(rel);
  for (const r of rows) {
    const state = r.state + (r.outcome ? ` (${r.outcome})` : "");
    const by = r.decided_by ? ` by ${r.decided_by} (${r.decided_by_kind})` : "";
    console.log(`  ${r.id.padEnd(14)} ${r.kind.padEnd(12)} ${r.file ?? "-"}`);
    console.log(`  ${"".padEnd(14)} ${r.decisions.join("/")}: ${state}${by}`);
  }
}

/** `review decide VAULT ID DECISION [--night DAY]`: tick the line deciding ID in the newest
 * note listing it open (what a tap in Obsidian does); the next `sync` carries it out. Exit 2:
 * no line has that id; 1: no open line with that decision. */
async function reviewDecide(pos: string[], opts: Record<string, string | true>): Promise<number> {
  const [vault, id, decision] = pos;
  if (!vault || !id || !decision) throw new InputError("review decide needs VAULT ID DECISION");
  const code = CODES[decision];
  if (!code) throw new InputError(`the decision is one of ${Object.keys(CODES).join(", ")}, not '${decision}'`);
  const { engine } = await openEngine(vault, false);
  const night = str(opts, "night");
  const files = (await noteFiles(engine)).filter(([n]) => night === undefined || n === night);
  let known = false;
  for (const [, rel] of files.reverse()) {
    const text = (await readText(engine, rel)) ?? "";
    const r = tickIn(text, id, code);
    known ||= r.known;
    if (r.text === null) continue;
    if (r.text !== text) await engine.fs.write(rel, utf8(r.text));
    console.log(`ticked ${id} ${decision} in ${rel}`);
    return 0;
  }
  if (!known) throw new InputError(`no review line has the id '${id}' (see \`node dist/cli.js review list\`)`);
  console.error(`${id}: no open '${decision}' line (already decided, or not offered)`);
  return 1;
}

/** Keep the anchor in this copy's device.json (per device, outside the vault). */
async function saveAnchor(vault: string, dev: DeviceFile, anchor: { deviceId: string; key: string }): Promise<void> {
  await saveDevice(copyDir(realpathSync(vault)), { ...dev, trustAnchor: anchor });
}

/** `trust-show VAULT [--json]`: this device's fingerprint, its anchor, who is vouched. */
async function cmdTrustShow(pos: string[], opts: Record<string, string | true>): Promise<void> {
  const { engine } = await openEngine(pos[0], false);
  const r = await trustShow(engine);
  if (opts.json) {
    console.log(JSON.stringify(r, null, 2));
    return;
  }
  console.log(`this device: ${engine.device.deviceName} (${r.device_id})`);
  console.log(`fingerprint: ${r.fingerprint ?? "no key yet (run sync)"}`);
  console.log(r.summary);
  if (r.anchor) console.log(`anchor: ${r.anchor.name || r.anchor.device_id} (${r.anchor.device_id}) ${r.anchor.fingerprint}`);
  for (const d of r.trusted) console.log(`vouched: ${d.name || d.device_id} (${d.device_id}) ${d.kind} ${d.fingerprint} by ${d.by}`);
  for (const n of r.not_vouched) console.log(`not vouched: ${n.file}: ${n.why}`);
  for (const a of r.announced) console.log(`announced: ${a.name} (${a.device_id}) ${a.fingerprint}: ${a.status}`);
}

async function cmdTrustInit(pos: string[]): Promise<void> {
  const { engine, dev } = await openEngine(pos[0], false);
  const { anchor, path: p } = await trustInit(engine);
  await saveAnchor(pos[0], dev, anchor);
  console.log(`roster started: ${p} (this device, human); anchored on this device's key`);
  console.log(`fingerprint: ${engine.trust!.fingerprint} (accept it on the person's other devices)`);
  console.log(`next: node dist/cli.js sync ${pos[0]}`);
}

async function cmdTrustAccept(pos: string[]): Promise<void> {
  const [vault, fp] = pos;
  if (!vault || !fp) throw new InputError("trust-accept needs VAULT FINGERPRINT (the fingerprint trust-show prints on a trusted human device)");
  const { engine, dev } = await openEngine(vault, false);
  const { anchor, name } = await trustAccept(engine, fp);
  await saveAnchor(vault, dev, anchor);
  console.log(`anchored on '${name}' (${anchor.deviceId}); who wrote what now follows the person's roster`);
}

async function cmdTrustVouch(pos: string[], opts: Record<string, string | true>): Promise<void> {
  const [vault, device, fp] = pos;
  const kind = str(opts, "kind");
  if (!vault || !device || !kind) throw new InputError("trust-vouch needs VAULT DEVICE --kind human|agent|revoked FINGERPRINT");
  const { engine } = await openEngine(vault, false);
  const { entry, path: p } = await trustVouch(engine, device, kind, fp);
  console.log(`vouched: ${entry.name || entry.device_id} (${entry.device_id}) as ${entry.kind} in ${p}; sync to share it`);
}

async function watch(pos: string[], opts: Record<string, string | true>): Promise<number> {
  const { engine, lockDir } = await openEngine(pos[0], true, holdPatterns(opts));
  const lock = new VaultLock(lockDir);
  lock.acquire(`cli.js watch ${pos[0]}`);
  const rescanMs = Number(str(opts, "rescan-minutes") ?? "10") * 60_000;
  const allowMassDelete = !!opts["allow-mass-delete"];
  const root = (engine.fs as NodeVault).root;
  let stop = false;
  let full = true;
  let paths = new Set<string>();
  let wake: (() => void) | null = null;
  let retryAt = 0;
  let generation = 0;
  let fatal = 0;
  let remote = false;
  const poke = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const onSignal = () => {
    stop = true;
    engine.stopped = true;
    poke();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  let debounce: NodeJS.Timeout | null = null;
  const watchRoot = () => {
    const w = fsWatch(root, { recursive: true }, (_ev, name) => {
      if (!name) {
        full = true;
      } else paths.add(String(name).split(path.sep).join("/"));
      if (debounce) clearTimeout(debounce);
      debounce = setTimeout(poke, 50);
    });
    // the folder moved away or unmounted under the watcher: rounds check and rescan instead
    w.on("error", () => {
      full = true;
      poke();
    });
    return w;
  };
  let watcher = watchRoot();
  let missing = false;
  const rescan = setInterval(() => {
    full = true;
    poke();
  }, rescanMs);
  const poll = async () => {
    const backoff = new Backoff();
    let seen = -1;
    while (!stop) {
      while (!stop && seen === generation) await new Promise((r) => setTimeout(r, 20));
      if (stop) return;
      seen = generation;
      try {
        if (await engine.waitForChanges(25)) {
          remote = true;
          poke();
        } else seen = -1;
        backoff.reset();
      } catch (e) {
        const after = e instanceof RelayBusy ? e.retryAfterS : null;
        await new Promise((r) => setTimeout(r, retryDelay(backoff, after) * 1000));
        seen = -1;
      }
    }
  };
  void poll();
  console.error(`watching ${root} (device '${engine.device.deviceName}'); Ctrl-C to stop`);
  const backoff = new Backoff();
  while (!stop) {
    const now = Date.now();
    if (!(full || paths.size || remote) || now < retryAt) {
      await new Promise<void>((res) => {
        wake = res;
        setTimeout(res, retryAt > now ? retryAt - now : 5000);
      });
      continue;
    }
    const scope = full ? undefined : [...paths];
    full = false;
    paths = new Set();
    remote = false;
    try {
      const r = await engine.round({ paths: scope, allowMassDelete });
      if (missing) {
        // the vault folder is back (maybe another inode at the same path): watch that one
        missing = false;
        console.error(`the vault folder ${root} is back; syncing again`);
        watcher.close();
        watcher = watchRoot();
        full = true; // what changed before the new watcher was up: the next round scans it all
        if (!(engine.fs as NodeVault).probed) await (engine.fs as NodeVault).probeCase();
      }
      await engine.markReported();
      if (r.changed || r.held.length || r.quarantined.length) printReport(r);
      backoff.reset();
    } catch (e) {
      if (e instanceof RelayUnreachable) {
        retryAt = Date.now() + retryDelay(backoff, e instanceof RelayBusy ? e.retryAfterS : null) * 1000;
        full = true;
        console.error(`relay unreachable (${e.message}); retrying, edits stay queued`);
      } else if (e instanceof AuthError) {
        console.error(`the relay refused this device: ${e.message}; stopping`);
        fatal = 1;
        stop = true;
      } else if (e instanceof MassDeleteRefused) {
        console.error(e.message);
      } else if (e instanceof VaultFolderMissing) {
        // nothing is written or sent meanwhile; every round checks again (exit 6 for `sync`)
        if (!missing) console.error(e.message);
        missing = true;
        full = true;
        retryAt = Date.now() + 2000;
      } else if (e instanceof TamperDetected) {
        console.error(e.message);
        retryAt = Date.now() + Math.max(backoff.next(), 30) * 1000;
        full = true;
      } else if (e instanceof CompanionError) {
        console.error(`sync round failed: ${e.message}`);
        retryAt = Date.now() + backoff.next() * 1000;
        full = true;
      } else throw e;
    }
    generation++;
  }
  watcher.close();
  clearInterval(rescan);
  lock.release();
  console.error("sync daemon stopped");
  return fatal;
}

export async function main(argv: string[]): Promise<number> {
  try {
    if (!argv.length) {
      console.error(USAGE);
      return 2;
    }
    const { cmd, pos, opts } = parseArgs(argv);
    // `--help`, `-h` or `help` in place of a command, or `--help` after one: the usage, as
    // `companion --help` prints it (was "unknown command '--help'")
    if (["--help", "-h", "help"].includes(cmd) || opts.help) {
      console.log(USAGE);
      return 0;
    }
    if (cmd === "join") await join(pos, opts);
    else if (cmd === "sync") await sync(pos, opts);
    else if (cmd === "watch") return await watch(pos, opts);
    else if (cmd === "status") await status(pos, opts);
    else if (cmd === "held") await held(pos, opts);
    else if (cmd === "quarantine") await quarantine(pos, opts);
    else if (cmd === "review" && pos[0] === "list") await reviewList(pos.slice(1), opts);
    else if (cmd === "review" && pos[0] === "decide") return await reviewDecide(pos.slice(1), opts);
    else if (cmd === "trust-show") await cmdTrustShow(pos, opts);
    else if (cmd === "trust-init") await cmdTrustInit(pos);
    else if (cmd === "trust-accept") await cmdTrustAccept(pos);
    else if (cmd === "trust-vouch") await cmdTrustVouch(pos, opts);
    else if (cmd === "review") throw new InputError(`review list|decide ...\n${USAGE}`);
    else throw new InputError(`unknown command '${cmd}'\n${USAGE}`);
    return 0;
  } catch (e) {
    if (e instanceof CompanionError) {
      console.error(`error: ${e.message}`);
      return e.exitCode;
    }
    console.error(`internal error: ${(e as Error).stack ?? e}`);
    return 1;
  }
}

main(process.argv.slice(2)).then((code) => process.exit(code));
