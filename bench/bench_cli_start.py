"""What a one-shot `companion` command pays before its first line of work: Python's start-up,
each library a sync round imports, and the engine's own modules on top of them.

    python bench/bench_cli_start.py [--runs N]

Each row is a fresh interpreter (`python -c ...`, bytecode cached as an installed package has
it), run N times interleaved with the others; the table gives medians and the cost over
`python -c pass`. This is the floor under the quiet `companion sync` of `bench_sync.py`
(issue 17): whatever a round does, a process that imports these has paid this much first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

LIBRARIES = {
    "sqlite3 (the sync index)": "import sqlite3",
    "click (the command line)": "import click",
    "pathspec (ignore rules)": "import pathspec",
    "httpcore, as the relay client imports it": "import companion.relayclient.lean",
    "(for comparison) cryptography (AES-GCM), loaded only when a round seals or opens something "
    "since 2026-12-05": "from cryptography.hazmat.primitives.ciphers.aead import AESGCM",
    "(for comparison) httpx, which the client used until 2026-12-04": "import httpx",
    "(for comparison) filelock, the engine lock until 2026-12-04": "import filelock",
    "(for comparison) the standard library's http.client": "import http.client",
}
ALL_LIBRARIES = "\n".join(v for k, v in LIBRARIES.items() if not k.startswith("("))
ENGINE = (
    "import companion.cli, companion.sync.commands.cli, companion.sync.round.engine,"
    " companion.sync.service.lock"
)

# Counts and times the dataclasses created while the engine is imported (a child prints JSON).
DATACLASSES = """
import dataclasses, json, time
made, spent = 0, 0.0
process = dataclasses._process_class
def timed(cls, *args, **kwargs):
    global made, spent
    t = time.perf_counter()
    try:
        return process(cls, *args, **kwargs)
    finally:
        spent += time.perf_counter() - t
        made += 1
dataclasses._process_class = timed
import companion.cli, companion.sync.commands.cli, companion.sync.round.engine
import companion.sync.service.lock
print(json.dumps({"classes": made, "s": spent}))
"""


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # cached bytecode, as an installed package has
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def wall(code: str, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/", env=env)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="runs per row (default 15)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    env = child_env()
    rows = {"Python start-up (`python -c pass`)": "pass", **LIBRARIES}
    rows["all the libraries of a round (the first four)"] = ALL_LIBRARIES
    rows["those libraries + the engine's own modules (what `companion sync` imports)"] = (
        ALL_LIBRARIES + "\n" + ENGINE
    )
    for code in rows.values():
        wall(code, env)  # warm: bytecode written, files in the page cache
    samples: dict[str, list[float]] = {k: [] for k in rows}
    for _ in range(args.runs):
        for label, code in rows.items():
            samples[label].append(wall(code, env))
    dc = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", DATACLASSES],
                check=True,
                cwd="/",
                env=env,
                capture_output=True,
                text=True,
            ).stdout  # fmt: skip
        )
        for _ in range(min(args.runs, 5))
    ]
    start = statistics.median(samples["Python start-up (`python -c pass`)"])
    print(f"## One-shot start-up costs ({sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}; medians of {args.runs} interleaved runs)\n")  # fmt: skip
    print("| import | wall | over start-up |")
    print("|---|---:|---:|")
    for label, xs in samples.items():
        m = statistics.median(xs)
        over = "" if label.startswith("Python start-up") else f"+{1000 * (m - start):.0f} ms"
        print(f"| {label} | {1000 * m:.0f} ms | {over} |")
    print(
        f"| of the engine's import: creating its dataclasses "
        f"({dc[0]['classes']} classes, in-process) | "
        f"{1000 * statistics.median(d['s'] for d in dc):.0f} ms | |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
