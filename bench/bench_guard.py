"""The memory guard on its corpus: recall and false positives, beside Hermes Agent's own scanner.

    python bench/bench_guard.py            # needs the Hermes venv (.cache/hermes-venv or
                                           # $HERMES_VENV; created on first use)

Prints one Markdown table: per language and attack, how many hostile entries each guard
refuses, and how many legitimate look-alikes it wrongly refuses. Hermes runs as shipped (its
strict scan, the one its memory tool applies), in its own venv, by subprocess.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from companion.memory import guard  # noqa: E402
from tests.corpus.memory_guard import HOSTILE, LEGIT  # noqa: E402
from tests.interop.hermes import Hermes, hermes_python  # noqa: E402

_ES = set("áéíóúñ¿¡")
_ES_WORDS = (
    " la ",
    " las ",
    " el ",
    " los ",
    " de ",
    " a ",
    " que ",
    " sin ",
    " y ",
    " con ",
    " en ",
    " del ",
    " tu ",
    " para ",
    " una ",
)


def _lang(text: str) -> str:
    low = f" {text.lower()} "
    return "es" if _ES & set(low) or sum(w in low for w in _ES_WORDS) >= 2 else "en"


def main() -> None:
    hermes = Hermes(hermes_python())
    texts = [t for _c, t in HOSTILE] + LEGIT
    t0 = time.perf_counter()
    ours = [guard.check(t) is not None for t in texts]
    ours_s = time.perf_counter() - t0
    theirs = [bool(f) for f in hermes.scan(texts)]
    h_ours, h_theirs = ours[: len(HOSTILE)], theirs[: len(HOSTILE)]
    l_ours, l_theirs = ours[len(HOSTILE) :], theirs[len(HOSTILE) :]

    rows = []
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (cat, text) in enumerate(HOSTILE):
        groups.setdefault((_lang(text), cat), []).append(i)
    print("| set | entries | companion refuses | Hermes 0.19.0 refuses |")
    print("|---|---:|---:|---:|")
    for (lang, cat), idx in sorted(groups.items()):
        a = sum(h_ours[i] for i in idx)
        b = sum(h_theirs[i] for i in idx)
        rows.append(f"| hostile {lang} {cat} | {len(idx)} | {a} | {b} |")
    print("\n".join(rows))
    n = len(HOSTILE)
    print(
        f"| **hostile, recall** | {n} | **{sum(h_ours)} ({sum(h_ours) / n:.1%})** | "
        f"**{sum(h_theirs)} ({sum(h_theirs) / n:.1%})** |"
    )
    m = len(LEGIT)
    print(
        f"| **legitimate, false positives** | {m} | **{sum(l_ours)} ({sum(l_ours) / m:.1%})** "
        f"| **{sum(l_theirs)} ({sum(l_theirs) / m:.1%})** |"
    )
    print(f"\ncompanion guard: {ours_s / len(texts) * 1e6:.0f} µs per entry ({len(texts)} entries)")


if __name__ == "__main__":
    main()
