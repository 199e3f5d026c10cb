/**
 * Who ticked a decision line (companion/review/blame.py): read from the review note's
 * verified revisions, not from the note. A line's tick belongs to the revision since which it
 * has been ticked without a break. Pure.
 */
import { lineKey } from "./model";
import { parseLines } from "./note";

export interface Revision {
  rev: number;
  deviceId: string;
  device: string;
  kind: string;
  /** null: the note was deleted in this revision. */
  text: string | null;
}

export interface Tick {
  rev: number;
  deviceId: string;
  device: string;
  kind: string;
}

/** For each decision line (`ID/CODE`) ticked in the newest revision: the revision that ticked
 * it. `revisions` oldest first. */
export function ticks(revisions: Revision[]): Map<string, Tick> {
  let since = new Map<string, Tick>();
  for (const r of revisions) {
    const now = new Map<string, Tick>();
    if (r.text !== null) {
      for (const ln of parseLines(r.text)) {
        if (ln.ticked) now.set(lineKey(ln), since.get(lineKey(ln)) ?? { rev: r.rev, deviceId: r.deviceId, device: r.device, kind: r.kind });
      }
    }
    since = now;
  }
  return since;
}
