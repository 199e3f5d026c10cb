"""Entry point of the frozen app (PyInstaller): the same `companion` command line.

`freeze_support()` must run first: the secret scanner and the vault parser start worker
processes with the "spawn" method, and in a frozen app those workers are this same binary.
"""

import multiprocessing

if __name__ == "__main__":
    multiprocessing.freeze_support()

    from companion.cli import run

    run()
