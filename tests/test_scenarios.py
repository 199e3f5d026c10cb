"""Scenario files with golden end states (issue 43): every `tests/scenarios/*.scn` run through a
real relay on loopback, the Python devices through `python -m companion`, the plugin's through
`node obsidian-plugin/dist/cli.js` (tests/scenario_runner.py; the language:
tests/scenarios/README.md).

A file with `option swap` runs twice: as written and with the engines of the human devices
swapped (python <-> plugin), so both engines are checked in each role. A scenario marked
`expect-drift: REASON` pins a known difference between the engines (docs/protocol.md lists
each): it must fail, and the day it passes the run says so (a strict xfail).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import pyfork
from tests.scenario_runner import (
    ScenarioError,
    ScenarioFailure,
    conflict_copies,
    is_conflict_copy,
    load,
    parse,
    run_file,
    scenario_files,
)
from tests.test_plugin_interop import cli  # noqa: F401  (the module fixture: builds dist/cli.js)

FILES = scenario_files()


@pytest.fixture(scope="module", autouse=True)
def _fork_server() -> Iterator[None]:
    """The warm `python -m companion` parent (tests/pyfork.py) ends with the module."""
    yield
    pyfork.close()


def _cases() -> list[object]:
    out: list[object] = []
    for path in FILES:
        try:
            sc = load(path)
        except ScenarioError:  # fails as its own case, with the line, not the whole module
            out.append(pytest.param(path, False, id=f"{path.stem}-does-not-parse"))
            continue
        for swapped in (False, True) if sc.swap else (False,):
            drift = sc.expected_drift(swapped)
            marks = [pytest.mark.xfail(raises=ScenarioFailure, reason=drift, strict=True)]
            out.append(
                pytest.param(
                    path,
                    swapped,
                    id=f"{path.stem}-{'swapped' if swapped else 'as-written'}",
                    marks=marks if drift else [],
                )
            )
    return out


@pytest.mark.parametrize(("path", "swapped"), _cases())
def test_scenario(path: Path, swapped: bool, tmp_path: Path, cli: Path) -> None:  # noqa: F811
    run_file(path, tmp_path, cli, swapped)()


def test_there_are_thirty_scenarios_and_each_runs_both_engines() -> None:
    assert len(FILES) >= 30
    for path in FILES:
        sc = load(path)
        engines = {e for e, _ in sc.devices.values()}
        assert engines == {"python", "plugin"}, f"{path.name} runs only {engines}"


def test_the_language_is_strict() -> None:
    ok = 'device a python human\ndevice b plugin human\na write x.md "x"\nsync all\nexpect same\n'
    assert len(parse(ok, Path("ok.scn")).steps) == 3
    bad = {
        "device a python human\na frobnicate x.md\nexpect same\n": "t.scn:2: unknown verb",
        "device a python human\nteleport a\n": "t.scn:2: unknown verb or device 'teleport'",
        "device a plugin agent\n": "t.scn:1: the plugin is always a human device",
        "device a python human\na write x.md\n": "t.scn:2: expected content",
        'device a python human\na write x.md "\\q"\n': "t.scn:2: unknown escape",
        'device a python human\na write x.md "x\n': "t.scn:2: unterminated string",
        "device a python human\nsync b\n": "t.scn:2: unknown device 'b'",
        "device a python human\nexpect a absent x.md y.md\n": "t.scn:2: unexpected 'y.md'",
        "device a python human\nsync all\n": "a scenario without an expectation cannot fail",
        "device a python human\noption fast\n": "t.scn:2: unknown option 'fast'",
        "device a python human\nexpect-drift: \n": "t.scn:2: expect-drift",
        "device a python human\nsync a\ndevice b python human\n": "t.scn:3: devices are declared",
    }
    for text, message in bad.items():
        with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parse(text, Path("t.scn"))


def test_escapes_give_exact_bytes_and_names() -> None:
    text = (
        "device a python human\n"
        'a write "caf\\u{65}\\u{301}.md" "\\u{feff}x\\r\\n\\xff\\0\\"\\\\"\n'
        "a write big.bin random 10\n"
        'a write r.md repeat "ab" 3\n'
        "expect same\n"
    )
    steps = parse(text, Path("t.scn")).steps
    assert steps[0].args[0] == "cafe\u0301.md"
    assert steps[0].args[1].data == b'\xef\xbb\xbfx\r\n\xff\x00"\\'
    assert len(steps[1].args[1].data) == 10
    assert steps[2].args[1].data == b"ababab"


def test_conflict_copies_are_found_by_the_projects_naming() -> None:
    files = dict.fromkeys(
        [
            "a.md",
            "a (conflict phone 2026-12-06 0837).md",
            "a (conflict my laptop 2026-12-06 0837 2).md",
            "dir/a (conflict phone 2026-12-06 0837).md",
            "a (conflict phone).md",  # no date and time: a note named like one (R22)
            "b (conflict phone 2026-12-06 0837).md",
        ],
        b"",
    )
    assert conflict_copies("a.md", files) == [
        ("a (conflict my laptop 2026-12-06 0837 2).md", "my laptop"),
        ("a (conflict phone 2026-12-06 0837).md", "phone"),
    ]
    assert is_conflict_copy("x/Note (conflict server 2026-01-02 0304).canvas")
    assert not is_conflict_copy("a (conflict phone).md")


def test_a_wrong_golden_state_fails_with_the_line_and_a_diff(tmp_path: Path, cli: Path) -> None:  # noqa: F811
    """The runner is not a test that cannot fail: a wrong byte, a missing conflict copy and a
    tree that differs each fail, naming the file, the line and what differs."""
    scn = tmp_path / "wrong.scn"
    scn.write_text(
        "device laptop python human\ndevice phone plugin human\n"
        'laptop write a.md "one\\ntwo\\n"\nsync all\n'
        'expect phone a.md "one\\n2\\n"\n'
    )
    with pytest.raises(ScenarioFailure) as exc:
        run_file(scn, tmp_path / "run1", cli)()
    msg = str(exc.value)
    assert "wrong.scn:5:" in msg and "phone [plugin]" in msg
    assert "-2" in msg.replace("'", "") and "+two" in msg.replace("'", "")
    scn.write_text(
        "device laptop python human\ndevice phone plugin human\n"
        'laptop write a.md "x"\nsync laptop\nexpect same\n'
    )
    with pytest.raises(ScenarioFailure, match=r"wrong.scn:5:.*\n.*\n.*only on laptop \['a.md'\]"):
        run_file(scn, tmp_path / "run2", cli)()
