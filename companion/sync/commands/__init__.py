"""The commands: `companion init | sync | watch | status | ...`, `held`, `quarantine`, `keys`, and
the engines of joining and of the vault key they share with the desktop app.
"""
