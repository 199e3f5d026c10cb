"""Benchmark of the sync engine's local half: quiet rescan time and index memory.

Targets (issue 4): a quiet rescan of 10,000 notes in at most 100 ms; a daemon with 100,000 files
indexed in at most 200 MB RSS. This measures the scanner and index alone (no relay, no GUI).

Run:  python bench/bench_sync_local.py [--files 10000] [--rows 100000] [--repeat 7]
Prints a Markdown table of medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from companion.sync.local.ignore import IgnoreRules  # noqa: E402
from companion.sync.round.scanner import ChangeKind, scan  # noqa: E402
from companion.sync.state.files import Entry  # noqa: E402
from companion.sync.state.index import SyncIndex  # noqa: E402


def rss_mb() -> float:
    """Current resident set size in MB (Linux /proc; peak RSS elsewhere)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def make_vault(root: Path, n: int) -> None:
    body = ("A line of a note about something worth remembering.\n" * 40)[:2000]
    for i in range(n):
        d = root / f"area{i % 10}" / f"topic{i % 100}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"note {i}.md").write_text(f"# Note {i}\n\n{body}", encoding="utf-8")


def raw_walk(root: Path) -> int:
    """The floor: a bare os.scandir + lstat walk of the same tree, no index, no logic."""
    n = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for e in it:
                st = e.stat(follow_symlinks=False)
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                n += st.st_size >= 0
    return n


def commit_all(index: SyncIndex, res: object) -> None:
    entries = []
    for c in res.changed:  # type: ignore[attr-defined]
        if c.kind in (ChangeKind.CREATED, ChangeKind.MODIFIED) and c.state is not None:
            s = c.state
            entries.append(Entry(c.path, s.sha256, s.size, s.mtime_ns, s.inode, rev=1))
    index.files.put_many(entries)


def bench_rescan(n_files: int, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        vault = Path(tmp) / "vault"
        vault.mkdir()
        t = time.perf_counter()
        make_vault(vault, n_files)
        create_s = time.perf_counter() - t
        index = SyncIndex(Path(tmp) / "state" / "index.sqlite")
        rules = IgnoreRules(vault)
        t = time.perf_counter()
        first = scan(vault, index, rules, settle_ns=0)
        first_s = time.perf_counter() - t
        commit_all(index, first)
        times, hashed, floor = [], [], []
        for _ in range(repeat):
            t = time.perf_counter()
            raw_walk(vault)
            floor.append(time.perf_counter() - t)
            t = time.perf_counter()
            res = scan(vault, index, rules, settle_ns=0)
            times.append(time.perf_counter() - t)
            hashed.append(res.hashed)
            assert not res.changed, "a quiet rescan reported changes"
        # one edit, found by a full rescan and by a watcher-style partial scan
        target = "area3/topic3/note 3.md"
        (vault / target).write_text("edited", encoding="utf-8")
        os.utime(vault / target, ns=(1, time.time_ns() - 10**9))
        t = time.perf_counter()
        one = scan(vault, index, rules, settle_ns=0)
        one_s = time.perf_counter() - t
        t = time.perf_counter()
        part = scan(vault, index, rules, settle_ns=0, paths=[target])
        part_s = time.perf_counter() - t
        assert [c.path for c in one.changed] == [target] == [c.path for c in part.changed]
        index.close()
    return {
        "create_s": create_s,
        "first_scan_s": first_s,
        "quiet_ms": statistics.median(times) * 1000,
        "quiet_min_ms": min(times) * 1000,
        "floor_ms": statistics.median(floor) * 1000,
        "quiet_hashed": max(hashed),
        "one_edit_full_ms": one_s * 1000,
        "one_edit_partial_ms": part_s * 1000,
    }


def _build_index(db: Path, rows: int) -> None:
    idx = SyncIndex(db)
    batch: list[Entry] = []
    for i in range(rows):
        path = f"area{i % 10}/topic{i % 1000}/note number {i}.md"
        batch.append(Entry(path, f"{i:064x}", 2000, 1_700_000_000_000_000_000 + i, i, rev=1))
        if len(batch) == 5000:
            idx.files.put_many(batch)
            batch.clear()
    idx.files.put_many(batch)
    idx.close()


def _rss_child(db: Path, rows: int) -> None:
    """Run in a fresh interpreter: RSS with an index of `rows` rows open, during and after the
    bulk stat load a full rescan does. Builds the index first when `db` does not exist."""
    if not db.exists():
        _build_index(db, rows)
        return
    base = rss_mb()  # interpreter + companion.sync imported
    out: dict[str, float] = {"baseline_mb": base, "db_mb": db.stat().st_size / 1_048_576}
    idx = SyncIndex(db)  # what a daemon holds between rounds
    assert idx.files.count_live() == rows
    idx.meta.get("vault_id")
    out["open_mb"] = rss_mb() - base
    stats = idx.files.live_stats()  # what a full quiet rescan holds while it runs
    out["during_scan_mb"] = rss_mb() - base
    assert len(stats) == rows
    del stats
    out["after_scan_mb"] = rss_mb() - base
    out["total_rss_mb"] = rss_mb()
    idx.close()
    print(json.dumps(out))


def bench_rss(rows: int, repeat: int) -> dict[str, float]:
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        db = Path(tmp) / "index.sqlite"
        for i in range(repeat + 1):  # the first child builds the index
            proc = subprocess.run(
                [sys.executable, __file__, "--rss-child", str(rows), "--db", str(db)],
                capture_output=True,
                text=True,
                check=True,
            )
            if i:
                runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--rss-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        _rss_child(args.db, args.rss_child)
        return
    r = bench_rescan(args.files, args.repeat)
    m = bench_rss(args.rows, 3)
    print(f"## Sync engine, local half ({sys.platform}, Python {sys.version.split()[0]})\n")
    print("| measure | median | target |")
    print("|---|---:|---:|")
    print(f"| quiet rescan, {args.files:,} notes of ~2 KB | {r['quiet_ms']:.1f} ms | ≤ 100 ms |")
    print(f"| bare scandir+lstat walk of the same tree (floor) | {r['floor_ms']:.1f} ms | |")
    print(f"| files hashed by a quiet rescan | {r['quiet_hashed']} | 0 |")
    print(f"| rescan after one edit (full walk) | {r['one_edit_full_ms']:.1f} ms | |")
    print(f"| rescan after one edit (watcher batch) | {r['one_edit_partial_ms']:.2f} ms | |")
    print(f"| first scan (hash everything) | {r['first_scan_s'] * 1000:.0f} ms | |")
    print(f"| index file, {args.rows:,} rows | {m['db_mb']:.1f} MB | |")
    print(f"| process RSS before opening the index | {m['baseline_mb']:.1f} MB | |")
    print(f"| RSS added by an open index, {args.rows:,} rows | {m['open_mb']:.1f} MB | |")
    print(f"| RSS added during a full rescan's stat load | {m['during_scan_mb']:.1f} MB | |")
    print(f"| RSS added after the rescan (freed) | {m['after_scan_mb']:.1f} MB | |")
    print(
        f"| process RSS total, {args.rows:,} rows indexed | {m['total_rss_mb']:.1f} MB | ≤ 200 MB |"
    )
    print(
        f"\n(quiet rescan: median of {args.repeat}, best {r['quiet_min_ms']:.1f} ms; "
        "RSS: median of 3 fresh processes)"
    )


if __name__ == "__main__":
    main()
