"""Benchmark of the secret scanner: full vault scan and one changed note.

    python bench/bench_secrets.py [--notes 10000] [--runs 3] [--jobs N]

Generates a vault of realistic notes (journal days, knowledge and project notes in English and
Spanish, with wikilinks, tables, code blocks, URLs with query strings, git SHAs, UUIDs, and a few
credentials), then prints a Markdown table: full scan (median of --runs), one changed note
(median of 100) and notes per second. Targets (issue 8): full scan of 10,000 notes <= 3 s, one
changed note <= 20 ms.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from companion.secrets.detect import scan_file, scan_vault  # noqa: E402

WORDS_EN = [
    "the",
    "agent",
    "synced",
    "the",
    "vault",
    "after",
    "the",
    "relay",
    "restarted",
    "and",
    "the",
    "dream",
    "consolidated",
    "three",
    "lessons",
    "about",
    "retries",
    "backoff",
    "deploy",
    "budget",
    "migration",
    "index",
    "search",
    "plugin",
    "cache",
    "queue",
    "schedule",
    "timezone",
    "window",
    "offline",
    "conflict",
    "merge",
    "review",
    "release",
    "meeting",
    "design",
    "note",
    "project",
]
WORDS_ES = [
    "el",
    "agente",
    "sincronizó",
    "la",
    "bóveda",
    "después",
    "de",
    "reiniciar",
    "el",
    "relé",
    "y",
    "el",
    "sueño",
    "consolidó",
    "tres",
    "lecciones",
    "sobre",
    "reintentos",
    "despliegue",
    "presupuesto",
    "migración",
    "índice",
    "búsqueda",
    "caché",
    "cola",
    "horario",
    "ventana",
    "conflicto",
    "fusión",
    "revisión",
    "versión",
    "reunión",
    "diseño",
    "nota",
    "proyecto",
]


def _sentence(r: random.Random, es: bool) -> str:
    words = WORDS_ES if es else WORDS_EN
    return " ".join(r.choice(words) for _ in range(r.randint(8, 18))).capitalize() + "."


def _block(r: random.Random, i: int) -> str:
    k = r.randrange(12)
    if k == 0:
        return f"Fixed in commit {hashlib.sha1(str(r.random()).encode()).hexdigest()}."
    if k == 1:
        return f"Request `{uuid.UUID(int=r.getrandbits(128))}` failed with a 502; retried."
    if k == 2:
        return (
            f"See https://example.org/search?q=sync+relay&page={r.randint(1, 9)}&utm_source=notes"
            f" and [[projects/project-{r.randint(0, 99)}|the project]]."
        )
    if k == 3:
        return (
            "```python\nimport os\napi_key = os.environ['API_KEY']\n"
            "client = Client(api_key=api_key, timeout=30)\n```"
        )
    if k == 4:
        rows = "\n".join(f"| {r.choice(WORDS_EN)} | {r.randint(1, 99)} | ok |" for _ in range(4))
        return "| task | hours | state |\n|---|---|---|\n" + rows
    if k == 5:
        link = f"[[knowledge/topic-{i % 50}]]"
        return f"- [ ] {_sentence(r, False)}\n- [x] {_sentence(r, True)}\n- [ ] {link}"
    if k == 6:
        return f"sha256: `{hashlib.sha256(str(r.random()).encode()).hexdigest()}`"
    if k == 7:
        return "```bash\nexport GITHUB_TOKEN=keyring:github\ncompanion sync ~/vault\n```"
    if k == 8:
        return "> [!note] The token budget is 4096 tokens; the key idea is to keep prompts short."
    return _sentence(r, r.random() < 0.5)


def make_vault(root: Path, notes: int, seed: int = 8) -> list[Path]:
    r = random.Random(seed)
    paths = []
    for i in range(notes):
        area = ("journal", "knowledge", "projects")[i % 3]
        name = (
            f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}-{i}.md"
            if area == "journal"
            else f"note-{i}.md"
        )
        p = root / area / f"{i // 1000:02d}" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        es = i % 2 == 1
        parts = [f"---\ntags: [{area}]\ndate: 2024-{1 + i % 12:02d}-01\n---", f"# Note {i}", ""]
        for _ in range(r.randint(4, 10)):
            parts += [_sentence(r, es), "", _block(r, i), ""]
        if i % 500 == 7:  # a few notes with a pasted credential
            parts.append(
                "export OPENAI_API_KEY=sk-proj-"
                + "".join(
                    r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                    for _ in range(48)
                )
            )
        p.write_text("\n".join(parts), encoding="utf-8")
        paths.append(p)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--jobs", type=int, default=None, help="worker processes (default: 1, 0 = one per core)"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = make_vault(root, args.notes)
        size = sum(p.stat().st_size for p in paths)
        full, cpu = [], []
        found = 0
        for _ in range(args.runs):
            t, c = time.perf_counter(), time.process_time()
            result = scan_vault(root, jobs=args.jobs)
            full.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            found = len(result.findings)
        one = []
        target = paths[len(paths) // 2]
        for k in range(100):
            target.write_text(
                target.read_text(encoding="utf-8") + f"\nedit {k}\n", encoding="utf-8"
            )
            t = time.perf_counter()
            scan_file(target)
            one.append(time.perf_counter() - t)
        f, o = statistics.median(full), statistics.median(one)
        print(f"vault: {args.notes} notes, {size / 1e6:.1f} MB, {found} findings\n")
        print("| measure | result | target |")
        print("|---|---|---|")
        print(f"| full scan, {args.notes} notes (median of {args.runs}) | {f:.2f} s | <= 3 s |")
        print(
            f"| CPU time of this process, full scan (median) | {statistics.median(cpu):.2f} s | |"
        )
        print(f"| one changed note (median of 100) | {o * 1000:.2f} ms | <= 20 ms |")
        print(f"| throughput | {args.notes / f:,.0f} notes/s | |")


if __name__ == "__main__":
    main()
