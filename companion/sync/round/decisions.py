"""The person's decisions on held and quarantined files, recorded now, carried out by a round.

`companion held accept|refuse` and `companion quarantine supersede|dismiss` (and the desktop
app) only *record* a decision in the sync index, which is safe while another process syncs the
same copy (SQLite). The next round of whichever engine owns the copy carries it out first thing,
so a decision never races a round (when `companion watch` or the desktop app owns the copy, the
command asks that engine for the round and waits for it: `sync/service/requests.py`):

- **accept** a held change: it goes into the inbox and is applied like any remote change;
- **refuse** it: the index is told the held revision is the last synced one, with this device's
  file as a local change on top, so the round commits the person's version (or a deletion when
  this device has no such file) over the agent's and every device converges on it;
- **supersede** a quarantined file (human devices only): the same, over the unreadable record,
  so the file heals everywhere;
- **dismiss** a quarantined file this device does not know: forget the report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from companion.errors import CompanionError, InputError
from companion.logs import get_logger
from companion.sync.state.index import SyncIndex
from companion.sync.state.quarantine import QuarantineRow

if TYPE_CHECKING:
    from companion.sync.round.core import Core
    from companion.sync.round.report import RoundReport

HUMAN = "human"

log = get_logger("sync.decisions")

ACCEPT = "accept"
REFUSE = "refuse"
SUPERSEDE = "supersede"
DISMISS = "dismiss"


def record_held(index: SyncIndex, paths: Iterable[str] | None, decision: str) -> list[str]:
    """Record `decision` for the held changes at `paths` (None: all); returns the paths."""
    if decision not in (ACCEPT, REFUSE):
        raise ValueError(decision)
    rows = index.held.rows()
    held = {row.path for row in rows}
    wanted = sorted(held) if paths is None else list(paths)
    unknown = [p for p in wanted if p not in held]
    if unknown:
        raise InputError(f"nothing is held for {unknown[0]!r} (see `companion held list`)")
    # deciding a rename decides its old path too when that waits for it (RENAME_HELD, as the
    # plugin): accepted, the note moves; refused, it stays where it was on every device
    from companion.sync.round.plan import RENAME_HELD

    halves = {RENAME_HELD.format(new=p) for p in wanted}
    wanted += [r.path for r in rows if r.reason in halves and r.path not in wanted]
    for path in wanted:
        index.held.decide(path, decision)
    return wanted


def record_quarantine(
    index: SyncIndex,
    file_id_of: Callable[[str], str],
    targets: Iterable[str],
    decision: str,
    device_kind: str,
) -> list[str]:
    """Record `decision` for quarantined files named by path or by (a prefix of) file id."""
    if decision not in (SUPERSEDE, DISMISS):
        raise ValueError(decision)
    if decision == SUPERSEDE and device_kind != HUMAN:
        raise InputError(
            "only a human device can supersede a quarantined file: run this on the person's "
            "laptop (the file stays quarantined here until then)"
        )
    rows = index.quarantine.rows()
    done = []
    for target in targets:
        row, path = _find_quarantined(rows, file_id_of, target)
        if decision == SUPERSEDE and not path:
            raise InputError(
                f"this device does not know which file {row.file_id[:12]} is: give its path "
                "(`companion quarantine supersede VAULT PATH`), or dismiss it"
            )
        index.quarantine.decide(row.file_id, decision, path)
        done.append(path or row.file_id)
    return done


def _find_quarantined(
    rows: list[QuarantineRow], file_id_of: Callable[[str], str], target: str
) -> tuple[QuarantineRow, str]:
    """The quarantined row `target` names, and its path when known."""
    for row in rows:
        if row.path and row.path == target:
            return row, row.path
    try:
        fid = file_id_of(target)
    except CompanionError:
        fid = ""
    for row in rows:
        if row.file_id == fid:
            return row, target  # the person named a path this device did not know
    prefix = target.lower()
    match = [r for r in rows if len(prefix) >= 8 and r.file_id.startswith(prefix)]
    if len(match) == 1:
        return match[0], match[0].path
    if match:
        raise InputError(f"{target!r} matches several quarantined files; give more of the id")
    raise InputError(f"{target!r} is not quarantined (see `companion quarantine list`)")


def carry_out(core: Core, report: RoundReport) -> set[str]:
    """Carry out every recorded decision (`plan.plan_decisions`); returns the paths they touch."""
    from companion.crypto import TamperDetected
    from companion.sync.round.plan import AcceptHeld, RefuseHeld, Supersede, plan_decisions
    from companion.sync.round.record import take_over

    index = core.index
    touched: set[str] = set()
    for step in plan_decisions(index.held.rows(), index.quarantine.rows(), core.kind):
        if isinstance(step, AcceptHeld | RefuseHeld):
            row = step.row
            try:
                ch = core.remote.open_payload(row.payload)
            except TamperDetected as exc:  # it verified when held; the index was altered since
                log.warning("dropping a held change of %s that no longer verifies: %s",
                            row.path, exc)  # fmt: skip
                index.held.release([row.path])
                continue
            with index.transaction():
                if isinstance(step, AcceptHeld):
                    index.inbox.add([(row.path, row.payload)])
                    log.info("accepted the held change of %s (rev %d)", row.path, row.rev)
                else:
                    take_over(core, row.path, ch.file_id, ch.rev, ch.meta.sha256, ch.deleted)
                    log.info("refused the held change of %s (rev %d): keeping this device's "
                             "version", row.path, row.rev)  # fmt: skip
                index.held.release([row.path])
            report.decided.append(row.path)
            touched.add(row.path)
            continue
        q = step.row
        with index.transaction():
            if isinstance(step, Supersede):
                take_over(core, q.path, q.file_id, q.rev, "", False)
                touched.add(q.path)
                log.info("superseding the quarantined record of %s (rev %d)", q.path, q.rev)
            index.quarantine.release([q.file_id])
        report.decided.append(q.path or q.file_id)
    return touched
