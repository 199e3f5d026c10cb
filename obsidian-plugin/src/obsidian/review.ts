/**
 * The "Review last night" view: the newest review note's items (computed by src/review/, the
 * same as `review list`), each with its diff and one button per decision it offers. A button
 * ticks that decision's line in the review note through the vault API (`Vault.process`), so
 * open editors follow and the plugin's sync carries the tick; the device that ticked carries a
 * revert / keep / take out at its next round, the agent's server applies or drops proposals.
 * Mobile-friendly: no hover-only controls, buttons full-width and tall enough to tap.
 */
import { type App, ItemView, type TFile, type WorkspaceLeaf } from "obsidian";
import type { SyncEngine } from "../sync/engine";
import { ticks } from "../review/blame";
import { diffLines } from "../review/diff";
import * as labels from "../review/labels";
import { counts, type Item, itemsOf, tickIn } from "../review/listing";
import { CODES, isReviewPath } from "../review/model";
import * as notes from "../review/note";
import { revisions } from "../review/rounds";

export const REVIEW_VIEW = "vault-companion-review";
export const REVIEW_TITLE = "Review last night";

const NIGHT_RE = /^review\/\d{4}-\d{2}-\d{2}\.md$/;

/** The newest review note of the vault, through the vault API. */
export function newestReviewFile(app: App): TFile | null {
  const files = app.vault.getFiles().filter((f) => NIGHT_RE.test(f.path));
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return files.length ? files[files.length - 1] : null;
}

/** The items of a review note: from the note alone (offline), then, when the relay answers,
 * with each change's before/after from the relay's history and who ticked each line. */
export async function reviewItems(text: string, rel: string, engine: SyncEngine | null): Promise<{ items: Item[]; attested: boolean }> {
  if (engine) {
    try {
      const who = ticks(await revisions(engine, rel));
      return { items: await itemsOf(text, rel, { engine, who }), attested: true };
    } catch {
      /* offline: the note's own words below */
    }
  }
  return { items: await itemsOf(text, rel), attested: false };
}

/** The `-`/`+` lines the note itself shows for an item (its section's fenced diff). */
export function noteDiff(text: string, item: Item): string[] {
  const rows = text.replace(/\r\n/g, "\n").split("\n");
  const ln = notes.parseLines(text).find((l) => l.id === item.id);
  if (!ln) return [];
  let start = ln.index;
  while (start > 0 && !rows[start].startsWith("### ") && !rows[start].startsWith("## ")) start--;
  const out: string[] = [];
  let fence: string | null = null;
  for (const row of rows.slice(start + 1, ln.index)) {
    if (fence === null && /^`{3,}diff$/.test(row)) fence = row.slice(0, -4);
    else if (fence !== null && row === fence) break;
    else if (fence !== null) out.push(row);
  }
  return out;
}

function buttonLabel(lang: string, item: Item, decision: string): string {
  if (item.kind === "night") return labels.say(lang, decision === "revert" ? "batch_revert" : "batch_apply");
  return labels.say(lang, decision);
}

function el<K extends keyof HTMLElementTagNameMap>(parent: HTMLElement, tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = parent.ownerDocument.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e);
  return e;
}

/** Draw the review into `root` (emptied first). `onTick(id, decision)` is called by a button. */
export function renderReview(
  root: HTMLElement,
  note: { rel: string; text: string } | null,
  items: Item[],
  onTick: (id: string, decision: string) => void,
  opts: { attested?: boolean } = {},
): void {
  root.replaceChildren();
  root.classList.add("vault-companion-review");
  if (!note) {
    el(root, "p", "vault-companion-message", "No review yet: the agent's first night writes one in review/.");
    return;
  }
  const lang = notes.frontMatter(note.text).lang || "en";
  const night = notes.frontMatter(note.text).night ?? note.rel.slice(7, -3);
  el(root, "h2", undefined, labels.say(lang, "title", { night }));
  const waiting = counts(items);
  const keys: [string, string][] = [
    ["change", "n_changes"],
    ["disagreement", "n_disagreements"],
    ["proposal", "n_proposals"],
  ];
  const parts = keys.filter(([k]) => waiting[k]).map(([k, key]) => labels.count(lang, key, waiting[k]));
  el(root, "p", "vault-companion-summary", parts.length ? labels.say(lang, "waiting", { counts: labels.join(lang, parts) }) : labels.say(lang, items.length ? "decided_all" : "nothing"));
  if (!opts.attested && items.some((i) => i.kind === "change")) {
    el(root, "p", "vault-companion-message", "Offline: the changes are shown as the note lists them; the relay's account is checked at the next sync.");
  }
  for (const item of items) {
    const box = el(root, "div", `vault-companion-item vc-${item.kind} vc-${item.state}`);
    box.dataset.id = item.id;
    const head = el(box, "div", "vault-companion-item-head");
    el(head, "span", "vault-companion-path", item.kind === "night" ? labels.say(lang, "title", { night }) : (item.file ?? item.label));
    const lines =
      item.kind === "night"
        ? []
        : item.before !== null || item.after !== null
          ? diffLines(item.before, item.after)[0]
          : noteDiff(note.text, item);
    if (lines.length) {
      const pre = el(box, "pre", "vault-companion-diff");
      for (const l of lines) el(pre, "div", l.startsWith("+") ? "vc-added" : l.startsWith("-") ? "vc-removed" : "", l);
    }
    for (const x of item.explanation) el(box, "div", "vault-companion-reason", x);
    if (item.state === "decided" || item.state === "ignored") {
      el(box, "div", "vault-companion-outcome", item.outcome ?? "");
    }
    if (item.state === "ticked") {
      el(box, "div", "vault-companion-outcome", `Ticked${item.decided_by ? ` on ${item.decided_by}` : ""}: carried out at the next sync.`);
    }
    if (item.state === "decided" || item.state === "ticked") continue;
    const row = el(box, "div", "vault-companion-buttons");
    for (const decision of item.decisions) {
      const b = el(row, "button", decision === "revert" || decision === "drop" ? "vault-companion-tap mod-warning" : "vault-companion-tap mod-cta", buttonLabel(lang, item, decision));
      b.dataset.decision = decision;
      b.addEventListener("click", () => {
        for (const x of row.querySelectorAll("button")) (x as HTMLButtonElement).disabled = true;
        onTick(item.id, decision);
      });
    }
  }
}

/** Tick `decision` of `id` in the note `file` through the vault API; false: nothing open. */
export async function tickInVault(app: App, file: TFile, id: string, decision: string): Promise<boolean> {
  let ticked = false;
  await app.vault.process(file, (text) => {
    const r = tickIn(text, id, CODES[decision]);
    ticked = r.text !== null;
    return r.text ?? text;
  });
  return ticked;
}

export class ReviewView extends ItemView {
  private drawing = 0;

  constructor(
    leaf: WorkspaceLeaf,
    private readonly engine: () => SyncEngine | null,
  ) {
    super(leaf);
  }

  getViewType(): string {
    return REVIEW_VIEW;
  }

  getDisplayText(): string {
    return REVIEW_TITLE;
  }

  getIcon(): string {
    return "list-checks";
  }

  async onOpen(): Promise<void> {
    // the note changes (a tick synced from another device, an outcome written): draw again
    this.registerEvent(this.app.vault.on("modify", (f) => void (isReviewPath(f.path) && this.refresh())));
    this.registerEvent(this.app.vault.on("create", (f) => void (isReviewPath(f.path) && this.refresh())));
    await this.refresh();
  }

  async onClose(): Promise<void> {
    this.contentEl.replaceChildren();
  }

  /** Draw from the note at once, then again with the relay's account when it answers. */
  async refresh(): Promise<void> {
    const n = ++this.drawing;
    const file = newestReviewFile(this.app);
    if (!file) {
      renderReview(this.contentEl, null, [], () => {});
      return;
    }
    const text = await this.app.vault.read(file);
    const note = { rel: file.path, text };
    const onTick = (id: string, decision: string) => void tickInVault(this.app, file, id, decision).then(() => this.refresh());
    const engine = this.engine();
    const quick = await reviewItems(text, file.path, null);
    if (n !== this.drawing) return;
    renderReview(this.contentEl, note, quick.items, onTick, { attested: !!engine });
    if (!engine) return;
    const full = await reviewItems(text, file.path, engine);
    if (n !== this.drawing) return;
    renderReview(this.contentEl, note, full.items, onTick, { attested: full.attested });
  }
}

/** What waits in the newest review note (for the notice when Obsidian opens), or null. */
export async function waitingSummary(app: App): Promise<string | null> {
  const file = newestReviewFile(app);
  if (!file) return null;
  const text = await app.vault.read(file);
  const c = counts(await itemsOf(text, file.path));
  const lang = notes.frontMatter(text).lang || "en";
  const keys: [string, string][] = [
    ["change", "n_changes"],
    ["disagreement", "n_disagreements"],
    ["proposal", "n_proposals"],
  ];
  const parts = keys.filter(([k]) => c[k]).map(([k, key]) => labels.count(lang, key, c[k]));
  return parts.length ? labels.join(lang, parts) : null;
}
