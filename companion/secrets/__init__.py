"""The secret guard: find credentials in notes and keep them in the keyring instead.

- `detect`: `contains_secret(text)` (fast yes/no: the dream checks candidate text before
  writing it), `scan_file(path)` / `scan_text(text)` / `scan_vault(root)` (findings with file,
  line, column, kind, masked value);
- `move.move_secret`: take a secret out of a note, leaving `keyring:NAME`;
- `watch`: the change-stream scanner of the daemon and the desktop app.

The credential store it moves secrets into is its own package, `companion.credentials`, which
the sync engine uses for its key and token without loading any detector.
"""
