"""The scenario language of tests/scenarios/ (tests/scenario_runner.py), without running a
scenario: strict parsing with the line number, exact bytes from escapes, the project's conflict
copy naming, and the suite's own shape (30+ files, each running both engines). Fast tier; the
scenarios themselves run in tests/test_scenarios.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenario_runner import (
    ScenarioError,
    conflict_copies,
    is_conflict_copy,
    load,
    parse,
    scenario_files,
)

FILES = scenario_files()


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
        "device a python human\na chmod x.sh 755\n": "t.scn:2: chmod PATH \\+x\\|-x",
        "device all python human\n": "t.scn:1: device name 'all' taken",
        "device relay python human\n": "t.scn:1: device name 'relay' taken",
        "device a python human\nrelay rewind\n": "t.scn:2: relay backup\\|restore",
        "device a python human\nrelay restore\nexpect same\n": "t.scn:2: no `relay backup`",
        "device a python human\nrelay backup now\n": "t.scn:2: unexpected 'now'",
    }
    for text, message in bad.items():
        with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parse(text, Path("t.scn"))


def test_a_relay_restore_is_a_step_of_its_own() -> None:
    """`relay backup` copies the relay's data folder, `relay restore` puts that copy back
    (docs/protocol.md R3): steps without a device, on a relay process that can restart."""
    text = (
        'device a python human\ndevice b plugin human\na write x.md "x"\nsync all\n'
        'relay backup\na write y.md "y"\nsync a\nrelay restore\nsync all\nexpect same\n'
    )
    sc = parse(text, Path("t.scn"))
    relay = [(s.verb, s.device, s.line) for s in sc.steps if s.verb.startswith("relay-")]
    assert relay == [("relay-backup", None, 5), ("relay-restore", None, 8)]
    assert sc.relay_restarts
    assert not parse(text.replace("relay backup\n", "").replace("relay restore\n", ""),
                     Path("t.scn")).relay_restarts  # fmt: skip


def test_escapes_give_exact_bytes_and_names() -> None:
    text = (
        "device a python human\n"
        'a write "caf\\u{65}\\u{301}.md" "\\u{feff}x\\r\\n\\xff\\0\\"\\\\"\n'
        "a write big.bin random 10\n"
        'a write r.md repeat "ab" 3\n'
        'a save s.md "now"\n'
        "expect same\n"
    )
    steps = parse(text, Path("t.scn")).steps
    assert (steps[3].verb, steps[3].args[0], steps[3].args[1].data) == ("save", "s.md", b"now")
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
