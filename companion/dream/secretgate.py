"""The secret scanner as the dream uses it: one question, "does this text hold a secret?".

The detector is `companion.secrets` (our rules plus detect-secrets), imported lazily so the
dream still loads where that package is being rebuilt; until it is importable, the credential
shapes the log redactor knows stand in, so no secret-shaped text is ever written either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from companion.logs import MASK, redact

_Detector = Callable[[str], bool]


def _fallback(text: str) -> bool:
    return MASK in redact(text) and MASK not in text


def _load(allowlist: Iterable[str] = ()) -> tuple[_Detector, str]:
    try:
        from companion.secrets import detect  # noqa: PLC0415 - lazy by design
    except ImportError:
        return _fallback, "built-in credential shapes"
    patterns: Any = ()
    compile_allowlist = getattr(detect, "compile_allowlist", None)
    if compile_allowlist is not None and allowlist:
        patterns = compile_allowlist(list(allowlist))
    fn = detect.contains_secret

    def check(text: str) -> bool:
        return bool(fn(text, allowlist=patterns)) or _fallback(text)

    return check, "companion.secrets"


class SecretGate:
    """`gate(text)` is True when `text` holds something shaped like a credential."""

    def __init__(self, allowlist: Iterable[str] = ()) -> None:
        self._check, self.detector = _load(allowlist)
        self._cache: dict[str, bool] = {}

    def __call__(self, text: str) -> bool:
        hit = self._cache.get(text)
        if hit is None:
            hit = bool(text) and self._check(text)
            if len(self._cache) < 100_000:
                self._cache[text] = hit
        return hit
