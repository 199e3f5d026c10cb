"""The secret guard: find credentials in notes and keep them in the keyring instead.

For other parts of the product:
- `contains_secret(text)`: fast yes/no (the dream checks candidate text before writing it);
- `scan_file(path)` / `scan_text(text)`: findings with file, line, column, kind, masked value;
- `companion.secrets.store`: `open_store(config)`, `KeyringStore`, `FileStore` for device tokens,
  the vault key and moved secrets;
- `companion.secrets.move.move_secret`: take a secret out of a note, leaving `keyring:NAME`.
"""

from companion.secrets.detect import (
    Finding,
    compile_allowlist,
    contains_secret,
    mask,
    scan_file,
    scan_text,
    scan_vault,
)

__all__ = [
    "Finding",
    "compile_allowlist",
    "contains_secret",
    "mask",
    "scan_file",
    "scan_text",
    "scan_vault",
]
