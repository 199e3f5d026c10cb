"""Hermes Agent's own code, reached by subprocess in its own venv (never imported here).

The venv is ``$HERMES_VENV`` or ``.cache/hermes-venv`` in the checkout, holding the version
pinned in ``.ci/hermes-agent.txt`` with every dependency from the lock ``requirements/hermes.txt``
(``tools/lock`` writes it). ``tools/test`` prepares it; when it is missing (a developer's
first run) `hermes_python` creates it the same way, under a lock, so an interop test never
skips: a skipped interop test would prove nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]
PIN_FILE = ROOT / ".ci" / "hermes-agent.txt"
LOCK_FILE = ROOT / "requirements" / "hermes.txt"
DRIVER = Path(__file__).with_name("hermes_driver.py")


def pinned_requirement() -> str:
    for line in PIN_FILE.read_text("utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line
    raise RuntimeError(f"{PIN_FILE} names no requirement")


def venv_dir() -> Path:
    return Path(os.environ.get("HERMES_VENV") or ROOT / ".cache" / "hermes-venv")


def _installed_version(python: Path) -> str | None:
    if not python.exists():
        return None
    proc = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('hermes-agent'))"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def hermes_python() -> Path:
    """The Hermes venv's interpreter, with the pinned hermes-agent installed (created if not)."""
    venv = venv_dir()
    python = venv / "bin" / "python"
    want = pinned_requirement().split("==", 1)[1]
    if _installed_version(python) == want:
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(venv) + ".lock", timeout=1200):
        if _installed_version(python) == want:
            return python
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--require-hashes",
                "-r",
                str(LOCK_FILE),
            ],
        ]
        for cmd in steps:
            if cmd[1:3] == ["-m", "venv"] and python.exists():
                continue
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
            if proc.returncode != 0:
                raise RuntimeError(
                    f"cannot prepare the Hermes venv at {venv} ({' '.join(cmd)}): "
                    f"{(proc.stderr or proc.stdout).strip()[-800:]}"
                )
    got = _installed_version(python)
    if got != want:
        raise RuntimeError(f"the Hermes venv at {venv} holds hermes-agent {got}, want {want}")
    return python


class Hermes:
    """Runs steps of `hermes_driver.py` against one Hermes home."""

    def __init__(self, python: Path) -> None:
        self.python = python

    def run(self, home: Path, *steps: dict[str, Any]) -> list[Any]:
        """Each step's value; a step that raised inside Hermes fails the test with its error."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["HERMES_HOME"] = str(home)
        proc = subprocess.run(
            [str(self.python), str(DRIVER)],
            input=json.dumps({"home": str(home), "steps": list(steps)}),
            capture_output=True,
            text=True,
            env=env,
            cwd=str(home.parent),
            timeout=120,
        )
        if proc.returncode != 0:
            raise AssertionError(f"hermes driver failed: {proc.stderr[-2000:]}")
        out = json.loads(proc.stdout)["results"]
        for step, res in zip(steps, out, strict=True):
            if "error" in res:
                raise AssertionError(f"hermes step {step['op']} failed: {res['error']}")
        return [r["ok"] for r in out]

    def one(self, home: Path, step: dict[str, Any]) -> Any:
        return self.run(home, step)[0]

    def memory(self, home: Path, **args: Any) -> dict[str, Any]:
        """Hermes's `memory` tool with these arguments; its parsed result."""
        return self.one(home, {"op": "memory", "args": args})["result"]

    def snapshot(self, home: Path) -> dict[str, Any]:
        return self.one(home, {"op": "snapshot"})

    def scan(self, texts: list[str]) -> list[list[str]]:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            return self.one(Path(d) / "home", {"op": "scan", "texts": texts})
