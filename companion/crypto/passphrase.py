"""The one rule for a new passphrase, and a strong suggestion when one is refused.

The passphrase protects the wrapped vault key, which the relay stores: whoever runs the relay can
try passphrases offline, as fast as Argon2id lets them. So a new passphrase must be long and hard
to guess: at least `MIN_LENGTH` characters and at least 10^`MIN_GUESSES_LOG10` guesses by the
zxcvbn estimator (dictionary words, names, keyboard patterns, dates and common substitutions are
counted as the cheap guesses they are). The same rule runs for `companion init` (a new vault),
`companion keys passphrase`, `companion keys import-recovery` and the settings window.

Unlocking with an existing passphrase is never subject to this rule.
"""

from __future__ import annotations

import secrets
from functools import lru_cache

from companion.crypto.errors import WeakPassphrase

MIN_LENGTH = 12
MIN_GUESSES_LOG10 = 12.0  # about 40 bits; Argon2id at 64 MiB makes each guess expensive
SUGGESTION_WORDS = 6
_ESTIMATOR_MAX_CHARS = 100  # zxcvbn is quadratic in length; beyond this, length alone suffices


@lru_cache(maxsize=1)
def _words() -> tuple[str, ...]:
    """Common, easy-to-type English words from the estimator's own frequency list."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    words = FREQUENCY_LISTS["english_wikipedia"][500:12000]
    return tuple(w for w in words if w.isascii() and w.isalpha() and 4 <= len(w) <= 8)


def suggest_passphrase(words: int = SUGGESTION_WORDS) -> str:
    """A random passphrase of common words (about 12.5 bits each; six give ~75 bits)."""
    pool = _words()
    return "-".join(secrets.choice(pool) for _ in range(words))


def passphrase_problem(text: str, *, context: tuple[str, ...] = ()) -> str | None:
    """Why `text` is too weak for a new passphrase, or None when it is strong enough.

    `context` lists words an attacker would try first (the vault id, the device name).
    """
    if not text or not text.strip():
        return "the passphrase is empty"
    if len(text) < MIN_LENGTH:
        return f"the passphrase is shorter than {MIN_LENGTH} characters"
    if len(text) > _ESTIMATOR_MAX_CHARS:
        return None
    from zxcvbn import zxcvbn

    result = zxcvbn(text, user_inputs=[c for c in context if c])
    if float(result["guesses_log10"]) >= MIN_GUESSES_LOG10:
        return None
    warning = str(result.get("feedback", {}).get("warning") or "").rstrip(".")
    why = f": {warning[0].lower()}{warning[1:]}" if warning else ""
    return f"the passphrase is too easy to guess{why}"


def check_new_passphrase(text: str, *, context: tuple[str, ...] = ()) -> None:
    """Raise `WeakPassphrase` (with a generated suggestion) unless `text` is strong enough.

    The test suite may set `COMPANION_TEST_WEAK_PASSPHRASE=1` (see `companion.testmode`).
    """
    from companion.testmode import WEAK_PASSPHRASE_ENV, escape_hatch

    problem = passphrase_problem(text, context=context)
    if problem is None:
        return
    if problem != "the passphrase is empty" and escape_hatch(WEAK_PASSPHRASE_ENV):
        return
    raise WeakPassphrase(f"{problem}; choose a longer one", suggestion=suggest_passphrase())
