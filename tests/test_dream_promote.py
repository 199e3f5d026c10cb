"""Promote: only every-session facts, through MemoryStore, within budget, stale entries
replaced, nothing dropped without a report line."""

from __future__ import annotations

import datetime as dt
import itertools
from pathlib import Path

from filelock import FileLock

from companion.dream.blocks import Ref
from companion.dream.consolidate import Explanation
from companion.dream.model import Candidate, Provenance
from companion.dream.plan import Plan
from companion.dream.promote import apply_promotions, plan_promotions
from companion.dream.secretgate import SecretGate
from companion.dream.state import DreamState, MtimeEditors
from companion.memory import MemoryStore


def cand(text: str, promote: str | None = "marker", target: str = "memory") -> Candidate:
    prov = Provenance(Ref("journal/2026-11-27.md", 3), text)
    return Candidate(
        "knowledge",
        text,
        [prov],
        "journal",
        promote=promote,
        target=target,
        time=dt.datetime(2026, 11, 27, tzinfo=dt.UTC),
    )


def setup(tmp_path: Path, memory: str = "", limit: int = 2200, cap: int = 10):
    home = tmp_path / "hermes"
    (home / "memories").mkdir(parents=True)
    if memory:
        (home / "memories" / "MEMORY.md").write_text(memory, encoding="utf-8")
    stores = {"memory": MemoryStore(home, "memory", limit), "user": MemoryStore(home, "user")}
    plan = Plan(
        root=tmp_path,
        is_secret=SecretGate(),
        max_removals=cap,
        editors=MtimeEditors(tmp_path, DreamState(tmp_path / "s.json")),
        now=dt.datetime.now(dt.UTC),
        human_window=dt.timedelta(hours=1),
    )
    return stores, plan


def run(cands, stores, plan, dry_run=False):
    why = Explanation()
    pp = plan_promotions(cands, stores, plan, why)
    ids = (f"m{i}" for i in itertools.count(1))
    changes, skipped = apply_promotions(pp, stores, dry_run=dry_run, next_id=lambda: next(ids))
    return pp, changes, skipped, why


def test_only_eligible_facts_are_promoted(tmp_path):
    stores, plan = setup(tmp_path)
    _pp, changes, _s, why = run(
        [
            cand("Ana prefers replies in Spanish."),
            cand("A lesson nobody marked as always.", promote=None),
        ],
        stores,
        plan,
    )
    assert stores["memory"].read() == ["Ana prefers replies in Spanish."]
    assert changes[0].note == "MEMORY.md" and changes[0].before is None
    assert changes[0].after == "Ana prefers replies in Spanish."
    assert [e["decision"] for e in why.items] == ["promoted"]


def test_stale_entry_on_the_same_subject_is_replaced(tmp_path):
    stores, plan = setup(tmp_path, "Backups run at 02:00 every night.\n§\nAna likes tea.")
    _pp, changes, _s, _w = run([cand("Backups run at 03:30 every night.")], stores, plan)
    assert stores["memory"].read() == ["Backups run at 03:30 every night.", "Ana likes tea."]
    assert changes[0].removed == 1 and "replaced" in changes[0].summary
    assert "02:00" in changes[0].before


def test_related_but_different_facts_are_both_kept(tmp_path):
    stores, plan = setup(tmp_path, "Ana prefers short answers.")
    run([cand("Ana prefers answers in Spanish.")], stores, plan)
    assert stores["memory"].read() == [
        "Ana prefers short answers.",
        "Ana prefers answers in Spanish.",
    ]


def test_existing_fact_removes_its_stale_twin(tmp_path):
    stores, plan = setup(
        tmp_path,
        "The station Pi is reachable as pi@10.0.0.5.\n§\n"
        "The station Pi is reachable as pi@weather.local.",
    )
    _pp, changes, _s, _w = run(
        [cand("The station Pi is reachable as pi@weather.local.", promote="memory-tool")],
        stores,
        plan,
    )
    assert stores["memory"].read() == ["The station Pi is reachable as pi@weather.local."]
    assert "removed" in changes[0].summary


def test_budget_is_never_exceeded_and_what_does_not_fit_is_reported(tmp_path):
    stores, plan = setup(tmp_path, "An entry that already takes most of the budget here.", limit=80)
    _pp, changes, skipped, _w = run(
        [cand("A new fact that cannot fit in what is left.")], stores, plan
    )
    assert changes == [] and stores["memory"].read() == [
        "An entry that already takes most of the budget here."
    ]
    assert len(stores["memory"].path.read_text(encoding="utf-8")) <= 80
    pp = plan_promotions(
        [cand("A new fact that cannot fit in what is left.")], stores, plan, Explanation()
    )
    over = [s for s in pp.skipped if s.code == "over_budget"]
    assert over and "52/80" in over[0].reason
    assert skipped == []


def test_code_commands_and_secrets_paths_are_not_promoted(tmp_path):
    stores, plan = setup(tmp_path)
    pp, changes, _s, _w = run(
        [
            cand("Run `make test` before every push."),
            cand("sudo systemctl restart the relay when it hangs."),
            cand("The relay key lives in ~/.ssh/relay_ed25519 on the box."),
        ],
        stores,
        plan,
    )
    assert changes == [] and stores["memory"].read() == []
    assert sorted(s.code for s in pp.skipped) == ["not_promotable"] * 3


def test_user_target_goes_to_user_md(tmp_path):
    stores, plan = setup(tmp_path)
    run([cand("Ana prefers short answers.", promote="memory-tool", target="user")], stores, plan)
    assert stores["user"].read() == ["Ana prefers short answers."]
    assert stores["memory"].read() == []


def test_removal_cap_blocks_replacing(tmp_path):
    stores, plan = setup(tmp_path, "Backups run at 02:00 every night.", cap=0)
    pp, changes, _s, _w = run([cand("Backups run at 03:30 every night.")], stores, plan)
    assert changes == [] and stores["memory"].read() == ["Backups run at 02:00 every night."]
    assert [s.code for s in pp.skipped] == ["cap"]


def test_writes_take_the_agents_lock(tmp_path):
    stores, plan = setup(tmp_path)
    store = MemoryStore(stores["memory"].home, "memory", lock_timeout=0.2)
    stores["memory"] = store
    with FileLock(store.lock_path):  # the agent is writing
        _pp, changes, skipped, _w = run([cand("Ana prefers replies in Spanish.")], stores, plan)
    assert changes == [] and [s.code for s in skipped] == ["locked"]
    assert store.read() == []


def test_dry_run_changes_nothing(tmp_path):
    stores, plan = setup(tmp_path, "Ana likes tea.")
    _pp, changes, _s, _w = run(
        [cand("Ana prefers replies in Spanish.")], stores, plan, dry_run=True
    )
    assert changes and changes[0].after.endswith("Ana prefers replies in Spanish.")
    assert stores["memory"].read() == ["Ana likes tea."]
