"""Keep the vault key and the relay token out of core dumps.

A crashing process that dumps core writes its memory to disk, where the vault key, the device
token and decrypted notes would sit in a file anyone with access to the crash folder can read
(systemd-coredump keeps them for days). Every `companion` process therefore sets its core-file
limit to zero and, on Linux, marks itself non-dumpable (which also stops other processes of the
same user from attaching a debugger to read its memory, as Yama's ptrace scope would).
"""

from __future__ import annotations

import contextlib
import ctypes
import sys

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def _libc() -> ctypes.CDLL:
    """The C library this process already runs on (dlopen(NULL) sees its symbols), found
    without `ctypes.util.find_library`, which imports `subprocess` and runs `ldconfig -p`: ~5 ms
    on every command."""
    return ctypes.CDLL(None, use_errno=True)


def disable_core_dumps() -> None:
    """Best effort, never fatal: a platform without these calls simply keeps its defaults."""
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def is_dumpable() -> bool | None:
    """This process's dumpable flag on Linux (None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    return bool(_libc().prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))
