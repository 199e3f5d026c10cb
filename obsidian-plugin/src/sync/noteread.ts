/**
 * Reading the agents' notes the hold rules need (policy.ts `contentReason`), before they are
 * admitted: the twin of companion/sync/round/pull.py `Puller.note_contents`.
 *
 * Notes are fetched and verified NOTE_BATCH_BYTES at a time, so a first sync of a large vault
 * never holds them all: a note without code a plugin runs is kept as empty bytes (all the
 * rules need), one with code as its bytes; up to READ_NOTES_BUDGET of the real contents are
 * kept for the apply, so a note is downloaded once. A note whose content does not verify comes
 * back in `bad` (the engine quarantines it, like any file whose blob does not open); one over
 * NOTE_CHECK_BYTES is not read (held as unchecked).
 */

import { CryptoError } from "../errors";
import { type Kind, NOTE_CHECK_BYTES, needsContent, noteCode } from "./policy";
import type { PartialStore, RemoteChange, RemoteVault } from "./remote";

const NOTE_BATCH_BYTES = 8 * 1024 * 1024;
const READ_NOTES_BUDGET = 16 * 1024 * 1024;

export interface NotesRead {
  /** What the rules read, by SHA-256 (empty bytes: no code). */
  read: Map<string, Uint8Array>;
  /** Real contents kept for the apply, by SHA-256. */
  cache: Map<string, Uint8Array>;
  /** Notes whose content did not verify: path, change, why. */
  bad: [string, RemoteChange, string][];
}

export async function readAgentNotes(
  remote: RemoteVault,
  partials: PartialStore,
  localKind: Kind,
  changes: [string, RemoteChange][],
): Promise<NotesRead> {
  const out: NotesRead = { read: new Map(), cache: new Map(), bad: [] };
  const want = changes.filter(([, ch]) => needsContent(localKind, ch.kind, ch.meta.path, ch.meta.deleted) && ch.meta.size <= NOTE_CHECK_BYTES);
  let budget = READ_NOTES_BUDGET;
  const take = (sha: string, data: Uint8Array) => {
    if (data.length <= budget) {
      out.cache.set(sha, data);
      budget -= data.length;
    }
    out.read.set(sha, noteCode(new TextDecoder().decode(data)) === null ? new Uint8Array(0) : data);
  };
  const one = async (p: string, ch: RemoteChange) => {
    try {
      const got = ch.meta.chunks.length > 1 ? await remote.fetchLarge(ch.meta, partials) : (await remote.fetch([ch.meta])).get(ch.meta.sha256);
      if (got) take(ch.meta.sha256, got);
    } catch (e) {
      if (!(e instanceof CryptoError)) throw e;
      out.bad.push([p, ch, e.message]);
    }
  };
  let batch: [string, RemoteChange][] = [];
  let size = 0;
  const flush = async () => {
    if (!batch.length) return;
    try {
      const got = await remote.fetch(batch.map(([, ch]) => ch.meta));
      for (const [sha, data] of got) take(sha, data);
    } catch (e) {
      if (!(e instanceof CryptoError)) throw e;
      for (const [p, ch] of batch) await one(p, ch); // file by file: each failure costs its own
    }
    batch = [];
    size = 0;
  };
  for (const [p, ch] of want) {
    if (out.read.has(ch.meta.sha256)) continue;
    if (ch.meta.chunks.length > 1) {
      await one(p, ch);
      continue;
    }
    batch.push([p, ch]);
    size += ch.meta.size;
    if (size >= NOTE_BATCH_BYTES) await flush();
  }
  await flush();
  return out;
}
