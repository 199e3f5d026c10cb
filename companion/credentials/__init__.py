"""Where this device keeps its credentials: the OS keyring or an owner-only file.

`store.open_store(config)` gives the store the config names (`KeyringStore`, `FileStore`): the
sync engine keeps the relay token and the vault key there, the secret guard the secrets it moves
out of notes, the dream the LLM API key. `files.read_owner_only` reads the files that must be
owner-only. Separate from the secret guard (`companion.secrets`), which finds credentials in
notes: the engine needs this package without loading the guard's detectors.
"""
