"""What the last `secrets scan` saw, so `secrets move` can refuse a note that changed since.

Only the SHA-256 of each note that had findings is kept (no secret, no fingerprint), per vault,
in the device's state folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from companion.fileio import write_atomic
from companion.secrets.detect import VaultScan

FILE_NAME = "secrets-scan.json"


def _load(state_dir: Path) -> dict[str, Any]:
    try:
        doc = json.loads((state_dir / FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _save(state_dir: Path, doc: dict[str, Any]) -> None:
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(state_dir / FILE_NAME, json.dumps(doc, indent=1, sort_keys=True).encode())


def _key(vault: str | os.PathLike[str]) -> str:
    return str(Path(vault).resolve())


def record_scan(state_dir: Path, result: VaultScan) -> None:
    doc = _load(state_dir)
    doc[_key(result.vault)] = {f.path: f.file_sha256 for f in result.findings if f.path}
    _save(state_dir, doc)


def scanned_sha(state_dir: Path, vault: str | os.PathLike[str], rel: str) -> str | None:
    """The note's SHA-256 at the last scan that found something in it, if any."""
    entry = _load(state_dir).get(_key(vault), {})
    value = entry.get(rel) if isinstance(entry, dict) else None
    return value if isinstance(value, str) else None


def update_note(state_dir: Path, vault: str | os.PathLike[str], rel: str, sha: str | None) -> None:
    """After our own edit (a move), the note's new hash is the one to expect."""
    doc = _load(state_dir)
    entry = doc.setdefault(_key(vault), {})
    if sha is None:
        entry.pop(rel, None)
    else:
        entry[rel] = sha
    _save(state_dir, doc)
