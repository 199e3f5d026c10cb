"""The scanner: what changed in the vault since the index was last updated.

One `os.scandir` walk that never follows symbolic links (so loops are impossible and nothing
outside the vault is read). Each regular file's ``(mtime_ns, size, inode)`` is compared with the
index, loaded in one query; only files whose stat differs are hashed. Results are classified as
created / modified / deleted / renamed (a deleted path and a created path with the same content;
case-only renames included).

What is *not* reported as a change, on purpose:
- ignored paths (and an indexed file that became ignored is not "deleted" either);
- symbolic links, special files, names that cannot be synced, files over the size cap (skipped
  with a warning; if indexed they are kept, never turned into deletions);
- files still being written: their stat changed while hashing, or is more recent than a quiet
  period that grows with the file's size (`settle_for`: 50 ms for a note, about a second more
  per 8 MiB, at most 5 s; a copy pausing between blocks is not done), or a watcher saw them
  opened for writing and not closed yet (`busy`): listed in `unstable` for the caller to
  re-check (`retry_in_ns` says when a young file will have settled);
- files that vanish mid-scan; folders that cannot be read (their indexed files are kept).

A rename that also edited the note (a folder renamed while a note in it was changed) is still
a rename when the new file keeps at least half the lines of the version last synced and has the
same name in another folder, or another name in the same folder (`edited_source`).

Names that are not NFC on disk (NFD from macOS) are mapped on a normalisation-insensitive file
system; on one that distinguishes the spellings, with `fix_names`, the scan lists the rename to
NFC in `repairs` (and when an NFC twin already exists, a visible new name for the NFD one,
``naïve (unicode conflict).md``, so both are kept); without it such a name is skipped.

The scan only reads: the vault and the index are left exactly as they were. What it would fix
it returns, and the round carries it out in a step of its own before planning
(`engine.SyncEngine._scan`): `repair_names` renames what `repairs` lists (then the round scans
again, to see the files under their new names), and `touched` holds the stat identities to
write back for files whose content did not change (a "touch", so the next quiet rescan does
not hash them again: `FileStore.update_stats`). The caller records nothing else until a change
is synced. `verify` names indexed files to hash even when their stat did not change (the
engine's slow rotation, so an edit no stat shows is found too).
"""

from __future__ import annotations

import os
import stat as stat_mod
import time
import unicodedata
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from stat import S_ISREG

from companion.logs import get_logger
from companion.sync.local.filestate import (
    FileState,
    FileUnstable,
    Hashed,
    NotRegularFile,
    StatKey,
    hash_file,
    inode_key,
)
from companion.sync.local.folder import VaultMissing
from companion.sync.local.ignore import IgnoreRules
from companion.sync.local.pathsafe import (
    BAD_NAME_CHARS,
    TEMP_PREFIX,
    UnsafePath,
    fold,
    name_problem,
    normalize,
    resolve_inside,
)
from companion.sync.state.index import SyncIndex

log = get_logger("sync.scanner")

_I63 = 1 << 63
DEFAULT_SETTLE_NS = 50_000_000  # a file modified less than 50 ms ago may still be being written
SETTLE_BYTES_PER_S = 8 << 20  # plus the time to write the file at a slow disk's pace
MAX_SETTLE_NS = 5_000_000_000
STALE_TEMP_NS = 600 * 1_000_000_000  # leftover engine temp files older than 10 min
SIMILAR_RATIO = 0.5  # a renamed-and-edited note keeps at least half its lines
SIMILAR_MAX_BYTES = 1 << 20
SIMILAR_CANDIDATES = 8


def settle_for(size: int, base_ns: int = DEFAULT_SETTLE_NS) -> int:
    """How long a file of `size` bytes must stay unchanged before it counts as written (0 when
    `base_ns` is 0: no quiet period at all)."""
    if base_ns <= 0:
        return 0
    return min(MAX_SETTLE_NS, base_ns + size * 1_000_000_000 // SETTLE_BYTES_PER_S)


class ChangeKind(StrEnum):
    CREATED = "created"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"


def size_limit(max_file_mb: float) -> int | None:
    """The byte limit `[sync] max_file_mb` sets (0: none), for every scan of a vault copy."""
    return int(max_file_mb * 1_048_576) if max_file_mb > 0 else None


def _megabytes(size: int) -> str:
    return f"{size / 1_048_576:.1f} MB" if size >= 104_858 else f"{size:,} bytes"


class SkipReason(StrEnum):
    SYMLINK = "symlink"
    TOO_LARGE = "too_large"
    BAD_NAME = "bad_name"
    NAME_COLLISION = "name_collision"
    UNREADABLE = "unreadable"
    SPECIAL = "special_file"


@dataclass(frozen=True, slots=True)
class LocalChange:
    """One local change. `state` is the file now (None when deleted); `old_path` for renames."""

    kind: ChangeKind
    path: str
    state: FileState | None = None
    is_text: bool = False
    old_path: str | None = None


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    reason: SkipReason
    detail: str = ""


@dataclass(frozen=True, slots=True)
class NameRepair:
    """A rename the scan found to make: `old` (a name not in NFC on disk) becomes `new`, its
    NFC form, or, when `twin_of` (that NFC form) is another file, a visible new name."""

    old: str
    new: str
    twin_of: str = ""


@dataclass
class ScanResult:
    changed: list[LocalChange] = field(default_factory=list)
    # same content, new stat: the stat identities to write back (`FileStore.update_stats`)
    touched: list[tuple[str, StatKey]] = field(default_factory=list)
    unstable: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)  # of `unstable`: open for writing (watcher)
    retry_in_ns: int = 0  # when the youngest unstable file will have settled (0: unknown)
    skipped: list[Skipped] = field(default_factory=list)
    repairs: list[NameRepair] = field(default_factory=list)  # to carry out: `repair_names`
    stale_temp: list[str] = field(default_factory=list)
    files: int = 0  # regular, synced files present in the scanned area
    hashed: int = 0
    elapsed_s: float = 0.0
    partial: bool = False

    @property
    def quiet(self) -> bool:
        return not self.changed and not self.unstable

    def of_kind(self, kind: ChangeKind) -> list[LocalChange]:
        return [c for c in self.changed if c.kind is kind]


_warned: set[tuple[str, str]] = set()


def _warn_once(root: str, skip: Skipped) -> None:
    key = (root, f"{skip.reason}:{skip.path}")
    if key in _warned:
        return
    if len(_warned) > 10_000:
        _warned.clear()
    _warned.add(key)
    log.warning("not syncing %r: %s", skip.path, skip.detail or skip.reason.value)


class _Scan:
    def __init__(
        self,
        root: str,
        index: SyncIndex,
        ignore: IgnoreRules,
        *,
        max_file_bytes: int | None,
        settle_ns: int,
        fix_names: bool,
        on_hash: Callable[[str], None] | None,
        now_ns: int,
        busy: Container[str],
        verify: set[str],
    ) -> None:
        self.root = root
        self.index = index
        self.ignore = ignore
        self.max_bytes = max_file_bytes
        self.settle_ns = settle_ns
        self.fix_names = fix_names
        self.on_hash = on_hash
        self.now_ns = now_ns
        self.busy = busy
        self.verify = verify
        # indexed paths not seen yet: the walk pops what it finds, the rest may be deletions
        self.known: dict[str, StatKey] = {}
        self.protected: list[str] = []  # rel prefixes whose indexed files must not look deleted
        self.created: list[tuple[str, Hashed]] = []
        self.modified: list[tuple[str, Hashed]] = []
        self.stack: list[tuple[str, str]] = []
        self.res = ScanResult()

    # ----------------------------------------------------------------- walking

    def skip(self, rel: str, reason: SkipReason, detail: str = "") -> None:
        s = Skipped(rel, reason, detail)
        self.res.skipped.append(s)
        if reason is not SkipReason.SPECIAL:
            _warn_once(self.root, s)

    def run_stack(self) -> None:
        while self.stack:
            abs_dir, rel_dir = self.stack.pop()
            self.list_dir(abs_dir, rel_dir, None)

    def list_dir(self, abs_dir: str, rel_dir: str, only: set[str] | None) -> None:
        """Visit the entries of one folder (`rel_dir` is "" or ends with "/")."""
        try:
            it = os.scandir(abs_dir)
        except (FileNotFoundError, NotADirectoryError):
            return  # gone: its indexed files are deletion candidates
        except OSError as exc:
            self.protected.append(rel_dir)
            self.skip(rel_dir or ".", SkipReason.UNREADABLE, f"cannot read the folder: {exc}")
            return
        known_pop = self.known.pop
        bad_chars = BAD_NAME_CHARS.search
        verify = self.verify
        quiet = 0
        with it:
            for entry in it:
                name = entry.name
                if name.startswith(TEMP_PREFIX):
                    self.temp_file(entry, rel_dir)
                    continue
                if only is not None and fold(name) not in only:
                    continue
                if bad_chars(name) or (not name.isascii() and name_problem(name)):
                    self.skip(rel_dir + name, SkipReason.BAD_NAME, name_problem(name) or "")
                    continue
                try:
                    if name.isascii() or unicodedata.is_normalized("NFC", name):
                        st = entry.stat(follow_symlinks=False)
                        abs_path = entry.path
                    else:
                        fixed = self.fix_name(abs_dir, rel_dir, name)
                        if fixed is None:
                            continue
                        name = fixed
                        abs_path = os.path.join(abs_dir, name)
                        st = os.lstat(abs_path)
                except FileNotFoundError:
                    continue  # vanished between listing and stat
                except OSError as exc:
                    self.protected.append(rel_dir + name)
                    self.skip(rel_dir + name, SkipReason.UNREADABLE, str(exc))
                    continue
                rel = rel_dir + name
                if S_ISREG(st.st_mode):
                    # the quiet path, inlined: an indexed file whose stat did not change
                    old = known_pop(rel, None)
                    if old is not None:
                        ino = st.st_ino
                        if ino >= _I63 or ino < 0:
                            ino = inode_key(ino)
                        if old == (st.st_mtime_ns, st.st_size, ino, st.st_ctime_ns) and not (
                            verify and rel in verify
                        ):
                            quiet += 1
                            continue
                    self.file(abs_path, rel, st, old)
                else:
                    self.other(abs_path, rel, st)
        self.res.files += quiet

    def temp_file(self, entry: os.DirEntry[str], rel_dir: str) -> None:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            return
        if stat_mod.S_ISREG(st.st_mode) and self.now_ns - st.st_mtime_ns > STALE_TEMP_NS:
            self.res.stale_temp.append(rel_dir + entry.name)

    def fix_name(self, abs_dir: str, rel_dir: str, name: str) -> str | None:
        """The NFC name a non-NFC one maps to on this file system; None when the entry is left
        out of this scan (skipped, or listed in `repairs` to be renamed first)."""
        nfc = unicodedata.normalize("NFC", name)
        src, dst = os.path.join(abs_dir, name), os.path.join(abs_dir, nfc)
        try:
            st_dst = os.lstat(dst)
        except FileNotFoundError:
            st_dst = None
        if st_dst is not None:
            st_src = os.lstat(src)
            if (st_src.st_dev, st_src.st_ino) == (st_dst.st_dev, st_dst.st_ino):
                return nfc  # the file system maps both spellings to one file
            if not self.fix_names or not stat_mod.S_ISREG(st_src.st_mode):
                self.skip(
                    rel_dir + name,
                    SkipReason.NAME_COLLISION,
                    f"another entry is named {rel_dir + nfc!r} in composed Unicode form",
                )
                return None
            # twins: both spellings hold a file here; keep both, the NFD one under a new name
            twin = _twin_name(self.root, rel_dir + nfc)
            self.repair(NameRepair(rel_dir + name, twin, twin_of=rel_dir + nfc))
            return None
        if not self.fix_names:
            self.skip(rel_dir + name, SkipReason.BAD_NAME, "name is not in Unicode NFC form")
            return None
        self.repair(NameRepair(rel_dir + name, rel_dir + nfc))
        return None

    def repair(self, fix: NameRepair) -> None:
        """List a rename for the round to make first; until then the indexed files under either
        name are not deletions."""
        self.res.repairs.append(fix)
        for rel in (fix.old, fix.new):
            self.known.pop(rel, None)
            self.protected += [rel, rel + "/"]

    def other(self, abs_path: str, rel: str, st: os.stat_result) -> None:
        """A folder (walked unless ignored), a link or a special file (skipped)."""
        mode = st.st_mode
        if stat_mod.S_ISDIR(mode):
            if not self.ignore.is_ignored(rel, is_dir=True):
                self.stack.append((abs_path, rel + "/"))
        else:
            # an indexed file (or folder) replaced by a link is kept elsewhere, not deleted
            self.known.pop(rel, None)
            self.protected.append(rel + "/")
            if self.ignore.is_ignored(rel):
                return
            if stat_mod.S_ISLNK(mode):
                self.skip(rel, SkipReason.SYMLINK, "symbolic links are not synced")
            else:
                self.skip(rel, SkipReason.SPECIAL, "not a regular file")

    def file(self, abs_path: str, rel: str, st: os.stat_result, old: StatKey | None) -> None:
        """A regular file that is new or whose stat changed (already popped from `known`)."""
        if self.ignore.is_ignored(rel):
            return
        self.res.files += 1
        if self.max_bytes is not None and st.st_size > self.max_bytes:
            limit = _megabytes(self.max_bytes)
            why = f"{_megabytes(st.st_size)} is over the sync size limit of {limit}"
            self.skip(rel, SkipReason.TOO_LARGE, why)
            return
        if rel in self.busy:  # open for writing, the watcher says: wait for it to be closed
            self.res.unstable.append(rel)
            self.res.busy.append(rel)
            return
        age = self.now_ns - st.st_mtime_ns
        settle = settle_for(st.st_size, self.settle_ns)
        if settle and 0 <= age < settle:
            self.res.unstable.append(rel)
            left = settle - age
            if not self.res.retry_in_ns or left < self.res.retry_in_ns:
                self.res.retry_in_ns = left
            return
        try:
            h = hash_file(abs_path, on_hash=self.on_hash)
        except FileNotFoundError:
            if old is None:
                self.res.files -= 1
            else:
                self.res.unstable.append(rel)  # maybe an editor's delete-and-recreate
            return
        except (FileUnstable, NotRegularFile):
            self.res.unstable.append(rel)
            return
        except OSError as exc:
            self.skip(rel, SkipReason.UNREADABLE, str(exc))
            return
        self.res.hashed += 1
        if old is None:
            self.created.append((rel, h))
            return
        prev = self.index.files.get(rel)
        if prev is not None and not prev.deleted and prev.sha256 == h.state.sha256:
            self.res.touched.append((rel, h.state.stat_key()))
        else:
            self.modified.append((rel, h))

    # ----------------------------------------------------------------- results

    def deleted_paths(self) -> list[str]:
        out = []
        for rel in self.known:
            if any(_covers(p, rel) for p in self.protected):
                continue
            if self.ignore.is_ignored(rel):
                continue
            out.append(rel)
        return sorted(out)

    def edited_source(self, rel: str, h: Hashed, deleted: list[str]) -> str | None:
        """A deleted note this new one was renamed from and then edited: same name in another
        folder, or same folder under another name, and at least half its lines in common with
        the version last synced (git's rename detection, restricted to likely candidates)."""
        if not h.is_text or h.state.size > SIMILAR_MAX_BYTES:
            return None
        folder, _, name = rel.rpartition("/")
        cands = [d for d in deleted if d.rpartition("/")[2] == name]
        cands += [d for d in deleted if d.rpartition("/")[0] == folder and d not in cands]
        if not cands:
            return None
        try:
            with open(os.path.join(self.root, rel), "rb") as f:
                new = f.read(SIMILAR_MAX_BYTES + 1).decode("utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return None
        import difflib  # only for a rename that also edited the note: not on a quiet scan

        best, best_ratio = None, SIMILAR_RATIO
        for cand in cands[:SIMILAR_CANDIDATES]:
            old = self.index.bases.get(cand)
            if old is None:
                continue
            ratio = difflib.SequenceMatcher(
                None, old.decode("utf-8", "replace").splitlines(), new, autojunk=False
            ).ratio()
            if ratio >= best_ratio:
                best, best_ratio = cand, ratio
        return best

    def classify(self) -> None:
        deleted = self.deleted_paths()
        by_content: dict[tuple[str, int], list[str]] = {}
        old_sha: dict[str, str] = {}
        for rel in deleted:
            e = self.index.files.get(rel)
            if e is not None and e.size > 0 and e.sha256:
                by_content.setdefault((e.sha256, e.size), []).append(rel)
                old_sha[rel] = e.sha256
        changes: list[LocalChange] = []
        renamed_from: set[str] = set()
        unmatched: list[tuple[str, Hashed]] = []
        for rel, h in sorted(self.created, key=lambda x: x[0]):
            cands = by_content.get((h.state.sha256, h.state.size))
            if cands:
                src = _best_source(rel, cands)
                cands.remove(src)
                renamed_from.add(src)
                changes.append(LocalChange(ChangeKind.RENAMED, rel, h.state, h.is_text, src))
            else:
                unmatched.append((rel, h))
        left = [d for d in deleted if d not in renamed_from]
        for rel, h in unmatched:
            similar = self.edited_source(rel, h, left) if left else None
            if similar is not None:
                left.remove(similar)
                renamed_from.add(similar)
                changes.append(LocalChange(ChangeKind.RENAMED, rel, h.state, h.is_text, similar))
            else:
                changes.append(LocalChange(ChangeKind.CREATED, rel, h.state, h.is_text))
        for rel, h in sorted(self.modified, key=lambda x: x[0]):
            changes.append(LocalChange(ChangeKind.MODIFIED, rel, h.state, h.is_text))
        for rel in deleted:
            if rel not in renamed_from:
                changes.append(LocalChange(ChangeKind.DELETED, rel))
        self.res.changed = changes


def _covers(protected: str, rel: str) -> bool:
    """Whether a protected entry (a file path, a folder prefix ending in "/", or "") covers rel."""
    if not protected or protected.endswith("/"):
        return rel.startswith(protected)
    return rel == protected


def _best_source(new: str, candidates: list[str]) -> str:
    """Among deleted paths with the new file's content, the likeliest origin of a rename."""
    key = fold(new)
    base = new.rsplit("/", 1)[-1]
    folder = new.rsplit("/", 1)[0] if "/" in new else ""
    for pick in (
        lambda c: fold(c) == key,  # case-only rename
        lambda c: c.rsplit("/", 1)[-1] == base,  # moved to another folder
        lambda c: (c.rsplit("/", 1)[0] if "/" in c else "") == folder,  # renamed in place
    ):
        for c in candidates:
            if pick(c):
                return c
    return candidates[0]


def _twin_name(root: str, nfc: str) -> str:
    """A free, visible name for the NFD twin of the file at `nfc` (a rare case: not on a quiet
    scan, so `conflicts` is imported only here)."""
    from companion.sync.round.conflicts import unicode_twin_name

    return unicode_twin_name(nfc, lambda c: os.path.lexists(root + "/" + c))


def repair_names(
    root: str | os.PathLike[str], repairs: Iterable[NameRepair]
) -> tuple[list[NameRepair], list[Skipped]]:
    """Carry out the renames a scan listed (the round's step after the scan): each name not in
    NFC takes its NFC form, or a twin's visible new name. Returns the renames made and, as
    skipped files, those that failed. A rename never replaces a file: when one took the NFC
    name since the scan, the next scan finds twins."""
    root_s = os.path.realpath(root)
    done: list[NameRepair] = []
    failed: list[Skipped] = []
    for fix in repairs:
        src, dst = os.path.join(root_s, fix.old), os.path.join(root_s, fix.new)
        try:
            if os.path.lexists(dst) and not os.path.samefile(src, dst):
                if not fix.twin_of:
                    continue
                fix = NameRepair(fix.old, _twin_name(root_s, fix.twin_of), fix.twin_of)
                dst = os.path.join(root_s, fix.new)
            os.rename(src, dst)
        except FileNotFoundError:
            continue  # gone since the scan
        except OSError as exc:
            failed.append(Skipped(fix.old, SkipReason.UNREADABLE, str(exc)))
            continue
        if fix.twin_of:
            log.warning("renamed %r (decomposed Unicode) to %r: %r exists too", fix.twin_of,
                        fix.new, fix.twin_of)  # fmt: skip
        else:
            log.info("renamed %r to its composed Unicode (NFC) form", fix.new)
        done.append(fix)
    return done, failed


def _top_targets(paths: Iterable[str]) -> list[str]:
    """Valid, normalised targets with those inside another target dropped."""
    norm: set[str] = set()
    for p in paths:
        try:
            norm.add(normalize(p))
        except UnsafePath:
            continue
    out: list[str] = []
    for p in sorted(norm):
        if out and p.startswith(out[-1] + "/"):
            continue
        out.append(p)
    return out


def scan(
    root: str | os.PathLike[str],
    index: SyncIndex,
    ignore: IgnoreRules,
    *,
    paths: Iterable[str] | None = None,
    max_file_bytes: int | None = None,
    settle_ns: int = DEFAULT_SETTLE_NS,
    fix_names: bool = False,
    on_hash: Callable[[str], None] | None = None,
    clock: Callable[[], int] = time.time_ns,
    busy: Container[str] = (),
    verify: Iterable[str] = (),
) -> ScanResult:
    """Compare the vault at `root` with `index`; see the module docstring for the rules.

    With `paths` (vault-relative files or folders, e.g. a watcher batch) only those are looked
    at, each with its case and Unicode variants; otherwise the whole vault. `on_hash` is called
    with each file path before it is hashed (tests count calls). Nothing is written: touched
    files (same content, new stat) are listed in `touched`, and with `fix_names` the non-NFC
    names to rename in `repairs` (`repair_names`; without it they are skipped). `clock` (ns
    since the epoch, like mtimes) decides which files are too recent to be complete; `busy`
    names files a watcher saw opened for writing.
    """
    t0 = time.perf_counter()
    root_s = os.path.realpath(root)
    if not os.path.isdir(root_s):
        raise VaultMissing(
            f"vault folder missing: {os.fspath(root)} is not there (is the drive mounted?); "
            "nothing was synced",
            root,
        )
    ignore.reload_if_changed()
    s = _Scan(
        root_s,
        index,
        ignore,
        max_file_bytes=max_file_bytes,
        settle_ns=settle_ns,
        fix_names=fix_names,
        on_hash=on_hash,
        now_ns=clock(),
        busy=busy,
        verify=set(verify),
    )
    targets = None if paths is None else _top_targets(paths)
    if targets is None:
        s.known = index.files.live_stats()
        s.list_dir(root_s, "", None)
        s.run_stack()
    else:
        s.res.partial = True
        groups: dict[str, set[str]] = {}
        for t in targets:
            s.known.update(index.files.live_stats(prefix=t + "/"))
            s.known.update(index.files.live_stats(fold_key=fold(t)))
            parent, _, name = t.rpartition("/")
            groups.setdefault(parent, set()).add(fold(name))
        for parent, names in sorted(groups.items()):
            if parent:
                if s.ignore.is_ignored(parent, is_dir=True):
                    continue
                try:
                    abs_parent = str(resolve_inside(root_s, parent))
                except UnsafePath as exc:
                    s.protected.append(parent + "/")
                    s.skip(parent, SkipReason.SYMLINK, str(exc))
                    continue
            else:
                abs_parent = root_s
            s.list_dir(abs_parent, parent + "/" if parent else "", names)
            s.run_stack()
    s.classify()
    s.res.elapsed_s = time.perf_counter() - t0
    return s.res
