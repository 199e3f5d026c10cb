"""Benchmark the dream: a 48 h window of 2,000 Hermes messages over a 10,000-note vault, with
the rules distiller. Target: at most 5 s per dream on this machine.

    python bench/bench_dream.py [--notes 10000] [--messages 2000] [--runs 3] [--keep DIR]

Builds the vault with bench/gen_vault.py and a Hermes state.db (real table layout) whose
messages carry explicit markers (about 1 in 8), wikilinks to existing notes, decisions and
status lines for projects, and memory-tool calls. The first dream builds the vault's full-text
index (kept in the data dir between nights); the table reports it apart, then the median of
`--runs` further dreams, each starting from the same vault: after a run the dream is undone
(byte for byte) and its report, ledger and memory files are put back.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from zoneinfo import ZoneInfo

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gen_vault import WORDS, generate_vault  # noqa: E402

NOW = dt.datetime(2025, 1, 1, 2, 0, tzinfo=ZoneInfo("Europe/Madrid"))
OLD = (NOW - dt.timedelta(days=3)).timestamp()
STEPS = ("read", "distill", "consolidate", "represent", "promote", "record", "apply", "verify")
MARKERS = ["remember", "lesson", "Lesson", "TIL", "recuerda", "lección", "always", "siempre"]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def build_hermes(path: Path, vault: Path, n: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    titles = [p.stem for p in (vault / "knowledge").rglob("*.md")]
    projects = [p.stem for p in (vault / "projects").glob("*.md")]
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(
        """
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT,
            started_at REAL NOT NULL, ended_at REAL, title TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
            role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
            timestamp REAL NOT NULL, token_count INTEGER, active INTEGER NOT NULL DEFAULT 1,
            compacted INTEGER NOT NULL DEFAULT 0, display_kind TEXT);
        CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
        """
    )
    start = NOW.timestamp() - 47 * 3600
    step = 47 * 3600 / n
    per_session = 50
    rows = []
    for i in range(n):
        sid = f"s{i // per_session}"
        role = "user" if i % 2 == 0 else "assistant"
        t = start + i * step
        r = rng.random()
        calls = None
        text = _sentence(rng, rng.randint(8, 30))
        if r < 0.08:
            text += f"\n{rng.choice(MARKERS)}: {_sentence(rng, rng.randint(8, 16))}"
            if rng.random() < 0.4:
                text = text[:-1] + f" [[{rng.choice(titles)}]]."
        elif r < 0.10:
            text += f"\nDecided: [[{rng.choice(projects)}]] {_sentence(rng, 9).lower()}"
        elif r < 0.11:
            text += f"\nStatus: [[{rng.choice(projects)}]] {_sentence(rng, 7).lower()}"
        elif r < 0.12 and role == "assistant":
            calls = json.dumps(
                [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {
                            "name": "memory",
                            "arguments": json.dumps(
                                {
                                    "action": "add",
                                    "target": rng.choice(["memory", "user"]),
                                    "content": _sentence(rng, 7),
                                }
                            ),
                        },
                    }
                ]
            )
        rows.append((sid, role, text, calls, t))
    sessions = sorted({r[0] for r in rows}, key=lambda s: int(s[1:]))
    db.executemany(
        "INSERT INTO sessions(id, source, model, started_at) VALUES (?, 'cli', 'm', ?)",
        [(s, start) for s in sessions],
    )
    db.executemany(
        "INSERT INTO messages(session_id, role, content, tool_calls, timestamp) "
        "VALUES (?, ?, ?, ?, ?)",
        rows,
    )
    db.commit()
    db.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--messages", type=int, default=2_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = ap.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-dream-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["COMPANION_HOME"] = str(work / "home")
    os.environ["HERMES_HOME"] = str(work / "hermes")

    from companion.config import load_config
    from companion.dream.engine import run_dream
    from companion.dream.undo import undo_dream
    from companion.paths import device_paths

    vault = work / "vault"
    hermes = work / "hermes"
    t0 = time.perf_counter()
    if vault.exists():
        shutil.rmtree(vault)
    if hermes.exists():
        shutil.rmtree(hermes)
    generate_vault(args.notes, vault, seed=0)
    # Nobody edited the vault in the last days: no note counts as a recent human edit.
    for p in vault.rglob("*"):
        if p.is_file():
            os.utime(p, (OLD, OLD))
    (hermes / "memories").mkdir(parents=True)
    build_hermes(hermes / "state.db", vault, args.messages)
    paths = device_paths()
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text(
        f'[dream]\nsources = [{{kind = "hermes", path = "{hermes / "state.db"}"}}]\n'
        f'max_removals = 1000\n[memory]\nhermes_home = "{hermes}"\n',
        encoding="utf-8",
    )
    config = load_config(paths)
    print(
        f"built {args.notes} notes and {args.messages} messages in "
        f"{time.perf_counter() - t0:.1f} s ({work})",
        file=sys.stderr,
    )

    def one() -> tuple[float, dict[str, float], int]:
        t = time.perf_counter()
        rep = run_dream(vault, config, NOW, paths=paths)
        total = time.perf_counter() - t
        res = undo_dream(vault, rep.date, hermes / "memories")
        for rel in res.restored:  # restored files keep their old times: not "recent" edits
            if (vault / rel).exists():
                os.utime(vault / rel, (OLD, OLD))
        (vault / ".companion/dreams" / f"{rep.date}.json").unlink()
        (vault / ".companion/dreams/ledger.json").unlink(missing_ok=True)
        if hasattr(os, "sync"):
            os.sync()  # let the undo's writes reach the disk before the next timed dream
        return total, rep.timings, len(rep.run_changes)

    cold_total, cold_steps, changes = one()
    warm = [one() for _ in range(args.runs)]
    med = {s: statistics.median(w[1].get(s, 0.0) for w in warm) for s in STEPS}
    total = statistics.median(w[0] for w in warm)
    print(
        f"\nDream benchmark: {args.notes:,} notes, {args.messages:,} messages in a 48 h window, "
        f"rules distiller, {changes} changes per dream\n"
    )
    print(f"| step | first dream (builds the index), s | median of {args.runs}, s |")
    print("|---|---:|---:|")
    for s in STEPS:
        print(f"| {s} | {cold_steps.get(s, 0.0):.3f} | {med[s]:.3f} |")
    print(f"| **total** | **{cold_total:.3f}** | **{total:.3f}** |")
    print(
        f"\ntarget: at most 5 s per dream -> {'met' if total <= 5 else 'NOT met'} ({total:.2f} s)"
    )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
