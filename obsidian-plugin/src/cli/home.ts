/**
 * Where the headless CLI keeps its state: the same COMPANION_HOME convention as the Python
 * companion (config/, data/, state/ under it; else the platform's folders). Per vault copy,
 * `data/obsidian-cli/<folder>-<hash>/` holds device.json (no secrets), state.json (the sync
 * index), partial/ (resumable downloads) and engine.lock. Secrets (token, vault key) go to
 * the owner-only `config/node-secrets.json`, never into the vault or a log; so does the
 * device's signing key (`signing-key-<vault_id>`, docs/trust.md §1).
 */
import { createHash } from "node:crypto";
import { promises as fsp, constants, openSync, writeSync, closeSync, readFileSync, unlinkSync, fstatSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { InputError, Locked } from "../errors";
import type { SyncState, StateStore } from "../sync/state";
import type { PartialStore } from "../sync/remote";

const APP = "vault-companion";

export function homeDirs(): { config: string; data: string; state: string } {
  const root = process.env.COMPANION_HOME;
  if (root) {
    const base = path.resolve(root.replace(/^~(?=$|\/)/, os.homedir()));
    return { config: path.join(base, "config"), data: path.join(base, "data"), state: path.join(base, "state") };
  }
  const h = os.homedir();
  if (process.platform === "darwin") {
    const s = path.join(h, "Library", "Application Support", APP);
    return { config: s, data: s, state: s };
  }
  if (process.platform === "win32") {
    const s = path.join(process.env.LOCALAPPDATA ?? path.join(h, "AppData", "Local"), APP);
    return { config: s, data: s, state: s };
  }
  const xdg = (v: string, d: string) => path.join(process.env[v] || path.join(h, d), APP);
  return { config: xdg("XDG_CONFIG_HOME", ".config"), data: xdg("XDG_DATA_HOME", ".local/share"), state: xdg("XDG_STATE_HOME", ".local/state") };
}

export function copyDir(realVault: string): string {
  const hash = createHash("sha256").update(realVault).digest("hex").slice(0, 12);
  const name = path.basename(realVault).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 40) || "vault";
  return path.join(homeDirs().data, "obsidian-cli", `${name}-${hash}`);
}

export interface DeviceFile {
  vaultRoot: string;
  relayUrl: string;
  vaultId: string;
  deviceId: string;
  deviceName: string;
  kind: "human" | "agent";
  keyFingerprint: string;
  created: number;
  /** The public key of the human device this one trusts (docs/trust.md §3): per device, never
   * in the vault. Absent: version 1's rule. */
  trustAnchor?: { deviceId: string; key: string } | null;
}

async function writeOwnerOnly(file: string, text: string): Promise<void> {
  await fsp.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp-${process.pid}`;
  const fh = await fsp.open(tmp, "w", 0o600);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fsp.rename(tmp, file);
}

export async function loadDevice(dir: string, vault: string): Promise<DeviceFile> {
  try {
    return JSON.parse(await fsp.readFile(path.join(dir, "device.json"), "utf-8"));
  } catch {
    throw new InputError(
      `'${vault}' is not set up for sync on this device; run \`node dist/cli.js join VAULT --relay URL --invite CODE --device-name NAME\``,
    );
  }
}

export async function saveDevice(dir: string, d: DeviceFile): Promise<void> {
  await writeOwnerOnly(path.join(dir, "device.json"), JSON.stringify(d, null, 2));
}

/** Secrets in an owner-only JSON file (the CLI's stand-in for the OS keyring). */
export class SecretsFile {
  readonly file = path.join(homeDirs().config, "node-secrets.json");

  private async read(): Promise<Record<string, string>> {
    try {
      const st = await fsp.stat(this.file);
      if (process.platform !== "win32" && st.mode & 0o077) {
        throw new InputError(`the secrets file ${this.file} can be read by other users; refusing it. Fix it with: chmod 600 ${this.file}`);
      }
      return JSON.parse(await fsp.readFile(this.file, "utf-8"));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return {};
      throw e;
    }
  }

  async get(name: string): Promise<string | null> {
    return (await this.read())[name] ?? null;
  }

  async set(values: Record<string, string>): Promise<void> {
    await writeOwnerOnly(this.file, JSON.stringify({ ...(await this.read()), ...values }, null, 2));
  }
}

/** COMPANION_PASSPHRASE_FILE: refused unless only its owner can read it (like the Python side). */
export function readPassphraseFile(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (e) {
    throw new InputError(`cannot open the passphrase file ${file} (COMPANION_PASSPHRASE_FILE): ${(e as Error).message}`);
  }
  try {
    const st = fstatSync(fd);
    if (process.platform !== "win32") {
      if (st.mode & 0o077) {
        throw new InputError(
          `the passphrase file ${file} can be read by other users (mode ${(st.mode & 0o777).toString(8)}); refusing it. Fix it with: chmod 600 ${file}`,
        );
      }
      if (process.getuid && st.uid !== process.getuid()) throw new InputError(`the passphrase file ${file} belongs to another user; refusing it`);
    }
    const text = readFileSync(fd, "utf-8").replace(/[\r\n]+$/, "");
    if (!text) throw new InputError(`the passphrase file ${file} is empty`);
    return text;
  } finally {
    closeSync(fd);
  }
}

export class FileStateStore implements StateStore {
  constructor(private readonly file: string) {}
  async load(): Promise<SyncState | null> {
    try {
      return JSON.parse(await fsp.readFile(this.file, "utf-8"));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw e;
    }
  }
  async save(state: SyncState): Promise<void> {
    await writeOwnerOnly(this.file, JSON.stringify(state));
  }
}

export class FilePartials implements PartialStore {
  constructor(private readonly dir: string) {}
  private p(sha: string, i: number) {
    return path.join(this.dir, sha, String(i));
  }
  async get(sha: string, i: number) {
    try {
      return new Uint8Array(await fsp.readFile(this.p(sha, i)));
    } catch {
      return null;
    }
  }
  async put(sha: string, i: number, data: Uint8Array) {
    await fsp.mkdir(path.join(this.dir, sha), { recursive: true, mode: 0o700 });
    await fsp.writeFile(this.p(sha, i), data, { mode: 0o600 });
  }
  async drop(sha: string) {
    await fsp.rm(path.join(this.dir, sha), { recursive: true, force: true });
  }
}

/** One engine per vault copy: a lock file naming its holder (stale when that pid is gone). */
export class VaultLock {
  private readonly file: string;
  constructor(dir: string) {
    this.file = path.join(dir, "engine.lock");
  }
  acquire(command: string): void {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(this.file, "wx", 0o600);
        writeSync(fd, JSON.stringify({ pid: process.pid, command, host: os.hostname(), started: Date.now() / 1000 }));
        closeSync(fd);
        return;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
        let holder: { pid?: number; command?: string } = {};
        try {
          holder = JSON.parse(readFileSync(this.file, "utf-8"));
        } catch {
          /* half-written: treat as stale */
        }
        if (holder.pid && holder.pid !== process.pid && alive(holder.pid)) {
          throw new Locked(`another companion holds this vault copy's lock (pid ${holder.pid}: ${holder.command ?? "?"})`);
        }
        unlinkSync(this.file);
      }
    }
    throw new Locked("cannot take this vault copy's lock");
  }
  release(): void {
    try {
      unlinkSync(this.file);
    } catch {
      /* already gone */
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
