/**
 * The vault as the sync core sees it. Three implementations: Obsidian's vault and adapter
 * (src/obsidian/vault.ts), the file system for the headless CLI (src/cli/nodevault.ts), and
 * `MemoryVault` for tests.
 */

import { fold, shownText, windowsNameProblem } from "./paths";

export interface FileStat {
  path: string;
  size: number;
  /** Modification time in ms (what Obsidian reports); compared, never trusted for content. */
  mtime: number;
  executable?: boolean;
}

export interface WriteOptions {
  mtime?: number;
  executable?: boolean;
}

/** One file of a bulk write: `expected` is the local file the index knows (null: absent). */
export interface BulkItem {
  path: string;
  data: Uint8Array;
  opts: WriteOptions;
  expected: { size: number; mtime: number } | null;
}

/** A file of a bulk write that changed since the scan (it is left alone, the write deferred). */
export class ChangedSinceScan extends Error {}

/** This device's file system cannot hold the name (Windows's forbidden characters, a name too
 * long): a problem of that one file, which the engine keeps queued and reports, never a reason
 * to stop syncing the rest. Other errors (a full disk) still stop the round. */
export class UnusableName extends Error {}

/** The error codes with which a file system refuses a name rather than a write. */
const NAME_CODES = new Set(["EINVAL", "ENAMETOOLONG", "EILSEQ"]);

/** `e` as an `UnusableName` when it is a file system's refusal of `path`'s name, else `e`. */
export function nameError(e: unknown, path: string): unknown {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === "string" && NAME_CODES.has(code)) {
    return new UnusableName(`this device's file system refuses the name of '${shownText(path, 200)}' (${code})`);
  }
  return e;
}

export interface VaultFS {
  /** Every file of the vault, hidden ones included (paths as stored on disk, `/`-separated). */
  list(): Promise<FileStat[]>;
  stat(path: string): Promise<FileStat | null>;
  read(path: string): Promise<Uint8Array>;
  /** Create or replace atomically, creating parent folders; returns the new stat. */
  write(path: string, data: Uint8Array, opts?: WriteOptions): Promise<FileStat>;
  remove(path: string): Promise<void>;
  /** Rename a file (parent folders of `to` created). */
  rename(from: string, to: string): Promise<FileStat>;
  /** Many new versions at once, each file still atomic and checked against `expected`; one
   * flush for all instead of one per file. Optional: the engine writes one by one without. */
  writeMany?(items: BulkItem[]): Promise<(FileStat | Error)[]>;
  /** Whether this vault knows executable bits (Obsidian's adapters do not). */
  readonly tracksExec: boolean;
  /** Whether two names differing only by case are one file here. */
  readonly caseInsensitive: boolean;
  /** Whether the vault's root folder is there (optional: assumed when absent). */
  rootExists?(): Promise<boolean>;
  /** Where the vault is, for messages (a folder's path). */
  readonly location?: string;
}

/** An in-memory vault for unit tests; `clock` gives mtimes so tests control them. */
export class MemoryVault implements VaultFS {
  files = new Map<string, { data: Uint8Array; mtime: number; executable: boolean }>();
  readonly tracksExec = true;
  /** Test switch: false is a vault folder that is not there at all. */
  present = true;
  readonly location = "the in-memory vault";
  private tick = 1_700_000_000_000;
  /** `windowsNames`: refuse the names Windows refuses, as its file system does;
   * `maxNameBytes`: refuse a longer name, as ext4, f2fs or APFS do (ENAMETOOLONG). */
  constructor(
    readonly caseInsensitive = false,
    readonly windowsNames = false,
    readonly maxNameBytes = Infinity,
  ) {}

  private checkName(path: string): void {
    const why = this.windowsNames ? windowsNameProblem(path) : null;
    if (why) throw new UnusableName(why);
    if (path.split("/").some((seg) => new TextEncoder().encode(seg).length > this.maxNameBytes)) {
      throw nameError(Object.assign(new Error("name too long"), { code: "ENAMETOOLONG" }), path);
    }
  }

  private now(): number {
    return ++this.tick;
  }

  /** The clock its modification times come from (the last one given). */
  get time(): number {
    return this.tick;
  }

  private find(path: string): string | undefined {
    if (this.files.has(path)) return path;
    if (!this.caseInsensitive) return undefined;
    const key = fold(path);
    return [...this.files.keys()].find((k) => fold(k) === key);
  }

  async rootExists(): Promise<boolean> {
    return this.present;
  }

  async list(): Promise<FileStat[]> {
    return [...this.files.entries()].map(([path, f]) => ({ path, size: f.data.length, mtime: f.mtime, executable: f.executable }));
  }

  async stat(path: string): Promise<FileStat | null> {
    const k = this.find(path);
    if (k === undefined) return null;
    const f = this.files.get(k)!;
    return { path: k, size: f.data.length, mtime: f.mtime, executable: f.executable };
  }

  async read(path: string): Promise<Uint8Array> {
    const k = this.find(path);
    if (k === undefined) throw new Error(`no such file: ${path}`);
    return this.files.get(k)!.data.slice();
  }

  async write(path: string, data: Uint8Array, opts: WriteOptions = {}): Promise<FileStat> {
    this.checkName(path);
    const k = this.find(path) ?? path;
    const mtime = this.now();
    this.files.set(k, { data: data.slice(), mtime, executable: opts.executable ?? this.files.get(k)?.executable ?? false });
    return (await this.stat(k))!;
  }

  async remove(path: string): Promise<void> {
    const k = this.find(path);
    if (k !== undefined) this.files.delete(k);
  }

  async rename(from: string, to: string): Promise<FileStat> {
    this.checkName(to);
    const k = this.find(from);
    if (k === undefined) throw new Error(`no such file: ${from}`);
    const f = this.files.get(k)!;
    this.files.delete(k);
    this.files.set(to, f);
    return (await this.stat(to))!;
  }

  /** Test helper: a person's edit (text). */
  async put(path: string, text: string | Uint8Array): Promise<void> {
    await this.write(path, typeof text === "string" ? new TextEncoder().encode(text) : text);
  }

  text(path: string): string | undefined {
    const f = this.files.get(path);
    return f ? new TextDecoder().decode(f.data) : undefined;
  }
}
