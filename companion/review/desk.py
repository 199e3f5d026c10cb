"""The review as an app shows it (the desktop tray app; Qt-free, called off the GUI thread).

The same items as the note, the plugin and `companion review list`: `listing.items` reads
them from the review note, a change's before and after from the relay's history and who
decided a line from the note's own history. A decision is a tick of the item's line in the
vault's note (`tick`), written atomically: exactly what a tap in Obsidian does. Nothing else
changes until this device's next sync round carries it out (a proposal: the agent's server,
at its round), and writes the outcome on the line, which every device then shows.

Without the relay (paused, offline) the items are read from the note alone (`attested`
False): no diffs, no device that decided; ticking still works and waits for the next round.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from companion.fileio import write_text_atomic
from companion.logs import get_logger
from companion.review import attest
from companion.review import note as notes
from companion.review.listing import Item, counts, items
from companion.review.model import CODES, NAMES, change_id
from companion.review.rounds import Device, note_files

log = get_logger("review.desk")

TICKED, ALREADY, DECIDED, NOT_OFFERED, UNKNOWN = (
    "ticked", "already", "decided", "not_offered", "unknown",
)  # fmt: skip


@dataclass
class View:
    """One review note's items as an app lists them."""

    note: str | None  # vault-relative path of the note (None: no review note yet)
    night: str | None = None
    lang: str = "en"
    items: list[Item] = field(default_factory=list)
    attested: bool = False  # read with the relay's history (diffs, who decided)
    problem: str | None = None  # why the relay's history is missing (its error)
    batch: list[str] = field(default_factory=list)  # the night's batch lines still open

    @property
    def open_counts(self) -> dict[str, int]:
        """Items still waiting for a decision, by kind (change, disagreement, proposal)."""
        return counts(self.items)

    def item(self, item_id: str) -> Item | None:
        return next((it for it in self.items if it.id == item_id), None)


def note_for(root: Path, night: str | None = None) -> str | None:
    """The review note of `night`, or the newest one; None when there is none."""
    files = note_files(Path(root))
    if night is not None:
        files = [f for f in files if f[0] == night]
    return files[-1][1] if files else None


def local_device(root: Path) -> Device:
    """This vault as the review's `Device`, without the relay: enough to read a note's items
    (`items(..., with_history=False)` never touches the relay)."""
    return Device(
        root=Path(root), remote=cast(Any, None), device_id="", name="", kind="human", tz="UTC"
    )


def read(root: Path, rel: str | None, dev: Device | None = None) -> View:
    """The items of note `rel` (None: the newest note): with the relay's history through
    `dev` when given and reachable, else from the note alone (`problem` says why)."""
    root = Path(root)
    rel = rel or note_for(root)
    if rel is None or not (root / rel).is_file():
        return View(None)
    text = (root / rel).read_text(encoding="utf-8")
    front = notes.front_matter(text)
    view = View(rel, front.get("night") or Path(rel).stem, front.get("lang") or "en")
    # each batch line on its own (the listing makes one item of the night's two lines)
    view.batch = [
        NAMES[ln.code]
        for ln in notes.parse_lines(text)
        if ln.id.startswith("n-") and not ln.final and not ln.ticked
    ]
    if dev is not None:
        try:
            view.items = items(dev, rel)
            explain(dev, view)
            view.attested = True
            return view
        except Exception as exc:  # offline, the relay refused: the note alone, and why
            log.info("review: %s read without the relay's history: %s", rel, exc)
            view.problem = str(exc) or type(exc).__name__
    view.items = items(local_device(root), rel, with_history=False)
    return view


def explain(dev: Device, view: View) -> None:
    """What the night's dream report and the agent's MCP log say of each change, attached
    only to changes the relay's history holds (the explanations the note itself prints)."""
    if view.night is None:
        return
    by_path = attest.report_notes(dev.root, view.night, view.lang)
    from_log = attest.log_notes(dev.root, view.lang)
    for it in view.items:
        if it.kind != "change" or it.file is None or it.explanation or it.after is None:
            continue
        lines = list(by_path.get(it.file, []))
        span = _span(dev, it.file, it.id)
        if span is not None:
            lines += [x for x in from_log(span) if x not in lines]
        it.explanation = lines


def _span(dev: Device, path: str, item_id: str) -> attest.Span | None:
    from companion.sync.remote.vault import RemoteChange

    hist = [h for h in dev.remote.history(path) if isinstance(h, RemoteChange)]
    hist.reverse()
    fid = dev.remote.file_id(path)
    for j, last in enumerate(hist):
        for i in range(j, -1, -1):
            if change_id(fid, hist[i].parent_rev, last.rev) == item_id:
                return attest.Span(path, fid, hist[i], last)
    return None


def open_counts(root: Path, rel: str) -> dict[str, int]:
    """What note `rel` still waits for, by kind, from its lines alone (no relay)."""
    return counts(items(local_device(Path(root)), rel, with_history=False))


@dataclass(frozen=True)
class Ticked:
    """What `tick` did: `status` is one of TICKED (the line is ticked now), ALREADY (it was),
    DECIDED (the item was decided already), NOT_OFFERED (no such decision for it), UNKNOWN
    (no line has the id); `note` the note holding the line."""

    status: str
    note: str | None = None
    waiting: str | None = None  # why the round that carries it out did not run at once


def tick(
    root: Path,
    item_id: str,
    decision: str,
    *,
    note: str | None = None,
    night: str | None = None,
    write: Callable[[Path, str], object] = write_text_atomic,
) -> Ticked:
    """Tick the line deciding `item_id` with `decision` (revert, keep, take, apply, drop) in
    the newest note listing it open (or in `note`): the same as ticking it in Obsidian."""
    root = Path(root)
    code = CODES[decision]
    if note is not None:
        files = [note]
    else:
        files = [rel for n, rel in note_files(root) if night is None or n == night]
        files.reverse()
    status = UNKNOWN
    for rel in files:
        path = root / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError):
            continue
        for ln in notes.parse_lines(text):
            if ln.id != item_id:
                continue
            if ln.code != code:
                status = NOT_OFFERED if status == UNKNOWN else status
                continue
            if ln.final:
                status = DECIDED
                continue
            if ln.ticked:
                return Ticked(ALREADY, rel)
            write(path, notes.set_ticked(text, ln.key))
            log.info("review: ticked %s/%s in %s", item_id, ln.code, rel)
            return Ticked(TICKED, rel)
    return Ticked(status)


__all__ = ["Ticked", "View", "note_for", "open_counts", "read", "tick"]
