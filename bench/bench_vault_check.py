"""Benchmark `vault check` on a vault shaped like Obsidian's help vault; prints a Markdown table.

    python bench/bench_vault_check.py                      # 34 folders x 200 notes, 5 runs
    python bench/bench_vault_check.py --folders 4 --notes 50 --runs 3
    python bench/bench_vault_check.py --vault ~/vault      # an existing vault (never written to)

The generated vault (`gen_obsidian_vault.py`) carries the link shapes that need Obsidian's
rules: headings and links written in code, block ids right after embeds, link-like text in
fenced, indented and inline code, nested lists, callouts, tables. Its links are all valid
except a known number planted on purpose; the table's last lines compare the check's counts
with them (a wrong count is a bug, and the script exits 1).

Rows: the stat-walk floor (os.walk + stat of every file: no check can be faster), `check`
cold (empty index) and warm (index built, nothing changed) in-process and end to end
(`python -m companion vault check`, interpreter start-up and imports included, bytecode
cached as in an installed package; text and `--json`). Medians of several runs; CPU time
beside wall time shows how much the machine's other load got in the way. "Cold" means an
empty index; the OS page cache is warm.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_vault import fmt, stat_walk, timed  # noqa: E402
from gen_obsidian_vault import generate  # noqa: E402

from companion.vault.check import run_check  # noqa: E402
from companion.vault.vault import Vault  # noqa: E402


def cli_check(root: Path, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    # bytecode cached as in an installed package, outside the repository
    env = dict(os.environ, COMPANION_HOME=str(home), PYTHONPYCACHEPREFIX=str(home / "pyc"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run(
        [sys.executable, "-m", "companion", "vault", "check", str(root), *extra],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=HERE.parent,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark vault check on a help-vault-like vault.")
    ap.add_argument("--folders", type=int, default=34, help="folders (languages)")
    ap.add_argument("--notes", type=int, default=200, help="notes per folder")
    ap.add_argument("--runs", type=int, default=5, help="runs per measurement (cold: max 3)")
    ap.add_argument("--vault", type=Path, help="benchmark this existing vault instead")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-check-"))
    try:
        gen = None
        if args.vault:
            root = args.vault.expanduser().resolve()
            label = f"existing vault {root}"
        else:
            root = work / "vault"
            t0 = time.perf_counter()
            gen = generate(root, args.folders, args.notes, args.seed)
            label = (
                f"{args.folders} folders x {args.notes} notes: {gen.notes} notes, "
                f"{gen.files} attachments, {gen.bytes / 1e6:.1f} MB, {gen.links} links "
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
        report = run_check(Vault(root), data)
        w, c = timed(lambda: run_check(Vault(root), data).to_dict(), runs)
        rows.append(("check, warm (index built), in-process", w, c, "≤ 0.3 s"))
        cli_check(root, home)  # compiles the bytecode once
        w, c = timed(lambda: cli_check(root, home), cold_runs, drop_index)
        rows.append(("check, cold, end to end (CLI)", w, c, "≤ 2 s"))
        cli_check(root, home)
        w, c = timed(lambda: cli_check(root, home), runs)
        rows.append(("check, warm, end to end (CLI)", w, c, "≤ 0.3 s"))
        w, c = timed(lambda: cli_check(root, home, "--json"), runs)
        rows.append(("check --json, warm, end to end (CLI)", w, c, "≤ 0.3 s"))
        proc = cli_check(root, home, "--json")
        counts = json.loads(proc.stdout)["counts"]

        print(f"# vault check benchmark — {label}")
        print()
        print(
            f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, load average "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end"
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
        print()
        p = report.problems()
        print(
            f"Check found {counts['notes']} notes, {counts['links']} links, "
            f"{counts['broken_links']} broken links, {counts['missing_anchors']} missing "
            f"headings or blocks; {p['errors']} errors, {p['warnings']} warnings "
            f"(exit status {proc.returncode})."
        )
        if gen is None:
            return 0
        print(
            f"Planted: {gen.notes} notes, {gen.links} links, {gen.broken} broken links, "
            f"{gen.missing} missing headings; {gen.not_links} link-like texts in code."
        )
        expected = (gen.notes, gen.links, gen.broken, gen.missing)
        got = (
            counts["notes"],
            counts["links"],
            counts["broken_links"],
            counts["missing_anchors"],
        )
        if got != expected:
            print(f"MISMATCH: the check counted {got}, the vault has {expected}")
            return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
