"""Encrypted sync of one vault copy, in six layers, one package each; a layer imports only the
layers before it in this list (enforced by tests/test_layering.py):

- `local/`: the local disk (paths, file states, atomic writes, chunks, ignore rules, watcher);
- `state/`: the per-copy state (the sync index, device file, saved status, last writers);
- `remote/`: the encrypted, verified view of the relay (over `companion.relayclient`);
- `round/`: one round, scan -> plan -> execute -> record (pure planner, executors, merge);
- `service/`: the `watch` daemon, the engine lock and jobs between processes;
- `commands/`: the `companion` sync commands and the engines they share with the desktop app.
"""
