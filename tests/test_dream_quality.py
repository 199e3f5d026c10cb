"""The evaluation world of bench/bench_dream_quality.py, scored in the suite: what a careful
person expects of two nights of dreaming (issue 16), so a change that makes the dream write
worse fails here, not only in the benchmark's table."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import yaml

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _scorer():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(
        "bench_dream_quality", BENCH / "bench_dream_quality.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_dream_quality"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_the_evaluation_world_meets_every_target(hermes_agent, tmp_path, monkeypatch):
    q = _scorer()
    from dream_eval.world import World, build_world

    world = build_world(tmp_path / "rules", hermes_agent)
    import shutil

    shutil.copytree(tmp_path / "rules", tmp_path / "llm", symlinks=True)
    key = yaml.safe_load((BENCH / "dream_eval" / "key.yaml").read_text(encoding="utf-8"))
    monkeypatch.setenv("COMPANION_HOME", str(tmp_path / "home-rules"))
    score = q.score_rules(world, tmp_path / "home-rules", key)
    llm_world = World(
        tmp_path / "llm",
        tmp_path / "llm" / "vault",
        tmp_path / "llm" / "hermes",
        tmp_path / "llm" / "hermes" / "state.db",
        tmp_path / "llm" / "claude" / "projects",
        tmp_path / "llm" / "logs" / "garden-agent.jsonl",
    )
    llm = q.score_llm(llm_world, tmp_path / "home-llm", None, None, score)
    assert score.ok, score.table() + "\n" + str(score.details)
    assert llm["changed"] >= 15 and llm["changed_kept"] == []
    assert llm["faithful_written"] >= 10  # grounding keeps what the source says
