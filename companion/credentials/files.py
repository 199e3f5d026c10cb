"""Reading a file that must be owner-only (the secrets file, the passphrase file).

Writes go through the one atomic write, `companion.fileio`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from companion.errors import CompanionError


def read_owner_only(
    path: Path, what: str, error: type[CompanionError] = CompanionError, max_bytes: int = -1
) -> bytes:
    """The bytes of `path`, refused unless this user owns it and nobody else can read or write it.

    Symlinks are not followed. `what` names the file for a person ("secrets file"); an
    `OSError` from opening it (missing file, no permission) is left to the caller.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if os.name != "nt":
            if st.st_mode & 0o077:
                raise error(
                    f"the {what} {path} can be read by other users "
                    f"(mode {stat.filemode(st.st_mode)}); refusing it. "
                    f"Fix it with: chmod 600 {path}"
                )
            if st.st_uid != os.getuid():
                raise error(f"the {what} {path} belongs to another user; refusing it")
        return f.read(max_bytes)
