"""The secret guard: find credentials in notes and keep them in the keyring instead.

For other parts of the product:
- `contains_secret(text)`: fast yes/no (the dream checks candidate text before writing it);
- `scan_file(path)` / `scan_text(text)`: findings with file, line, column, kind, masked value;
- `companion.secrets.store`: `open_store(config)`, `KeyringStore`, `FileStore` for device tokens,
  the vault key and moved secrets;
- `companion.secrets.move.move_secret`: take a secret out of a note, leaving `keyring:NAME`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Finding",
    "compile_allowlist",
    "contains_secret",
    "mask",
    "scan_file",
    "scan_text",
    "scan_vault",
]


def __getattr__(name: str) -> Any:
    """Load the detector (and detect-secrets) only when asked: the secret store, which the sync
    engine uses for its key and token, must not pull it in."""
    if name in __all__:
        value = getattr(importlib.import_module("companion.secrets.detect"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'companion.secrets' has no attribute {name!r}")
