"""Sync rules both engines decide alike, as vectors (issue 43: one rule book).

`tests/vectors/rules_v1.json` is written from the Python engine's own functions: the case fold
(`pathsafe.fold`, R11), what Windows refuses in a name (`pathsafe.windows_name_verdict`, R14)
and the mass-deletion guard (`guard.is_mass_delete`, R19).
`obsidian-plugin/test/rule-vectors.test.ts` replays them against the plugin's `paths.fold`,
`windowsNameVerdict` and `policy.isMassDelete`. Regenerate only on purpose:
python tests/test_sync_rule_vectors.py --write
"""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

from companion.sync.local.pathsafe import fold, windows_name_verdict
from companion.sync.round.guard import is_mass_delete

VECTORS = Path(__file__).parent / "vectors" / "rules_v1.json"

FOLDS = [
    "Notes/ABC.md",
    "Stra\u00dfe.md",  # ß: upper case SS
    "STRASSE.md",
    "\ufb01le.md",  # ﬁ ligature: upper case FI
    "FILE.md",
    "\u03bf\u03b4\u03bf\u03c2.md",  # a final sigma
    "\u039f\u0394\u039f\u03a3.md",
    "\u03bf\u03b4\u03bf\u03c3.md",  # a non-final sigma at the end
    "\u0131.md",  # dotless i
    "I.md",
    "\u0130stanbul.md",  # capital I with a dot
    "\u212aelvin.md",  # Kelvin sign
    "\u017fecret.md",  # long s
    "cafe\u0301.md",  # NFD in, NFC out
    "CAF\u00c9.md",
    "\u13a0\u13a1.md",  # Cherokee: casefold maps to upper case, the fold to lower
    "\uab70\uab71.md",
    "\u0345x.md",  # combining ypogegrammeni: upper case Ι
    "\u1f80.md",  # ᾀ: upper case with a prosgegrammeni
    "\u0587.md",  # Armenian ligature ech yiwn
    "\u4e2d\u6587/\u7b14\u8bb0.md",
    "\U0001f600.md",
    "\u00e9t\u00e9/\u00c9T\u00c9.md",
    "Dz/\u01c4\u01c5\u01c6.md",  # DŽ Dž dž
]

WINDOWS_NAMES = [
    "notes/a.md",
    "a:b.md",
    "C:/x.md",
    "what?.md",
    'say "hi".md',
    "a<b>.md",
    "pipe|.md",
    "star*.md",
    "ends with dot.",
    "ends with space ",
    "folder./a.md",
    "CON",
    "con.md",
    "Lpt1.md",
    "nul.tar.gz",
    "COM9.txt",
    "COM10.md",
    "CONSOLE.md",
    "aux/inside.md",
    "AUXILIARY.md",
    "\u00e9t\u00e9?.md",
    "ok/also ok/fine.md",
    ".hidden",
    "..dots..md",
]

MASS_DELETES = [
    (0, 0, 0.5, 10),
    (0, 100, 0.5, 10),
    (1, 1, 0.5, 10),
    (3, 3, 0.5, 10),
    (2, 3, 0.5, 10),
    (9, 10, 0.5, 10),
    (10, 10, 0.5, 10),
    (10, 20, 0.5, 10),
    (11, 20, 0.5, 10),
    (50, 100, 0.5, 10),
    (51, 100, 0.5, 10),
    (51, 100, 0.0, 10),
    (100, 100, 1.0, 10),
    (101, 100, 1.0, 10),
    (5, 1000, 0.0, 1),
    (5, 1000, 0.0, 0),
    (300, 1000, 0.3, 10),
    (301, 1000, 0.3, 10),
    (7, 14, 0.5, 5),
    (8, 14, 0.5, 5),
    (1, 3, 1 / 3, 1),
    (2, 3, 2 / 3, 1),
]


def build() -> dict[str, object]:
    return {
        "version": 1,
        "about": "Sync rules both engines decide alike (docs/protocol.md R11, R14, R19); "
        "written by tests/test_sync_rule_vectors.py, replayed by "
        "obsidian-plugin/test/rule-vectors.test.ts",
        "unicode": unicodedata.unidata_version,
        "fold": [{"in": s, "out": fold(s)} for s in FOLDS],
        "windows_names": [
            {"path": p, "verdict": list(v) if (v := windows_name_verdict(p)) else None}
            for p in WINDOWS_NAMES
        ],
        "mass_delete": [
            {
                "deletes": d,
                "total": t,
                "ratio": r,
                "min_files": m,
                "held": is_mass_delete(d, t, r, m),
            }
            for d, t, r, m in MASS_DELETES
        ],
    }


def render() -> str:
    return json.dumps(build(), ensure_ascii=False, indent=1) + "\n"


def test_the_vectors_are_what_the_python_engine_decides() -> None:
    assert VECTORS.read_text("utf-8") == render(), (
        "tests/vectors/rules_v1.json differs from the engine's rules: if the change is "
        "intended, run python tests/test_sync_rule_vectors.py --write and update the plugin"
    )


def test_the_fold_puts_together_what_a_case_insensitive_disk_opens_as_one_file() -> None:
    same = [
        ("Stra\u00dfe.md", "STRASSE.md"),
        ("\ufb01le.md", "FILE.md"),
        ("\u03bf\u03b4\u03bf\u03c2.md", "\u039f\u0394\u039f\u03a3.md"),
        ("\u03bf\u03b4\u03bf\u03c2.md", "\u03bf\u03b4\u03bf\u03c3.md"),
        ("\u0131.md", "I.md"),
        ("\u212aelvin.md", "kelvin.md"),
        ("cafe\u0301.md", "CAF\u00c9.md"),
        ("\u13a0\u13a1.md", "\uab70\uab71.md"),
    ]
    for a, b in same:
        assert fold(a) == fold(b), (a, b)
    assert fold("notes/a.md") != fold("notes/b.md")
    assert fold("\u00e9.md") != fold("e.md")  # an accent is not case


def test_every_kind_of_windows_refusal_is_in_the_vectors() -> None:
    kinds = {v["verdict"][0] for v in build()["windows_names"] if v["verdict"]}  # type: ignore[index, union-attr]
    assert kinds == {"char", "trailing", "device"}
    held = {c["held"] for c in build()["mass_delete"]}  # type: ignore[union-attr]
    assert held == {True, False}


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        VECTORS.write_text(render(), "utf-8")
        print(f"wrote {VECTORS}")
    else:
        print(__doc__)
