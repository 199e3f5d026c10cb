"""The local disk: paths, file states, atomic and batched writes, chunks, the vault folder, ignore
rules and the watcher. Imports no other sync layer.
"""
