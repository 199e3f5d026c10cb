/**
 * Agents with scopes (companion/sync/round/scopes.py, the same rules, pinned by
 * tests/vectors/scopes_v1.json): the person's `.companion/scopes.json` grants each agent device
 * the folders it may write; an agent's change anywhere else is held on this (human) device with
 * reason "is outside NAME's scope" until the person accepts or refuses it. No file: no scope
 * rule. A file that does not parse: every agent's change outside the always-writable areas is
 * held. The file read is this device's own copy (an agent's version of it is held as a setting,
 * never written here).
 */

import type { FolderMaker } from "./join";
import { holdFold } from "./policy";

export const SCOPES_FILE = ".companion/scopes.json";
export const DEFAULT_WRITE = ["knowledge/", "projects/", "journal/", "Home.md"];
const ALWAYS_WRITABLE = [".companion/agent/", ".companion/dreams/", ".companion/keys/", "review/"];
export const MAX_SCOPES_BYTES = 1 << 20;

export interface Scope {
  write: string[];
  noRead: string[];
  name: string;
}

export interface Scopes {
  default: Scope;
  agents: Map<string, Scope>;
  invalid: string | null;
}

function entryKey(e: string): string {
  return holdFold(e.replace(/^\/+|\/+$/g, ""));
}

/** Whether `path` is one of `entries` or inside one (folded, whole segments). */
export function prefixMatch(path: string, entries: readonly string[]): boolean {
  const f = holdFold(path);
  return entries.some((e) => {
    const k = entryKey(e);
    return k === "" || f === k || f.startsWith(k + "/");
  });
}

export function mayWrite(scope: Scope, path: string): boolean {
  const f = holdFold(path);
  return ALWAYS_WRITABLE.some((a) => f.startsWith(a)) || prefixMatch(path, scope.write);
}

class Invalid extends Error {}

function strings(obj: Record<string, unknown>, key: string, where: string): string[] | null {
  if (!(key in obj)) return null;
  const v = obj[key];
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) throw new Invalid(`${where}.${key} is not a list of folders`);
  return v as string[];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function scopeOf(obj: unknown, where: string, base: Scope): Scope {
  if (!isObject(obj)) throw new Invalid(`${where} is not an object`);
  const name = "name" in obj ? obj.name : "";
  if (typeof name !== "string") throw new Invalid(`${where}.name is not a string`);
  return { write: strings(obj, "write", where) ?? base.write, noRead: strings(obj, "no_read", where) ?? base.noRead, name };
}

const BUILT_IN: Scope = { write: DEFAULT_WRITE, noRead: [], name: "" };

/** The scopes file's text, read; one that does not parse is an `invalid` Scopes. */
export function readScopes(text: string): Scopes {
  try {
    let obj: unknown;
    try {
      obj = JSON.parse(text);
    } catch {
      throw new Invalid("not JSON");
    }
    if (!isObject(obj)) throw new Invalid("not a JSON object");
    if (obj.v !== 1) throw new Invalid("its version is not 1");
    const def = "default" in obj ? scopeOf(obj.default, "default", BUILT_IN) : BUILT_IN;
    const agents = "agents" in obj ? obj.agents : {};
    if (!isObject(agents)) throw new Invalid("agents is not an object");
    const out = new Map<string, Scope>();
    for (const [k, v] of Object.entries(agents)) out.set(k, scopeOf(v, `agents.${k}`, def));
    return { default: def, agents: out, invalid: null };
  } catch (e) {
    if (e instanceof Invalid) return invalidScopes(e.message);
    throw e;
  }
}

/** A scopes file that is there but cannot be used: every agent's scope is empty. */
export function invalidScopes(why: string): Scopes {
  return { default: BUILT_IN, agents: new Map(), invalid: why };
}

/** Why an agent's change touching `paths` waits for the person (null: inside its scope). */
export function scopeReason(scopes: Scopes, deviceId: string | null, authorName: string, paths: string[]): string | null {
  const scope = scopes.invalid !== null ? { write: [], noRead: [], name: "" } : (scopes.agents.get(deviceId ?? "") ?? scopes.default);
  if (paths.every((p) => mayWrite(scope, p))) return null;
  const why = `is outside ${scope.name || authorName}'s scope`;
  return scopes.invalid !== null ? `${why} (.companion/scopes.json is not valid: ${scopes.invalid})` : why;
}

/** The default scopes file, byte for byte what `companion scopes init` writes (Python's
 * `render(default_document())`, pinned by tests/vectors/scopes_v1.json#files[0]). */
export function defaultScopesText(): string {
  return JSON.stringify({ v: 1, default: { write: DEFAULT_WRITE, no_read: [] }, agents: {} }, null, 2) + "\n";
}

/** A new vault's first person's device (this plugin is one) writes the default scopes: agents
 * write knowledge/, projects/, journal/ and Home.md, and their changes elsewhere wait for the
 * person. True when written; a file already there is kept. */
export async function writeDefaultScopes(fs: FolderMaker): Promise<boolean> {
  if (!fs.write || (await fs.exists(SCOPES_FILE))) return false;
  if (!(await fs.exists(".companion"))) await fs.mkdir(".companion");
  await fs.write(SCOPES_FILE, defaultScopesText());
  return true;
}

export const WROTE_DEFAULT = `wrote ${SCOPES_FILE}: agents write ${DEFAULT_WRITE.join(", ")}; their changes elsewhere wait for you (\`companion scopes\`)`;
