// @vitest-environment happy-dom
/**
 * The settings tab, the status bar and the held-changes modal against a DOM (happy-dom), with
 * a real relay behind the Join button. Obsidian itself cannot run here: `obsidian` resolves to
 * test/fake-obsidian.ts (see vitest.config.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CompanionSettingTab, DEFAULT_SETTINGS, type PluginSettings } from "../src/obsidian/settings";
import { StatusBar } from "../src/obsidian/statusbar";
import { joinFromSettings } from "../src/obsidian/joinflow";
import { HeldModal } from "../src/obsidian/modals";
import { secretStore } from "../src/obsidian/secrets";
import { emptyState } from "../src/sync/state";
import { RelayClient } from "../src/relay/client";
import { TEST_KDF_PARAMS, wrapVaultKey } from "../src/crypto/wrap";
import { VaultKey } from "../src/crypto/keys";
import { TestRelay } from "./relay";
import { httpTransport } from "./http";
import { device, PASS } from "./helpers";

let relay: TestRelay;
beforeAll(async () => {
  relay = await TestRelay.start();
});
afterAll(async () => {
  await relay.stop();
});

const flush = () => new Promise((r) => setTimeout(r, 0));
async function until(cond: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

function input(tab: CompanionSettingTab, name: string): HTMLInputElement {
  const row = [...tab.containerEl.querySelectorAll(".setting-item")].find((r) => r.querySelector(".setting-item-name")?.textContent === name);
  if (!row) throw new Error(`no setting ${name}`);
  return row.querySelector("input, textarea") as HTMLInputElement;
}

function type(el: HTMLInputElement, value: string): void {
  el.value = value;
  el.dispatchEvent(new Event("input"));
}

function button(root: HTMLElement, label: string): HTMLButtonElement {
  const b = [...root.querySelectorAll("button")].find((x) => x.textContent === label);
  if (!b) throw new Error(`no button ${label}`);
  return b as HTMLButtonElement;
}

async function vaultWithKey(): Promise<string> {
  // a vault whose key a first device already set (so the tab's join unwraps it)
  const client = new RelayClient(relay.url, httpTransport);
  const j = await client.join(await relay.newVault(), "laptop", "human");
  await client.putKeyBlob(await wrapVaultKey(await VaultKey.generate(), PASS, j.vaultId, TEST_KDF_PARAMS));
  return j.vaultId;
}

function makeTab() {
  const settings: PluginSettings = { ...DEFAULT_SETTINGS };
  const saved: string[] = [];
  const secrets = new Map<string, string>();
  const app = { secretStorage: { getSecret: (k: string) => secrets.get(k) ?? null, setSecret: (k: string, v: string) => void secrets.set(k, v) } };
  const store = secretStore(app, null);
  const save = async () => void saved.push(JSON.stringify(settings));
  const folders = new Set<string>(["journal"]); // the vault's folders (journal/ already there)
  const made: string[] = [];
  const written = new Map<string, string>();
  const adapter = {
    exists: async (p: string) => folders.has(p),
    mkdir: async (p: string) => void (folders.add(p), made.push(p)),
    write: async (p: string, data: string) => void written.set(p, data),
  };
  const tab = new CompanionSettingTab(app as never, {} as never, {
    settings,
    state: () => null,
    saveSettings: save,
    join: (form) => joinFromSettings(form, { transport: httpTransport, secrets: store, settings, save, folders: adapter }),
    syncNow: async () => {},
    forget: async () => {},
  });
  document.body.appendChild(tab.containerEl);
  return { tab, settings, saved, secrets, made, written };
}

describe("settings tab: device keys", () => {
  function trustTab(anchored: boolean) {
    const calls: string[][] = [];
    const settings: PluginSettings = { ...DEFAULT_SETTINGS, vaultId: "v1", deviceId: "d1", deviceName: "phone", fingerprint: "KEYFP" };
    const report = {
      device_id: "d1",
      kind: "human",
      unvouched_devices: [],
      fingerprint: "ABCD-EFGH-IJKL-MNOP-QRST-UVWX-YZ23",
      anchored,
      anchor: null,
      summary: anchored ? "device keys: anchored on L; 2 vouched device(s)" : "device keys: not set up",
      trusted: [],
      not_vouched: [],
      announced: [],
    };
    const tab = new CompanionSettingTab({} as never, {} as never, {
      settings,
      state: () => null,
      saveSettings: async () => {},
      join: async () => "",
      syncNow: async () => {},
      forget: async () => {},
      trust: {
        show: async () => report,
        init: async () => (calls.push(["init"]), "started"),
        accept: async (fp) => (calls.push(["accept", fp]), "accepted"),
        vouch: async (d, k, fp) => {
          calls.push(["vouch", d, k, fp]);
          if (fp === "bad") throw new Error("the key 'server' announces has fingerprint X, not bad");
          return "vouched";
        },
      },
    });
    document.body.appendChild(tab.containerEl);
    return { tab, calls };
  }
  const row = (tab: CompanionSettingTab, name: string) =>
    [...tab.containerEl.querySelectorAll(".setting-item")].find((r) => r.querySelector(".setting-item-name")?.textContent === name) as HTMLElement;
  const message = (tab: CompanionSettingTab) => tab.containerEl.querySelector(".vault-companion-message")!.textContent;

  it("shows this device's fingerprint and, without an anchor, accepts the one typed", async () => {
    const { tab, calls } = trustTab(false);
    tab.display();
    await tab.trustShown;
    expect(row(tab, "This device's fingerprint").textContent).toContain("ABCD-EFGH-IJKL-MNOP-QRST-UVWX-YZ23 — device keys: not set up");
    expect(row(tab, "Vouch for a device").style.display).toBe("none");
    type(input(tab, "Trust your first device"), "tn4y imna q67b 65ex rrwf 4xqm h7en");
    button(tab.containerEl, "Accept").click();
    await until(() => message(tab) === "accepted");
    expect(calls).toEqual([["accept", "tn4y imna q67b 65ex rrwf 4xqm h7en"]]);
  });

  it("vouches with the kind of the button pressed, once anchored, and shows a refusal in one line", async () => {
    const { tab, calls } = trustTab(true);
    tab.display();
    await tab.trustShown;
    expect(row(tab, "Trust your first device").style.display).toBe("none");
    expect(row(tab, "Vouch for a device").style.display).toBe("");
    const [dev, fp] = [...row(tab, "Vouch for a device").querySelectorAll("input")] as HTMLInputElement[];
    type(dev, "server");
    type(fp, "FP-1");
    button(tab.containerEl, "Agent").click();
    await until(() => message(tab) === "vouched");
    await tab.trustShown;
    const [dev2, fp2] = [...row(tab, "Vouch for a device").querySelectorAll("input")] as HTMLInputElement[];
    type(dev2, "server");
    type(fp2, "bad");
    button(tab.containerEl, "Human").click();
    await until(() => message(tab)!.includes("not bad"));
    expect(calls).toEqual([
      ["vouch", "server", "agent", "FP-1"],
      ["vouch", "server", "human", "bad"],
    ]);
  });
});

describe("settings tab", () => {
  it("joins through the form; the token and key go to secret storage, never to data.json", async () => {
    const vid = await vaultWithKey();
    const { tab, settings, saved, secrets, made, written } = makeTab();
    tab.display();
    type(input(tab, "Relay URL"), relay.url);
    type(input(tab, "Invite code"), await relay.invite(vid));
    type(input(tab, "Device name"), "phone");
    expect(input(tab, "Passphrase").type).toBe("password");
    type(input(tab, "Passphrase"), PASS);
    button(tab.containerEl, "Join").click();
    await until(() => !!settings.vaultId);
    await until(() => tab.containerEl.textContent!.includes("Key fingerprint"));
    expect(settings.vaultId).toBe(vid);
    expect(tab.containerEl.querySelector(".vault-companion-message")!.textContent).toMatch(/^Joined vault/);
    const token = secrets.get(`vault-companion-token-${settings.deviceId}`)!;
    const key = secrets.get(`vault-companion-key-${vid}`)!;
    expect(token).toMatch(/\./);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    // the device's signing key is made at join, beside the token (docs/trust.md §1)
    const signing = secrets.get(`vault-companion-signing-key-${vid}`)!;
    expect(signing).toMatch(/^[A-Za-z0-9_-]{43}$/);
    for (const s of saved) {
      expect(s).not.toContain(token);
      expect(s).not.toContain(signing);
      expect(s).not.toContain(key);
      expect(s).not.toContain(PASS);
    }
    expect(tab.containerEl.textContent).toContain(settings.fingerprint);
    // folders do not sync: the vault layout's missing ones are made on joining (#39, 8e)
    expect(made).toEqual(["knowledge", "projects"]);
    // the vault folder's marker: this copy's folder, never synced (#42)
    const marker = JSON.parse(written.get(".companion-folder.json")!);
    expect([marker.vault_id, marker.device_id]).toEqual([vid, settings.deviceId]);
    expect(typeof marker.created).toBe("number");
  });

  it("shows a one-line error for a wrong passphrase and stays unjoined", async () => {
    const vid = await vaultWithKey();
    const { tab, settings, secrets } = makeTab();
    tab.display();
    type(input(tab, "Relay URL"), relay.url);
    type(input(tab, "Invite code"), await relay.invite(vid));
    type(input(tab, "Device name"), "phone");
    type(input(tab, "Passphrase"), "not the passphrase");
    button(tab.containerEl, "Join").click();
    await until(() => tab.containerEl.textContent!.includes("Could not join"));
    expect(tab.containerEl.querySelector(".vault-companion-message")!.textContent).toMatch(/wrong passphrase/);
    expect(settings.vaultId).toBe("");
    expect(secrets.size).toBe(0);
  });

  it("refuses a relay URL that is not http(s)", async () => {
    const { tab } = makeTab();
    tab.display();
    type(input(tab, "Relay URL"), "relay.example.org");
    button(tab.containerEl, "Join").click();
    await until(() => tab.containerEl.textContent!.includes("Could not join"));
    expect(tab.containerEl.textContent).toContain("must start with https://");
  });
});

describe("status bar", () => {
  it("shows the state and the held / quarantined counts", () => {
    const el = document.createElement("div");
    const bar = new StatusBar(el);
    expect(bar.render(null).text).toBe("Vault: not joined");
    const st = emptyState();
    st.state = "synced";
    st.lastSync = 1_700_000_000;
    bar.render(st);
    expect(el.textContent).toBe("Vault ✓");
    expect(el.classList.contains("vc-ok")).toBe(true);
    st.state = "held";
    st.held["x"] = { path: ".obsidian/app.json" } as never;
    st.quarantine["f"] = { fileId: "f" } as never;
    bar.render(st);
    expect(el.textContent).toBe("Vault ✓ · 1 held · 1 quarantined");
    expect(el.classList.contains("vc-attention")).toBe(true);
    expect(el.getAttribute("aria-label")).toMatch(/wait for your approval/);
    bar.render(st, true);
    expect(el.textContent).toMatch(/^Vault ⟳ syncing/);
    st.state = "offline";
    st.errors.push({ time: 1, kind: "offline", message: "cannot reach the relay" });
    bar.render(st);
    expect(el.textContent).toBe("Vault offline · 1 held · 1 quarantined");
    expect(el.title).toBe("cannot reach the relay");
    bar.render(st, false, "Argon2id self-test failed");
    expect(el.textContent).toBe("Vault ⚠ off");
    // the vault folder gone or swapped (#42): said so, never "synced"
    st.state = "vault_missing" as never;
    st.errors.push({ time: 2, kind: "vault_missing", message: "vault folder missing: /v is missing" });
    bar.render(st);
    expect(el.textContent).toBe("Vault ⚠ vault folder missing · 1 held · 1 quarantined");
    expect(el.title).toBe("vault folder missing: /v is missing");
    expect(el.classList.contains("vc-error")).toBe(true);
  });
});

describe("status bar: files this device cannot write", () => {
  it("says the vault is synced except them, with the first reason and what to do", () => {
    const el = document.createElement("div");
    const bar = new StatusBar(el);
    const st = emptyState();
    st.state = "pending";
    st.inbox["What is X?.md"] = { problem: "the name 'What is X?.md' contains '?', which Windows and Android do not allow in a file name" } as never;
    st.inbox["b.md"] = { fileId: "f" } as never; // an ordinary queued change is not counted
    bar.render(st);
    expect(el.textContent).toBe("Vault ✓ · 1 not written here");
    expect(el.classList.contains("vc-attention")).toBe(true);
    expect(el.getAttribute("aria-label")).toMatch(/^Synced, except what this device cannot write: What is X\?\.md: .*'\?'.*Rename it on the device that made it\.$/);
  });
});

describe("held changes modal", () => {
  it("lists an agent's held plugin change and accepts it with a click", async () => {
    const vaultInvite = await relay.newVault();
    const h = await device(relay, vaultInvite, "phone", "human", { transport: httpTransport });
    const a = await device(relay, await relay.invite(h.engine.remote.vaultId, "agent"), "server", "agent", { transport: httpTransport });
    await a.vault.put(".obsidian/plugins/x/main.js", "code");
    await a.engine.round();
    await h.engine.round();
    let changed = 0;
    const modal = new HeldModal({} as never, h.engine, () => void changed++);
    modal.open();
    expect(modal.contentEl.textContent).toContain(".obsidian/plugins/x/main.js");
    expect(modal.contentEl.textContent).toContain("by server");
    button(modal.contentEl, "Accept").click();
    await until(() => changed === 1);
    await flush();
    expect(h.vault.text(".obsidian/plugins/x/main.js")).toBe("code");
    expect(modal.contentEl.textContent).toContain("No changes wait for your approval.");
  });
});
