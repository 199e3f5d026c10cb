/** The plugin's settings (data.json: no secrets ever) and its settings tab. */
import { type App, type Plugin, PluginSettingTab, Setting } from "obsidian";
import type { SyncState } from "../sync/state";
import type { TrustReport } from "../sync/trustactions";

export interface PluginSettings {
  relayUrl: string;
  deviceName: string;
  deviceId: string;
  vaultId: string;
  fingerprint: string;
  intervalMinutes: number;
  live: boolean;
  ignore: string;
  /** Extra paths held when an agent changes them (gitignore syntax, one per line). */
  holdPatterns: string;
  massDeleteRatio: number;
}

export const DEFAULT_SETTINGS: PluginSettings = {
  relayUrl: "",
  deviceName: "",
  deviceId: "",
  vaultId: "",
  fingerprint: "",
  intervalMinutes: 5,
  live: true,
  ignore: "",
  holdPatterns: "",
  massDeleteRatio: 0.5,
};

export interface JoinForm {
  relayUrl: string;
  invite: string;
  deviceName: string;
  passphrase: string;
  recoveryKey: string;
}

/** What the tab needs from the plugin (an interface, so the tab is tested against a DOM). */
export interface SettingsHost {
  settings: PluginSettings;
  state(): SyncState | null;
  saveSettings(): Promise<void>;
  join(form: JoinForm): Promise<string>;
  syncNow(): Promise<void>;
  forget(): Promise<void>;
  /** The device keys' actions (src/sync/trustactions.ts); each resolves to one line to show. */
  trust?: TrustActions;
}

export interface TrustActions {
  show(): Promise<TrustReport | null>;
  init(): Promise<string>;
  accept(fingerprint: string): Promise<string>;
  vouch(device: string, kind: string, fingerprint: string): Promise<string>;
}

export class CompanionSettingTab extends PluginSettingTab {
  message = "";

  constructor(
    app: App,
    plugin: Plugin,
    private readonly host: SettingsHost,
  ) {
    super(app, plugin);
  }

  display(): void {
    const el = this.containerEl;
    el.empty?.();
    while (el.firstChild) el.removeChild(el.firstChild);
    const s = this.host.settings;
    const doc = el.ownerDocument;
    const note = doc.createElement("p");
    note.className = "vault-companion-message";
    note.textContent = this.message;
    if (!s.vaultId) this.joinForm(el, note);
    else this.joined(el, note);
    el.appendChild(note);
  }

  private joinForm(el: HTMLElement, note: HTMLElement): void {
    const s = this.host.settings;
    const form: JoinForm = { relayUrl: s.relayUrl, invite: "", deviceName: s.deviceName, passphrase: "", recoveryKey: "" };
    new Setting(el).setName("Join a vault").setHeading();
    new Setting(el)
      .setName("Relay URL")
      .setDesc("The Vault Companion relay, e.g. https://relay.example.org")
      .addText((t) => t.setPlaceholder("https://relay.example.org").setValue(form.relayUrl).onChange((v) => (form.relayUrl = v.trim())));
    new Setting(el)
      .setName("Invite code")
      .setDesc("From `companion relay invite` on the relay's server. It works once.")
      .addText((t) => t.onChange((v) => (form.invite = v.trim())));
    new Setting(el)
      .setName("Device name")
      .setDesc("How the other devices see this one (e.g. phone).")
      .addText((t) => t.setValue(form.deviceName).onChange((v) => (form.deviceName = v.trim())));
    new Setting(el)
      .setName("Passphrase")
      .setDesc("The vault's passphrase. Unlocking takes a moment (Argon2id, 64 MiB).")
      .addText((t) => {
        t.inputEl.type = "password";
        t.onChange((v) => (form.passphrase = v));
      });
    new Setting(el)
      .setName("Or the recovery key")
      .setDesc("Instead of the passphrase: the 16 groups of 4 printed when the vault was created.")
      .addText((t) => {
        t.inputEl.type = "password";
        t.onChange((v) => (form.recoveryKey = v));
      });
    new Setting(el).addButton((b) =>
      b
        .setButtonText("Join")
        .setCta()
        .onClick(async () => {
          b.setDisabled(true);
          note.textContent = "Joining…";
          try {
            this.message = await this.host.join(form);
          } catch (e) {
            this.message = `Could not join: ${(e as Error).message}`;
          }
          this.display();
        }),
    );
  }

  /** Device keys (docs/trust.md §3): this device's fingerprint; accept a trusted device's
   * fingerprint (or start the roster here); vouch for another device by its fingerprint. */
  trustShown: Promise<void> = Promise.resolve();

  private trustSection(el: HTMLElement, trust: TrustActions): void {
    new Setting(el).setName("Device keys").setHeading();
    const mine = new Setting(el).setName("This device's fingerprint").setDesc("…");
    const act = async (what: () => Promise<string>) => {
      try {
        this.message = await what();
      } catch (e) {
        this.message = (e as Error).message;
      }
      this.display();
    };
    const fp = { accept: "", device: "", vouch: "" };
    const acceptRow = new Setting(el)
      .setName("Trust your first device")
      .setDesc("Type the fingerprint shown on a device you already trust (`companion trust show`, or its settings here).")
      .addText((t) => t.setPlaceholder("ABCD-EFGH-…").onChange((v) => (fp.accept = v)))
      .addButton((b) => b.setButtonText("Accept").onClick(() => act(() => trust.accept(fp.accept))));
    const initRow = new Setting(el)
      .setName("Or start the roster here")
      .setDesc("Only on the person's first device of this vault.")
      .addButton((b) => b.setButtonText("Start the roster").onClick(() => act(() => trust.init())));
    const vouchRow = new Setting(el)
      .setName("Vouch for a device")
      .setDesc("Its device id or name, and the fingerprint shown on that device.")
      .addText((t) => t.setPlaceholder("device").onChange((v) => (fp.device = v.trim())))
      .addText((t) => t.setPlaceholder("ABCD-EFGH-…").onChange((v) => (fp.vouch = v)))
      .addButton((b) => b.setButtonText("Human").onClick(() => act(() => trust.vouch(fp.device, "human", fp.vouch))))
      .addButton((b) => b.setButtonText("Agent").onClick(() => act(() => trust.vouch(fp.device, "agent", fp.vouch))))
      .addButton((b) => b.setButtonText("Revoke").onClick(() => act(() => trust.vouch(fp.device, "revoked", fp.vouch))));
    vouchRow.settingEl.style.display = "none";
    this.trustShown = trust.show().then(
      (r) => {
        if (!r) return;
        mine.setDesc(`${r.fingerprint ?? "no key yet: sync once"} — ${r.summary}`);
        if (r.anchored) {
          acceptRow.settingEl.style.display = "none";
          initRow.settingEl.style.display = "none";
          vouchRow.settingEl.style.display = "";
        }
      },
      (e) => {
        mine.setDesc(`could not read the roster: ${(e as Error).message}`);
      },
    );
  }

  private joined(el: HTMLElement, note: HTMLElement): void {
    const s = this.host.settings;
    const st = this.host.state();
    new Setting(el).setName("Vault").setHeading();
    new Setting(el).setName("This device").setDesc(`${s.deviceName} (a person's device) in vault ${s.vaultId} via ${s.relayUrl}`);
    new Setting(el).setName("Key fingerprint").setDesc(`${s.fingerprint} — the same on every device of this vault`);
    if (this.host.trust) this.trustSection(el, this.host.trust);
    new Setting(el)
      .setName("State")
      .setDesc(st ? `${st.state}; ${Object.keys(st.held).length} held, ${Object.keys(st.quarantine).length} quarantined, ${st.conflicts.length} conflicts` : "never synced");
    new Setting(el)
      .setName("Sync every (minutes)")
      .addText((t) =>
        t.setValue(String(s.intervalMinutes)).onChange(async (v) => {
          const n = Number(v);
          if (Number.isFinite(n) && n >= 1) {
            s.intervalMinutes = n;
            await this.host.saveSettings();
          }
        }),
      );
    new Setting(el)
      .setName("Live sync while open")
      .setDesc("Waits on the relay for other devices' changes while Obsidian is in the foreground.")
      .addToggle((t) =>
        t.setValue(s.live).onChange(async (v) => {
          s.live = v;
          await this.host.saveSettings();
        }),
      );
    new Setting(el)
      .setName("Extra ignore patterns")
      .setDesc("gitignore syntax, one per line, for this device only (the vault's .companionignore applies everywhere).")
      .addTextArea((t) =>
        t.setValue(s.ignore).onChange(async (v) => {
          s.ignore = v;
          await this.host.saveSettings();
        }),
      );
    new Setting(el)
      .setName("Extra held paths")
      .setDesc("gitignore syntax, one per line: an agent's change to these waits for your approval here, like a plugin change (Python's sync.hold_patterns).")
      .addTextArea((t) =>
        t.setValue(s.holdPatterns ?? "").onChange(async (v) => {
          s.holdPatterns = v;
          await this.host.saveSettings();
        }),
      );
    new Setting(el)
      .addButton((b) =>
        b.setButtonText("Sync now").onClick(async () => {
          note.textContent = "Syncing…";
          try {
            await this.host.syncNow();
            this.message = "Synced.";
          } catch (e) {
            this.message = `Sync failed: ${(e as Error).message}`;
          }
          this.display();
        }),
      )
      .addButton((b) =>
        b.setButtonText("Forget this vault on this device").onClick(async () => {
          await this.host.forget();
          this.message = "This device no longer syncs this vault.";
          this.display();
        }),
      );
  }
}
