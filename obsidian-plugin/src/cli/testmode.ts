/**
 * The test-only escape hatch `COMPANION_TEST_WEAK_KDF` (companion/testmode.py): a new vault key
 * wrapped with the cheapest Argon2id parameters, because a test run joins dozens of devices.
 * Leaked into a shell profile or a service unit it would silently weaken a real vault, so it is
 * honoured only inside a test suite — pytest sets `PYTEST_CURRENT_TEST` for the running test
 * (every process a test starts inherits it), vitest sets `VITEST` — with the device's state
 * redirected by `COMPANION_HOME`, as every test does. Anywhere else it is an error (exit 2).
 */
import { InputError } from "../errors";

export const WEAK_KDF_ENV = "COMPANION_TEST_WEAK_KDF";

export function testSuiteActive(env: Record<string, string | undefined>): boolean {
  return !!(env.PYTEST_CURRENT_TEST || env.VITEST) && !!env.COMPANION_HOME;
}

/** True when the weak KDF is asked for inside a test suite; throws when asked for elsewhere. */
export function weakKdfRequested(env: Record<string, string | undefined>): boolean {
  const v = env[WEAK_KDF_ENV] ?? "";
  if (v === "" || v === "0") return false;
  if (!testSuiteActive(env)) {
    throw new InputError(
      `${WEAK_KDF_ENV} is set, but it is only for the companion's own test suite: refusing to weaken ` +
        "the vault's protection; unset it (check your shell profile and service units)",
    );
  }
  return true;
}
