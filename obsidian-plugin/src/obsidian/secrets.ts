/**
 * Where the device token and the vault key live in Obsidian: the app's `SecretStorage` (since
 * 1.11.4; per device, backed by the OS keychain where the platform has one), else this
 * device's local storage. Never `data.json` (it sits inside the vault's config folder) and
 * never a note. The device's signing key and its trust anchor live here too (docs/trust.md).
 */
export interface SecretStore {
  get(id: string): string | null;
  set(id: string, value: string): void;
  readonly description: string;
}

interface SecretStorageLike {
  getSecret(id: string): string | null;
  setSecret(id: string, value: string): void;
}

export function secretStore(app: { secretStorage?: SecretStorageLike }, local: Storage | null): SecretStore {
  const ss = app.secretStorage;
  if (ss && typeof ss.getSecret === "function") {
    return { get: (id) => ss.getSecret(id), set: (id, v) => ss.setSecret(id, v), description: "Obsidian's secret storage" };
  }
  if (!local) throw new Error("this Obsidian offers neither secret storage nor local storage: update Obsidian");
  return {
    get: (id) => local.getItem(`vault-companion:${id}`),
    set: (id, v) => local.setItem(`vault-companion:${id}`, v),
    description: "this device's local storage (update Obsidian to 1.11.4 or later for its secret storage)",
  };
}

/** Secret ids: lowercase letters, digits and dashes (SecretStorage's rule). */
export const tokenId = (deviceId: string) => `vault-companion-token-${deviceId.toLowerCase()}`;
export const keyId = (vaultId: string) => `vault-companion-key-${vaultId.toLowerCase()}`;
export const signingKeyId = (vaultId: string) => `vault-companion-signing-key-${vaultId.toLowerCase()}`;
export const anchorId = (vaultId: string) => `vault-companion-trust-anchor-${vaultId.toLowerCase()}`;
