/**
 * The vault folder's identity (issue #42; the same rule as the Python engine). A folder that
 * disappears and comes back (a drive unmounted, a folder moved away and an empty one created
 * at its path) must never be taken for a vault copy whose notes were all deleted: the engine
 * would send those deletions to every device, and write new notes into the wrong folder.
 *
 * A marker file `.companion-folder.json` at the vault root, never synced (a built-in ignore
 * pattern), says whose copy the folder is: {"vault_id", "device_id", "created"}. It is written
 * at join, and checked at the start of every round and before every write, delete or rename.
 * The folder is this copy's when the root exists and the marker parses with this device's
 * vault and device ids. A copy joined before markers existed (no marker) gets one when the
 * folder holds at least one file the state knows as live, or when the state knows no live file
 * at all (a fresh copy); otherwise the folder is missing.
 */

export const FOLDER_MARKER = ".companion-folder.json";

export interface FolderMarker {
  vault_id: string;
  device_id: string;
  created: number;
}

export function markerText(vaultId: string, deviceId: string, created: number): string {
  return JSON.stringify({ vault_id: vaultId, device_id: deviceId, created: Math.floor(created) }) + "\n";
}

/** The marker's fields, or null when it does not parse as one. */
export function parseMarker(data: Uint8Array): FolderMarker | null {
  try {
    const v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(data));
    if (v && typeof v === "object" && typeof v.vault_id === "string" && typeof v.device_id === "string") return v as FolderMarker;
  } catch {
    /* not a marker */
  }
  return null;
}

export function folderMissingMessage(where: string): string {
  return (
    `vault folder missing: ${where} is missing or is not this copy's vault folder (no ${FOLDER_MARKER} ` +
    "of this device in it); nothing was written, deleted or sent. It syncs again once the folder is back"
  );
}
