"""The items of a review and the lines that decide them (pure data, no I/O).

Ids are stable and the same on every device: a change is named by its file id and the
revisions it spans (`c-`), a disagreement by its note and flag line (`k-`), a proposal by the
dream's proposal id (`p-`), a night's batch lines by the night (`n-`). A decision line carries
`` `ID/CODE` `` in its text; the codes are language-neutral letters.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

FOLDER = "review"
FORMAT = 1

REVERT, KEEP, TAKE, APPLY, DROP = "r", "k", "t", "a", "d"
CODES = {"revert": REVERT, "keep": KEEP, "take": TAKE, "apply": APPLY, "drop": DROP}
NAMES = {v: k for k, v in CODES.items()}
# who carries a decision out: the human device that ticked it, or the dream's own device
BY_TICKER = frozenset({REVERT, KEEP, TAKE})
BY_DREAM_DEVICE = frozenset({APPLY, DROP})


def _h(*parts: object) -> str:
    return hashlib.sha256("\0".join(str(p) for p in parts).encode("utf-8")).hexdigest()[:10]


def change_id(file_id: str, from_rev: int, to_rev: int) -> str:
    return f"c-{_h('change', file_id, from_rev, to_rev)}"


def disagreement_id(path: str, flag_line: str) -> str:
    return f"k-{_h('disagreement', path, flag_line.strip())}"


def proposal_item_id(proposal_id: str) -> str:
    return f"p-{_h('proposal', proposal_id)}"


def night_id(night: str) -> str:
    return "n-" + night.replace("-", "")


def note_path(night: str) -> str:
    return f"{FOLDER}/{night}.md"


def is_review_path(path: str) -> bool:
    return path.startswith(FOLDER + "/") and path.endswith(".md") and path.count("/") == 1


@dataclass(frozen=True)
class ChangeItem:
    """What the relay's history says an agent device changed in one file: the content before
    its first revision of the span (None: the file did not exist; `before_known` False: that
    revision is no longer on the relay) and after its last (None: deleted)."""

    id: str
    path: str
    file_id: str
    from_rev: int
    to_rev: int
    before: str | None
    after: str | None
    device: str
    kind: str
    at: str  # HH:MM in the review's time zone
    before_known: bool = True
    notes: tuple[str, ...] = ()  # explanations: what the dream's report or the agent's log say

    @property
    def revertible(self) -> bool:
        return self.before_known


@dataclass(frozen=True)
class Disagreement:
    id: str
    path: str
    flag: str  # the flag line as the dream wrote it
    new: str  # the value the dream found
    mine: str | None  # the person's line right above it (None: not next to it)


@dataclass(frozen=True)
class ProposalItem:
    id: str
    pid: str  # the dream's proposal id (`.companion/dreams/proposals.json`)
    file: str  # MEMORY.md | USER.md
    op: str  # add | replace | remove
    old: str | None
    new: str | None
    reason: str  # a code: assistant_only, replaces, removes, unsure, propose_all
    quote: str | None = None


@dataclass(frozen=True)
class Carried:
    """An undecided decision line of an earlier review note, listed again."""

    id: str
    code: str
    label: str  # the text of the line before its id, as the earlier note had it
    night: str


@dataclass
class Review:
    night: str
    from_seq: int
    to_seq: int
    lang: str = "en"
    tz: str = "UTC"
    since: int | None = None  # the first review only: changes committed from then (unix s)
    changes: list[ChangeItem] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)
    proposals: list[ProposalItem] = field(default_factory=list)
    carried: list[Carried] = field(default_factory=list)
    notice: str | None = None  # e.g. the line saying a human device rewrote it


@dataclass(frozen=True)
class Line:
    """One decision line of a review note as it stands."""

    index: int  # line number (0-based) in the note
    id: str
    code: str
    ticked: bool
    label: str
    outcome: str | None  # the text after " — ", when a decision was recorded
    final: bool  # the outcome is a result (not a "tick ignored" notice)

    @property
    def key(self) -> tuple[str, str]:
        return (self.id, self.code)

    @property
    def decided(self) -> bool:
        return self.final
