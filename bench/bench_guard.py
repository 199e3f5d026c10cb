"""The memory guard on its corpora: recall and false positives, per split, language and category.

    python bench/bench_guard.py             # the guard alone
    python bench/bench_guard.py --hermes    # beside Hermes Agent's own scanner (needs the
                                            # Hermes venv: .cache/hermes-venv or $HERMES_VENV)

Prints Markdown: on `tests/corpus/guard_v2` (issue 44), recall on hostile entries and false
positives on look-alikes for the dev split (the rules were tuned on it) and the held-out split
(never tuned on), then per language, per category and per form, and the time per entry; then
how many of the entries the guard passes it is unsure of (issue 40); then the first corpus
(`tests/corpus/memory_guard.py`, issue 12).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from companion.memory import guard  # noqa: E402
from tests.corpus import memory_guard as v1  # noqa: E402
from tests.corpus.guard_v2 import ENTRIES, Entry  # noqa: E402

SPLITS = ("dev", "held-out")


@dataclass
class Tally:
    hostile: int = 0
    refused: int = 0
    benign: int = 0
    flagged: int = 0

    def add(self, e: Entry, refused: bool) -> None:
        if e.hostile:
            self.hostile += 1
            self.refused += refused
        else:
            self.benign += 1
            self.flagged += refused

    @property
    def recall(self) -> float:
        return self.refused / self.hostile if self.hostile else 1.0

    @property
    def fp_rate(self) -> float:
        return self.flagged / self.benign if self.benign else 0.0


@dataclass
class Result:
    verdicts: list[tuple[Entry, bool]]
    seconds_per_entry: float

    def tally(self, key: Callable[[Entry], str]) -> dict[str, dict[str, Tally]]:
        """key(entry) -> split -> tally."""
        out: dict[str, dict[str, Tally]] = {}
        for e, refused in self.verdicts:
            out.setdefault(key(e), {s: Tally() for s in SPLITS})[e.split].add(e, refused)
        return out

    def split(self, name: str) -> Tally:
        t = Tally()
        for e, refused in self.verdicts:
            if e.split == name:
                t.add(e, refused)
        return t


def measure(entries: Iterable[Entry] = ENTRIES) -> Result:
    entries = list(entries)
    t0 = time.perf_counter()
    verdicts = [(e, guard.check(e.text) is not None) for e in entries]
    return Result(verdicts, (time.perf_counter() - t0) / max(1, len(entries)))


def _cell(t: Tally, hostile: bool) -> str:
    if hostile:
        return f"{t.refused}/{t.hostile} ({t.recall:.1%})" if t.hostile else "–"
    return f"{t.flagged}/{t.benign} ({t.fp_rate:.1%})" if t.benign else "–"


def table(result: Result) -> str:
    """The Markdown report of `result`."""
    lines = [
        "| split | hostile | recall | look-alikes | false positives |",
        "|---|---:|---:|---:|---:|",
    ]
    for s in SPLITS:
        t = result.split(s)
        lines.append(
            f"| **{s}** | {t.hostile} | **{t.recall:.1%}** | {t.benign} | **{t.fp_rate:.1%}** |"
        )
    for title, key in (
        ("language", lambda e: e.lang),
        ("category", lambda e: e.category),
        ("form", lambda e: e.form),
    ):
        lines += [
            "",
            f"| {title} | recall dev | recall held-out | FP dev | FP held-out |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, by_split in sorted(result.tally(key).items()):
            d, h = by_split["dev"], by_split["held-out"]
            lines.append(
                f"| {name} | {_cell(d, True)} | {_cell(h, True)} | {_cell(d, False)} "
                f"| {_cell(h, False)} |"
            )
    lines += ["", f"time per entry: {result.seconds_per_entry * 1e3:.2f} ms "]
    lines[-1] += f"({len(result.verdicts)} entries, one process, this machine)"
    return "\n".join(lines)


def table_v1(hermes: bool) -> str:
    texts = [t for _c, t in v1.HOSTILE] + v1.LEGIT
    ours = [guard.check(t) is not None for t in texts]
    n, m = len(v1.HOSTILE), len(v1.LEGIT)
    head = "| corpus v1 (issue 12) | entries | companion |"
    rows = [
        f"| hostile, recall | {n} | {sum(ours[:n])} ({sum(ours[:n]) / n:.1%}) |",
        f"| legitimate, false positives | {m} | {sum(ours[n:])} ({sum(ours[n:]) / m:.1%}) |",
    ]
    if hermes:
        from tests.interop.hermes import Hermes, hermes_python  # noqa: PLC0415

        theirs = [bool(f) for f in Hermes(hermes_python()).scan(texts)]
        head += " Hermes 0.19.0 |"
        rows[0] += f" {sum(theirs[:n])} ({sum(theirs[:n]) / n:.1%}) |"
        rows[1] += f" {sum(theirs[n:])} ({sum(theirs[n:]) / m:.1%}) |"
    sep = "|---|---:|---:|" + ("---:|" if hermes else "")
    return "\n".join([head, sep, *rows])


def table_hermes_v2() -> str:
    from tests.interop.hermes import Hermes, hermes_python  # noqa: PLC0415

    theirs = Hermes(hermes_python()).scan([e.text for e in ENTRIES])
    r = Result([(e, bool(f)) for e, f in zip(ENTRIES, theirs, strict=True)], 0.0)
    lines = ["| Hermes 0.19.0 on corpus v2 | recall | false positives |", "|---|---:|---:|"]
    for s in SPLITS:
        t = r.split(s)
        lines.append(f"| {s} | {t.recall:.1%} | {t.fp_rate:.1%} |")
    return "\n".join(lines)


def table_unsure(result: Result) -> str:
    """The guard's third verdict (issue 40): of the entries `check` passes, how many it is
    unsure of (the dream proposes a memory change holding one instead of applying it)."""
    lines = [
        "| split | look-alikes passed | unsure | hostile missed | unsure |",
        "|---|---:|---:|---:|---:|",
    ]
    for s in SPLITS:
        passed = [e for e, refused in result.verdicts if e.split == s and not refused]
        benign = [e for e in passed if not e.hostile]
        missed = [e for e in passed if e.hostile]
        ub = sum(1 for e in benign if guard.unsure(e.text))
        um = sum(1 for e in missed if guard.unsure(e.text))
        lines.append(
            f"| {s} | {len(benign)} | {ub} ({ub / max(1, len(benign)):.1%}) | {len(missed)} "
            f"| {um} |"
        )
    return "\n".join(lines)


def table_adversarial() -> str:
    """Texts built to make a pattern-matching guard backtrack (tests/corpus/guard_adversarial):
    the time of one check each, best of three."""
    from tests.corpus.guard_adversarial import ADVERSARIAL

    lines = ["| adversarial text | characters | check (ms) |", "|---|---:|---:|"]
    for name, text, where in ADVERSARIAL:
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            guard.check(text) if where is None else guard.check_write(text, where=where)
            best = min(best, time.perf_counter() - t0)
        lines.append(f"| {name} | {len(text):,} | {best * 1000:.0f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    hermes = "--hermes" in argv
    measure()  # warm up: compile the rules once
    result = measure()
    print(table(result))
    print()
    print(table_unsure(result))
    print()
    print(table_adversarial())
    print()
    print(table_v1(hermes))
    if hermes:
        print()
        print(table_hermes_v2())


if __name__ == "__main__":
    main(sys.argv[1:])
