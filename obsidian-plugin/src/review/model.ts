/**
 * The items of a review and the lines that decide them (companion/review/model.py): stable
 * ids, the same on every device, and the language-neutral decision codes.
 */
import { utf8 } from "../crypto/bytes";
import { sha256Hex } from "../crypto/records";

export const FOLDER = "review";
export const FORMAT = 1;

export const REVERT = "r";
export const KEEP = "k";
export const TAKE = "t";
export const APPLY = "a";
export const DROP = "d";
export type Code = "r" | "k" | "t" | "a" | "d";
export const CODES: Record<string, Code> = { revert: REVERT, keep: KEEP, take: TAKE, apply: APPLY, drop: DROP };
export const NAMES: Record<string, string> = Object.fromEntries(Object.entries(CODES).map(([k, v]) => [v, k]));
/** Who carries a decision out: the human device that ticked it, or the dream's own device. */
export const BY_TICKER = new Set<string>([REVERT, KEEP, TAKE]);
export const BY_DREAM_DEVICE = new Set<string>([APPLY, DROP]);

async function h(...parts: (string | number)[]): Promise<string> {
  return (await sha256Hex(utf8(parts.map(String).join("\0")))).slice(0, 10);
}

export async function changeId(fileId: string, fromRev: number, toRev: number): Promise<string> {
  return `c-${await h("change", fileId, fromRev, toRev)}`;
}

export async function disagreementId(path: string, flagLine: string): Promise<string> {
  return `k-${await h("disagreement", path, flagLine.trim())}`;
}

export async function proposalItemId(proposalId: string): Promise<string> {
  return `p-${await h("proposal", proposalId)}`;
}

export function nightId(night: string): string {
  return "n-" + night.replace(/-/g, "");
}

export function notePath(night: string): string {
  return `${FOLDER}/${night}.md`;
}

export function isReviewPath(path: string): boolean {
  return path.startsWith(FOLDER + "/") && path.endsWith(".md") && path.split("/").length === 2;
}

/** What the relay's history says an agent device changed in one file. */
export interface ChangeItem {
  id: string;
  path: string;
  fileId: string;
  fromRev: number;
  toRev: number;
  before: string | null;
  after: string | null;
  device: string;
  kind: string;
  at: string;
  beforeKnown: boolean;
  notes: string[];
}

export interface Disagreement {
  id: string;
  path: string;
  flag: string;
  new: string;
  mine: string | null;
}

export interface ProposalItem {
  id: string;
  pid: string;
  file: string;
  op: string;
  old: string | null;
  new: string | null;
  reason: string;
  quote?: string | null;
}

export interface Carried {
  id: string;
  code: string;
  label: string;
  night: string;
}

export interface Review {
  night: string;
  fromSeq: number;
  toSeq: number;
  lang?: string;
  tz?: string;
  since?: number | null;
  changes?: ChangeItem[];
  disagreements?: Disagreement[];
  proposals?: ProposalItem[];
  carried?: Carried[];
  notice?: string | null;
}

/** One decision line of a review note as it stands. */
export interface Line {
  index: number;
  id: string;
  code: string;
  ticked: boolean;
  label: string;
  outcome: string | null;
  final: boolean;
}

export const keyOf = (id: string, code: string): string => `${id}/${code}`;
export const lineKey = (ln: { id: string; code: string }): string => keyOf(ln.id, ln.code);
