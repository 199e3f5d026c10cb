"""docs/protocol.md, the rule book both engines share, names only tests that exist (issue 43).

Every rule `R<n>` has a "Pinned by:" naming at least one test or vector; every
`tests/<file>.py::<test>` names a test function in that file (read with `ast`, nothing
imported), every `tests/vectors/<file>.json#<key>` a top-level key of that vector file, and
every plugin test file exists, with an `it("…")` / `test("…")` of the quoted title when one is
given. A rule that names a renamed or deleted test fails here, not in a reader's hands.
"""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "protocol.md"

RULE = re.compile(r"^### (R\d+)\. ", re.M)
SECTION_END = re.compile(r"^##+ ", re.M)
PY_TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
PY_FILE = re.compile(r"`(tests/[\w/]+\.py)`")
VECTOR = re.compile(r"`(tests/vectors/[\w]+\.json)#(\w+)`")
SCENARIO = re.compile(r"`(tests/scenarios/[\w.-]+\.scn)`")
PLUGIN = re.compile(r"`(obsidian-plugin/test/[\w.-]+\.ts)(?: › \"([^\"]+)\")?`")
TS_TITLE = re.compile(r"\b(?:it|test)\(\s*([\"'`])((?:\\.|(?!\1).)*)\1", re.S)


@cache
def python_tests(rel: str) -> frozenset[str]:
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
    return frozenset(
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test_")
    )


@cache
def vector_keys(rel: str) -> frozenset[str]:
    data = json.loads((ROOT / rel).read_text(encoding="utf-8"))
    return frozenset(data)


@cache
def plugin_titles(rel: str) -> frozenset[str]:
    text = (ROOT / rel).read_text(encoding="utf-8")
    return frozenset(re.sub(r"\\(.)", r"\1", m.group(2)) for m in TS_TITLE.finditer(text))


def rules(text: str) -> dict[str, str]:
    """Each rule's id and its text, up to the next heading."""
    out = {}
    for m in RULE.finditer(text):
        end = SECTION_END.search(text, m.end())
        out[m.group(1)] = text[m.start() : end.start() if end else len(text)]
    return out


def missing_references(text: str) -> list[str]:
    """Every reference in `text` that names no existing test, vector key or plugin test."""
    bad = []
    for rel, name in PY_TEST.findall(text):
        if not (ROOT / rel).is_file():
            bad.append(f"{rel}: no such file")
        elif name not in python_tests(rel):
            bad.append(f"{rel}::{name}: no such test")
    for rel in PY_FILE.findall(text):
        if not (ROOT / rel).is_file():
            bad.append(f"{rel}: no such file")
    for rel, key in VECTOR.findall(text):
        if not (ROOT / rel).is_file():
            bad.append(f"{rel}: no such file")
        elif key not in vector_keys(rel):
            bad.append(f"{rel}#{key}: no such key")
    for rel in SCENARIO.findall(text):
        if not (ROOT / rel).is_file():
            bad.append(f"{rel}: no such file")
    for rel, title in PLUGIN.findall(text):
        if not (ROOT / rel).is_file():
            bad.append(f"{rel}: no such file")
        elif title and title not in plugin_titles(rel):
            bad.append(f'{rel} › "{title}": no such test')
    return bad


def unpinned(text: str) -> list[str]:
    """The rules without a "Pinned by:" naming at least one test or vector."""
    out = []
    for rid, body in rules(text).items():
        _, sep, pins = body.partition("Pinned by:")
        named = (PY_TEST, VECTOR, PLUGIN, SCENARIO)
        if not sep or not any(r.search(pins) for r in named):
            out.append(rid)
    return out


def test_the_rules_are_numbered_in_order() -> None:
    ids = list(rules(DOC.read_text(encoding="utf-8")))
    assert ids, "no rule found"
    assert ids == [f"R{i}" for i in range(1, len(ids) + 1)]


def test_every_rule_is_pinned() -> None:
    assert unpinned(DOC.read_text(encoding="utf-8")) == []


def test_every_named_test_and_vector_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert PY_TEST.search(text) and VECTOR.search(text) and PLUGIN.search(text)
    assert missing_references(text) == []


def test_the_groups_of_issue_43_are_there() -> None:
    text = DOC.read_text(encoding="utf-8")
    for heading in (
        "Admission",
        "Holds",
        "Quarantine lifecycle",
        "Case fold",
        "Name limits",
        "Platform names",
        "Stale save",
        "Rename vs edit",
        "Delete vs edit",
        "Mass delete",
        "Conflict names",
        "Merge and byte fidelity",
        "Vault-folder identity",
    ):
        assert f"\n## {heading}\n" in text, heading


def test_a_rule_naming_a_test_that_does_not_exist_fails() -> None:
    """The checks above catch what they are for: a made-up rule book, each line wrong once."""
    real = "`tests/test_sync_plan.py::test_admission`"
    assert missing_references(real) == []
    assert missing_references("`tests/test_sync_plan.py::test_no_such_rule`") == [
        "tests/test_sync_plan.py::test_no_such_rule: no such test"
    ]
    assert missing_references("`tests/test_no_such_file.py::test_x`") == [
        "tests/test_no_such_file.py: no such file"
    ]
    assert missing_references("`tests/vectors/holds_v1.json#no_such_key`") == [
        "tests/vectors/holds_v1.json#no_such_key: no such key"
    ]
    assert missing_references('`obsidian-plugin/test/engine.test.ts › "no such title"`') == [
        'obsidian-plugin/test/engine.test.ts › "no such title": no such test'
    ]
    assert missing_references("`obsidian-plugin/test/nothing.test.ts`") == [
        "obsidian-plugin/test/nothing.test.ts: no such file"
    ]
    assert missing_references("`tests/scenarios/no_such_story.scn`") == [
        "tests/scenarios/no_such_story.scn: no such file"
    ]
    book = f"### R1. Pinned\n\nPinned by: {real}.\n\n### R2. Not pinned\n\nSays so.\n"
    assert unpinned(book) == ["R2"]


def test_sync_and_contributing_link_to_the_rule_book() -> None:
    assert "](protocol.md)" in (ROOT / "docs" / "sync.md").read_text(encoding="utf-8")
    assert "](docs/protocol.md)" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_every_scenario_file_is_cited_and_each_drift_it_pins_is_listed() -> None:
    """Each `tests/scenarios/*.scn` is named under a rule; one marked `expect-drift` (a known
    difference between the engines, a strict xfail) is named in a "Drift" paragraph too."""
    text = DOC.read_text(encoding="utf-8")
    cited = set(SCENARIO.findall(text))
    drift_paragraphs = [p for p in text.split("\n\n") if p.startswith("Drift")]
    for path in sorted((ROOT / "tests" / "scenarios").glob("*.scn")):
        rel = path.relative_to(ROOT).as_posix()
        assert rel in cited, f"{rel} is cited under no rule"
        if "\nexpect-drift" in "\n" + path.read_text(encoding="utf-8"):
            assert any(f"`{rel}`" in p for p in drift_paragraphs), f"{rel}: drift not listed"
