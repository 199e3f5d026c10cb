"""Take a secret out of a note: into the store, with `keyring:NAME` left in its place.

Guarantees (each has a test):
- every byte of the note other than the secret's own is untouched (the edit is done on the
  bytes: prefix + reference + suffix), and the file's permission bits are kept;
- the write is atomic (temp file in the same folder, fsync, rename);
- a note that changed since it was scanned is refused, never overwritten: the caller passes
  what it scanned (a `Finding` with the file's SHA-256, or that SHA-256), and the file is checked
  again just before the rename;
- an existing secret of the same name with a different value is never overwritten;
- if the note cannot be written, a secret this call stored is removed again.
The result is an ordinary edit of the note, which the sync engine propagates like any other.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from companion.credentials.store import REFERENCE_PREFIX, SecretStore, validate_name
from companion.errors import CompanionError, InputError
from companion.fileio import write_atomic
from companion.logs import get_logger, register_secret
from companion.secrets.detect import Allowlist, Finding, scan_text

log = get_logger("secrets.move")


class NoteChangedError(CompanionError):
    """The note is not what was scanned: moving now could overwrite someone's edit."""


@dataclass(frozen=True)
class MoveResult:
    path: str
    line: int
    kind: str
    name: str
    reference: str
    masked: str


def resolve_note(vault: str | os.PathLike[str], path: str | os.PathLike[str]) -> tuple[Path, str]:
    """(absolute path, vault-relative posix path) of a note, refusing anything outside the vault."""
    root = Path(vault).resolve()
    if not root.is_dir():
        raise InputError(f"{vault} is not a folder")
    p = Path(path)
    full = (p if p.is_absolute() else root / p).resolve()
    try:
        rel = full.relative_to(root).as_posix()
    except ValueError:
        raise InputError(f"{path} is not inside the vault {root}") from None
    if not full.is_file():
        raise InputError(f"{rel} is not a file in the vault")
    return full, rel


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _choose(
    found: list[Finding], rel: str, line: int, expected: Finding | None, index: int | None
) -> Finding:
    if expected is not None:
        for f in found:
            if f.fingerprint == expected.fingerprint and f.column == expected.column:
                return f
        raise NoteChangedError(
            f"{rel}:{line} no longer holds the secret that was scanned; scan the vault again"
        )
    if not found:
        raise InputError(f"no secret found at {rel}:{line}")
    if index is not None:
        if not 1 <= index <= len(found):
            raise InputError(
                f"{rel}:{line} has {len(found)} secret(s); --index must be 1-{len(found)}"
            )
        return found[index - 1]
    if len(found) > 1:
        listing = ", ".join(
            f"{i}: {f.kind} at column {f.column} ({f.masked})" for i, f in enumerate(found, 1)
        )
        raise InputError(
            f"{rel}:{line} has {len(found)} secrets ({listing}); choose one with --index"
        )
    return found[0]


def move_secret(
    vault: str | os.PathLike[str],
    path: str | os.PathLike[str],
    line: int,
    name: str,
    store: SecretStore,
    *,
    expected: Finding | str | None = None,
    index: int | None = None,
    allowlist: Allowlist = (),
) -> MoveResult:
    """Move the secret at `path:line` into `store` as `name`; the note keeps `keyring:name`.

    `expected`: the `Finding` from the scan (or the SHA-256 of the file as scanned). When given,
    the note must still be exactly what was scanned. `index` (1-based, by column) picks one of
    several secrets on the line.
    """
    name = validate_name(name)
    full, rel = resolve_note(vault, path)
    data = full.read_bytes()
    sha = _sha256(data)
    wanted_sha = expected.file_sha256 if isinstance(expected, Finding) else expected
    if wanted_sha is not None and wanted_sha != sha:
        raise NoteChangedError(
            f"{rel} changed since it was scanned; scan the vault again before moving a secret"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{rel} is not UTF-8 text; it was not changed") from None
    found = [
        f for f in scan_text(text, rel, allowlist=allowlist, file_sha256=sha) if f.line == line
    ]
    chosen = _choose(found, rel, line, expected if isinstance(expected, Finding) else None, index)
    secret = chosen.reveal()
    register_secret(secret)

    existing = store.get(name)
    if existing is not None and existing != secret:
        raise CompanionError(
            f"a different secret named {name!r} already exists in the {store.description}; "
            "choose another --name"
        )
    created = existing is None
    if created:
        store.set(name, secret)

    start, end = chosen.span
    b_start = len(text[:start].encode("utf-8"))
    b_end = b_start + len(secret.encode("utf-8"))
    reference = f"{REFERENCE_PREFIX}{name}"
    new_data = data[:b_start] + reference.encode("utf-8") + data[b_end:]
    try:
        mode = full.stat().st_mode & 0o7777
        if _sha256(full.read_bytes()) != sha:  # an edit landed while we were working
            raise NoteChangedError(
                f"{rel} changed while the secret was being moved; nothing was written"
            )
        write_atomic(full, new_data, mode=mode & 0o777)
    except BaseException:
        if created:
            try:
                store.delete(name)
            except CompanionError:
                log.warning("could not remove %r from the store after a failed move", name)
        raise
    log.info("moved a %s secret from %s:%d to %r", chosen.kind, rel, line, name)
    return MoveResult(rel, line, chosen.kind, name, reference, chosen.masked)
