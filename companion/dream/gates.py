"""Gates: may this candidate be written at all? One answer per candidate, decided here.

The dream runs in stages (issue 40; `docs/dream.md`, "The stages"):

    read -> distill -> gates -> placement -> plan -> apply -> record

A candidate that fails a gate is never placed, planned or written; it becomes one of the
night's skipped items, with the gate's code and why. The gates, in the order they run (the
first that refuses decides the reason):

| gate       | code        | what it refuses                                                   |
|------------|-------------|-------------------------------------------------------------------|
| taint      | `quoted`    | text the agent quotes or relays (a block quote, code, a tool      |
|            |             | result restated...): decided per line as the sources are read     |
|            |             | (`companion.dream.taint.line_taint`), so such a line never        |
|            |             | becomes a candidate; `tainted` reports the ones that would have   |
| secret     | `secret`    | a credential in the text or in a quote of its provenance (the     |
|            |             | text itself is never reported)                                    |
| junk       | `junk`      | half-sentences, fragments, markup (`quality.junk_reason`)         |
| durability | `transient` | lessons and facts scoped to the session or to work in progress    |
|            |             | (`quality.scoped_reason`, `companion.dream.durability`)           |
| transient  | `transient` | lessons and facts tied to a relative day, filler                  |
|            |             | (`quality.day_bound_reason`)                                      |
| guard      | `guard`     | what the injection guard refuses (`companion.memory.guard`)       |

`refusal(c, is_secret, gates)` runs the named gates on one candidate and returns the first
`Refusal`, or None: the candidate is kept. The distillers' common screen
(`distill_rules.screen`) runs `BEFORE_MERGE` on every raw candidate, the rules' and the
model's; the injection guard (`AFTER_MERGE`) runs once the candidates of both distillers are
merged (`guard_screen`, from the engine), on the text that would be written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from companion.dream.model import Candidate
from companion.dream.quality import day_bound_reason, junk_reason, scoped_reason
from companion.dream.report import Skipped
from companion.dream.taint import Refused
from companion.dream.text import collapse
from companion.memory import guard

BEFORE_MERGE = ("secret", "junk", "durability", "transient")
AFTER_MERGE = ("guard",)
GATES = ("taint", *BEFORE_MERGE, *AFTER_MERGE)


@dataclass(frozen=True)
class Refusal:
    """Why a gate refused a candidate: the gate's name, the skipped item's code, the reason
    and (from the injection guard) the rule it names and the night's warning."""

    gate: str
    code: str
    why: str
    warning: str = ""

    def skipped(self, c: Candidate) -> Skipped:
        if self.code == "secret":
            return Skipped.secret(c)  # the text withheld, the candidate marked secret
        return Skipped.of(c, self.code, self.why)


def _secret(c: Candidate, is_secret: Callable[[str], bool]) -> Refusal | None:
    if is_secret(c.text) or any(is_secret(p.quote) for p in c.provenance):
        return Refusal("secret", "secret", "the secret scanner flagged it: never written")
    return None


def _junk(c: Candidate) -> Refusal | None:
    why = junk_reason(c.text)
    return Refusal("junk", "junk", why) if why is not None else None


def _lasting(c: Candidate) -> bool:
    """Only lessons and facts must last; a decision or a status is dated."""
    return c.kind in ("knowledge", "fact")


def _durability(c: Candidate) -> Refusal | None:
    why = scoped_reason(c.text) if _lasting(c) else None
    return Refusal("durability", "transient", why) if why is not None else None


def _transient(c: Candidate) -> Refusal | None:
    why = day_bound_reason(c.text) if _lasting(c) else None
    return Refusal("transient", "transient", why) if why is not None else None


def guard_where(c: Candidate) -> str:
    """The `guard.check_write` place a candidate would be written to."""
    return "proposal" if c.origin == "llm" else "memory" if c.kind == "fact" else "note"


def _guard(c: Candidate) -> Refusal | None:
    finding = guard.check_write(c.text, where=guard_where(c))
    if finding is None:
        return None
    return Refusal(
        "guard",
        "guard",
        f"refused by the injection guard: {finding.detail}",
        f"a {c.kind} from {c.where()} was not written: the injection guard refused it "
        f"[rule {finding.rule}]",
    )


def refusal(
    c: Candidate,
    is_secret: Callable[[str], bool],
    gates: Sequence[str] = (*BEFORE_MERGE, *AFTER_MERGE),
) -> Refusal | None:
    """The first of `gates` (in `GATES` order as given) that refuses `c`, or None: kept.
    (`taint` is decided on lines, before there is a candidate: see `tainted`.)"""
    for name in gates:
        if name == "secret":
            found = _secret(c, is_secret)
        elif name == "junk":
            found = _junk(c)
        elif name == "durability":
            found = _durability(c)
        elif name == "transient":
            found = _transient(c)
        elif name == "guard":
            found = _guard(c)
        elif name == "taint":
            continue
        else:
            raise ValueError(f"unknown gate {name!r}")
        if found is not None:
            return found
    return None


def tainted(r: Refused, is_secret: Callable[[str], bool]) -> Skipped:
    """The taint gate's record: a quoted or relayed line that would have been a candidate,
    reported with its reason (the line itself withheld when it holds a secret)."""
    return Skipped(
        "quoted",
        r.reason,
        None if is_secret(r.text) else collapse(r.text),
        r.kind,
        [{"source": r.ref.source, "line": r.ref.line, "message_id": r.ref.message_id}],
    )


def guard_screen(cands: Iterable[Candidate]) -> tuple[list[Candidate], list[Skipped], list[str]]:
    """(kept, skipped, warnings): the `AFTER_MERGE` gates over the merged candidates."""
    kept: list[Candidate] = []
    skipped: list[Skipped] = []
    warnings: list[str] = []
    for c in cands:
        found = refusal(c, _never_secret, AFTER_MERGE)
        if found is None:
            kept.append(c)
            continue
        skipped.append(found.skipped(c))
        warnings.append(found.warning)
    return kept, skipped, warnings


def _never_secret(_text: str) -> bool:
    return False
