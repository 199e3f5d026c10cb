/**
 * Obsidian's vault as a `VaultFS`. Notes and attachments go through the Vault API (so open
 * editors follow along); hidden paths Obsidian does not index (`.obsidian/`, `.companion/`,
 * `.companionignore`) go through the adapter. Deletions go to the trash the person chose in
 * Obsidian's settings (`FileManager.trashFile`). Adapters know no executable bit.
 */
import { normalizePath, type App, TFile } from "obsidian";
import { windowsNameProblem } from "../sync/paths";
import { type FileStat, nameError, UnusableName, type VaultFS, type WriteOptions } from "../sync/vaultfs";

const isHidden = (p: string) => p.split("/").some((s) => s.startsWith("."));

export class ObsidianVault implements VaultFS {
  readonly tracksExec = false;
  readonly caseInsensitive: boolean;

  /** `windowsNames`: this device refuses what Windows refuses in a name (Windows, Android). */
  constructor(
    private readonly app: App,
    caseInsensitive: boolean,
    private readonly windowsNames: boolean,
  ) {
    this.caseInsensitive = caseInsensitive;
  }

  /** Run a write to `path`; a refusal of its name (by the file system, or by Obsidian for a
   * name Windows forbids) becomes `UnusableName`, a problem of that file only. */
  private async named<T>(path: string, op: () => Promise<T>): Promise<T> {
    const why = this.windowsNames ? windowsNameProblem(path) : null;
    if (why) throw new UnusableName(why);
    try {
      return await op();
    } catch (e) {
      const mapped = nameError(e, path);
      if (mapped !== e) throw mapped;
      const forbidden = windowsNameProblem(path);
      if (forbidden) throw new UnusableName(`Obsidian refused it: ${(e as Error).message} (${forbidden})`);
      throw e;
    }
  }

  /** For messages: the vault as Obsidian names it. */
  get location(): string {
    return `the vault folder of "${this.app.vault.getName()}"`;
  }

  private get adapter() {
    return this.app.vault.adapter;
  }

  async list(): Promise<FileStat[]> {
    const out: FileStat[] = this.app.vault.getFiles().map((f) => ({ path: f.path, size: f.stat.size, mtime: f.stat.mtime }));
    const root = await this.adapter.list("/");
    const walk = async (folder: string): Promise<void> => {
      const l = await this.adapter.list(folder);
      for (const f of l.files) {
        const st = await this.adapter.stat(f);
        if (st?.type === "file") out.push({ path: f, size: st.size, mtime: st.mtime });
      }
      for (const d of l.folders) await walk(d);
    };
    for (const f of root.files) {
      const name = f.replace(/^\/+/, "");
      if (!name.startsWith(".")) continue;
      const st = await this.adapter.stat(name);
      if (st?.type === "file") out.push({ path: name, size: st.size, mtime: st.mtime });
    }
    for (const d of root.folders) {
      const name = d.replace(/^\/+/, "");
      if (name.startsWith(".") && name !== ".trash") await walk(name);
    }
    return out;
  }

  async stat(path: string): Promise<FileStat | null> {
    const st = await this.adapter.stat(normalizePath(path));
    return st && st.type === "file" ? { path, size: st.size, mtime: st.mtime } : null;
  }

  async read(path: string): Promise<Uint8Array> {
    return new Uint8Array(await this.adapter.readBinary(normalizePath(path)));
  }

  private async mkdirs(path: string): Promise<void> {
    const parts = path.split("/").slice(0, -1);
    for (let i = 1; i <= parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      if (!(await this.adapter.exists(dir))) await this.adapter.mkdir(dir);
    }
  }

  async write(path: string, data: Uint8Array, opts: WriteOptions = {}): Promise<FileStat> {
    const p = normalizePath(path);
    const buf = data.slice().buffer as ArrayBuffer;
    const options = opts.mtime !== undefined ? { mtime: opts.mtime } : undefined;
    await this.named(p, async () => {
      const file = this.app.vault.getFileByPath(p);
      if (file instanceof TFile) await this.app.vault.modifyBinary(file, buf, options);
      else if (isHidden(p)) {
        await this.mkdirs(p);
        await this.adapter.writeBinary(p, buf, options);
      } else {
        await this.mkdirs(p);
        await this.app.vault.createBinary(p, buf, options);
      }
    });
    return (await this.stat(p))!;
  }

  async remove(path: string): Promise<void> {
    const p = normalizePath(path);
    const file = this.app.vault.getFileByPath(p);
    if (file) await this.app.fileManager.trashFile(file);
    else if (await this.adapter.exists(p)) await this.adapter.remove(p);
  }

  async rename(from: string, to: string): Promise<FileStat> {
    const a = normalizePath(from);
    const b = normalizePath(to);
    await this.named(b, async () => {
      await this.mkdirs(b);
      const file = this.app.vault.getFileByPath(a);
      if (file) await this.app.vault.rename(file, b);
      else await this.adapter.rename(a, b);
    });
    return (await this.stat(b))!;
  }
}
