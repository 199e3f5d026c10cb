"""Is this process part of the project's own test suite?

Two test-only escape hatches exist (`COMPANION_TEST_WEAK_KDF`, `COMPANION_TEST_WEAK_PASSPHRASE`):
dozens of devices per test run cannot each spend 64 MiB and a third of a second on Argon2id, and
test passphrases are short. Either variable leaking into a shell profile or a systemd unit would
silently weaken a real vault, so they are honoured only while pytest runs a test (pytest sets
``PYTEST_CURRENT_TEST`` for the running test, and every process a test starts inherits it) and
the device's state is redirected with ``COMPANION_HOME``, as every test here does. Outside that,
asking for them is an error, never a silent downgrade.
"""

from __future__ import annotations

import os

from companion.errors import ConfigError

WEAK_KDF_ENV = "COMPANION_TEST_WEAK_KDF"
WEAK_PASSPHRASE_ENV = "COMPANION_TEST_WEAK_PASSPHRASE"


def test_suite_active() -> bool:
    return bool(os.environ.get("PYTEST_CURRENT_TEST")) and bool(os.environ.get("COMPANION_HOME"))


def escape_hatch(name: str) -> bool:
    """True when the test-only variable `name` is set and this is the test suite.

    Raises `ConfigError` when it is set anywhere else, naming the variable to unset.
    """
    if os.environ.get(name, "") in ("", "0"):
        return False
    if not test_suite_active():
        raise ConfigError(
            f"{name} is set, but it is only for the companion's own test suite: refusing to "
            f"weaken the vault's protection; unset it (check your shell profile and service units)"
        )
    return True
