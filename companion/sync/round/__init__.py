"""The round: scan, pure planning, its executors (pull, apply, push, record), conflicts and merge,
and the engine that runs it. Imports the local disk, the state and the remote; never the service
or the commands.
"""
