/** Modals: held changes (accept/refuse) with quarantined records, conflicts, a note's history. */
import { type App, Modal } from "obsidian";
import type { SyncEngine, HistoryRow } from "../sync/engine";

function el<K extends keyof HTMLElementTagNameMap>(parent: HTMLElement, tag: K, text?: string, cls?: string): HTMLElementTagNameMap[K] {
  const e = parent.ownerDocument.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  parent.appendChild(e);
  return e;
}

function button(parent: HTMLElement, label: string, onClick: () => Promise<unknown>, after: () => void): HTMLButtonElement {
  const b = el(parent, "button", label);
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      await onClick();
    } finally {
      after();
    }
  });
  return b;
}

export class HeldModal extends Modal {
  constructor(
    app: App,
    private readonly engine: SyncEngine,
    private readonly afterChange: () => void,
  ) {
    super(app);
  }

  onOpen(): void {
    this.render();
  }

  render(): void {
    const c = this.contentEl;
    while (c.firstChild) c.removeChild(c.firstChild);
    el(c, "h2", "Held changes");
    const held = Object.values(this.engine.state.held);
    el(
      c,
      "p",
      held.length
        ? "An agent device changed what sync leaves out, the companion's or Obsidian's settings, plugins or themes, a script or an executable file, or wrote a note holding code a plugin runs. Nothing of it runs or applies until you accept it. Refusing puts this device's version back on every device."
        : "No changes wait for your approval.",
    );
    for (const h of held) {
      const row = el(c, "div", undefined, "vault-companion-row");
      el(row, "div", `${h.path} — ${h.deleted ? "deleted" : `${h.size} bytes`} by ${h.deviceName} (revision ${h.rev})`, "vault-companion-path");
      el(row, "div", h.reason, "vault-companion-reason");
      button(row, "Accept", () => this.engine.acceptHeld(h.path), () => this.done());
      button(row, "Refuse", () => this.engine.refuseHeld(h.path), () => this.done());
    }
    const q = Object.values(this.engine.state.quarantine);
    if (q.length) {
      el(c, "h3", "Quarantined records");
      el(c, "p", "These records from the relay failed verification (altered, misplaced, or not from the device they claim) and were not applied. The rest of the vault keeps syncing.");
      for (const r of q) {
        const row = el(c, "div", undefined, "vault-companion-row");
        el(row, "div", `${r.path ?? `file ${r.fileId.slice(0, 12)}`} (revision ${r.rev}): ${r.reason}`);
        if (r.path) button(row, "Keep my version", () => this.engine.supersede(r.fileId), () => this.done());
      }
    }
  }

  private done(): void {
    this.afterChange();
    this.render();
  }
}

export class ConflictsModal extends Modal {
  constructor(
    app: App,
    private readonly engine: SyncEngine,
    private readonly openPath: (p: string) => void,
  ) {
    super(app);
  }

  onOpen(): void {
    void this.render();
  }

  /** Every conflict copy in the vault, made here or on another device (as `companion status`). */
  private async render(): Promise<void> {
    const c = this.contentEl;
    el(c, "h2", "Conflicts");
    const list = (await this.engine.conflictCopies()).reverse();
    if (!list.length) el(c, "p", "No conflicts.");
    for (const k of list) {
      const row = el(c, "div", undefined, "vault-companion-row");
      el(row, "div", k.time !== null ? `${new Date(k.time * 1000).toLocaleString()}: ${k.message}` : k.message);
      const b = el(row, "button", "Open the copy");
      b.addEventListener("click", () => this.openPath(k.copy));
    }
  }
}

export class HistoryModal extends Modal {
  constructor(
    app: App,
    private readonly engine: SyncEngine,
    private readonly path: string,
    private readonly afterChange: () => void,
  ) {
    super(app);
  }

  async onOpen(): Promise<void> {
    const c = this.contentEl;
    el(c, "h2", `History of ${this.path}`);
    let rows: HistoryRow[];
    try {
      rows = await this.engine.history(this.path);
    } catch (e) {
      el(c, "p", `Cannot read the history: ${(e as Error).message}`);
      return;
    }
    if (!rows.length) el(c, "p", "The relay keeps no revisions of this note.");
    for (const r of rows) {
      const row = el(c, "div", undefined, "vault-companion-row");
      const when = r.time ? new Date(r.time * 1000).toLocaleString() : "?";
      const what = r.error ? `unreadable: ${r.error}` : r.deleted ? "deleted" : `${r.size} bytes`;
      el(row, "div", `revision ${r.rev} · ${when} · ${r.device} (${r.kind}) · ${what}${r.renameFrom ? `, renamed from ${r.renameFrom}` : ""}`);
      if (!r.deleted && !r.error && r !== rows[0]) {
        button(row, "Restore", () => this.engine.restore(this.path, r.rev), () => {
          this.afterChange();
          this.close();
        });
      }
    }
  }
}
