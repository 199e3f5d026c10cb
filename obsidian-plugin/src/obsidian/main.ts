/**
 * Vault Companion for Obsidian: this vault as a person's (human) device of a Vault Companion
 * vault. Syncs on vault events (registered after layout-ready), at start, on resume, on an
 * interval and live (long-poll) while in the foreground; shows the state in the status bar;
 * commands for sync, conflicts, a note's history and the held changes.
 */
import { type App, MarkdownView, Notice, Platform, Plugin, requestUrl, type TAbstractFile } from "obsidian";
import { fromHex } from "../crypto/bytes";
import { VaultKey } from "../crypto/keys";
import { ensureSelfTest } from "../crypto/wrap";
import { AuthError, MassDeleteRefused, RelayBusy, RelayUnreachable, VaultFolderMissing } from "../errors";
import { RelayClient } from "../relay/client";
import type { Transport } from "../relay/transport";
import { SyncEngine } from "../sync/engine";
import { Backoff, retryDelay } from "../sync/policy";
import type { PartialStore } from "../sync/remote";
import type { StateStore, SyncState } from "../sync/state";
import { joinFromSettings } from "./joinflow";
import { ConflictsModal, HeldModal, HistoryModal } from "./modals";
import { installReview } from "../review/rounds";
import { REVIEW_TITLE, REVIEW_VIEW, ReviewView, waitingSummary } from "./review";
import { anchorId, keyId, secretStore, type SecretStore, signingKeyId, tokenId } from "./secrets";
import { DeviceKey } from "../crypto/signing";
import { type Anchor, Trust } from "../sync/trust";
import { trustAccept, trustInit, trustShow, trustVouch } from "../sync/trustactions";
import { CompanionSettingTab, DEFAULT_SETTINGS, type JoinForm, type PluginSettings } from "./settings";
import { StatusBar } from "./statusbar";
import { obsidianTransport } from "./transport";
import { ObsidianVault } from "./vault";

const DEBOUNCE_MS = 800;

class AdapterStateStore implements StateStore {
  constructor(
    private readonly app: App,
    private readonly file: string,
  ) {}
  async load(): Promise<SyncState | null> {
    const a = this.app.vault.adapter;
    return (await a.exists(this.file)) ? JSON.parse(await a.read(this.file)) : null;
  }
  async save(state: SyncState): Promise<void> {
    const a = this.app.vault.adapter;
    const dir = this.file.slice(0, this.file.lastIndexOf("/"));
    if (!(await a.exists(dir))) await a.mkdir(dir);
    const tmp = this.file + ".tmp";
    await a.write(tmp, JSON.stringify(state));
    if (await a.exists(this.file)) await a.remove(this.file);
    await a.rename(tmp, this.file);
  }
}

class AdapterPartials implements PartialStore {
  constructor(
    private readonly app: App,
    private readonly dir: string,
  ) {}
  private p(sha: string, i: number) {
    return `${this.dir}/${sha}.${i}`;
  }
  async get(sha: string, i: number) {
    const a = this.app.vault.adapter;
    return (await a.exists(this.p(sha, i))) ? new Uint8Array(await a.readBinary(this.p(sha, i))) : null;
  }
  async put(sha: string, i: number, data: Uint8Array) {
    const a = this.app.vault.adapter;
    if (!(await a.exists(this.dir))) await a.mkdir(this.dir);
    await a.writeBinary(this.p(sha, i), data.slice().buffer as ArrayBuffer);
  }
  async drop(sha: string) {
    const a = this.app.vault.adapter;
    if (!(await a.exists(this.dir))) return;
    for (const f of (await a.list(this.dir)).files) if (f.split("/").pop()!.startsWith(sha + ".")) await a.remove(f);
  }
}

export default class VaultCompanionPlugin extends Plugin {
  settings: PluginSettings = { ...DEFAULT_SETTINGS };
  engine: SyncEngine | null = null;
  private status!: StatusBar;
  private secrets!: SecretStore;
  private transport!: Transport;
  private problem: string | null = null;
  private busy = false;
  private pending = new Set<string>();
  private full = false;
  private timer: number | null = null;
  private retryAt = 0;
  private backoff = new Backoff();
  private polling = false;
  private unloaded = false;
  private folderNoticeShown = false;
  private reviewNoticeShown = false;

  private get stateDir(): string {
    return `${this.app.vault.configDir}/plugins/${this.manifest.id}/state`;
  }

  async onload(): Promise<void> {
    this.settings = { ...DEFAULT_SETTINGS, ...((await this.loadData()) ?? {}) };
    this.status = new StatusBar(this.addStatusBarItem());
    this.secrets = secretStore(this.app as never, typeof window !== "undefined" ? window.localStorage : null);
    this.transport = obsidianTransport(requestUrl, typeof fetch === "function" ? fetch.bind(globalThis) : undefined);
    this.addSettingTab(
      new CompanionSettingTab(this.app, this, {
        settings: this.settings,
        state: () => this.engine?.state ?? null,
        saveSettings: () => this.saveSettings(),
        join: (form) => this.join(form),
        syncNow: () => this.syncNow(false),
        forget: () => this.forget(),
        trust: this.trustHost,
      }),
    );
    this.addCommand({ id: "sync-now", name: "Sync now", callback: () => void this.syncNow(false).catch((e) => new Notice(e.message)) });
    this.addCommand({
      id: "sync-allow-mass-delete",
      name: "Sync now, allowing mass deletion",
      callback: () => void this.syncNow(true).catch((e) => new Notice(e.message)),
    });
    this.addCommand({ id: "show-conflicts", name: "Show conflicts", callback: () => this.engine && new ConflictsModal(this.app, this.engine, (p) => void this.app.workspace.openLinkText(p, "")).open() });
    this.addCommand({ id: "held-changes", name: "Held changes", callback: () => this.engine && new HeldModal(this.app, this.engine, () => this.render()).open() });
    this.addCommand({
      id: "note-history",
      name: "History of this note",
      checkCallback: (checking) => {
        const file = this.app.workspace.getActiveViewOfType(MarkdownView)?.file ?? this.app.workspace.getActiveFile();
        if (!file || !this.engine) return false;
        if (!checking) new HistoryModal(this.app, this.engine, file.path, () => this.render()).open();
        return true;
      },
    });
    // the morning review: a view of the newest review note, with one button per decision
    this.registerView(REVIEW_VIEW, (leaf) => new ReviewView(leaf, () => this.engine));
    this.addRibbonIcon("list-checks", REVIEW_TITLE, () => void this.openReview());
    this.addCommand({ id: "review-last-night", name: REVIEW_TITLE, callback: () => void this.openReview() });
    this.render();
    try {
      await ensureSelfTest();
    } catch (e) {
      this.problem = (e as Error).message;
      this.render();
      return;
    }
    await this.openEngine();
    this.app.workspace.onLayoutReady(() => {
      // `create` also fires for every existing file while the vault loads: register after
      const queue = (f: TAbstractFile, old?: string) => this.schedule([f.path, ...(old ? [old] : [])]);
      this.registerEvent(this.app.vault.on("create", (f) => queue(f)));
      this.registerEvent(this.app.vault.on("modify", (f) => queue(f)));
      this.registerEvent(this.app.vault.on("delete", (f) => queue(f)));
      this.registerEvent(this.app.vault.on("rename", (f, old) => queue(f, old)));
      this.registerDomEvent(document, "visibilitychange", () => {
        if (document.visibilityState === "visible") this.schedule(null);
      });
      this.schedule(null);
      void this.livePoll();
    });
    this.registerInterval(window.setInterval(() => this.schedule(null), Math.max(1, this.settings.intervalMinutes) * 60_000));
  }

  /** Open (or bring forward) the "Review last night" view. */
  async openReview(): Promise<void> {
    const open = this.app.workspace.getLeavesOfType(REVIEW_VIEW);
    const leaf = open[0] ?? this.app.workspace.getLeaf(true);
    if (!open.length) await leaf.setViewState({ type: REVIEW_VIEW, active: true });
    await this.app.workspace.revealLeaf(leaf);
  }

  /** Once per start, after the first round that settles: a notice when a review waits. */
  private async noticeReview(): Promise<void> {
    if (this.reviewNoticeShown) return;
    this.reviewNoticeShown = true;
    const waiting = await waitingSummary(this.app);
    if (waiting) new Notice(`Vault Companion: last night's review waits for you (${waiting}). Open it with "${REVIEW_TITLE}".`, 10_000);
  }

  onunload(): void {
    this.unloaded = true;
    if (this.engine) this.engine.stopped = true;
  }

  async saveSettings(): Promise<void> {
    await this.saveData(this.settings);
  }

  private async openEngine(): Promise<void> {
    const s = this.settings;
    if (!s.vaultId) {
      this.engine = null;
      this.render();
      return;
    }
    const token = this.secrets.get(tokenId(s.deviceId));
    const keyHex = this.secrets.get(keyId(s.vaultId));
    if (!token || !keyHex) {
      this.problem = "this device's token or vault key is missing from the secret storage: join again";
      this.render();
      return;
    }
    const pluginDir = `${this.app.vault.configDir}/plugins/${this.manifest.id}`;
    let trust: Trust;
    try {
      trust = this.deviceTrust();
    } catch (e) {
      this.engine = null;
      this.problem = (e as Error).message;
      this.render();
      return;
    }
    this.engine = new SyncEngine({
      trust,
      fs: new ObsidianVault(this.app, Platform.isMacOS || Platform.isIosApp || Platform.isWin, Platform.isWin || Platform.isAndroidApp),
      client: new RelayClient(s.relayUrl, this.transport, { token, vaultId: s.vaultId }),
      key: await VaultKey.fromBytes(fromHex(keyHex)),
      vaultId: s.vaultId,
      device: { deviceId: s.deviceId, deviceName: s.deviceName, kind: "human" },
      store: new AdapterStateStore(this.app, `${this.stateDir}/state.json`),
      partials: new AdapterPartials(this.app, `${this.stateDir}/partial`),
      ignore: s.ignore.split("\n").filter((l) => l.trim()),
      // this device's own files: its settings and sync state never travel
      localIgnore: [`${pluginDir}/data.json`, `${pluginDir}/state/`],
      configDir: this.app.vault.configDir,
      massDeleteRatio: s.massDeleteRatio,
      holdPatterns: (s.holdPatterns ?? "").split("\n").map((l) => l.trim()).filter((l) => l),
    });
    await this.engine.load();
    // after each round: carry out what this device ticked in the review notes (src/review/)
    installReview(this.engine);
    this.problem = null;
    this.render();
  }

  /** This device's key (made on the first sync of a device that joined before keys) and its
   * anchor, both from the secret store (never the vault). */
  private deviceTrust(): Trust {
    const s = this.settings;
    const stored = this.secrets.get(signingKeyId(s.vaultId));
    let key: DeviceKey;
    if (stored) key = DeviceKey.fromStored(stored);
    else {
      key = DeviceKey.generate();
      this.secrets.set(signingKeyId(s.vaultId), key.stored());
    }
    // a damaged anchor stops sync (docs/trust.md §3): never a silent fall back to version 1
    const a = this.secrets.get(anchorId(s.vaultId));
    let anchor: Anchor | null = null;
    if (a) {
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(a);
      } catch {
        parsed = null;
      }
      anchor = Trust.checkAnchor(parsed, this.secrets.description);
    }
    return new Trust(s.vaultId, { deviceId: s.deviceId, kind: "human" }, key, anchor);
  }

  private keepAnchor(anchor: Anchor): void {
    this.secrets.set(anchorId(this.settings.vaultId), JSON.stringify(anchor));
  }

  /** The settings tab's trust actions (src/sync/trustactions.ts), each answering one line. */
  readonly trustHost = {
    show: async () => (this.engine ? trustShow(this.engine) : null),
    init: async () => {
      const { anchor } = await trustInit(this.need());
      this.keepAnchor(anchor);
      this.schedule(null);
      return "Roster started on this device. Accept this device's fingerprint on your other devices.";
    },
    accept: async (fp: string) => {
      const { anchor, name } = await trustAccept(this.need(), fp);
      this.keepAnchor(anchor);
      return `This device now trusts ${name} and the devices it vouches for.`;
    },
    vouch: async (device: string, kind: string, fp: string) => {
      const { entry } = await trustVouch(this.need(), device, kind, fp || undefined);
      this.schedule(null);
      return `Vouched for ${entry.name || entry.device_id} as ${entry.kind}.`;
    },
  };

  private need(): SyncEngine {
    if (!this.engine) throw new Error("join a vault first");
    return this.engine;
  }

  private render(): void {
    this.status?.render(this.engine?.state ?? null, this.busy, this.problem);
  }

  /** Debounce vault events into one round (`null`: everything). */
  private schedule(paths: string[] | null): void {
    if (!this.engine) return;
    if (paths === null) this.full = true;
    else for (const p of paths) this.pending.add(p);
    if (this.timer !== null) window.clearTimeout(this.timer);
    const wait = Math.max(DEBOUNCE_MS, this.retryAt - Date.now());
    this.timer = window.setTimeout(() => void this.runScheduled(), wait);
  }

  private async runScheduled(): Promise<void> {
    this.timer = null;
    if (!this.engine || this.unloaded) return;
    const paths = this.full ? undefined : [...this.pending];
    this.full = false;
    this.pending.clear();
    try {
      await this.runRound(paths, false);
    } catch {
      /* shown in the status bar; retried below */
    }
  }

  private async runRound(paths: string[] | undefined, allowMassDelete: boolean): Promise<void> {
    const engine = this.engine!;
    this.busy = true;
    this.render();
    try {
      const report = await engine.round({ paths, allowMassDelete });
      this.folderNoticeShown = false;
      if (report.converged) void this.noticeReview().catch(() => undefined);
      this.backoff.reset();
      this.retryAt = 0;
      for (const c of report.conflicts) new Notice(`Vault Companion: ${c.message}`);
      if (report.held.length) new Notice(`Vault Companion: ${report.held.length} change(s) from an agent wait for your approval (command "Held changes")`);
      if (report.quarantined.length) {
        new Notice(`Vault Companion: ${report.quarantined.length} record(s) from the relay failed verification and were not applied (command "Held changes")`);
        await engine.markReported();
      }
    } catch (e) {
      if (e instanceof RelayUnreachable) {
        this.retryAt = Date.now() + retryDelay(this.backoff, e instanceof RelayBusy ? e.retryAfterS : null) * 1000;
        this.schedule(null);
      } else if (e instanceof MassDeleteRefused) {
        new Notice(`Vault Companion: ${e.message}`, 0);
      } else if (e instanceof AuthError) {
        new Notice(`Vault Companion: the relay refused this device (${e.message})`, 0);
      } else if (e instanceof VaultFolderMissing) {
        // nothing written, deleted or sent; the status bar says so, and each round checks again
        if (!this.folderNoticeShown) new Notice(`Vault Companion: ${e.message}`, 0);
        this.folderNoticeShown = true;
      }
      throw e;
    } finally {
      this.busy = false;
      this.render();
    }
  }

  async syncNow(allowMassDelete: boolean): Promise<void> {
    if (!this.engine) throw new Error("join a vault first (Vault Companion settings)");
    await this.runRound(undefined, allowMassDelete);
  }

  /** Long-poll the relay while Obsidian is open and in the foreground. */
  private async livePoll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    const backoff = new Backoff();
    try {
      while (!this.unloaded) {
        if (!this.engine || !this.settings.live || document.visibilityState !== "visible") {
          await new Promise((r) => window.setTimeout(r, 2000));
          continue;
        }
        try {
          if (await this.engine.waitForChanges(25)) this.schedule([]);
          backoff.reset();
        } catch (e) {
          await new Promise((r) => window.setTimeout(r, retryDelay(backoff, e instanceof RelayBusy ? e.retryAfterS : null) * 1000));
        }
      }
    } finally {
      this.polling = false;
    }
  }

  private async join(form: JoinForm): Promise<string> {
    const msg = await joinFromSettings(form, {
      transport: this.transport,
      secrets: this.secrets,
      settings: this.settings,
      save: () => this.saveSettings(),
      folders: this.app.vault.adapter,
    });
    await this.openEngine();
    this.schedule(null);
    return msg;
  }

  private async forget(): Promise<void> {
    const s = this.settings;
    if (s.deviceId) this.secrets.set(tokenId(s.deviceId), "");
    if (s.vaultId) {
      this.secrets.set(keyId(s.vaultId), "");
      this.secrets.set(signingKeyId(s.vaultId), "");
      this.secrets.set(anchorId(s.vaultId), "");
    }
    Object.assign(s, { deviceId: "", vaultId: "", fingerprint: "" });
    await this.saveSettings();
    this.engine = null;
    this.render();
  }
}
