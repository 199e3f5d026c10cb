/** The plugin's settings (data.json: no secrets ever) and its settings tab. */
import { type App, type Plugin, PluginSettingTab, Setting } from "obsidian";
import type { SyncState } from "../sync/state";

export interface PluginSettings {
  relayUrl: string;
  deviceName: string;
  deviceId: string;
  vaultId: string;
  fingerprint: string;
  intervalMinutes: number;
  live: boolean;
  ignore: string;
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

  private joined(el: HTMLElement, note: HTMLElement): void {
    const s = this.host.settings;
    const st = this.host.state();
    new Setting(el).setName("Vault").setHeading();
    new Setting(el).setName("This device").setDesc(`${s.deviceName} (a person's device) in vault ${s.vaultId} via ${s.relayUrl}`);
    new Setting(el).setName("Key fingerprint").setDesc(`${s.fingerprint} — the same on every device of this vault`);
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
