/**
 * Joining a vault (companion/sync/commands/join.py, with the rules of security issue #12):
 *
 * 1. redeem the invite as a human device (`kind` sent; a relay that fixed another kind at
 *    invite time answers 409 kind_mismatch);
 * 2. unlock the vault key with the passphrase (or take it from the recovery key); only a first
 *    device creates a key, and only when the relay lists no other device in the vault
 *    (`refuseNewKeyWithOthers`);
 * 3. only then is the token kept (`persist`); on a wrong passphrase the device leaves (its own
 *    token revoked; a 404 from an older relay is ignored) and nothing is stored.
 */

import type { VaultKey } from "../crypto/keys";
import { VaultKey as VK } from "../crypto/keys";
import { openRecord } from "../crypto/records";
import { importRecoveryKey } from "../crypto/recovery";
import { DEFAULT_KDF_PARAMS, type KdfParams, unwrapVaultKey, wrapVaultKey } from "../crypto/wrap";
import { CompanionError, ConflictError, CryptoError, InputError, WrongPassphrase } from "../errors";
import type { Kind, RelayClient } from "../relay/client";

export interface JoinInput {
  client: RelayClient;
  invite: string;
  deviceName: string;
  kind?: Kind;
  passphrase?: string;
  recoveryKey?: string;
  kdf?: KdfParams;
  /** Store the token and the key (secret store); called only once the key is unlocked. */
  persist: (joined: Joined) => Promise<void>;
}

export interface Joined {
  vaultId: string;
  deviceId: string;
  token: string;
  key: VaultKey;
  kind: Kind;
  createdVault: boolean;
}

/** A first device may create the vault key only if it is alone in the vault. */
export async function refuseNewKeyWithOthers(client: RelayClient, deviceId: string): Promise<void> {
  const others = (await client.devices()).filter((d) => d.deviceId !== deviceId && d.revoked === null);
  if (others.length) {
    throw new CompanionError(
      `the relay lists ${others.length} other device(s) in this vault but no vault key: refusing to create a new ` +
        "key (it would split the vault); ask the relay's admin, or join with the recovery key",
    );
  }
}

/** Give the token back when the join cannot finish (wrong passphrase, bad recovery key). */
export async function leaveQuietly(client: RelayClient): Promise<void> {
  try {
    await client.leave();
  } catch {
    /* best effort: the token was never stored, so it is useless to anyone anyway */
  }
}

async function checkRecoveryKey(client: RelayClient, vaultId: string, key: VaultKey): Promise<void> {
  // the recovery key cannot be checked against the wrapped key without the passphrase: open
  // the first record of the vault with it instead (a vault without records accepts any key)
  const page = await client.changesPage(0, 0, 1);
  const rec = page.records[0];
  if (!rec) return;
  try {
    await openRecord(key, vaultId, rec.fileId, rec.rev, rec.sealed);
  } catch {
    throw new WrongPassphrase("this recovery key does not open this vault's records: it belongs to another vault");
  }
}

/**
 * The vault layout's folders (companion/vault/layout.py `AREAS`). Sync carries files, not
 * folders, so an area still empty where `companion vault init` made it would never arrive:
 * every joined copy creates them itself (docs/sync.md, "Folders").
 */
export const LAYOUT_FOLDERS: readonly string[] = ["knowledge", "projects", "journal"];

export interface FolderMaker {
  exists(path: string): Promise<boolean>;
  mkdir(path: string): Promise<void>;
  /** Write a small text file at the vault root (the folder marker); Obsidian's adapter has it. */
  write?(path: string, data: string): Promise<void>;
}

/** Create the missing layout folders; anything already named so (a file too) is left alone,
 * and a folder that cannot be made is skipped (the vault works without it). The ones made. */
export async function ensureLayoutFolders(fs: FolderMaker): Promise<string[]> {
  const made: string[] = [];
  for (const name of LAYOUT_FOLDERS) {
    try {
      if (await fs.exists(name)) continue;
      await fs.mkdir(name);
      made.push(name);
    } catch {
      /* a race or a read-only folder: skip it */
    }
  }
  return made;
}

export async function joinVault(input: JoinInput): Promise<Joined> {
  const { client } = input;
  const kind: Kind = input.kind ?? "human";
  if (!input.invite.trim()) throw new InputError("an invite code is needed: ask the relay's admin");
  if (!input.deviceName.trim()) throw new InputError("a device name is needed");
  if (!input.passphrase && !input.recoveryKey) throw new InputError("the vault passphrase (or the recovery key) is needed");
  const recovered = input.recoveryKey ? await importRecoveryKey(input.recoveryKey) : null;
  let joined;
  try {
    joined = await client.join(input.invite.trim(), input.deviceName.trim(), kind);
  } catch (e) {
    if (e instanceof ConflictError && e.code === "kind_mismatch") {
      throw new InputError(
        `this invite is for another kind of device, not a person's (${kind}); ask the relay's admin for ` +
          `an invite made with \`companion relay invite --kind ${kind}\``,
      );
    }
    throw e;
  }
  if (joined.kind && joined.kind !== kind) {
    await leaveQuietly(client);
    throw new InputError(`the relay admits this invite for a device of kind '${joined.kind}', not '${kind}'`);
  }
  let key: VaultKey;
  let created = false;
  try {
    let blob = await client.getKeyBlob();
    if (recovered) {
      if (!blob) throw new InputError("this vault has no key on the relay yet: join with the passphrase to create it");
      await checkRecoveryKey(client, joined.vaultId, recovered);
      key = recovered;
    } else if (!blob) {
      await refuseNewKeyWithOthers(client, joined.deviceId);
      const fresh = await VK.generate();
      const wrapped = await wrapVaultKey(fresh, input.passphrase!, joined.vaultId, input.kdf ?? DEFAULT_KDF_PARAMS);
      try {
        await client.putKeyBlob(wrapped);
        key = fresh;
        created = true;
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
        blob = await client.getKeyBlob(); // another device created the key first: use theirs
        if (!blob) throw new CompanionError("the relay lost the vault key it just refused");
        key = await unwrapVaultKey(blob, input.passphrase!, joined.vaultId);
      }
    } else {
      key = await unwrapVaultKey(blob, input.passphrase!, joined.vaultId);
    }
  } catch (e) {
    if (e instanceof CryptoError || e instanceof InputError || e instanceof CompanionError) await leaveQuietly(client);
    if (e instanceof WrongPassphrase) {
      throw new WrongPassphrase(`${e.message}. This device left the vault again; join with a new invite and the right passphrase`);
    }
    throw e;
  }
  const result: Joined = { vaultId: joined.vaultId, deviceId: joined.deviceId, token: joined.token, key, kind, createdVault: created };
  await input.persist(result);
  return result;
}
