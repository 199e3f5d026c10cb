"""The service: the `watch` daemon, the engine lock, and jobs between processes (requests, wake,
the dream's hook). Imports the round and the layers below it; never the commands.
"""
