"""Benchmark `vault check` and `vault search` on a synthetic vault; prints a Markdown table.

    python bench/bench_vault.py                 # 10,000 notes, 5 runs each
    python bench/bench_vault.py --notes 2000 --runs 3
    python bench/bench_vault.py --vault ~/vault # an existing vault (never written to)

Rows: the stat-walk floor (os.walk + stat of every file: no check can be faster), `check`
cold (empty index) and warm (index built, nothing changed) both in-process (the engine) and
end to end (`python -m companion vault check`, interpreter start-up and imports included),
a warm check after one note changed, and search / similarity latency. Medians of several
runs; CPU time beside wall time shows how much the machine's other load got in the way.
"Cold" means an empty index; the OS page cache is warm (dropping it needs root and a reboot-
like hit to every other process).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gen_vault import generate_vault  # noqa: E402

from companion.vault.check import run_check  # noqa: E402
from companion.vault.index import VaultIndex, index_path  # noqa: E402
from companion.vault.vault import Vault  # noqa: E402

QUERIES = ["docker compose", '"memory vault"', "decision OR lesson", "sync* relay", "cifrado"]


def cpu_now() -> float:
    """CPU seconds of this process, all threads, plus its finished children."""
    t = os.times()
    return time.process_time() + t.children_user + t.children_system


def timed(
    fn: Callable[[], object], runs: int, before: Callable[[], object] | None = None
) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(runs):
        if before:
            before()
        c0, t0 = cpu_now(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu_now() - c0)
    return walls, cpus


def stat_walk(root: Path) -> int:
    n = 0
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in files:
            os.stat(os.path.join(dirpath, f))
            n += 1
    return n


def cli(args: list[str], home: Path) -> None:
    env = dict(os.environ, COMPANION_HOME=str(home))
    subprocess.run(
        [sys.executable, "-m", "companion", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        cwd=HERE.parent,
    )


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark vault check and search.")
    ap.add_argument("--notes", type=int, default=10_000, help="notes in the synthetic vault")
    ap.add_argument("--runs", type=int, default=5, help="runs per measurement (cold: max 3)")
    ap.add_argument("--vault", type=Path, help="benchmark this existing vault instead")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-vault-"))
    try:
        if args.vault:
            root = args.vault.expanduser().resolve()
            label = f"existing vault {root}"
        else:
            root = work / "vault"
            t0 = time.perf_counter()
            g = generate_vault(args.notes, root, args.seed)
            label = (
                f"synthetic vault: {g.notes} notes, {g.bytes / 1e6:.1f} MB, {g.links} links "
                f"(generated in {time.perf_counter() - t0:.1f} s)"
            )
            time.sleep(0.2)  # past the index's racy window
        home = work / "home"
        data = home / "data"
        runs = max(1, args.runs)
        cold_runs = min(3, runs)
        rows: list[tuple[str, list[float], list[float], str]] = []

        def drop_index() -> None:
            shutil.rmtree(data / "index", ignore_errors=True)

        w, c = timed(lambda: stat_walk(root), runs)
        rows.append(("stat-walk floor (os.walk + stat)", w, c, ""))
        w, c = timed(lambda: run_check(Vault(root), data), cold_runs, drop_index)
        rows.append(("check, cold (empty index), in-process", w, c, "≤ 2 s"))
        run_check(Vault(root), data)
        w, c = timed(lambda: run_check(Vault(root), data), runs)
        rows.append(("check, warm (index built), in-process", w, c, "≤ 0.3 s"))
        w, c = timed(lambda: cli(["vault", "check", str(root)], home), cold_runs, drop_index)
        rows.append(("check, cold, end to end (CLI)", w, c, "≤ 2 s"))
        cli(["vault", "check", str(root)], home)
        w, c = timed(lambda: cli(["vault", "check", str(root)], home), runs)
        rows.append(("check, warm, end to end (CLI)", w, c, "≤ 0.3 s"))
        if not args.vault:
            note = next((root / "knowledge").rglob("*.md"))
            original = note.read_bytes()

            def touch() -> None:
                note.write_bytes(original + f"\n{time.time_ns()}\n".encode())

            w, c = timed(lambda: run_check(Vault(root), data), runs, touch)
            rows.append(("check after one note changed, in-process", w, c, ""))
            note.write_bytes(original)

        def full_update() -> None:
            with VaultIndex(Vault(root), data) as ix:
                ix.update()

        w, c = timed(full_update, cold_runs, drop_index)
        rows.append(("index update with full text, cold, in-process", w, c, ""))

        def check_only() -> None:
            drop_index()
            run_check(Vault(root), data)

        w, c = timed(full_update, cold_runs, check_only)
        rows.append(("full text added after a check (no parsing), in-process", w, c, ""))
        with VaultIndex(Vault(root), data) as idx:
            idx.update()
            w, c = timed(lambda: [idx.search(q) for q in QUERIES], runs)
            rows.append(
                (
                    f"search, per query (avg of {len(QUERIES)}), in-process",
                    [x / len(QUERIES) for x in w],
                    [x / len(QUERIES) for x in c],
                    "",
                )
            )
            sample = (
                "How do containers talk to each other with a docker compose network and a relay?"
            )
            w, c = timed(lambda: idx.similar(sample), runs)
            rows.append(("similar(text), in-process", w, c, ""))
        w, c = timed(lambda: cli(["vault", "search", str(root), "docker", "compose"], home), runs)
        rows.append(("search, warm, end to end (CLI)", w, c, ""))
        size = index_path(root, data).stat().st_size

        print(f"# vault benchmark — {label}")
        print()
        print(
            f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, load average "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end; index {size / 1e6:.1f} MB"
        )
        print()
        print("| measurement | median wall | min wall | median CPU | runs | target |")
        print("|---|---:|---:|---:|---:|---|")
        for name, walls, cpus, target in rows:
            print(
                f"| {name} | {fmt(statistics.median(walls))} | {fmt(min(walls))} | "
                f"{fmt(statistics.median(cpus))} | {len(walls)} | {target} |"
            )
        print()
        print("CPU counts every thread and child process (CPU > wall: both cores were used).")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
