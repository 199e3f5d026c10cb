/**
 * Vault-relative paths: one canonical spelling (companion/sync/local/pathsafe.py). NFC, forward
 * slashes, relative, no empty/./.. segments, no control characters, never an engine temp name.
 * A ':' is an ordinary character here, as on the systems that hold it.
 */

import { isUnicode } from "../crypto/bytes";
import { CompanionError } from "../errors";

export const TEMP_PREFIX = ".companion-tmp-";

export class UnsafePath extends CompanionError {}

export function isTempName(name: string): boolean {
  return name.startsWith(TEMP_PREFIX);
}

const UNSAFE_CHAR = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Co}\p{Cn}]/gu;

/** `text` with every control, format or invisible character escaped as `\uXXXX` (`\xXX` below
 * 0x100), as Python's `textsafe.shown` does, so a name printed in a message cannot hide or
 * reorder what follows it; with `limit`, a longer text keeps its start and its end. */
export function shownText(text: string, limit?: number): string {
  if (limit !== undefined && text.length > limit) {
    const tail = Math.max(Math.floor(limit / 4), 1);
    text = text.slice(0, limit - tail - 1) + "\u2026" + text.slice(-tail);
  }
  return text.replace(UNSAFE_CHAR, (c) => {
    const code = c.codePointAt(0)!;
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** The longest name (one path segment) common file systems hold: ext4, APFS, f2fs (bytes). */
export const MAX_NAME_BYTES = 255;

// Unicode's bidirectional controls (embeddings, overrides, isolates, the invisible marks): in a
// name they make it read otherwise than it is ("Trojan Source"); refused as in pathsafe.py.
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

export function normalize(rel: string): string {
  if (typeof rel !== "string" || !rel) throw new UnsafePath("empty path");
  const p = rel.normalize("NFC").replace(/\\/g, "/");
  const shown = shownText(rel, 200);
  if (/[\x00-\x1f\x7f]/.test(p)) throw new UnsafePath(`path '${shown}' contains a control character`);
  if (!isUnicode(p)) throw new UnsafePath(`path '${shown}' is not valid UTF-8`);
  // a ':' is a name character, also after a first letter ("Q: open questions.md"): not a drive
  // on Linux, macOS or Android; where Windows's rule holds, `windowsNameProblem` makes it a
  // problem of that one file when it is written (issue 42.2)
  if (p.startsWith("/")) throw new UnsafePath(`path '${shown}' is absolute, expected a path inside the vault`);
  if (BIDI_CONTROLS.test(p)) throw new UnsafePath(`path '${shown}' contains a bidirectional text control, which shows the name other than it is`);
  for (const seg of p.split("/")) {
    if (seg === "") throw new UnsafePath(`path '${shown}' has an empty segment`);
    if (seg === "." || seg === "..") throw new UnsafePath(`path '${shown}' contains '${seg}'`);
    if (isTempName(seg)) throw new UnsafePath(`path '${shown}' is an engine temporary file`);
    const first = seg[0].normalize("NFKC");
    if ((seg[0] !== "." && first === ".") || [".", ".."].includes(seg.normalize("NFKC"))) throw new UnsafePath(`path '${shown}' starts a name with a character that looks like a dot: it would pass for a hidden folder or '..'`);
  }
  return p;
}

// What Windows refuses in a name (and Obsidian in a note's name; Android's shared storage too):
// these characters, a trailing dot or space, and the device names, with or without extension.
const WINDOWS_CHARS = /[<>:"|?*]/;
const WINDOWS_DEVICES = /^(?:CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])(?:\..*)?$/i;

/** What Windows refuses in the vault path `rel`: `[kind, name, char]` for the first refused
 * name, kind `char` (the character), `trailing` (a dot or a space ends it) or `device`
 * (`CON`, `lpt1.md`), or null. Python's `pathsafe.windows_name_verdict` decides the same
 * (tests/vectors/rules_v1.json). */
export function windowsNameVerdict(rel: string): [string, string, string] | null {
  for (const seg of rel.split("/")) {
    const m = WINDOWS_CHARS.exec(seg);
    if (m) return ["char", seg, m[0]];
    if (/[. ]$/.test(seg)) return ["trailing", seg, seg.slice(-1)];
    if (WINDOWS_DEVICES.test(seg)) return ["device", seg, ""];
  }
  return null;
}

/** Why Windows (or Android's shared storage) cannot hold the vault path `rel`, or null. A
 * person's device there cannot write such a file; an agent on Linux can make one. The
 * message names Android for the characters, where Python's names only Windows: the rule
 * holds on both here (docs/protocol.md R14, a platform difference). */
export function windowsNameProblem(rel: string): string | null {
  const v = windowsNameVerdict(rel);
  if (!v) return null;
  const [kind, seg, ch] = v;
  if (kind === "char") return `the name '${seg.slice(0, 80)}' contains '${ch}', which Windows and Android do not allow in a file name`;
  if (kind === "trailing") return `the name '${seg.slice(0, 80)}' ends with a dot or a space, which Windows does not allow`;
  return `'${seg.slice(0, 80)}' is a device name on Windows, not a file name`;
}

/** Normalised path or null (for listing input that may hold unusable names). */
export function tryNormalize(rel: string): string | null {
  try {
    return normalize(rel);
  } catch {
    return null;
  }
}

/** Why `rel` is no vault path (the message of `normalize`'s refusal), or null. */
export function pathProblem(rel: string): string | null {
  try {
    normalize(rel);
    return null;
  } catch (e) {
    if (e instanceof UnsafePath) return e.message;
    throw e;
  }
}

/** The key two names share when a case-insensitive file system opens one file: NFC, upper
 * case, then lower case, NFC (`ß` and `SS`, `ſ` and `s`, `ı` and `i` meet). The one fold of
 * both engines (Python's `pathsafe.fold`; tests/vectors/rules_v1.json), for case collisions
 * and holds. */
export function fold(rel: string): string {
  return rel.normalize("NFC").toUpperCase().toLowerCase().normalize("NFC");
}

export function parentOf(rel: string): string {
  const i = rel.lastIndexOf("/");
  return i < 0 ? "" : rel.slice(0, i);
}
