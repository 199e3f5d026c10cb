"""Scenario files with golden end states (issue 43): every `tests/scenarios/*.scn` run through a
real relay on loopback, the Python devices through `python -m companion`, the plugin's through
`node obsidian-plugin/dist/cli.js` (tests/scenario_runner.py; the language:
tests/scenarios/README.md).

A file with `option swap` runs twice: as written and with the engines of the human devices
swapped (python <-> plugin), so both engines are checked in each role. A scenario marked
`expect-drift: REASON` pins a known difference between the engines (docs/protocol.md lists
each): it must fail, and the day it passes the run says so (a strict xfail).

Slow tier (tests/conftest.py SLOW_MODULES): 85 runs (83 took about 95 s of CPU), mostly Node
starting `dist/cli.js`. The language itself is checked in the fast tier by
tests/test_scenario_language.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import pyfork
from tests.scenario_runner import ScenarioError, ScenarioFailure, load, run_file, scenario_files
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
