/**
 * Which paths are not synced (companion/sync/local/ignore.py): gitignore syntax, the same built-in
 * defaults, the vault's own `.companionignore` (synced) and the device's extra patterns.
 * Matching uses the `ignore` package (git's rules).
 */

import ignore, { type Ignore } from "ignore";
import { FOLDER_MARKER } from "./folder";
import { TEMP_PREFIX } from "./paths";

export const IGNORE_FILE = ".companionignore";

export const DEFAULT_PATTERNS: readonly string[] = [
  ".obsidian/workspace.json",
  ".obsidian/workspace-mobile.json",
  ".obsidian/workspace",
  ".obsidian/cache",
  ".trash/",
  ".git/",
  ".DS_Store",
  "._*",
  ".Spotlight-V100/",
  ".fseventsd/",
  ".Trashes/",
  "Thumbs.db",
  "ehthumbs.db",
  "desktop.ini",
  "$RECYCLE.BIN/",
  "~$*",
  ".~lock.*#",
  "*.swp",
  "*.swx",
  "*~",
  "\\#*#",
  ".#*",
  "4913",
  "*.tmp",
  "*.crdownload",
  "*.part",
  "*.partial",
  "*.opdownload",
  "*.download/",
  TEMP_PREFIX + "*",
  FOLDER_MARKER, // this copy's folder marker (sync/folder.ts): never travels
];

function compile(lines: string[]): string[] {
  const good: string[] = [];
  for (const raw of lines) {
    const line = raw.replace(/[\r\n]+$/, "");
    if (!line.trim() || line.trimStart().startsWith("#")) continue;
    try {
      ignore().add(line);
    } catch {
      continue; // a bad line is skipped, like the Python side does
    }
    good.push(line);
  }
  return good;
}

export class IgnoreRules {
  patterns: string[] = [];
  private matcher: Ignore = ignore();
  private vaultText: string | null = null;

  /** `local`: this device's own paths that never sync (the plugin's state, its settings). */
  constructor(
    private readonly extra: string[] = [],
    private readonly local: string[] = [],
  ) {
    this.load(null);
  }

  /** (Re)load with the vault's `.companionignore` text; true when the rules changed. */
  load(vaultText: string | null): boolean {
    if (vaultText === this.vaultText && this.patterns.length) return false;
    this.vaultText = vaultText;
    this.patterns = [...DEFAULT_PATTERNS, ...compile(vaultText ? vaultText.split(/\r?\n/) : []), ...compile(this.extra)];
    this.matcher = ignore({ allowRelativePaths: true }).add(this.patterns).add(this.local);
    return true;
  }

  /** A digest of the synced rules (device-local ones excluded), to notice a change. */
  get signature(): string {
    return this.patterns.join("\n");
  }

  isIgnored(rel: string): boolean {
    return this.matcher.ignores(rel);
  }
}
