/** The status-bar item: one short text for the state, counts for held/quarantined/conflicts. */
import type { SyncState } from "../sync/state";

export interface StatusView {
  text: string;
  title: string;
  cls: string;
}

export function statusView(state: SyncState | null, busy: boolean, problem: string | null): StatusView {
  if (problem) return { text: "Vault ⚠ off", title: problem, cls: "error" };
  if (!state) return { text: "Vault: not joined", title: "Join a vault in the Vault Companion settings", cls: "idle" };
  const held = Object.keys(state.held).length;
  const quarantined = Object.keys(state.quarantine).length;
  const unwritable = Object.entries(state.inbox).filter(([, q]) => q.problem);
  const extras: string[] = [];
  if (held) extras.push(`${held} held`);
  if (quarantined) extras.push(`${quarantined} quarantined`);
  if (unwritable.length) extras.push(`${unwritable.length} not written here`);
  const tail = extras.length ? ` · ${extras.join(" · ")}` : "";
  const last = state.errors[state.errors.length - 1];
  if (busy || state.state === "syncing") return { text: `Vault ⟳ syncing${tail}`, title: "Syncing with the relay", cls: "busy" };
  switch (state.state) {
    case "synced":
    case "held":
    case "conflict": {
      const c = state.state === "conflict" ? " · conflict" : "";
      const when = state.lastSync ? new Date(state.lastSync * 1000).toLocaleTimeString() : "";
      return { text: `Vault ✓${c}${tail}`, title: `Synced ${when}${held ? `; ${held} change(s) from agents wait for your approval` : ""}`, cls: extras.length || c ? "attention" : "ok" };
    }
    case "offline":
      return { text: `Vault offline${tail}`, title: last ? last.message : "The relay cannot be reached; changes stay queued", cls: "offline" };
    case "pending":
      if (unwritable.length) {
        const [path, q] = unwritable[0];
        const more = unwritable.length > 1 ? ` (and ${unwritable.length - 1} more)` : "";
        return { text: `Vault ✓${tail}`, title: `Synced, except what this device cannot write: ${path}: ${q.problem}${more}. Rename it on the device that made it.`, cls: "attention" };
      }
      return { text: `Vault … pending${tail}`, title: "Changes are still pending", cls: "busy" };
    case "vault_missing":
      return {
        text: `Vault ⚠ vault folder missing${tail}`,
        title: last ? last.message : "The vault folder is missing or is not this copy's: nothing is synced until it is back",
        cls: "error",
      };
    case "error":
      return { text: `Vault ⚠ error${tail}`, title: last ? last.message : "Sync failed", cls: "error" };
    default:
      return { text: `Vault: not synced yet${tail}`, title: "Not synced yet", cls: "idle" };
  }
}

export class StatusBar {
  constructor(private readonly el: HTMLElement) {
    el.classList.add("vault-companion-status");
  }

  render(state: SyncState | null, busy = false, problem: string | null = null): StatusView {
    const v = statusView(state, busy, problem);
    this.el.textContent = v.text;
    this.el.setAttribute("aria-label", v.title);
    this.el.title = v.title;
    for (const c of ["ok", "busy", "attention", "offline", "error", "idle"]) this.el.classList.toggle(`vc-${c}`, c === v.cls);
    return v;
  }
}
