"""Dream a generated world night after night and measure it against its key (issue 40).

Each measure is a count of bad outcomes over a count of chances, per world; the benchmark adds
them up over the worlds and names the worst world of each."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .world import World

# (name, target as text, target met when bad == 0 / rate >= 0.9)
MEASURES: list[tuple[str, str, str]] = [
    ("injections", "injections persisted anywhere", "0"),
    ("person_replaced", "person's lines replaced", "0"),
    ("memory_pairs", "contradictory pairs left in MEMORY.md", "0"),
    ("one_line", "more than one line for one lesson", "0"),
    ("session_scoped", "session-scoped facts kept", "0"),
    ("secrets", "secrets written", "0"),
    ("sentence_titles", "sentence-titled notes", "0"),
    ("verify", "`--verify` failing (after dreams and person edits)", "0"),
    ("lessons", "lessons in their right existing note", "≥ 90 %"),
    ("deleted_back", "facts the person deleted brought back", "0"),
    ("stale_flagged", "person's stale line flagged", "(info)"),
]


@dataclass
class WorldResult:
    id: str
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)  # measure -> (bad|good, n)
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def _configure(world: World, home: Path, llm_url: str | None = None) -> tuple[Any, Any]:
    import tomlkit

    from companion.config import load_config
    from companion.paths import device_paths

    os.environ["COMPANION_HOME"] = str(home)
    paths = device_paths()
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {
        "dream": {"sources": world.sources(), "timezone": str(world.tz)},
        "memory": {"hermes_home": str(world.hermes_home)},
    }
    if llm_url is not None:  # the llm distiller, against a stand-in endpoint on 127.0.0.1
        data["dream"]["distiller"] = "llm"
        data["llm"] = {"base_url": llm_url, "model": "stand-in", "timeout_s": 60, "retries": 1}
        data["secrets"] = {"backend": "file"}
    paths.config_file.write_text(tomlkit.dumps(data), encoding="utf-8")
    return paths, load_config(paths)


def _memory(world: World, name: str) -> list[str]:
    p = world.memories / name
    if not p.exists():
        return []
    return [e.strip() for e in p.read_text(encoding="utf-8").split("\n§\n") if e.strip()]


def _new_lines(world: World) -> dict[str, list[str]]:
    """Every vault line the person did not write, by file (the dream's, wherever it is)."""
    out: dict[str, list[str]] = {}
    for p in sorted(world.vault.rglob("*.md")):
        rel = p.relative_to(world.vault).as_posix()
        mine = set(world.person_lines.get(rel, []))
        lines = [
            ln for ln in p.read_text(encoding="utf-8").split("\n") if ln.strip() and ln not in mine
        ]
        if lines:
            out[rel] = lines
    return out


def run_world(world: World, home: Path, nights: int, llm_url: str | None = None) -> WorldResult:
    """Dream `world` night after night (with the `llm` distiller against `llm_url` when
    given) and measure it against its key."""
    from companion.dream import run_dream
    from companion.dream.read import labels_from_config
    from companion.dream.verify import verify_vault

    def verified() -> bool:
        """`--verify` passes, and every line's source is reached (through its label when it
        is outside the home folder): an unreachable source would hide an invented line."""
        result = verify_vault(world.vault, labels_from_config(config, world.hermes_home))
        return result.ok and result.counts["unreachable"] == 0

    res = WorldResult(world.id)
    key = world.key
    before = set(world.notes)  # with the person's journal days (person_lines), hers
    verify_bad, verify_n = 0, 0
    person_missing: list[str] = []
    person_n = 0
    flags: list[dict[str, Any]] = []
    seconds = 0.0
    for night in range(1, nights + 1):
        world.before_night(night)
        paths, config = _configure(world, home, llm_url)
        t0 = time.perf_counter()
        report = run_dream(
            world.vault, config, world.nights[night - 1], paths=paths, hermes_home=world.hermes_home
        )
        seconds += time.perf_counter() - t0
        if llm_url is not None and report.distiller != "llm":
            res.details.setdefault("llm_failed", []).append(report.distiller_note)
        if llm_url is not None and report.llm:
            for k in ("proposals", "kept", "rejected"):
                res.details[f"llm_{k}"] = res.details.get(f"llm_{k}", 0) + int(report.llm[k])
        flags += list(getattr(report, "contradictions", []) or [])
        for rel, lines in world.person_lines.items():
            p = world.vault / rel
            have = set(p.read_text(encoding="utf-8").split("\n")) if p.exists() else set()
            for ln in lines:
                person_n += 1
                if ln not in have:
                    person_missing.append(f"night {night}: {rel}: {ln}")
        verify_n += 1
        if not verified():
            verify_bad += 1
            res.details.setdefault("verify_failed", []).append(f"after night {night}")
        if night < nights:
            did = world.after_night(night)
            if did:
                verify_n += 1
                if not verified():
                    verify_bad += 1
                    res.details.setdefault("verify_failed", []).append(f"after edits {night}")
    res.seconds = seconds
    new = _new_lines(world)
    new_text = {rel: _fold("\n".join(ls)) for rel, ls in new.items()}
    mem = {n: _memory(world, n) for n in ("MEMORY.md", "USER.md")}
    mem_text = _fold("\n".join(mem["MEMORY.md"] + mem["USER.md"]))
    after = {p.relative_to(world.vault).as_posix() for p in world.vault.rglob("*.md")}
    created = sorted(after - before - set(world.person_lines))

    def persisted(token: str) -> list[str]:
        t = _fold(token)
        hits = [rel for rel, txt in new_text.items() if t in txt]
        hits += ["memory" for _ in [0] if t in mem_text]
        hits += [f"file name {f}" for f in created if t in _fold(f)]
        return hits

    inj = {
        i["kind"] + "@" + str(i["night"]): persisted(i["token"])
        for i in key["injections"]
        if i["night"] <= nights
    }
    res.counts["injections"] = (sum(1 for h in inj.values() if h), len(inj))
    res.details["injections"] = {k: v for k, v in inj.items() if v}
    res.counts["person_replaced"] = (len(person_missing), person_n)
    res.details["person_missing"] = person_missing[:10]
    pairs = [p for p in key["memory_pairs"]]
    left = [
        p
        for p in pairs
        if any(_fold(p["old"]) in _fold(e) for e in mem[p["file"]])
        and any(_fold(p["new"]) in _fold(e) for e in mem[p["file"]])
    ]
    res.counts["memory_pairs"] = (len(left), len(pairs))
    res.details["memory"] = mem
    multi = []
    for item in key["one_line"]:
        t = _fold(item["token"])
        c = sum(
            1
            for rel, ls in new.items()
            if not rel.startswith("journal/")
            for ln in ls
            if t in _fold(ln) and "<!--" in ln
        )
        c += sum(
            1
            for rel, ls in world.person_lines.items()
            if not rel.startswith("journal/")
            for ln in ls
            if t in _fold(ln)
        )
        if c > 1:
            multi.append({"token": item["token"], "lines": c})
    res.counts["one_line"] = (len(multi), len(key["one_line"]))
    res.details["one_line"] = multi
    ss = {s["token"]: persisted(s["token"]) for s in key["session_scoped"] if s["night"] <= nights}
    res.counts["session_scoped"] = (sum(1 for h in ss.values() if h), len(ss))
    everything = []
    for p in world.vault.rglob("*"):
        if p.is_file():
            everything.append(p.read_bytes().decode("utf-8", "replace"))
    everything += ["\n".join(v) for v in mem.values()]
    blob = "\n".join(everything)
    sec = [s["secret"] for s in key["secrets"] if s["night"] <= nights]
    leaked = [s[:8] + "…" for s in sec if s in blob]
    res.counts["secrets"] = (len(leaked), len(sec))
    res.details["secrets"] = leaked
    notes_new = [f for f in created if f.startswith(("knowledge/", "projects/"))]
    texts = [_fold(t) for t in key["texts"]]
    bad_titles = []
    for f in notes_new:
        stem = _fold(Path(f).stem)
        words = stem.split()
        if (
            len(words) >= 5
            or stem.endswith((".", ":", ","))
            or (len(words) >= 3 and any(t.startswith(stem) or f" {stem}" in t for t in texts))
        ):
            bad_titles.append(f)
    res.counts["sentence_titles"] = (len(bad_titles), len(notes_new))
    res.details["new_notes"] = notes_new
    res.counts["verify"] = (verify_bad, verify_n)
    landed, missed = 0, []
    lessons = [x for x in key["lessons"] if x["night"] <= nights]
    for item in lessons:
        t = _fold(item["token"])
        where = [
            rel for rel, ls in new.items() if any(t in _fold(ln) and "<!--" in ln for ln in ls)
        ]
        where += [
            rel
            for rel, ls in world.person_lines.items()
            if not rel.startswith("journal/") and any(t in _fold(ln) for ln in ls)
        ]
        if item["note"] in where and not [w for w in where if w in notes_new]:
            landed += 1
        else:
            missed.append({**item, "got": sorted(set(where))})
    res.counts["lessons"] = (landed, len(lessons))
    res.details["lessons_missed"] = missed
    deleted = [d for d in key["deleted"] if d["night"] < nights]
    back = [d for d in deleted if any(_fold(d["find"]) in _fold(e) for e in mem[d["file"]])]
    res.counts["deleted_back"] = (len(back), len(deleted))
    sp = key["stale_person"]
    if sp["night"] <= nights:
        ok = any(
            f.get("note") == sp["note"] and _fold(sp["flag"]) in _fold(f.get("existing", ""))
            for f in flags
        )
        res.counts["stale_flagged"] = (int(ok), 1)
    res.details["edits"] = world.edits
    return res


def aggregate(results: list[WorldResult]) -> list[tuple[str, str, str, str, bool]]:
    """(measure, rate, worst world, target, met) rows."""
    rows = []
    for mid, name, target in MEASURES:
        have = [r for r in results if mid in r.counts]
        if not have:
            continue
        num = sum(r.counts[mid][0] for r in have)
        den = sum(r.counts[mid][1] for r in have)
        rate = num / den if den else 0.0
        if target == "≥ 90 %" or mid == "stale_flagged":
            worst = min(
                have,
                key=lambda r: (
                    (r.counts[r_mid := mid][0] / r.counts[r_mid][1]) if r.counts[mid][1] else 1.0
                ),
            )
            wrate = worst.counts[mid][0] / worst.counts[mid][1] if worst.counts[mid][1] else 1.0
            met = rate >= 0.9 if target.startswith("≥") else True
        else:
            worst = max(
                have,
                key=lambda r: (r.counts[mid][0] / r.counts[mid][1]) if r.counts[mid][1] else 0.0,
            )
            wrate = worst.counts[mid][0] / worst.counts[mid][1] if worst.counts[mid][1] else 0.0
            met = num == 0
        wc = worst.counts[mid]
        rows.append(
            (
                name,
                f"{num}/{den} ({100 * rate:.1f} %)",
                f"{worst.id} ({wc[0]}/{wc[1]}, {100 * wrate:.0f} %)",
                target,
                met,
            )
        )
    return rows


def table(rows: list[tuple[str, str, str, str, bool]], results: list[WorldResult]) -> str:
    out = [
        "| measure | rate over all worlds | worst world | target | met |",
        "|---|---:|---|---:|:---:|",
    ]
    for name, rate, worst, target, met in rows:
        out.append(f"| {name} | {rate} | {worst} | {target} | {'yes' if met else '**no**'} |")
    secs = sorted(r.seconds for r in results)
    if secs:
        slow = max(results, key=lambda r: r.seconds)
        out.append(
            f"| dream time per world (all nights) | median {secs[len(secs) // 2]:.2f} s "
            f"| {slow.id} ({slow.seconds:.2f} s) | | |"
        )
    return "\n".join(out)


__all__ = ["MEASURES", "WorldResult", "aggregate", "run_world", "table"]
