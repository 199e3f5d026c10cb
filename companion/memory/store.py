"""One Hermes memory file (MEMORY.md or USER.md) with the agent's add / replace / remove semantics.

Every write goes the way Hermes Agent's own memory tool goes, so the agent and the companion can
write the same file without losing each other's entries:

1. validate the operations (empty text, the injection guard, the entry delimiter) before touching
   anything;
2. take the exclusive lock on the sidecar ``MEMORY.md.lock`` (``flock`` on POSIX via `filelock`;
   Hermes locks the same file the same way);
3. re-read the file under the lock and refuse (keeping a ``.bak-<timestamp>`` copy) if it does not
   survive split-and-rejoin unchanged -- rewriting it would change text nobody asked to change
   (as Hermes, a lone add only appends and goes ahead when the drift is only whitespace);
4. apply the operations to a copy; all of them or none, with the limit checked on the result;
5. write a temp file in the same folder, fsync it, rename it over the original, fsync the folder.

Readers take no lock: the rename makes every read see either the old or the new complete file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from companion.errors import CompanionError
from companion.fileio import write_atomic
from companion.logs import get_logger
from companion.memory import format as fmt
from companion.memory import guard
from companion.memory.home import DEFAULT_LIMITS, TARGETS, check_target, memories_dir

log = get_logger("companion.memory")

ACTIONS = ("add", "replace", "remove")


def _without_bom(entries: list[str]) -> list[str]:
    """`entries` with a UTF-8 BOM left at the start of the first one removed. Hermes keeps such
    a BOM in the entry and then hides the entry from the agent as invisible text, so the
    companion's writes drop it (deliberately: nothing the person wrote is lost)."""
    if not entries or not entries[0].startswith(fmt.BOM):
        return entries
    first = entries[0].lstrip(fmt.BOM).strip()
    return fmt.dedupe([first, *entries[1:]] if first else entries[1:])


@dataclass(frozen=True)
class Usage:
    """How full a store is: characters of the joined file against its limit."""

    current: int
    limit: int

    @property
    def percent(self) -> int:
        return min(100, int(self.current / self.limit * 100)) if self.limit > 0 else 0

    def __str__(self) -> str:
        return f"{self.current:,}/{self.limit:,}"

    def describe(self) -> str:
        """``67% — 1,474/2,200 chars``, as in Hermes's header and tool results."""
        return f"{self.percent}% — {self} chars"

    def to_dict(self) -> dict[str, Any]:
        return {"current": self.current, "limit": self.limit, "percent": self.percent}


@dataclass(frozen=True)
class Op:
    """One operation of a batch: ``add`` content, ``replace`` old_text with content, ``remove``."""

    action: str
    content: str = ""
    old_text: str = ""

    @classmethod
    def coerce(cls, op: Op | Mapping[str, Any]) -> Op:
        """Accept an `Op` or a Hermes-style mapping ``{action, content?, old_text?}``."""
        if isinstance(op, Op):
            return op
        if isinstance(op, Mapping):
            return cls(
                str(op.get("action") or ""),
                str(op.get("content") or ""),
                str(op.get("old_text") or ""),
            )
        raise TypeError(f"not a memory operation: {op!r}")


@dataclass(frozen=True)
class Change:
    """What one operation did: added (before None), replaced, or removed (after None)."""

    action: str
    before: str | None
    after: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class Result:
    """A successful write (or a no-op such as adding an entry that already exists)."""

    target: str
    message: str
    entries: tuple[str, ...]
    usage: Usage
    changes: tuple[Change, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": True,
            "target": self.target,
            "message": self.message,
            "usage": self.usage.describe(),
            "usage_detail": self.usage.to_dict(),
            "entry_count": len(self.entries),
            "entries": list(self.entries),
            "changes": [c.to_dict() for c in self.changes],
        }


class MemoryRefused(CompanionError):
    """A write the store refused; nothing was changed. `reason` is a stable code for scripts.

    Reasons: empty, unknown_action, blocked, delimiter, no_match, ambiguous, over_limit, drift,
    unreadable, locked, io.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        target: str,
        usage: Usage | None = None,
        matches: Sequence[str] = (),
        backup: Path | None = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.target = target
        self.usage = usage
        self.matches = tuple(matches)
        self.backup = backup
        self.rule = rule

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "success": False,
            "target": self.target,
            "reason": self.reason,
            "error": self.message,
        }
        if self.usage is not None:
            out["usage"] = str(self.usage)
        if self.matches:
            out["matches"] = list(self.matches)
        if self.backup is not None:
            out["backup"] = str(self.backup)
        if self.rule is not None:
            out["rule"] = self.rule
        return out


@dataclass
class _Prepared:
    action: str
    content: str
    old_text: str


class MemoryStore:
    """MEMORY.md or USER.md under ``<home>/memories/``, with its character limit.

    `home` is the Hermes home (``~/.hermes`` or a profile folder); see
    `companion.memory.home.resolve_home`. `limit` defaults to 2,200 (memory) or 1,375 (user).
    """

    def __init__(
        self,
        home: str | os.PathLike[str],
        target: str = "memory",
        limit: int | None = None,
        *,
        lock_timeout: float = 10.0,
    ) -> None:
        self.target = check_target(target)
        self.limit = DEFAULT_LIMITS[target] if limit is None else int(limit)
        if self.limit < 1:
            raise ValueError(f"memory limit must be at least 1, got {limit!r}")
        self.home = Path(home)
        self.name = TARGETS[target]
        self.path = memories_dir(self.home) / self.name
        self.lock_path = self.path.with_name(self.name + ".lock")
        self.lock_timeout = lock_timeout

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.home)!r}, {self.target!r}, limit={self.limit})"

    # -- reading ---------------------------------------------------------------------------

    def read(self) -> list[str]:
        """The entries on disk now (no lock needed: writes are atomic renames)."""
        raw = self._read_raw()
        if raw is None:
            return []
        try:
            return fmt.parse(fmt.decode(raw))
        except UnicodeDecodeError as exc:
            raise self._refuse(
                f"{self.path} is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                "unreadable",
            ) from None

    def usage(self, entries: Sequence[str] | None = None) -> Usage:
        """Characters used (of `entries`, or of the file now) against the limit."""
        return Usage(fmt.char_count(self.read() if entries is None else entries), self.limit)

    # -- writing ---------------------------------------------------------------------------

    def add(self, content: str) -> Result:
        """Append an entry; an exact duplicate succeeds without adding anything."""
        return self._commit([Op("add", content=content)], batch=False)

    def replace(self, old_text: str, content: str) -> Result:
        """Swap the whole entry containing `old_text` for `content` (Hermes's matching)."""
        return self._commit([Op("replace", content=content, old_text=old_text)], batch=False)

    def remove(self, old_text: str) -> Result:
        """Delete the entry containing `old_text` (several different matches: ambiguous)."""
        return self._commit([Op("remove", old_text=old_text)], batch=False)

    def apply_batch(self, ops: Sequence[Op | Mapping[str, Any]]) -> Result:
        """Apply `ops` in order, all or nothing, with the limit checked on the final result.

        Adding an entry that already exists is skipped, not an error. The result lists every
        change made, in order.
        """
        ops = list(ops)
        if not ops:
            raise self._refuse(
                "no operations given; a batch needs at least one add, replace or remove", "empty"
            )
        return self._commit([Op.coerce(op) for op in ops], batch=True)

    # -- internals -------------------------------------------------------------------------

    def _refuse(self, message: str, reason: str, **extra: Any) -> MemoryRefused:
        return MemoryRefused(message, reason=reason, target=self.target, **extra)

    def _op_error(
        self, index: int, op: _Prepared | Op, batch: bool, message: str, reason: str, **extra: Any
    ) -> MemoryRefused:
        if batch:
            message = (
                f"operation {index + 1} ({op.action or 'no action'}): {message}; "
                "no operation was applied (a batch is all-or-nothing)"
            )
        return self._refuse(message, reason, **extra)

    def _prepare(self, index: int, op: Op, batch: bool) -> _Prepared:
        """Check one operation on its own: action, empty text, guard, delimiter."""
        if op.action not in ACTIONS:
            raise self._op_error(
                index,
                op,
                batch,
                f"unknown action {op.action!r}; use add, replace or remove",
                "unknown_action",
            )
        content = fmt.normalise_entry(op.content or "")
        old_text = fmt.normalise_entry(op.old_text or "")
        if op.action in ("replace", "remove") and not old_text:
            raise self._op_error(index, op, batch, "old_text cannot be empty", "empty")
        if op.action in ("add", "replace"):
            if not content:
                hint = "" if op.action == "add" else "; use remove to delete an entry"
                raise self._op_error(index, op, batch, f"content cannot be empty{hint}", "empty")
            finding = guard.check_write(content, where=self.target)
            if finding is not None:
                raise self._op_error(
                    index, op, batch, finding.message(), "blocked", rule=finding.rule
                )
            problem = fmt.entry_problem(content)
            if problem is not None:
                raise self._op_error(
                    index, op, batch, f"cannot store this entry: {problem}", "delimiter"
                )
        return _Prepared(op.action, content, old_text)

    def _find(
        self, working: list[str], index: int, op: _Prepared, batch: bool, usage: Usage
    ) -> int:
        """The entry `op.old_text` names, as Hermes finds it: every entry containing it; several
        *different* entries is ambiguous (even when one of them equals it exactly)."""
        hits = [i for i, e in enumerate(working) if op.old_text in e]
        if not hits:
            raise self._op_error(
                index,
                op,
                batch,
                f"no entry in {self.name} matches {fmt.preview(op.old_text)!r}",
                "no_match",
                usage=usage,
            )
        if len({working[i] for i in hits}) > 1:
            previews = [fmt.preview(working[i]) for i in hits]
            shown = "; ".join(f"{i + 1}) {p}" for i, p in enumerate(previews))
            raise self._op_error(
                index,
                op,
                batch,
                f"{len(hits)} entries in {self.name} match {fmt.preview(op.old_text)!r}, "
                f"give more specific text: {shown}",
                "ambiguous",
                usage=usage,
                matches=previews,
            )
        return hits[0]

    def _commit(self, ops: list[Op], *, batch: bool) -> Result:
        prepared = [self._prepare(i, op, batch) for i, op in enumerate(ops)]
        # As Hermes: a lone add only appends, so a file that drifted only in whitespace is
        # not refused for it (the rewrite normalises that whitespace, no text is lost).
        lone_add = not batch and prepared[0].action == "add"
        with self._locked():
            entries = self._load_for_write(check_drift=not lone_add)
            before = Usage(fmt.char_count(entries), self.limit)
            working = list(entries)
            changes: list[Change] = []
            skipped = 0
            for i, op in enumerate(prepared):
                if op.action == "add":
                    if op.content in working:
                        skipped += 1
                        continue
                    working.append(op.content)
                    changes.append(Change("add", None, op.content))
                elif op.action == "replace":
                    at = self._find(working, i, op, batch, before)
                    old = working[at]
                    if old == op.content:
                        continue
                    working[at] = op.content
                    working = fmt.dedupe(working)  # the new text may equal another entry
                    changes.append(Change("replace", old, op.content))
                else:
                    at = self._find(working, i, op, batch, before)
                    changes.append(Change("remove", working.pop(at), None))
            after = Usage(fmt.char_count(working), self.limit)
            if working == entries:
                return Result(
                    self.target,
                    self._message(prepared, batch, skipped, False),
                    tuple(entries),
                    before,
                    (),
                )
            # As Hermes: every write but a lone remove must leave the file within its limit
            # (a replace that shrinks an over-budget file but leaves it over is refused).
            lone_remove = not batch and prepared[0].action == "remove"
            if after.current > self.limit and not lone_remove:
                raise self._over_limit(prepared, batch, before, after)
            working = _without_bom(working)
            after = Usage(fmt.char_count(working), self.limit)
            text = fmt.serialise(working)
            if fmt.parse(text) != working:  # cannot happen after _prepare; never write if it does
                raise self._refuse(
                    f"refusing to write {self.name}: the entries would not read back unchanged",
                    "delimiter",
                )
            self._write(text)
            log.info("%s: %d change(s), now %s", self.path, len(changes), after.describe())
        return Result(
            self.target,
            self._message(prepared, batch, skipped, True),
            tuple(working),
            after,
            tuple(changes),
        )

    def _message(self, prepared: list[_Prepared], batch: bool, skipped: int, changed: bool) -> str:
        if batch:
            msg = f"Applied {len(prepared)} operation(s)."
            if skipped:
                msg += f" {skipped} entr{'y' if skipped == 1 else 'ies'} already existed."
            return msg if changed or skipped else msg + " Nothing changed."
        action = prepared[0].action
        if action == "add":
            return "Entry added." if changed else "Entry already exists (no duplicate added)."
        if action == "replace":
            return "Entry replaced." if changed else "Entry already had that text (no change)."
        return "Entry removed."

    def _over_limit(
        self, prepared: list[_Prepared], batch: bool, before: Usage, after: Usage
    ) -> MemoryRefused:
        if batch:
            msg = (
                f"after all {len(prepared)} operations {self.name} would be at {after} chars, "
                f"over its limit (now {before}); replace or remove more entries in the same "
                "batch. No operation was applied (a batch is all-or-nothing)"
            )
        elif prepared[0].action == "add":
            msg = (
                f"{self.name} is at {before} chars; adding this entry "
                f"({len(prepared[0].content):,} chars) would take it to {after}, over its "
                "limit. Replace or remove entries first; nothing was changed"
            )
        else:
            msg = (
                f"{self.name} is at {before} chars; this replacement would take it to {after}, "
                "over its limit. Shorten the new text, or replace or remove other entries "
                "first; nothing was changed"
            )
        return self._refuse(msg, "over_limit", usage=before)

    # -- disk --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the exclusive lock on the sidecar ``<name>.lock`` (shared with Hermes)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.lock_path, timeout=self.lock_timeout, preserve_lock_file=True)
        try:
            lock.acquire()
        except Timeout:
            raise self._refuse(
                f"{self.lock_path} has been held by another writer (the agent or a dream) for "
                f"{self.lock_timeout:g} s; try again",
                "locked",
            ) from None
        try:
            yield
        finally:
            lock.release()

    def _read_raw(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._refuse(f"cannot read {self.path}: {exc.strerror or exc}", "io") from None

    def _load_for_write(self, check_drift: bool = True) -> list[str]:
        """Entries on disk, or a refusal (with a backup kept) if rewriting would lose text."""
        raw = self._read_raw()
        if raw is None:
            return []
        try:
            text = fmt.decode(raw)
        except UnicodeDecodeError as exc:
            why = f"it is not valid UTF-8 ({exc.reason} at byte {exc.start})"
        else:
            entries = fmt.parse(text)
            longest = max((len(e) for e in entries), default=0)
            if not check_drift:
                return entries
            if not fmt.round_trips(text):
                why = (
                    "it was edited into a shape the format cannot hold (whitespace or an "
                    "empty entry around a '§' separator)"
                )
            elif longest > self.limit:
                why = (
                    f"one entry is longer than the whole limit ({longest:,} > {self.limit:,} "
                    "chars), so text was probably appended to it by hand"
                )
            else:
                return entries
        backup = self._backup(raw)
        raise self._refuse(
            f"refusing to write {self.path}: {why}. Rewriting it could lose text, so nothing "
            f"was changed; a copy is at {backup}. Rewrite the file as entries separated by "
            "lines holding only '§' (or move the extra text out), then try again",
            "drift",
            backup=backup,
        )

    def _backup(self, raw: bytes) -> Path:
        """Keep a copy of the file as it is: ``<name>.bak-<UTC timestamp>`` (reused if same)."""
        for old in sorted(self.path.parent.glob(self.name + ".bak-*")):
            with contextlib.suppress(OSError):
                if old.read_bytes() == raw:
                    return old
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        candidate = self.path.with_name(f"{self.name}.bak-{stamp}")
        n = 1
        while candidate.exists():
            n += 1
            candidate = self.path.with_name(f"{self.name}.bak-{stamp}-{n}")
        self._atomic_write(candidate, raw)
        log.warning("%s does not round-trip; refused a write and kept %s", self.path, candidate)
        return candidate

    def _write(self, text: str) -> None:
        # A symlinked MEMORY.md (a dotfiles repo, a profile package) is written through the
        # link, as Hermes does: the link stays and its target changes.
        target = Path(os.path.realpath(self.path)) if self.path.is_symlink() else self.path
        try:
            self._atomic_write(target, fmt.encode(text))
        except OSError as exc:
            raise self._refuse(
                f"cannot write {self.path}: {exc.strerror or exc}; nothing was changed", "io"
            ) from None

    @staticmethod
    def _atomic_write(path: Path, data: bytes) -> None:
        """`fileio.write_atomic`, owner-only (0600), as Hermes leaves it: memory describes the
        person."""
        write_atomic(path, data, mode=0o600)
