/** The vault as a folder on disk, for the headless CLI (Node only; never in the mobile bundle). */
import { promises as fsp, constants } from "node:fs";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import { execFile } from "node:child_process";
import { TEMP_PREFIX, windowsNameProblem } from "../sync/paths";
import { type BulkItem, ChangedSinceScan, type FileStat, nameError, UnusableName, type VaultFS, type WriteOptions } from "../sync/vaultfs";

export class NodeVault implements VaultFS {
  readonly tracksExec = process.platform !== "win32";
  caseInsensitive = false;

  constructor(readonly root: string) {}

  get location(): string {
    return this.root;
  }

  /** The folder at the vault's path is a folder (not gone, not a link or a file). */
  async rootExists(): Promise<boolean> {
    try {
      return (await fsp.lstat(this.root)).isDirectory();
    } catch {
      return false;
    }
  }

  /** `probe`: find out now whether the disk is case-insensitive, by writing an empty temp file
   * in the root; else call `probeCase` once the folder is known to be the vault's (#42: no
   * write into a folder that may not be the vault's). */
  static async open(root: string, probe = true): Promise<NodeVault> {
    const v = new NodeVault(await fsp.realpath(root));
    if (probe) await v.probeCase();
    return v;
  }

  probed = false;

  async probeCase(): Promise<void> {
    const v = this;
    this.probed = true;
    const probe = path.join(v.root, `${TEMP_PREFIX}case-${randomBytes(4).toString("hex")}`);
    await fsp.writeFile(probe, "");
    try {
      await fsp.lstat(probe.toUpperCase().replace(v.root.toUpperCase(), v.root));
      v.caseInsensitive = true;
    } catch {
      v.caseInsensitive = false;
    } finally {
      await fsp.unlink(probe).catch(() => undefined);
    }
  }

  private abs(rel: string): string {
    const parts = rel.split("/");
    if (parts.some((p) => p === ".." || p === "." || p === "")) throw new Error(`unsafe path ${rel}`);
    return path.join(this.root, ...parts);
  }

  /** Folders seen as real folders (not links) recently; re-checked after `dirTtlMs`. */
  private safeDirs = new Map<string, number>();
  dirTtlMs = 2000;

  /** Refuse to go through a symbolic link anywhere on the way (pathsafe.resolve_inside). */
  private async checkNoLinks(rel: string): Promise<void> {
    let cur = this.root;
    const segs = rel.split("/");
    const now = Date.now();
    for (let i = 0; i < segs.length; i++) {
      cur = path.join(cur, segs[i]);
      const last = i === segs.length - 1;
      if (!last && (this.safeDirs.get(cur) ?? 0) > now) continue;
      try {
        const st = await fsp.lstat(cur);
        if (st.isSymbolicLink()) throw new Error(`path ${rel} goes through a symbolic link; refused`);
        if (!last && st.isDirectory()) this.safeDirs.set(cur, now + this.dirTtlMs);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ENOTDIR") return;
        throw e;
      }
    }
  }

  private toStat(rel: string, st: import("node:fs").Stats): FileStat {
    return { path: rel, size: st.size, mtime: st.mtimeMs, executable: (st.mode & 0o100) !== 0 };
  }

  async list(): Promise<FileStat[]> {
    const out: FileStat[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries;
      try {
        entries = await fsp.readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      await Promise.all(
        entries.map(async (d) => {
          const r = rel ? `${rel}/${d.name}` : d.name;
          if (d.isDirectory()) {
            if (d.name === ".git" || d.name === ".trash") return;
            await walk(path.join(dir, d.name), r);
          } else if (d.isFile()) {
            try {
              out.push(this.toStat(r, await fsp.lstat(path.join(dir, d.name))));
            } catch {
              /* vanished meanwhile */
            }
          }
        }),
      );
    };
    await walk(this.root, "");
    return out;
  }

  async stat(rel: string): Promise<FileStat | null> {
    try {
      await this.checkNoLinks(rel);
      const st = await fsp.lstat(this.abs(rel));
      return st.isFile() ? this.toStat(rel, st) : null;
    } catch {
      return null;
    }
  }

  async read(rel: string): Promise<Uint8Array> {
    await this.checkNoLinks(rel);
    const fh = await fsp.open(this.abs(rel), constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
    try {
      return new Uint8Array(await fh.readFile());
    } finally {
      await fh.close();
    }
  }

  /** Run a write to `rel`; the file system's refusal of its name becomes `UnusableName` (on
   * Windows checked first: there a ':' would name an alternate data stream, not fail). */
  private async named<T>(rel: string, op: () => Promise<T>): Promise<T> {
    const why = process.platform === "win32" ? windowsNameProblem(rel) : null;
    if (why) throw new UnusableName(why);
    try {
      return await op();
    } catch (e) {
      throw nameError(e, rel);
    }
  }

  /** Temp file in the target's folder, data flushed, mode and times set, then renamed. */
  write(rel: string, data: Uint8Array, opts: WriteOptions = {}): Promise<FileStat> {
    return this.named(rel, () => this.writeOne(rel, data, opts));
  }

  private async writeOne(rel: string, data: Uint8Array, opts: WriteOptions): Promise<FileStat> {
    await this.checkNoLinks(rel);
    const target = this.abs(rel);
    const dir = path.dirname(target);
    if (dir !== this.root && !((this.safeDirs.get(dir) ?? 0) > Date.now())) {
      await fsp.mkdir(dir, { recursive: true });
      await this.checkNoLinks(rel); // mkdir may have raced with a link being planted
    }
    const tmp = path.join(path.dirname(target), `${TEMP_PREFIX}${randomBytes(6).toString("hex")}`);
    const fh = await fsp.open(tmp, "wx", 0o644);
    try {
      await fh.writeFile(data);
      if (opts.executable && this.tracksExec) await fh.chmod(0o755);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    try {
      if (opts.mtime !== undefined) await fsp.utimes(tmp, new Date(), new Date(opts.mtime));
      await fsp.rename(tmp, target);
    } catch (e) {
      await fsp.unlink(tmp).catch(() => undefined);
      throw e;
    }
    return this.toStat(rel, await fsp.lstat(target));
  }

  /**
   * The dpkg approach (companion/sync/local/bulkwrite.py): every content goes to a temp file beside
   * its target, one `syncfs` flushes them all, each target is checked and renamed, and one more
   * flush makes the renames durable. Where syncfs is unavailable each temp file is fsynced.
   */
  async writeMany(items: BulkItem[]): Promise<(FileStat | Error)[]> {
    const temps: (string | Error)[] = await mapPool(items, 16, async (it) => {
      try {
        return await this.named(it.path, () => this.writeTemp(it.path, it.data, it.opts, false));
      } catch (e) {
        return e as Error;
      }
    });
    if (!(await syncfs(this.root))) {
      await mapPool(temps, 16, async (t) => {
        if (typeof t !== "string") return;
        const fh = await fsp.open(t, "r+");
        await fh.datasync().finally(() => fh.close());
      });
    }
    const out = await mapPool(items, 16, async (it, i): Promise<FileStat | Error> => {
      const tmp = temps[i];
      if (typeof tmp !== "string") return tmp;
      const target = this.abs(it.path);
      try {
        const st = await fsp.lstat(target).catch(() => null);
        const ok = it.expected === null ? st === null : !!st && st.isFile() && st.size === it.expected.size && st.mtimeMs === it.expected.mtime;
        if (!ok) throw new ChangedSinceScan(`${it.path} changed since the scan`);
        await fsp.rename(tmp, target);
        return this.toStat(it.path, await fsp.lstat(target));
      } catch (e) {
        await fsp.unlink(tmp).catch(() => undefined);
        return e as Error;
      }
    });
    await syncfs(this.root);
    return out;
  }

  private async writeTemp(rel: string, data: Uint8Array, opts: WriteOptions, flush: boolean): Promise<string> {
    await this.checkNoLinks(rel);
    const dir = path.dirname(this.abs(rel));
    if (dir !== this.root && !((this.safeDirs.get(dir) ?? 0) > Date.now())) {
      await fsp.mkdir(dir, { recursive: true });
      await this.checkNoLinks(rel);
    }
    const tmp = path.join(dir, `${TEMP_PREFIX}${randomBytes(6).toString("hex")}`);
    const fh = await fsp.open(tmp, "wx", 0o644);
    try {
      await fh.writeFile(data);
      if (opts.executable && this.tracksExec) await fh.chmod(0o755);
      if (opts.mtime !== undefined) await fh.utimes(new Date(), new Date(opts.mtime));
      if (flush) await fh.datasync();
    } catch (e) {
      await fh.close();
      await fsp.unlink(tmp).catch(() => undefined);
      throw e;
    }
    await fh.close();
    return tmp;
  }

  async remove(rel: string): Promise<void> {
    await this.checkNoLinks(rel);
    await fsp.unlink(this.abs(rel)).catch((e) => {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    });
    await this.pruneDirs(rel);
  }

  private async pruneDirs(rel: string): Promise<void> {
    let dir = path.dirname(this.abs(rel));
    while (dir !== this.root && dir.startsWith(this.root + path.sep)) {
      try {
        await fsp.rmdir(dir);
      } catch {
        return;
      }
      this.safeDirs.delete(dir); // gone: the next write into it makes it again
      dir = path.dirname(dir);
    }
  }

  rename(from: string, to: string): Promise<FileStat> {
    return this.named(to, () => this.renameOne(from, to));
  }

  private async renameOne(from: string, to: string): Promise<FileStat> {
    await this.checkNoLinks(from);
    await this.checkNoLinks(to);
    const dst = this.abs(to);
    await fsp.mkdir(path.dirname(dst), { recursive: true });
    await fsp.rename(this.abs(from), dst);
    await this.pruneDirs(from);
    return this.toStat(to, await fsp.lstat(dst));
  }
}

async function mapPool<T, R>(items: T[], n: number, fn: (t: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i], i);
      }
    }),
  );
  return out;
}

/** syncfs(2) of the file system holding `dir` (coreutils `sync -f`); false when unavailable. */
function syncfs(dir: string): Promise<boolean> {
  if (process.platform !== "linux") return Promise.resolve(false);
  return new Promise((resolve) => execFile("sync", ["-f", dir], (err) => resolve(!err)));
}
