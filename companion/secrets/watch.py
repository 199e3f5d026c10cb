"""Scanning the notes a sync round carried, reporting each finding once.

The headless daemon and the desktop app both feed this the paths of each round's change
stream (uploaded and downloaded). A finding is reported the first time its (note,
fingerprint) is seen; the fingerprints seen (salted hashes, never the secret) persist in the
state dir so a restart does not repeat them. Scanning never raises: sync must always flow.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from companion.errors import CompanionError
from companion.fileio import write_text_atomic
from companion.logs import get_logger

log = get_logger("secrets.watch")

MAX_REMEMBERED = 5000


class ChangeScanner:
    """Scan changed notes of one vault; return only findings not reported before."""

    def __init__(self, root: Path, state_dir: Path, allowlist_patterns: Sequence[str] = ()) -> None:
        self.root = Path(root)
        key = hashlib.sha256(os.fsencode(str(self.root.resolve()))).hexdigest()[:16]
        self.state_file = Path(state_dir) / "secrets" / f"reported-{key}.json"
        self._patterns = list(allowlist_patterns)
        self._allowlist: Any = None  # compiled patterns, built on first use
        self._lock = threading.Lock()
        self._seen: list[str] | None = None

    def _load(self) -> list[str]:
        if self._seen is None:
            try:
                data = json.loads(self.state_file.read_text(encoding="utf-8"))
                self._seen = [str(x) for x in data] if isinstance(data, list) else []
            except (OSError, ValueError):
                self._seen = []
        return self._seen

    def _save(self) -> None:
        seen = self._load()[-MAX_REMEMBERED:]
        self.state_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_text_atomic(self.state_file, json.dumps(seen))

    def scan(self, rel_paths: Iterable[str]) -> list:  # list[Finding]
        """The new findings in these vault-relative paths (notes only); never raises."""
        from companion.secrets.detect import NOTE_SUFFIXES, compile_allowlist, scan_file

        notes = sorted({p for p in rel_paths if p.lower().endswith(NOTE_SUFFIXES)})
        if not notes:
            return []
        with self._lock:
            if self._allowlist is None:
                try:
                    self._allowlist = compile_allowlist(self._patterns)
                except CompanionError as exc:
                    log.warning("secret allowlist ignored: %s", exc)
                    self._allowlist = ()
            seen = self._load()
            known = set(seen)
            fresh = []
            for rel in notes:
                try:
                    found = scan_file(self.root / rel, allowlist=self._allowlist, display_path=rel)
                except (OSError, CompanionError) as exc:
                    log.debug("secret scan of %s failed: %s", rel, exc)
                    continue
                for f in found:
                    key = hashlib.sha256(f"{rel}\0{f.fingerprint}".encode()).hexdigest()
                    if key not in known:
                        known.add(key)
                        seen.append(key)
                        fresh.append(f)
            if fresh:
                try:
                    self._save()
                except OSError as exc:
                    log.debug("cannot remember reported secrets: %s", exc)
            return fresh
