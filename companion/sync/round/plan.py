"""The planner: what a round must do, decided from the local scan, the remote changes and the
index. Pure: it reads the index through `IndexView` and touches no file and no network.

A round runs scan -> plan -> execute -> record. This module is the plan, in four parts, each a
function from what is known to a list of typed steps (table-tested case by case in
`tests/test_sync_plan.py`); `pull.py`, `apply.py` and `push.py` execute the steps and record
them in the index.

1. **Admission** (`plan_admission`): each verified remote change is queued in the inbox, held
   for the person (on a human device, an agent's change to the sync rules, the companion's
   settings, an Obsidian config folder, a script, an executable bit or a note holding code a
   plugin runs, or a change outside the agent's scope: `HoldPolicy`; a held rename's
   tombstone waits with it: `hold_rename_sources`), or skipped (already here, already
   queued, already held at that revision, ignored); a record that failed verification, or
   names no vault path (absolute, `..`), quarantines its file: listed by `status`, `sync`
   exits 1, never a silent skip.
2. **Decisions** (`plan_decisions`) the person recorded on held and quarantined files, and the
   **resync** after a relay restored from a backup (`plan_resync`: renumber what the relay
   holds, offer again what it lost, and reconcile what both changed, `Diverged`).
3. **Apply** (`plan_apply`): each queued remote change against the local scan:

   - only the remote side changed: `Download`, `RemoveHere`, or `MoveHere` for a rename (the
     same inode, so editors keep their place);
   - both sides changed: `Reconcile` (the conflict rules of `conflicts.resolve`);
   - **a rename racing an edit**: renamed there and edited here (`FollowRemoteRename`), or
     renamed here and edited there (`FollowLocalRename`): the edit follows the rename, into the
     new path, merged when both changed, and the old path stays gone;
   - a file being written here: `Wait` (next pass); a case collision on a case-insensitive
     disk: `CaseCollision`; a change this device already holds: `Discard`.

   And **a stale save**: a local save that lands within `STALE_SAVE_WINDOW_NS` after a remote
   change replaced the file (`StaleSave`): the editor may have written a buffer read before the
   change arrived, so it is checked against the replaced version (`is_new_edit`): a save that
   holds the change just applied is a new edit, pushed as it is, however close to that change;
   one that drops it is reconciled three-way against the replaced version (a merge, else a
   conflict copy), never silently pushed.
4. **Push** (`plan_push`): each remaining local change becomes an `Upload` or a `Tombstone`
   (renames as the two together); deletions beyond the mass-deletion ratio are held back;
   changes to held or quarantined files wait for the person's decision.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from companion.sync.local.filestate import FileState
from companion.sync.local.pathsafe import UnsafePath, fold, normalize
from companion.sync.remote.vault import HUMAN, Refused, RemoteChange
from companion.sync.round.guard import is_mass_delete
from companion.sync.round.holds import OBSIDIAN_DIR, HoldPolicy, config_folders
from companion.sync.round.merge import derives_from
from companion.sync.round.model import Local, entry_state
from companion.sync.round.scanner import ChangeKind
from companion.sync.state.applied import AppliedRow
from companion.sync.state.files import Entry
from companion.sync.state.held import HeldRow
from companion.sync.state.quarantine import QuarantineRow

STALE_SAVE_WINDOW_NS = 10 * 1_000_000_000  # a save this soon after an apply may be stale


class IndexView(Protocol):
    """What the planner reads of the index (the index's `files` store, or a dict in the tests)."""

    def get(self, path: str) -> Entry | None: ...

    def paths_with_fold(self, key: str) -> list[str]: ...


@dataclass(frozen=True)
class Incoming:
    """One queued remote change: its inbox row and its verified record."""

    row_id: int
    path: str
    change: RemoteChange


# ------------------------------------------------------------------------------ 1. admission


@dataclass(frozen=True)
class Enqueue:
    path: str
    change: RemoteChange


@dataclass(frozen=True)
class Hold:
    path: str
    change: RemoteChange
    reason: str


@dataclass(frozen=True)
class Skip:
    what: str  # the path
    why: str  # "have", "queued", "held", "ignored"
    detail: str = ""


@dataclass
class Admission:
    """Where each pulled change goes. `release` lists held paths a newer, admissible change
    replaces; `healed` the file ids whose newest record verified (out of quarantine)."""

    enqueue: list[Enqueue] = field(default_factory=list)
    hold: list[Hold] = field(default_factory=list)
    skip: list[Skip] = field(default_factory=list)
    quarantine: list[Refused] = field(default_factory=list)
    release: list[str] = field(default_factory=list)
    healed: list[str] = field(default_factory=list)


def safe_path(change: RemoteChange) -> str | UnsafePath:
    try:
        return normalize(change.meta.path)
    except UnsafePath as exc:
        return exc


def plan_admission(
    changes: Iterable[RemoteChange],
    refused: Iterable[Refused],
    view: IndexView,
    *,
    queued: Mapping[str, int],
    held: Mapping[str, int],
    ignored: Callable[[str], bool],
    holds: HoldPolicy,
    known: Iterable[str] = (),
    contents: Mapping[str, bytes] | None = None,
) -> Admission:
    """Admit the newest verified change of each file (`changes` in relay order).

    `queued` and `held` give the revision of each path in the inbox and held for the person: a
    change at the very revision held is skipped ("held": that row is this change, waiting for
    the person, whose recorded decision must not be replaced by the same change held again);
    an older or a newer one is admitted as usual (a newer admissible one releases the hold).

    For the hold rules (`HoldPolicy`): `known` lists the vault's (and the held) files in
    top-level hidden folders (with the incoming paths, they tell which folders have Obsidian's
    config shape), `contents` the content of each agent-written note, by SHA-256
    (`HoldPolicy.needs_content`; `b""` for one known to hold no code, see
    `Puller.note_contents`; one missing is held as unchecked)."""
    newest: dict[str, RemoteChange] = {}
    for ch in changes:
        newest[ch.file_id] = ch
    config_dirs = (
        config_folders([*known, *(ch.path for ch in newest.values())])
        if holds.active
        else frozenset()
    )
    out = Admission(quarantine=list(refused))
    by_path: dict[str, Enqueue | Hold] = {}
    for ch in newest.values():
        path = safe_path(ch)
        if isinstance(path, UnsafePath):  # a malformed record: listed, never a silent skip
            out.quarantine.append(Refused(
                ch.file_id, ch.rev, ch.seq, f"its path is not a vault path: {path}",
                ch.device_id, ch.author_name,
            ))  # fmt: skip
            continue
        out.healed.append(ch.file_id)
        entry = view.get(path)
        if entry is not None and ch.rev <= entry.rev:
            out.skip.append(Skip(path, "have"))  # our own commit, or already applied
            continue
        if ch.rev <= queued.get(path, 0):
            out.skip.append(Skip(path, "queued"))
            continue
        if ch.rev == held.get(path):
            out.skip.append(Skip(path, "held"))
            continue
        if ignored(path):
            out.skip.append(Skip(path, "ignored"))
            continue
        by_path[path] = admit_head(
            path, ch, holds, config_dirs, (contents or {}).get(ch.meta.sha256), view
        )
    hold_rename_sources(by_path)
    out.enqueue = [s for s in by_path.values() if isinstance(s, Enqueue)]
    out.hold = [s for s in by_path.values() if isinstance(s, Hold)]
    out.release = sorted(set(held) & {s.path for s in out.enqueue})
    return out


RENAME_HELD = "is the old name of a held rename to {new}"


def hold_rename_sources(by_path: dict[str, Enqueue | Hold]) -> None:
    """A held rename's tombstone waits with it: the same device's deletion of the path it was
    renamed from is held too (else the file would leave its old place here while its new one
    waits, and refusing the rename would lose it everywhere)."""
    for step in list(by_path.values()):
        if not isinstance(step, Hold):
            continue
        src = _rename_source(step.change)
        old = by_path.get(src) if src else None
        if (
            isinstance(old, Enqueue)
            and old.change.deleted
            and old.change.device_id == step.change.device_id
        ):
            by_path[old.path] = Hold(old.path, old.change, RENAME_HELD.format(new=step.path))


def admit_head(
    path: str,
    head: RemoteChange,
    holds: HoldPolicy,
    config_dirs: Collection[str] = frozenset({OBSIDIAN_DIR}),
    content: bytes | None = None,
    view: IndexView | None = None,
) -> Enqueue | Hold:
    """A head that beat one of our commits (or any pulled change): into the inbox, or held.
    `view` tells whether this device already has the head's exact bytes (at its path, or at
    the path it was renamed from): then its content brings nothing new to check."""
    unchanged = False
    if view is not None and not head.deleted:
        for p in (path, _rename_source(head)):
            entry = view.get(p) if p else None
            if entry is not None and not entry.deleted and entry.sha256 == head.meta.sha256:
                unchanged = True
    reason = holds.reason(head, config_dirs, content, unchanged=unchanged)
    return Enqueue(path, head) if reason is None else Hold(path, head, reason)


# ------------------------------------------------------------------------------ 2. decisions


@dataclass(frozen=True)
class AcceptHeld:
    row: HeldRow


@dataclass(frozen=True)
class RefuseHeld:
    row: HeldRow


@dataclass(frozen=True)
class Supersede:
    row: QuarantineRow


@dataclass(frozen=True)
class Dismiss:
    row: QuarantineRow


Decision = AcceptHeld | RefuseHeld | Supersede | Dismiss


def plan_decisions(
    held: Iterable[HeldRow], quarantined: Iterable[QuarantineRow], device_kind: str
) -> list[Decision]:
    """The person's recorded decisions, in order: held changes, then quarantined files. A
    supersede needs a known path and a human device; otherwise it only forgets the report."""
    out: list[Decision] = []
    for h in held:
        if h.decision == "accept":
            out.append(AcceptHeld(h))
        elif h.decision == "refuse":
            out.append(RefuseHeld(h))
    for q in quarantined:
        if q.decision == "supersede" and q.path and device_kind == HUMAN:
            out.append(Supersede(q))
        elif q.decision:
            out.append(Dismiss(q))
    return out


@dataclass(frozen=True)
class Renumber:
    """The relay holds this device's version (or both lost the file) at another revision."""

    entry: Entry
    rev: int


@dataclass(frozen=True)
class Reoffer:
    """The relay lost this device's version: commit it again on top of `relay_rev`."""

    entry: Entry
    relay_rev: int


@dataclass(frozen=True)
class Diverged:
    """The relay holds another version at this device's very revision: committed on the
    restored relay by another device while the restore lost this device's version (or its
    deletion), maybe edited again since (the head). Neither derives from the other, so it is a
    two-sided change: the relay's head is queued against this device's version and the
    ordinary apply decides (`Reconcile`, `conflicts.resolve`), with no common version (R25:
    the one before the lost edit is not known for certain, so it is never guessed); the
    result is committed on top of `relay_rev`.
    """

    entry: Entry
    relay_rev: int


def _known(entry: Entry) -> bool:
    """Whether this device knows which version it synced ("": a re-offer still pending)."""
    return entry.deleted or bool(entry.sha256)


def _other(entry: Entry, ch: RemoteChange) -> bool:
    """Whether the relay's record `ch`, at this device's revision, is another version."""
    if entry.deleted or ch.deleted:
        return entry.deleted != ch.deleted
    return ch.meta.sha256 != entry.sha256


def resync_checks(entries: Iterable[Entry], heads: Mapping[str, RemoteChange]) -> list[str]:
    """The paths whose relay record at this device's revision the resync must read: a live
    file the relay's head is newer than and holds other bytes (the same bytes lose nothing).
    That record is this device's version when the head descends from it; another one when the
    restore lost it and others committed over."""
    out = []
    for e in entries:
        h = heads.get(e.path)
        if e.deleted or not _known(e) or h is None or h.rev <= e.rev:
            continue
        if h.deleted or h.meta.sha256 != e.sha256:
            out.append(e.path)
    return out


def plan_resync(
    entries: Iterable[Entry],
    heads: Mapping[str, RemoteChange],
    at_rev: Mapping[str, RemoteChange] | None = None,
) -> list[Renumber | Reoffer | Diverged]:
    """After a relay restored from a backup: for each file this device synced, compare with the
    head the relay now has (and, for the paths `resync_checks` names, `at_rev`: the relay's
    record at this device's revision, where it has one that opens).

    Newer there: applied as usual (no step), unless the relay's record at this device's
    revision is another version (`Diverged`). The same: renumbered. A live head at this
    device's very revision with other bytes (or against this device's deletion): `Diverged`,
    both changed the file. Otherwise the relay lost this device's version (an older head may
    be this device's own past version): offered again. Nothing older than what this device
    holds is ever applied, so a relay faking a restore cannot roll a file back: at most it
    makes a two-sided change of records it really holds (a conflict copy, never a silent
    loss)."""
    out: list[Renumber | Reoffer | Diverged] = []
    for entry in entries:
        ch = heads.get(entry.path)
        relay_rev = ch.rev if ch is not None else 0
        if ch is not None and ch.rev > entry.rev:
            was = (at_rev or {}).get(entry.path)
            if was is not None and was.rev == entry.rev and _known(entry) and _other(entry, was):
                out.append(Diverged(entry, relay_rev))
            continue
        same = (
            ch is not None and not ch.deleted and not entry.deleted
            and ch.meta.sha256 == entry.sha256
        )  # fmt: skip
        gone = ch is None or ch.deleted
        if same or (entry.deleted and gone):
            if relay_rev != entry.rev:
                out.append(Renumber(entry, relay_rev))
            continue
        if ch is not None and not ch.deleted and ch.rev == entry.rev and _known(entry):
            out.append(Diverged(entry, relay_rev))
            continue
        out.append(Reoffer(entry, relay_rev))
    return out


def cursor_after_own_commits(cursor: int, seqs: Iterable[int]) -> int:
    """The change-feed cursor after this device's commits were given sequence numbers `seqs`.

    A relay numbers a vault's records one by one, so when ours fill every number after the
    cursor, nothing of anyone else's lies in between and listing them back would only return
    what this device already recorded: the cursor moves past them. Any number missing (another
    device's commit, a refused record of ours) leaves the cursor where it is, and the next pull
    reads the feed as usual. A relay that lies here can only hide records, which it can do
    anyway by leaving them out of the feed.
    """
    ours = sorted({s for s in seqs if s > cursor})
    if not ours or ours[-1] - cursor != len(ours):
        return cursor
    return ours[-1]


# ------------------------------------------------------------------------------ 3. apply


@dataclass(frozen=True)
class Discard:
    """A queued change this device already holds (e.g. its own commit): drop it."""

    item: Incoming


@dataclass(frozen=True)
class MoveHere:
    """A remote rename of a file unchanged here: rename it (same inode)."""

    old: str
    new: str
    gone: Incoming  # the tombstone of `old`
    came: Incoming  # the record of `new` (rename_from `old`)
    expected: FileState


@dataclass(frozen=True)
class RemoveHere:
    item: Incoming
    expected: FileState | None  # None: nothing here (only the index learns the deletion)


@dataclass(frozen=True)
class Download:
    item: Incoming
    expected: FileState | None
    bulk: bool  # may be written together with others (`bulkwrite`)


@dataclass(frozen=True)
class Reconcile:
    """Changed here and remotely: `conflicts.resolve` decides once the contents are known."""

    item: Incoming
    local: Local


@dataclass(frozen=True)
class FollowRemoteRename:
    """Renamed there (`old` -> `new`), edited here at `old`: the edit goes to `new`, merged
    with the remote version against the last common version of `old`."""

    old: str
    new: str
    gone: Incoming
    came: Incoming
    local: Local


@dataclass(frozen=True)
class FollowLocalRename:
    """Renamed here (`old` -> `new`, not pushed yet), edited there at `old`: the remote edit
    is reconciled into `new`; the rename is pushed again on top of the remote revision."""

    old: str
    new: str
    item: Incoming  # the remote edit of `old`
    local_new: Local


@dataclass(frozen=True)
class CaseCollision:
    """A new remote file whose name differs only by case from `other`, on a disk that cannot
    hold both: kept under another name, which then replaces it everywhere."""

    item: Incoming
    other: str


@dataclass(frozen=True)
class Wait:
    """Being written here: try again in the next pass."""

    path: str
    item: Incoming | None


@dataclass(frozen=True)
class StaleSave:
    """A local save within the window after a remote change replaced the file: reconcile it
    against the replaced version if it derives from it (else it is pushed as it is)."""

    local: Local
    applied: AppliedRow


def is_new_edit(prev: bytes | None, head: bytes, saved: bytes) -> bool:
    """The stale-save rule, on the contents: whether a save in the window after `head`
    replaced `prev` is a new edit of `head` (pushed as it is) rather than a stale one. Only a
    save that drops the change just applied is stale; one that holds it (`head` itself, a line
    `head` added, the same deletion) is new, even when it edits the line right next to that
    change (`merge.derives_from`). Without `prev` (too large to keep) nothing says otherwise."""
    return prev is None or not derives_from(prev, head, saved)


ApplyStep = (
    Discard | MoveHere | RemoveHere | Download | Reconcile | FollowRemoteRename
    | FollowLocalRename | CaseCollision | Wait | StaleSave
)  # fmt: skip


@dataclass
class ApplyPlan:
    """The steps of a pass (in the order to run them) and the local changes left to push."""

    steps: list[ApplyStep] = field(default_factory=list)
    push: dict[str, Local] = field(default_factory=dict)


def _rename_source(ch: RemoteChange) -> str | None:
    old = ch.meta.rename_from
    if ch.deleted or not old:
        return None
    try:
        return normalize(old)
    except UnsafePath:
        return None


def plan_apply(
    inbox: Mapping[str, Incoming],
    local: Mapping[str, Local],
    view: IndexView,
    *,
    unstable: Iterable[str] = (),
    applied: Mapping[str, AppliedRow] | None = None,
    case_insensitive: bool = False,
    agent_twins: bool = False,
    window_ns: int = STALE_SAVE_WINDOW_NS,
) -> ApplyPlan:
    """Plan one pass; see the module docstring. `local` holds the scan's changes (renames as
    two halves), `unstable` the files being written, `applied` the recent applies by path.
    `agent_twins` (a person's device): a new file from an agent whose name differs from
    another's only by case is a case collision on any disk, never a second note."""
    plan = ApplyPlan()
    todo = dict(inbox)
    left = dict(local)
    busy = set(unstable)
    steps: list[ApplyStep] = []

    for path, item in sorted(todo.items()):
        entry = view.get(path)
        if entry is not None and item.change.rev <= entry.rev:
            steps.append(Discard(item))
            del todo[path]

    # remote renames: a tombstone of `old` with a record of `new` naming it
    for new, came in sorted(todo.items()):
        old = _rename_source(came.change)
        if old is None or new not in todo or old not in todo or not todo[old].change.deleted:
            continue
        gone = todo[old]
        if {old, new} & busy:
            # one half being written here: both wait, so next pass meets the rename whole (an
            # edit then follows it); the new half alone would land beside the old name's edit
            for half, item in ((old, gone), (new, came)):
                steps.append(Wait(half, item))
                left.pop(half, None)
                del todo[half]
            continue
        old_entry, new_entry = view.get(old), view.get(new)
        new_free = (new_entry is None or new_entry.deleted) and not (
            case_insensitive and any(p != old for p in view.paths_with_fold(fold(new)))
        )
        lo = left.get(old)
        if new in left or not new_free:
            continue  # something at `new` here: resolved there, like any two-sided change
        if lo is not None and lo.kind is ChangeKind.MODIFIED:
            steps.append(FollowRemoteRename(old, new, gone, came, lo))
            del left[old], todo[old], todo[new]
            continue
        if lo is not None:
            continue  # deleted or renamed here too: both deletions meet below
        expected = entry_state(old_entry)
        if expected is None or expected.sha256 != came.change.meta.sha256:
            continue
        steps.append(MoveHere(old, new, gone, came, expected))
        del todo[old], todo[new]

    # renamed here, edited there: the edit follows the rename
    for path, item in sorted(todo.items()):
        lo = left.get(path)
        if item.change.deleted or lo is None or lo.kind is not ChangeKind.DELETED:
            continue
        target = lo.rename_to
        ln = left.get(target) if target else None
        if target is None or ln is None or target in todo or target in busy:
            continue
        steps.append(FollowLocalRename(path, target, item, ln))
        del left[path], left[target], todo[path]

    deletions = sorted(p for p, it in todo.items() if it.change.deleted)
    writes = sorted(p for p, it in todo.items() if not it.change.deleted)
    new_folds: dict[str, str] = {}  # case-insensitive disk: new files planned in this pass
    for path in [*deletions, *writes]:
        item = todo[path]
        if path in busy:
            steps.append(Wait(path, item))
            left.pop(path, None)
            continue
        lc = left.pop(path, None)
        if lc is not None:
            steps.append(Reconcile(item, lc))
            continue
        entry = view.get(path)
        expected = entry_state(entry)
        if item.change.deleted:
            steps.append(RemoveHere(item, expected))
            continue
        if (case_insensitive or agent_twins) and expected is None:
            key = fold(path)
            others = [p for p in view.paths_with_fold(key) if p != path]
            if key in new_folds:
                others.append(new_folds[key])
            if others and (case_insensitive or item.change.author_kind != HUMAN):
                steps.append(CaseCollision(item, others[0]))
                continue
            new_folds.setdefault(key, path)
        steps.append(Download(item, expected, bulk=not case_insensitive))

    for path, lc in sorted(left.items()):
        rec = (applied or {}).get(path)
        if rec is None or lc.kind is not ChangeKind.MODIFIED or lc.state is None:
            continue
        if 0 <= lc.state.mtime_ns - rec.applied_ns <= window_ns:
            steps.append(StaleSave(lc, rec))
            del left[path]

    order = (Discard, MoveHere, RemoveHere, FollowRemoteRename, FollowLocalRename, Wait)
    plan.steps = sorted(steps, key=lambda s: next(
        (i for i, kind in enumerate(order) if isinstance(s, kind)), len(order)
    ))  # fmt: skip
    plan.push = left
    return plan


# ------------------------------------------------------------------------------ 4. push


@dataclass(frozen=True)
class Upload:
    """Read, upload and commit a live local file on top of `parent_rev`."""

    local: Local
    parent_rev: int


@dataclass(frozen=True)
class Tombstone:
    """Commit the deletion of `path` on top of `parent_rev` (the old half of a rename when
    `rename_to` is set: committed together with the new half)."""

    path: str
    parent_rev: int
    sha256: str
    rename_to: str | None = None


@dataclass
class PushPlan:
    uploads: list[Upload] = field(default_factory=list)
    tombstones: list[Tombstone] = field(default_factory=list)
    held_deletes: list[str] = field(default_factory=list)  # the mass-deletion guard
    kept_back: list[str] = field(default_factory=list)  # held or quarantined here
    live: int = 0  # live files when the deletions were counted

    @property
    def empty(self) -> bool:
        return not self.uploads and not self.tombstones


def plan_push(
    local: Mapping[str, Local],
    view: IndexView,
    *,
    blocked: Iterable[str] = (),
    live: int,
    mass_delete_ratio: float,
    allow_mass_delete: bool = False,
) -> PushPlan:
    """What to commit of the local changes left after applying (`live`: the index's count of
    live files, for the mass-deletion guard)."""
    plan = PushPlan(live=live)
    todo = dict(local)
    for path in sorted(set(blocked) & set(todo)):
        lc = todo.pop(path)
        if lc.rename_to and lc.rename_to in todo:  # the other half goes as a plain creation
            todo[lc.rename_to] = replace(todo[lc.rename_to], rename_from=None)
        plan.kept_back.append(path)
    deletes = [c.path for c in todo.values() if c.kind is ChangeKind.DELETED and not c.rename_to]
    if deletes and not allow_mass_delete and is_mass_delete(len(deletes), live, mass_delete_ratio):
        plan.held_deletes = sorted(deletes)
    held = set(plan.held_deletes)
    for c in sorted(todo.values(), key=lambda c: c.path):
        if c.path in held:
            continue
        entry = view.get(c.path)
        if c.kind is ChangeKind.DELETED:
            if entry is None or entry.deleted:
                continue  # never reached the relay, or already deleted there
            sha = entry.sha256 if len(entry.sha256) == 64 else ""
            plan.tombstones.append(Tombstone(c.path, entry.rev, sha, c.rename_to))
            continue
        plan.uploads.append(Upload(c, entry.rev if entry is not None else 0))
    return plan
