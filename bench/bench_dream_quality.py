"""Score what the dream writes against what a careful person expects (issue 16).

    python bench/bench_dream_quality.py [--keep DIR] [--json FILE] [--llm-url URL --llm-model M]
    python bench/bench_dream_quality.py --worlds N [--seed S] [--nights 4] [--keep DIR]
                                        [--distiller rules|llm]

With `--worlds N` it measures N worlds of the generator in `bench/worlds/` instead (issue 40):
each is dreamt night after night with the rules distiller, the person's edits in between, and
every measure is printed as a rate over all worlds with its worst world. With `--distiller llm`
the worlds are dreamt with the `llm` distiller against the local stand-in endpoint
(`bench/dream_eval/standin.py`: every sentence of every excerpt proposed as a lesson, faithfully
and changed), so the same targets hold whatever a model proposes.

Builds the evaluation world (`bench/dream_eval/world.py`: Lucía's vault, three days of journal
in Spanish and English, Hermes sessions written by Hermes's own SessionDB and memory tool, a
Claude Code session, another agent's generic log), dreams two nights over it with the rules
distiller (the person deletes a memory entry between them), and scores the vault and the
injected memory against `bench/dream_eval/key.yaml`. Then it dreams the first night again on a
fresh copy with the `llm` distiller against a local stand-in endpoint that proposes every
sentence both faithfully and with a number, negation or hedge changed
(`bench/dream_eval/standin.py`), or against a real endpoint with `--llm-url`.

Needs the Hermes venv (`$HERMES_VENV`, made on first use like the interop tests). Prints a
Markdown table with each measure and its target; exits 1 when a target is missed, except with
`--quick`, the smoke run of `tests/test_bench_quick.py`, which prints the targets without
enforcing them (`tests/test_dream_quality.py` and `tests/test_dream_worlds.py` do) and, with
`--worlds`, dreams one night per world unless `--nights` says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import yaml  # noqa: E402
from dream_eval.world import (  # noqa: E402
    NIGHT1,
    NIGHT2,
    World,
    build_world,
    morning_after_night1,
)

KEY = HERE / "dream_eval" / "key.yaml"


@dataclass
class Score:
    rows: list[tuple[str, str, str, bool]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def add(self, name: str, value: str, target: str, met: bool) -> None:
        self.rows.append((name, value, target, met))

    @property
    def ok(self) -> bool:
        return all(met for *_r, met in self.rows)

    def table(self) -> str:
        out = ["| measure | result | target | met |", "|---|---:|---:|:---:|"]
        for name, value, target, met in self.rows:
            out.append(f"| {name} | {value} | {target} | {'yes' if met else '**no**'} |")
        return "\n".join(out)


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def _dream_lines(vault: Path) -> dict[str, list[str]]:
    """Every dream-written content line of the vault, by note (provenance comments off)."""
    from companion.dream import blocks

    out: dict[str, list[str]] = {}
    for p in sorted(vault.rglob("*.md")):
        text = p.read_text(encoding="utf-8")
        lines = [dl.text for dl in blocks.dream_lines(text) if dl.kind in ("content", "index")]
        if lines:
            out[p.relative_to(vault).as_posix()] = lines
    return out


def _memory(world: World, name: str) -> list[str]:
    p = world.memories / name
    if not p.exists():
        return []
    return [e.strip() for e in p.read_text(encoding="utf-8").split("\n§\n") if e.strip()]


def _configure(world: World, home: Path, **extra: Any) -> Any:
    import tomlkit

    from companion.config import load_config
    from companion.paths import device_paths

    os.environ["COMPANION_HOME"] = str(home)
    paths = device_paths()
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    # The key scores what the dream writes when it applies every change itself: `auto`. Under
    # the default (`propose-risky`, issue 40) the replacements and the assistant-only facts it
    # scores wait as proposals for the person instead (docs/dream.md, Promote).
    data: dict[str, Any] = {
        "dream": {"sources": world.sources(), "apply": "auto", **extra.pop("dream", {})},
        "memory": {"hermes_home": str(world.hermes_home)},
        **extra,
    }
    paths.config_file.write_text(tomlkit.dumps(data), encoding="utf-8")
    return paths, load_config(paths)


def _night(world: World, home: Path, when: Any, **extra: Any) -> tuple[Any, Any, Any]:
    from companion.dream import run_dream
    from companion.dream.read import labels_from_config
    from companion.dream.verify import verify_vault
    from companion.vault import Vault, run_check

    paths, config = _configure(world, home, **extra)
    t0 = time.perf_counter()
    report = run_dream(world.vault, config, when, paths=paths, hermes_home=world.hermes_home)
    seconds = time.perf_counter() - t0
    verify = verify_vault(world.vault, labels_from_config(config, world.hermes_home))
    check = run_check(Vault(world.vault), home / "check").to_dict()
    return report, verify, {"check": check, "seconds": round(seconds, 3)}


def score_rules(world: World, home: Path, key: dict[str, Any]) -> Score:
    score = Score()
    before_files = {p.relative_to(world.vault).as_posix() for p in world.vault.rglob("*.md")}
    night1, verify1, info1 = _night(world, home, NIGHT1)
    after1 = _dream_lines(world.vault)
    memory1 = {n: _memory(world, n) for n in ("MEMORY.md", "USER.md")}
    morning_after_night1(world)
    night2, verify2, info2 = _night(world, home, NIGHT2)
    after2 = _dream_lines(world.vault)
    memory2 = {n: _memory(world, n) for n in ("MEMORY.md", "USER.md")}
    new_files = sorted(
        {p.relative_to(world.vault).as_posix() for p in world.vault.rglob("*.md")} - before_files
    )

    def lines_with(find: str, lines: dict[str, list[str]]) -> list[str]:
        f = _fold(find)
        return [n for n, ls in lines.items() for ln in ls if f in _fold(ln)]

    # 1. lessons in their existing topic note
    landed, missed = 0, []
    for item in key["lessons"]:
        lines = after2 if item.get("night") == 2 else after1
        where = lines_with(item["find"], lines)
        if item["note"] in where and not [w for w in where if w in new_files]:
            landed += 1
        else:
            missed.append({"find": item["find"], "expected": item["note"], "got": where})
    n = len(key["lessons"])
    score.add(
        "lessons landing in their existing topic note",
        f"{landed}/{n} ({100 * landed // n} %)",
        "≥ 90 %",
        landed * 10 >= n * 9,
    )
    score.details["lessons_missed"] = missed
    # 2. junk: never a note, a line, an index entry or memory
    junk_hits = []
    for item in key["junk"]:
        hits = lines_with(item["find"], after2)
        hits += [
            f"{m}: memory"
            for m, es in memory2.items()
            for e in es
            if _fold(item["find"]) in _fold(e)
        ]
        hits += [f for f in new_files if _fold(item["find"]) in _fold(f)]
        if hits:
            junk_hits.append({"find": item["find"], "in": hits})
    junk_notes = [
        f
        for f in new_files
        if f.startswith("knowledge/")
        and any(
            _fold(j["find"]) in _fold((world.vault / f).read_text(encoding="utf-8"))
            for j in key["junk"]
        )
    ]
    score.add("junk notes written", str(len(junk_notes)), "0", not junk_notes)
    score.add("junk lines written anywhere", str(len(junk_hits)), "0", not junk_hits)
    score.details["junk"] = junk_hits
    # 3. transient facts promoted
    promoted = [
        {"find": item["find"], "file": m}
        for item in key["transient"]
        for mem in (memory1, memory2)
        for m, es in mem.items()
        if any(_fold(item["find"]) in _fold(e) for e in es)
    ]
    score.add("transient facts promoted", str(len(promoted)), "0", not promoted)
    # 4. stale entries corrected or flagged
    handled, stale_missed = 0, []
    flags = [*getattr(night1, "contradictions", []), *getattr(night2, "contradictions", [])]
    for item in key["stale"]:
        mem = memory2 if item.get("night") == 2 else memory1
        ok = True
        if "file" in item:
            entries = mem[item["file"]]
            if any(_fold(item["gone"]) in _fold(e) for e in entries):
                ok = False
            if item.get("present") and not any(_fold(item["present"]) in _fold(e) for e in entries):
                ok = False
        else:
            # the person's own line: the dream cannot change it, it must flag it
            ok = any(
                f["note"] == item["note"] and _fold(item["flag"]) in _fold(f["existing"])
                for f in flags
            )
        handled += ok
        if not ok:
            stale_missed.append(item["id"])
    n = len(key["stale"])
    score.add(
        "stale entries corrected or flagged",
        f"{handled}/{n} ({100 * handled // n} %)",
        "100 %",
        handled == n,
    )
    score.details["stale_missed"] = stale_missed
    # kept where they belong
    present_missed = [
        item["find"]
        for item in key["memory_present"]
        if not any(_fold(item["find"]) in _fold(e) for e in memory1[item["file"]])
    ]
    score.add(
        "facts kept where they belong (USER.md, MEMORY.md)",
        f"{len(key['memory_present']) - len(present_missed)}/{len(key['memory_present'])}",
        "all",
        not present_missed,
    )
    score.details["present_missed"] = present_missed
    # 5. duplicates: a listed statement more than once in its note, or two lines of a note with
    # the same words
    dups = []
    for item in key["duplicates"]:
        text = (world.vault / item["note"]).read_text(encoding="utf-8")
        count = sum(1 for ln in text.split("\n") if _fold(item["find"]) in _fold(ln))
        if count > 1:
            dups.append({"note": item["note"], "find": item["find"], "times": count})
    from companion.dream.consolidate import line_core
    from companion.dream.text import norm_key

    for p in sorted(world.vault.rglob("*.md")):
        seen: dict[str, int] = {}
        for ln in p.read_text(encoding="utf-8").split("\n"):
            if ln.startswith("#"):
                continue  # a new note's title may say what its first line says
            k = norm_key(line_core(ln))
            if len(k.split()) >= 4:
                seen[k] = seen.get(k, 0) + 1
        dups += [{"note": p.name, "line": k, "times": c} for k, c in seen.items() if c > 1]
    score.add("duplicate lines", str(len(dups)), "0", not dups)
    score.details["duplicates"] = dups
    # 6. the vault's own checks after every dream
    verified = [verify1.ok, verify2.ok]
    score.add(
        "`--verify` after every dream",
        f"{sum(verified)}/2 pass",
        "must pass",
        all(verified),
    )
    broken = [*info1["check"]["broken_links"], *info2["check"]["broken_links"]]
    broken = [b for b in broken if b["raw"] not in _PRE_BROKEN]
    score.add("broken links the dream wrote (vault check)", str(len(broken)), "0", not broken)
    no_h1 = [
        f
        for f in new_files
        if f.startswith("knowledge/")
        and "\n# " not in (world.vault / f).read_text(encoding="utf-8")
    ]
    score.add("new notes without an H1", str(len(no_h1)), "0", not no_h1)
    score.details.update(
        new_notes=new_files,
        seconds=[info1["seconds"], info2["seconds"]],
        verify=[verify1.to_dict(), verify2.to_dict()],
        broken=broken,
        contradictions=flags,
        skipped=[{"code": s.code, "text": s.text} for s in night1.skipped],
    )
    return score


_PRE_BROKEN: set[str] = set()  # the world has no broken link of its own


def score_llm(
    world: World, home: Path, url: str | None, model: str | None, score: Score
) -> dict[str, Any]:
    """The first night with the `llm` distiller; changed proposals kept must be 0."""
    from dream_eval.standin import StandIn

    stand_in = None
    if url is None:
        stand_in = StandIn()
        url, model = stand_in.url, "stand-in"
    try:
        report, verify, info = _night(
            world,
            home,
            NIGHT1,
            dream={"distiller": "llm"},
            llm={"base_url": url, "model": model, "timeout_s": 600, "retries": 1},
            secrets={"backend": "file"},
        )
    finally:
        if stand_in is not None:
            stand_in.close()
    written = "\n".join(
        (world.vault / n).read_text(encoding="utf-8") for n in _dream_lines(world.vault)
    )
    out: dict[str, Any] = {"llm": getattr(report, "llm", None), "note": report.distiller_note}
    if stand_in is not None:
        kept = [c for c in stand_in.changed if _fold(c[2]) in _fold(written)]
        faithful = [f for f in stand_in.faithful if _fold(f) in _fold(written)]
        score.add(
            "model proposals with a changed number/negation/hedge kept",
            f"{len(kept)}/{len(stand_in.changed)}",
            "0",
            not kept,
        )
        out.update(
            changed=len(stand_in.changed),
            changed_kept=kept,
            faithful=len(stand_in.faithful),
            faithful_written=len(faithful),
            faithful_not_written=[f for f in stand_in.faithful if f not in faithful],
            by_kind={
                k: sum(1 for c in stand_in.changed if c[0] == k)
                for k in ("number", "negation", "hedge")
            },
        )
    score.add(
        "`--verify` after the llm dream", "pass" if verify.ok else "fail", "must pass", verify.ok
    )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", type=Path, help="build the world here and keep it")
    ap.add_argument("--json", type=Path, help="write the details as JSON")
    ap.add_argument("--llm-url", help="a real OpenAI-compatible endpoint instead of the stand-in")
    ap.add_argument("--llm-model", default="local")
    ap.add_argument("--worlds", type=int, help="measure N generated worlds (bench/worlds/)")
    ap.add_argument("--seed", type=int, default=1, help="the generator's seed (with --worlds)")
    ap.add_argument("--nights", type=int, help="nights per world (with --worlds; default 4)")
    ap.add_argument(
        "--distiller",
        choices=("rules", "llm"),
        default="rules",
        help="with --worlds: llm dreams against the local stand-in endpoint",
    )
    ap.add_argument(
        "--quick", action="store_true", help="a smoke run: targets not enforced, 1 night a world"
    )
    args = ap.parse_args()
    if args.nights is None:
        args.nights = 1 if args.quick else 4
    if args.worlds:
        return main_worlds(args)
    from tests.interop.hermes import Hermes, hermes_python

    hermes = Hermes(hermes_python())
    root = args.keep or Path(tempfile.mkdtemp(prefix="dream-eval-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        world = build_world(root / "rules", hermes)
        shutil.copytree(root / "rules", root / "llm", symlinks=True)
        built = time.perf_counter() - t0
        llm_world = World(
            root / "llm",
            root / "llm" / "vault",
            root / "llm" / "hermes",
            root / "llm" / "hermes" / "state.db",
            root / "llm" / "claude" / "projects",
            root / "llm" / "logs" / "garden-agent.jsonl",
        )
        key = yaml.safe_load(KEY.read_text(encoding="utf-8"))
        score = score_rules(world, root / "home-rules", key)
        llm = score_llm(llm_world, root / "home-llm", args.llm_url, args.llm_model, score)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(
        f"Dream quality: the evaluation world (built in {built:.1f} s), two nights, rules "
        "distiller; the first night again with the llm distiller\n"
    )
    print(score.table())
    print(f"\ntargets {'met' if score.ok else 'NOT met'}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"rows": score.rows, "details": score.details, "llm": llm},
                indent=2,
                ensure_ascii=False,
                default=str,
            ),
            encoding="utf-8",
        )
    for k in ("lessons_missed", "junk", "stale_missed", "present_missed", "duplicates", "broken"):
        if score.details.get(k):
            print(f"\n{k}: {json.dumps(score.details[k], ensure_ascii=False)}")
    return 0 if score.ok or args.quick else 1


def main_worlds(args: argparse.Namespace) -> int:
    """`--worlds N`: the generated worlds, each measure a rate with its worst world."""
    from worlds import make_world, world_plan
    from worlds.measure import aggregate, run_world, table
    from worlds.writers import FallbackHermesWriter, InteropHermesWriter

    writer: Any
    try:
        from tests.interop.hermes import Hermes, hermes_python

        writer = InteropHermesWriter(Hermes(hermes_python()))
    except Exception as exc:  # no venv and none can be made: say so, use the fallback
        print(f"Hermes venv unavailable ({exc}); using {FallbackHermesWriter.name}")
        writer = FallbackHermesWriter()
    root = args.keep or Path(tempfile.mkdtemp(prefix="dream-worlds-"))
    root.mkdir(parents=True, exist_ok=True)
    results = []
    t_all = time.perf_counter()
    stand_in = None
    if args.distiller == "llm":
        from dream_eval.standin import StandIn

        stand_in = StandIn()
    try:
        for seed, lang, domain in world_plan(args.seed, args.worlds):
            world = make_world(seed, lang, domain)
            t0 = time.perf_counter()
            world.build(root / world.id / "world", writer)
            res = run_world(
                world, root / world.id / "home", args.nights, stand_in.url if stand_in else None
            )
            wall = time.perf_counter() - t0
            res.details["wall_seconds"] = round(wall, 2)
            results.append(res)
            bad = {
                k: v
                for k, v in res.counts.items()
                if v[0] and k not in ("lessons", "stale_flagged")
            }
            print(
                f"{world.id}: lessons {res.counts['lessons'][0]}/{res.counts['lessons'][1]}, "
                f"bad {bad or 'none'}, dream {res.seconds:.1f} s, wall {wall:.1f} s",
                file=sys.stderr,
            )
    finally:
        if stand_in is not None:
            stand_in.close()
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    rows = aggregate(results)
    elapsed = time.perf_counter() - t_all
    how = "rules distiller" if stand_in is None else "llm distiller (stand-in endpoint)"
    print(
        f"Dream quality over {len(results)} generated worlds (seed {args.seed}) × {args.nights} "
        f"nights, {how}, Hermes written by {writer.name}; {elapsed:.0f} s in all\n"
    )
    if stand_in is not None:
        n = {k: sum(r.details.get(f"llm_{k}", 0) for r in results) for k in ("kept", "rejected")}
        print(f"the stand-in's proposals: {n['kept']} kept, {n['rejected']} rejected\n")
        failed = [r.id for r in results if r.details.get("llm_failed")]
        if failed:
            print(f"the llm distiller failed (rules only) in: {', '.join(failed)}\n")
    print(table(rows, results))
    ok = all(met for *_r, met in rows)
    print(f"\ntargets {'met' if ok else 'NOT met'}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "rows": rows,
                    "worlds": [
                        {"id": r.id, "counts": r.counts, "seconds": r.seconds, "details": r.details}
                        for r in results
                    ],
                },
                indent=2,
                ensure_ascii=False,
                default=str,
            ),
            encoding="utf-8",
        )
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
