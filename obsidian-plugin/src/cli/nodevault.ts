/** The vault as a folder on disk, for the headless CLI (Node only; never in the mobile bundle). */
import { promises as fsp, constants } from "node:fs";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import { TEMP_PREFIX } from "../sync/paths";
import type { FileStat, VaultFS, WriteOptions } from "../sync/vaultfs";

export class NodeVault implements VaultFS {
  readonly tracksExec = process.platform !== "win32";
  caseInsensitive = false;

  constructor(readonly root: string) {}

  static async open(root: string): Promise<NodeVault> {
    const v = new NodeVault(await fsp.realpath(root));
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
    return v;
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

  /** Temp file in the target's folder, data flushed, mode and times set, then renamed. */
  async write(rel: string, data: Uint8Array, opts: WriteOptions = {}): Promise<FileStat> {
    await this.checkNoLinks(rel);
    const target = this.abs(rel);
    await fsp.mkdir(path.dirname(target), { recursive: true });
    await this.checkNoLinks(rel);
    const tmp = path.join(path.dirname(target), `${TEMP_PREFIX}${randomBytes(6).toString("hex")}`);
    const fh = await fsp.open(tmp, "wx", 0o644);
    try {
      await fh.writeFile(data);
      if (opts.executable !== undefined && this.tracksExec) await fh.chmod(opts.executable ? 0o755 : 0o644);
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
      dir = path.dirname(dir);
    }
  }

  async rename(from: string, to: string): Promise<FileStat> {
    await this.checkNoLinks(from);
    await this.checkNoLinks(to);
    const dst = this.abs(to);
    await fsp.mkdir(path.dirname(dst), { recursive: true });
    await fsp.rename(this.abs(from), dst);
    await this.pruneDirs(from);
    return this.toStat(to, await fsp.lstat(dst));
  }
}
