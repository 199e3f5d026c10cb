/**
 * The trust rules of security issue #12, each in one small function so the Python side can be
 * aligned with them one for one:
 *
 * - `effectiveKind`: precedence and history use the relay's record of the committing device
 *   (`device_kind` on RecordOut) when the relay sends it, else the kind sealed in the record.
 * - `kindMismatch`: a sealed kind that disagrees with the relay's is refused as tampering.
 * - `holdReason`: on a human device, an agent's change to the sync rules, the companion's
 *   settings, an Obsidian config folder (any with its shape), a script, an executable file or
 *   a note holding code a plugin runs waits for the person's approval (companion/sync/round/holds.py,
 *   the same rules, pinned by tests/vectors/holds_v1.json), and so does one outside the agent's
 *   scope when the vault has a `.companion/scopes.json` (scopes.ts, tests/vectors/scopes_v1.json).
 * - `isMassDelete`: the mass-deletion guard (companion/sync/round/guard.py).
 * - `Backoff` / `retryDelay`: back off on 429/503 (honouring Retry-After) and keep running.
 */

import { AGENT, deviceKind, HUMAN } from "./conflicts";
import ignore from "ignore";
import { fold } from "./paths";
import { type Scopes, scopeReason } from "./scopes";

export type Kind = "human" | "agent";

export function effectiveKind(relayKind: string | null | undefined, sealedKind: string): Kind {
  if (relayKind === HUMAN || relayKind === AGENT) return relayKind;
  return deviceKind(sealedKind);
}

/** True when the relay names a kind and the sealed record claims another. */
export function kindMismatch(relayKind: string | null | undefined, sealedKind: string): boolean {
  if (relayKind !== HUMAN && relayKind !== AGENT) return false;
  return deviceKind(sealedKind) !== relayKind;
}

// ------------------------------------------------------------------ holds (companion/sync/round/holds.py)
// One list and one matching rule with the Python laptop, pinned by tests/vectors/holds_v1.json.

export const SYNC_RULES = "changes what sync leaves out (.companionignore)";
export const SETTINGS = "changes the companion's settings in the vault";
export const CONFIG = "changes Obsidian's plugins, themes or settings";
export const SCRIPT = "is a script that Obsidian plugins run";
export const EXECUTABLE = "sets the executable bit";
/** Python's `holds.LISTED`: the person's extra held paths (the setting `sync.hold_patterns`). */
export const LISTED = "is on this device's list of held paths (sync.hold_patterns)";
export const NOTE_CODE = "holds code a plugin runs";
export const UNCHECKED = "is a note whose content could not be checked for code";

const IGNORE_FILE = ".companionignore";
const COMPANION_DIR = ".companion";
/** What agents write there, never held: the dream's files, the agent's write log, and device
 * keys' announcements (claims anyone may write; trust comes from the roster, docs/trust.md §1). */
const AGENT_FOLDERS = [".companion/dreams/", ".companion/agent/", ".companion/keys/"];
export const OBSIDIAN_DIR = ".obsidian";
const SHAPE_FILES = new Set([
  "app.json",
  "appearance.json",
  "community-plugins.json",
  "core-plugins.json",
  "core-plugins-migration.json",
  "daily-notes.json",
  "hotkeys.json",
  "templates.json",
]);
const SHAPE_MANIFEST_IN = new Set(["plugins", "themes"]);
const SCRIPT_EXTENSIONS = [".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx"];
const NOTE_EXTENSIONS = [".md", ".canvas"];
/** A larger agent-written note is held unread. */
export const NOTE_CHECK_BYTES = 32 * 1024 * 1024;

/** The key two spellings share when a case-insensitive file system opens one file. */
export function holdFold(s: string): string {
  return fold(s);
}

function top(folded: string): [string, string] | null {
  const i = folded.indexOf("/");
  return i <= 0 ? null : [folded.slice(0, i), folded.slice(i + 1)];
}

function isShape(rest: string): boolean {
  if (SHAPE_FILES.has(rest)) return true;
  const parts = rest.split("/");
  return parts.length === 3 && SHAPE_MANIFEST_IN.has(parts[0]) && parts[1] !== "" && parts[2] === "manifest.json";
}

/** The (folded) top-level folders that are, or look like, an Obsidian config folder: `.obsidian`
 * and every other top-level dot-folder (Obsidian takes only such a folder as its config folder)
 * holding, among `known` (the vault's files and the incoming changes), an Obsidian settings file
 * or a `plugins/<id>/manifest.json` / `themes/<id>/manifest.json`. Never `.companion`. */
export function configFolders(known: Iterable<string>): Set<string> {
  const out = new Set([OBSIDIAN_DIR]);
  for (const path of known) {
    const split = top(holdFold(path));
    if (!split) continue;
    const [t, rest] = split;
    if (t.startsWith(".") && t !== COMPANION_DIR && isShape(rest)) out.add(t);
  }
  return out;
}

/** Why an agent's change at `path` waits for the person by its path alone (null: it does not). */
export function pathReason(path: string, configDirs: ReadonlySet<string> = new Set([OBSIDIAN_DIR])): string | null {
  const f = holdFold(path);
  if (f === IGNORE_FILE) return SYNC_RULES;
  const split = top(f);
  if (split) {
    const t = split[0];
    if (t === COMPANION_DIR) return AGENT_FOLDERS.some((a) => f.startsWith(a)) ? null : SETTINGS;
    if (configDirs.has(t) || t === OBSIDIAN_DIR) return CONFIG;
  }
  if (SCRIPT_EXTENSIONS.some((x) => f.endsWith(x))) return SCRIPT;
  return null;
}

/** Notes Obsidian renders (and plugins read as code): their content is checked. */
export function isNote(path: string): boolean {
  const f = holdFold(path);
  return NOTE_EXTENSIONS.some((x) => f.endsWith(x));
}

// no u flag: ASCII-only case-insensitivity, as Python's re.I | re.A
const FENCE =
  /(?:`{3,}|~{3,})[ \t]*(dataviewjs|datacore(?:jsx?|tsx?)|js-engine|meta-bind-js-view|meta-bind-button|button|(?:run|pre|post)-[a-z0-9+#_-]+)(?![a-z0-9_-])/i;
const RUNJS = /(?:`{3,}|~{3,})[^\r\n`~]*RunJS/i;
const INLINE_JS = /`+[ \t]*\$=/;
const URI = /obsidian:(?:\/\/)?(advanced-uri|actions-uri|shell-commands|quickadd)(?![a-z0-9_-])/i;
const PERCENT = /%([0-9a-fA-F]{2})/g;
const ENTITY = /&#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}));?/g;

function shownAscii(n: number, orig: string): string {
  return n >= 0x20 && n < 0x7f ? String.fromCharCode(n) : orig;
}

/** Percent escapes and numeric character references of printable ASCII, decoded. */
function decodeAscii(text: string): string {
  return text
    .replace(PERCENT, (m, h: string) => shownAscii(parseInt(h, 16), m))
    .replace(ENTITY, (m, h: string | undefined, d: string | undefined) => shownAscii(h ? parseInt(h, 16) : parseInt(d!, 10), m));
}

/** What code a plugin would run in this note's text, or null (whole-text checks). */
export function noteCode(text: string): string | null {
  const i = text.indexOf("<%");
  if (i >= 0 && text.indexOf("%>", i + 2) >= 0) return "a Templater command (<% ... %>)";
  let m = FENCE.exec(text);
  if (m) return `a ${m[1].toLowerCase()} code block`;
  if (RUNJS.test(text)) return "a RunJS code block";
  if (INLINE_JS.test(text)) return "an inline DataviewJS query (`$= ...`)";
  m = URI.exec(decodeAscii(text));
  if (m) return `an obsidian://${m[1].toLowerCase()} link`;
  return null;
}

/** Why an agent's version of note `path` waits, by its content (null content: unread). */
export function contentReason(path: string, content: Uint8Array | null): string | null {
  if (!isNote(path)) return null;
  if (content === null) return UNCHECKED;
  const what = noteCode(new TextDecoder().decode(content));
  return what === null ? null : `${NOTE_CODE}: ${what}`;
}

export interface HoldInput {
  localKind: Kind;
  remoteKind: Kind;
  path: string;
  /** Old path of a rename (its tombstone is classified too). */
  renameFrom?: string | null;
  deleted: boolean;
  executable: boolean;
  /** `configFolders` of the known paths (plus this device's own config folder). */
  configDirs?: ReadonlySet<string>;
  /** The content, for an agent's note (`needsContent`); null: unread. */
  content?: Uint8Array | null;
  /** This device already has these exact bytes (a rename, a re-commit). */
  unchanged?: boolean;
  /** The person's extra held paths on this device (gitignore syntax, case-insensitive). */
  patterns?: readonly string[];
  /** The vault's `.companion/scopes.json` as this device has it (null/absent: no scope rule). */
  scopes?: Scopes | null;
  /** The author device's id and name (the scope's key, and its name when the file has none). */
  deviceId?: string | null;
  authorName?: string;
}

/** Whether deciding about this change needs its content (an agent's version of a note). */
export function needsContent(localKind: Kind, remoteKind: Kind, path: string, deleted: boolean): boolean {
  return localKind === HUMAN && remoteKind !== HUMAN && !deleted && isNote(path);
}

/** Why a remote change must wait for the person, or null when it may be applied. */
const patternCache = new Map<string, ReturnType<typeof ignore>>();

/** Whether one of `paths` matches the person's extra held paths: gitignore syntax over folded
 * names, as Python's `GitIgnoreSpec` of `hold_fold`ed patterns (holds_v1.json cases). */
export function heldByPatterns(patterns: readonly string[], paths: readonly string[]): boolean {
  const key = patterns.join("\n");
  let spec = patternCache.get(key);
  if (!spec) {
    spec = ignore({ allowRelativePaths: true }).add(patterns.map((p) => holdFold(p)));
    patternCache.set(key, spec);
  }
  return paths.some((p) => spec!.ignores(holdFold(p)));
}

export function holdReason(h: HoldInput): string | null {
  if (h.localKind !== HUMAN || h.remoteKind === HUMAN) return null;
  for (const p of h.renameFrom ? [h.path, h.renameFrom] : [h.path]) {
    const why = pathReason(p, h.configDirs);
    if (why) return why;
  }
  if (h.patterns?.length && heldByPatterns(h.patterns, h.renameFrom ? [h.path, h.renameFrom] : [h.path])) return LISTED;
  if (h.scopes) {
    const why = scopeReason(h.scopes, h.deviceId ?? null, h.authorName ?? "another device", h.renameFrom ? [h.path, h.renameFrom] : [h.path]);
    if (why) return why;
  }
  if (h.executable && !h.deleted) return EXECUTABLE;
  if (h.deleted || h.unchanged) return null;
  return contentReason(h.path, h.content ?? null);
}

export const MASS_DELETE_MIN_FILES = 10;

/** True when deleting `nDeletes` of `nTotal` synced files needs confirmation (the rule of
 * companion/sync/round/guard.py): more than `ratio` of them, never fewer than `minFiles` unless they
 * are every synced file (an emptied or unmounted folder, whatever the vault's size). */
export function isMassDelete(nDeletes: number, nTotal: number, ratio: number, minFiles = MASS_DELETE_MIN_FILES): boolean {
  const everyFile = nDeletes >= Math.max(nTotal, 1);
  if (nDeletes < Math.max(minFiles, 1) && !everyFile) return false;
  return nDeletes > ratio * Math.max(nTotal, nDeletes);
}

/** Exponential backoff with jitter (0.5 s doubling to `max`), reset on success. */
export class Backoff {
  failures = 0;
  constructor(
    readonly first = 0.5,
    readonly max = 60,
    private readonly random: () => number = Math.random,
  ) {}

  next(): number {
    this.failures++;
    const cap = Math.min(this.max, this.first * 2 ** (this.failures - 1));
    return cap / 2 + this.random() * (cap / 2);
  }

  reset(): void {
    this.failures = 0;
  }
}

/** Seconds to wait before the next attempt after `err`: Retry-After wins when it is longer. */
export function retryDelay(backoff: Backoff, retryAfterS: number | null): number {
  const d = backoff.next();
  return retryAfterS !== null && retryAfterS > d ? Math.min(retryAfterS, 3600) : d;
}
