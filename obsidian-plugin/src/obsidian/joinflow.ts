/** The settings tab's Join button: the shared join rules, secrets to the secret store. */
import { toHex } from "../crypto/bytes";
import { ensureSelfTest } from "../crypto/wrap";
import { RelayClient } from "../relay/client";
import type { Transport } from "../relay/transport";
import { ensureLayoutFolders, type FolderMaker, joinVault } from "../sync/join";
import { DeviceKey } from "../crypto/signing";
import { keyId, type SecretStore, signingKeyId, tokenId } from "./secrets";
import type { JoinForm, PluginSettings } from "./settings";
import { InputError } from "../errors";
import { FOLDER_MARKER, markerText } from "../sync/folder";
import { DEFAULT_WRITE, writeDefaultScopes } from "../sync/scopes";

export async function joinFromSettings(
  form: JoinForm,
  deps: {
    transport: Transport;
    secrets: SecretStore;
    settings: PluginSettings;
    save: () => Promise<void>;
    /** The vault's files (the adapter): the layout's folders are made there once joined. */
    folders?: FolderMaker;
  },
): Promise<string> {
  if (!/^https?:\/\//.test(form.relayUrl)) throw new InputError("the relay URL must start with https:// (or http:// on your own network)");
  await ensureSelfTest();
  const client = new RelayClient(form.relayUrl, deps.transport);
  const joined = await joinVault({
    client,
    invite: form.invite,
    deviceName: form.deviceName,
    kind: "human",
    passphrase: form.recoveryKey ? undefined : form.passphrase,
    recoveryKey: form.recoveryKey || undefined,
    persist: async (j) => {
      deps.secrets.set(tokenId(j.deviceId), j.token);
      deps.secrets.set(keyId(j.vaultId), toHex(j.key.toBytes()));
      // this device's signing key, made at join beside the token (docs/trust.md §1)
      deps.secrets.set(signingKeyId(j.vaultId), DeviceKey.generate().stored());
      Object.assign(deps.settings, {
        relayUrl: client.baseUrl,
        deviceName: form.deviceName,
        deviceId: j.deviceId,
        vaultId: j.vaultId,
        fingerprint: j.key.fingerprint,
      });
      await deps.save();
    },
  });
  // this copy's folder marker (sync/folder.ts): a folder swapped under it is never taken for it
  if (deps.folders?.write) await deps.folders.write(FOLDER_MARKER, markerText(joined.vaultId, joined.deviceId, Date.now() / 1000));
  if (deps.folders) await ensureLayoutFolders(deps.folders);
  // the person's device that creates a vault grants agents the default scopes (sync/scopes.ts)
  const scoped = joined.createdVault && deps.folders ? await writeDefaultScopes(deps.folders).catch(() => false) : false;
  return `${joined.createdVault ? "Created" : "Joined"} vault ${joined.vaultId}. Key fingerprint ${joined.key.fingerprint} (compare it with your other devices). The token and key are in ${deps.secrets.description}.${scoped ? ` Agents write ${DEFAULT_WRITE.join(", ")}; their changes elsewhere wait for you (.companion/scopes.json).` : ""}`;
}
