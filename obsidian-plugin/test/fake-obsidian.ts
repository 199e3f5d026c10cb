/**
 * A stand-in for the parts of the `obsidian` module the settings tab, status bar and modals
 * use, built on the real DOM (happy-dom). Obsidian itself cannot run here; this is the named
 * boundary. Components behave as Obsidian documents them: `onChange` fires on input, buttons
 * call `onClick`, `Modal.open()` attaches `contentEl` and calls `onOpen`.
 */

export class Notice {
  static shown: string[] = [];
  constructor(message: string) {
    Notice.shown.push(message);
  }
}

export const Platform = { isMobileApp: false, isIosApp: false, isAndroidApp: false, isMacOS: false, isWin: false };

export function normalizePath(p: string): string {
  return p.replace(/\\/g, "/").replace(/\/+/g, "/").replace(/^\/|\/$/g, "");
}

export class TFile {}
export class WorkspaceLeaf {
  constructor(public app: unknown) {}
}
/** Obsidian's ItemView: a container whose second child is `contentEl`; events registered
 * while open are dropped on close (here: kept in `events`). */
export class ItemView {
  app: any;
  containerEl: HTMLElement;
  contentEl: HTMLElement;
  events: unknown[] = [];
  constructor(public leaf: WorkspaceLeaf) {
    this.app = leaf.app;
    this.containerEl = document.createElement("div");
    this.containerEl.appendChild(document.createElement("div"));
    this.contentEl = document.createElement("div");
    this.containerEl.appendChild(this.contentEl);
  }
  registerEvent(e: unknown): void {
    this.events.push(e);
  }
}
export class MarkdownView {}
export class Plugin {}
export const requestUrl = async () => {
  throw new Error("requestUrl is not available in tests");
};

class TextComponent {
  inputEl: HTMLInputElement;
  constructor(parent: HTMLElement, tag: "input" | "textarea" = "input") {
    this.inputEl = parent.ownerDocument.createElement(tag) as HTMLInputElement;
    parent.appendChild(this.inputEl);
  }
  setValue(v: string) {
    this.inputEl.value = v;
    return this;
  }
  getValue() {
    return this.inputEl.value;
  }
  setPlaceholder(v: string) {
    this.inputEl.placeholder = v;
    return this;
  }
  onChange(cb: (v: string) => unknown) {
    this.inputEl.addEventListener("input", () => void cb(this.inputEl.value));
    return this;
  }
}

class ToggleComponent {
  toggleEl: HTMLInputElement;
  constructor(parent: HTMLElement) {
    this.toggleEl = parent.ownerDocument.createElement("input");
    this.toggleEl.type = "checkbox";
    parent.appendChild(this.toggleEl);
  }
  setValue(v: boolean) {
    this.toggleEl.checked = v;
    return this;
  }
  getValue() {
    return this.toggleEl.checked;
  }
  onChange(cb: (v: boolean) => unknown) {
    this.toggleEl.addEventListener("change", () => void cb(this.toggleEl.checked));
    return this;
  }
}

class ButtonComponent {
  buttonEl: HTMLButtonElement;
  constructor(parent: HTMLElement) {
    this.buttonEl = parent.ownerDocument.createElement("button");
    parent.appendChild(this.buttonEl);
  }
  setButtonText(t: string) {
    this.buttonEl.textContent = t;
    return this;
  }
  setCta() {
    this.buttonEl.classList.add("mod-cta");
    return this;
  }
  setDisabled(d: boolean) {
    this.buttonEl.disabled = d;
    return this;
  }
  onClick(cb: () => unknown) {
    this.buttonEl.addEventListener("click", () => void cb());
    return this;
  }
}

export class Setting {
  settingEl: HTMLElement;
  nameEl: HTMLElement;
  descEl: HTMLElement;
  controlEl: HTMLElement;
  constructor(containerEl: HTMLElement) {
    const d = containerEl.ownerDocument;
    this.settingEl = d.createElement("div");
    this.settingEl.className = "setting-item";
    this.nameEl = d.createElement("div");
    this.nameEl.className = "setting-item-name";
    this.descEl = d.createElement("div");
    this.descEl.className = "setting-item-description";
    this.controlEl = d.createElement("div");
    this.controlEl.className = "setting-item-control";
    this.settingEl.append(this.nameEl, this.descEl, this.controlEl);
    containerEl.appendChild(this.settingEl);
  }
  setName(n: string) {
    this.nameEl.textContent = n;
    return this;
  }
  setDesc(n: string) {
    this.descEl.textContent = n;
    return this;
  }
  setHeading() {
    this.settingEl.classList.add("setting-item-heading");
    return this;
  }
  addText(cb: (c: TextComponent) => unknown) {
    cb(new TextComponent(this.controlEl));
    return this;
  }
  addTextArea(cb: (c: TextComponent) => unknown) {
    cb(new TextComponent(this.controlEl, "textarea"));
    return this;
  }
  addToggle(cb: (c: ToggleComponent) => unknown) {
    cb(new ToggleComponent(this.controlEl));
    return this;
  }
  addButton(cb: (c: ButtonComponent) => unknown) {
    cb(new ButtonComponent(this.controlEl));
    return this;
  }
}

export class PluginSettingTab {
  containerEl: HTMLElement;
  constructor(
    public app: unknown,
    public plugin: unknown,
  ) {
    this.containerEl = document.createElement("div");
  }
  display(): void {}
  hide(): void {}
}

export class Modal {
  contentEl: HTMLElement;
  modalEl: HTMLElement;
  constructor(public app: unknown) {
    this.modalEl = document.createElement("div");
    this.contentEl = document.createElement("div");
    this.modalEl.appendChild(this.contentEl);
  }
  open(): void {
    document.body.appendChild(this.modalEl);
    void (this as unknown as { onOpen?: () => unknown }).onOpen?.();
  }
  close(): void {
    this.modalEl.remove();
  }
}
