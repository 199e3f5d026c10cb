"""End to end: a realistic week (English and Spanish vaults, a Hermes state.db built here, a
Claude Code and an OpenClaw session) through `run_dream`, checking every guardrail."""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import os
import re
import sqlite3
from pathlib import Path

import pytest

from companion.config import load_config
from companion.dream import blocks
from companion.dream.engine import run_dream
from companion.dream.read import find_messages, labels_from_config
from companion.dream.report import DreamReport, load_report, read_report
from companion.dream.undo import NoteLocator, UndoRefused, note_status, revert_dream, undo_dream
from companion.dream.verify import verify_vault
from companion.paths import device_paths
from tests.fixtures.dream import NOTES_EN, NOW, SECRET, build, snapshot, write_config

NOTES_SQLITE = NOTES_EN["knowledge/SQLite.md"]

BEGIN = re.compile(r"^<!-- dream:begin(?: [a-z]+)? -->$")
END = "<!-- dream:end -->"
SRC = re.compile(r" <!-- src: (.*) -->$")


def _setup(tmp_path: Path, lang: str = "en", **dream):
    fx = build(tmp_path / "fx", lang)
    paths = device_paths()
    write_config(paths.config_file, fx, **dream)
    return fx, paths, load_config(paths)


def _dream(fx, paths, config, **kw):
    return run_dream(fx.vault, config, NOW, paths=paths, **kw)


def _inside_blocks(lines: list[str]) -> set[int]:
    """Indexes of lines inside dream blocks (markers included), parsed independently."""
    out, start = set(), None
    for i, line in enumerate(lines):
        if BEGIN.match(line):
            start = i
        elif line == END and start is not None:
            out.update(range(start, i + 1))
            start = None
    return out


def assert_only_dream_lines_added(before: str, after: str, name: str) -> None:
    a, b = before.split("\n"), after.split("\n")
    inside = _inside_blocks(b)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        assert op == "insert", f"{name}: the person's lines {a[i1:i2]!r} were {op}d"
        for j in range(j1, j2):
            assert not b[j].strip() or j in inside, f"{name}: line outside a block: {b[j]!r}"


def _all_text(fx) -> str:
    parts = []
    for root in (fx.vault, fx.hermes_home / "memories"):
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix in (".md", ".json"):
                parts.append(p.read_text(encoding="utf-8"))
    return "\n".join(parts)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_dream_consolidates_the_week(tmp_path, lang):
    # the dream applying every change itself (issue 40: by default a replacement waits as a
    # proposal, tests/test_dream_proposals.py)
    fx, paths, config = _setup(tmp_path, lang, apply="auto")
    rep = _dream(fx, paths, config)
    kinds = {c.kind for c in rep.run_changes}
    assert {"consolidated", "corrected", "promoted", "represented", "recorded"} <= kinds
    pi = (fx.vault / "knowledge/Raspberry Pi setup.md").read_text(encoding="utf-8")
    assert "raspi-config" in pi  # a Learned item with an explicit wikilink
    assert "0x76" in pi  # a transcript lesson matched by full-text similarity
    project = (fx.vault / "projects/Weather station.md").read_text(encoding="utf-8")
    status = [ln for ln in project.split("\n") if re.match(r"- (Status|Estado) 2026-11-27", ln)]
    assert len(status) == 1  # the later status replaced the earlier one
    assert ("Decided 2026-11-26" if lang == "en" else "Decidido 2026-11-26") in project
    memory = fx.memory_file.read_text(encoding="utf-8")
    assert "pi@weather.local" in memory and "192.168.1.20" not in memory  # stale replaced
    # said in four sessions over two days: repetition, not durability (issue 16, item 3)
    assert "in git as well as in sync" not in memory
    assert "Ana prefers short answers." in fx.user_file.read_text(encoding="utf-8")
    journal = (fx.vault / "journal/2026-11-28.md").read_text(encoding="utf-8")
    assert "## Dreaming" in journal
    dream_lines = [ln for ln in blocks.dream_lines(journal) if not ln.text.startswith("#")]
    assert 2 <= len(dream_lines) <= 3
    assert ("Consolidated" in journal) == (lang == "en")
    assert ("Se consolidaron" in journal) == (lang == "es")


@pytest.mark.parametrize("lang", ["en", "es"])
def test_no_invented_line(tmp_path, lang):
    """Every dream-written content line is found, verbatim, in the source it cites."""
    fx, paths, config = _setup(tmp_path, lang)
    _dream(fx, paths, config)
    labels = labels_from_config(config, fx.hermes_home)  # sources outside ~ have a label
    result = verify_vault(fx.vault, labels)
    assert result.ok, result.to_dict()
    assert result.counts["ok"] >= 15 and result.counts["unreachable"] == 0
    checked = 0
    for p in sorted(fx.vault.rglob("*.md")):
        for dl in blocks.dream_lines(p.read_text(encoding="utf-8")):
            if dl.kind != "content":
                continue
            core = re.sub(
                r"^- ((Decided|Decidido|Status|Estado) \d{4}-\d{2}-\d{2}: )?", "", dl.text
            ).casefold()
            found = False
            for ref in dl.refs:
                if ref.message_id is not None:
                    msgs = find_messages(ref.source, {ref.message_id}, labels) or {}
                    msg = msgs.get(ref.message_id)
                    texts = (
                        [msg.text] + [json.dumps(c.arguments) for c in msg.tool_calls]
                        if msg
                        else []
                    )
                else:
                    lines = (fx.vault / ref.source).read_text(encoding="utf-8").split("\n")
                    texts = [lines[ref.line - 1]]
                found = found or any(core in " ".join(t.split()).casefold() for t in texts)
            assert found, f"{p.name}: {dl.text!r} is not in {dl.refs}"
            checked += 1
    assert checked >= 12


def test_no_secret_written_anywhere(tmp_path):
    fx, paths, config = _setup(tmp_path)
    rep = _dream(fx, paths, config)
    assert SECRET not in _all_text(fx)
    assert SECRET not in json.dumps(rep.to_dict(explain=True))
    secret = [s for s in rep.skipped if s.code == "secret"]
    assert len(secret) == 1 and secret[0].text is None
    assert secret[0].refs[0]["source"].startswith("hermes:")  # the location only


def _human_text(text: str) -> str:
    """`text` without the dream's blocks (marker lines included): the person's part (an
    oracle of this test, independent of the code that writes the blocks)."""
    lines = blocks.split_lines(text)
    drop: set[int] = set()
    for b in blocks.find_blocks(lines):
        drop.update(range(b.begin, b.end + 1))
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_human_text_byte_identical(tmp_path, lang):
    fx, paths, config = _setup(tmp_path, lang)
    before = {k: v for k, v in snapshot(fx.vault).items()}
    _dream(fx, paths, config)
    after = snapshot(fx.vault)
    for rel, data in before.items():
        assert rel in after, f"{rel} was removed"
        assert_only_dream_lines_added(data.decode(), after[rel].decode(), rel)
        # and the person's bytes are all still there, in order
        kept = _human_text(after[rel].decode())
        assert [ln for ln in kept.split("\n") if ln.strip()] == [
            ln for ln in _human_text(data.decode()).split("\n") if ln.strip()
        ]


def test_recently_edited_note_is_not_written(tmp_path):
    """A note a person edited two hours ago is not written to at all (issue 16, item 7): its
    lesson waits for the next dream, and the report says so."""
    fx, paths, config = _setup(tmp_path)
    rel = "knowledge/Docker networking.md"
    before = (fx.vault / rel).read_bytes()
    rep = _dream(fx, paths, config)
    assert (fx.vault / rel).read_bytes() == before
    assert not any(c.note == rel for c in rep.run_changes)
    waiting = [s for s in rep.skipped if s.code == "being_edited"]
    assert waiting and "containers on the same user-defined network" in waiting[0].text


def test_second_dream_changes_nothing_and_records_it(tmp_path):
    fx, paths, config = _setup(tmp_path)
    first = _dream(fx, paths, config)
    assert not first.nothing_changed
    report_file = fx.vault / ".companion/dreams/2026-11-28.json"
    files_before = {k: v for k, v in snapshot(fx.vault).items() if "dreams/2026" not in k}
    memory_before = snapshot(fx.hermes_home / "memories")
    second = _dream(fx, paths, config, since=NOW.replace(day=26))  # the same full window
    assert second.run_changes == [] and second.nothing_changed
    assert {k: v for k, v in snapshot(fx.vault).items() if "dreams/2026" not in k} == files_before
    assert snapshot(fx.hermes_home / "memories") == memory_before
    data = json.loads(report_file.read_text(encoding="utf-8"))
    assert data["nothing_changed"] is True
    assert [r["nothing_changed"] for r in data["runs"]] == [False, True]
    assert len(data["changes"]) == len(first.run_changes)  # the day's changes are kept


def test_own_output_is_never_read_back(tmp_path):
    fx, paths, config = _setup(tmp_path)

    def content_lines() -> set[str]:
        return {
            ln.text
            for p in fx.vault.rglob("*.md")
            for ln in blocks.dream_lines(p.read_text(encoding="utf-8"))
            if ln.kind == "content"
        }

    old = content_lines()  # the journal of the 27th holds a dream block already
    rep = _dream(fx, paths, config, explain=True)
    written = "\n".join(content_lines() - old)
    assert written
    for trap in (
        "own output",
        "read from a file by a tool",
        "echoed dream line",
        "never a source",
        "not sources",
        "never sources",
        "rewound",
        "hidden scaffolding",
        "outside the window",
        "too old",
        "Old lessons",
        "Consolidated 1 lesson",
    ):
        assert trap not in written, trap
        assert all(trap not in (e["text"] or "") for e in rep.explanations), trap


def test_injected_memory_stays_within_budget_and_reports_what_did_not_fit(tmp_path):
    fx, paths, config = _setup(tmp_path)
    cfg = load_config(paths)
    cfg.set("memory", "memory_char_limit", 140)
    start = fx.memory_file.read_text(encoding="utf-8")
    rep = _dream(fx, paths, cfg)
    memory = fx.memory_file.read_text(encoding="utf-8")
    assert len(memory) <= 140
    for entry in start.split("\n§\n"):  # nothing vanished without a report line
        if entry not in memory:
            assert any(
                c.note == "MEMORY.md" and entry in (c.before or "") and "replaced" in c.summary
                for c in rep.run_changes
            ), entry
    not_fit = [s for s in rep.skipped if s.code == "over_budget"]
    assert not_fit and all("does not fit in MEMORY.md" in s.reason for s in not_fit)
    journal = (fx.vault / "journal/2026-11-28.md").read_text(encoding="utf-8")
    assert "did not fit" in journal


def test_removal_cap_holds(tmp_path):
    fx, paths, config = _setup(tmp_path, max_removals=0)
    _dream(fx, paths, config)
    # Tomorrow a new status arrives; with a cap of 0 the old status line stays (nothing removed)
    project = fx.vault / "projects/Weather station.md"
    j = fx.vault / "journal/2026-11-29.md"
    j.write_text(
        "# 2026-11-29\n\n## Done\n- Status: [[Weather station]] the sensor was "
        "moved indoors for the winter.\n",
        encoding="utf-8",
    )
    memory_before = fx.memory_file.read_text(encoding="utf-8")
    rep = run_dream(fx.vault, config, NOW.replace(day=29), paths=paths)
    text = project.read_text(encoding="utf-8")
    assert "daily upload to the home server works" in text
    assert "moved indoors for the winter" in text
    assert sum(c.removed for c in rep.run_changes) == 0
    assert fx.memory_file.read_text(encoding="utf-8") == memory_before or all(
        c.removed == 0 for c in rep.run_changes
    )


def test_removal_cap_keeps_home_index_when_notes_vanish(tmp_path):
    # the dream's new notes are few since a lesson without a topic waits in the Inbox (issue
    # 40), and the Inbox comes back the next night: no removal allowed
    fx, paths, config = _setup(tmp_path, max_removals=0)
    _dream(fx, paths, config)
    created = sorted((fx.vault / "knowledge").glob("*.md"))
    gone = [
        p
        for p in created
        if p.name
        not in ("SQLite.md", "Raspberry Pi setup.md", "Backups.md", "Docker networking.md")
    ]
    assert len(gone) >= 2
    for p in gone:  # a sync accident: the dream's new notes vanished
        p.unlink()
    rep = run_dream(fx.vault, config, NOW.replace(day=29), paths=paths)
    home = (fx.vault / "Home.md").read_text(encoding="utf-8")
    still = [p for p in gone if f"[[{p.stem}]]" in home]
    assert len(still) == len(gone)
    assert sum(c.removed for c in rep.run_changes) == 0
    assert any("removal cap" in w for w in rep.warnings), rep.warnings


def test_undo_restores_byte_for_byte(tmp_path):
    fx, paths, config = _setup(tmp_path)
    vault_before = snapshot(fx.vault)
    memories_before = snapshot(fx.hermes_home / "memories")
    _dream(fx, paths, config)
    assert snapshot(fx.vault) != vault_before
    res = undo_dream(fx.vault, "2026-11-28", fx.hermes_home / "memories")
    assert res.restored and res.removed
    after = {k: v for k, v in snapshot(fx.vault).items() if not k.startswith(".companion/")}
    assert after == vault_before
    mem_after = {
        k: v for k, v in snapshot(fx.hermes_home / "memories").items() if not k.endswith(".lock")
    }
    assert mem_after == {k: v for k, v in memories_before.items() if not k.endswith(".lock")}
    report = load_report(fx.vault, "2026-11-28")
    assert report is not None and report.undone_at
    # what was undone is not written again by the next dream
    again = run_dream(fx.vault, config, NOW, paths=paths)
    assert not any(c.kind == "consolidated" for c in again.run_changes)
    assert any(s.code == "undone" for s in again.skipped)


def test_undo_refuses_after_a_later_edit(tmp_path):
    """A person who changed one of the dream's lines made it theirs: undo refuses and restores
    nothing. A line typed below the dream's is kept, and only the dream's lines go."""
    fx, paths, config = _setup(tmp_path)
    _dream(fx, paths, config)
    note = fx.vault / "knowledge/SQLite.md"
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("fails on NFS shares", "fails on NFS and SMB shares"), "utf-8")
    snap = snapshot(fx.vault)
    with pytest.raises(UndoRefused, match="SQLite.md"):
        undo_dream(fx.vault, "2026-11-28", fx.hermes_home / "memories")
    assert snapshot(fx.vault) == snap  # nothing was restored
    note.write_text(text + "\nA line typed after the dream.\n", encoding="utf-8")
    undo_dream(fx.vault, "2026-11-28", fx.hermes_home / "memories")
    assert note.read_text(encoding="utf-8") == NOTES_SQLITE + "\nA line typed after the dream.\n"


def test_report_shape_and_hashes(tmp_path):
    fx, paths, config = _setup(tmp_path)
    _dream(fx, paths, config)
    data = json.loads((fx.vault / ".companion/dreams/2026-11-28.json").read_text("utf-8"))
    for key in ("date", "ran_on", "distiller", "changes", "counts", "skipped", "nothing_changed"):
        assert key in data
    assert data["date"] == "2026-11-28" and data["ran_on"] in ("server", "local")
    for c in data["changes"]:
        assert set(c) >= {
            "id",
            "kind",
            "note",
            "before_sha256",
            "after_sha256",
            "before",
            "after",
            "provenance",
            "summary",
        }
        for side in ("before", "after"):
            if c[side] is not None:
                assert hashlib.sha256(c[side].encode()).hexdigest() == c[f"{side}_sha256"]
        for p in c["provenance"]:
            assert set(p) >= {"source", "line", "message_id", "quote"}
    counts = data["counts"]
    assert counts["consolidated"] == sum(c["kind"] == "consolidated" for c in data["changes"])
    # the loader the desktop app uses reads it and sees every change as applied
    rep = read_report(fx.vault / ".companion/dreams/2026-11-28.json")
    loc = NoteLocator(fx.vault, fx.hermes_home / "memories")
    last = {c.note: c for c in rep.changes}  # several changes to one note form a chain
    assert {note_status(c, loc) for c in last.values()} == {"applied"}
    # and reverting one whole note (its chain of changes) restores it exactly
    note = "projects/Weather station.md"
    first = next(c for c in rep.changes if c.note == note)
    one_note = DreamReport(rep.date, rep.ran_on)
    one_note.changes = [c for c in rep.changes if c.note == note]
    revert_dream(one_note, loc)
    assert (fx.vault / note).read_text(encoding="utf-8") == first.before


def test_dream_reads_hermes_while_the_agent_is_writing(tmp_path):
    """The agent holds a write transaction on state.db during the dream: the dream neither
    waits for it nor blocks it (read-only, no lock)."""
    fx, paths, config = _setup(tmp_path)
    agent = sqlite3.connect(fx.state_db, timeout=0.1)
    agent.execute("BEGIN IMMEDIATE")
    agent.execute(
        "INSERT INTO messages(session_id, role, content, timestamp) VALUES "
        "('s9', 'user', 'remember: written while the dream runs.', ?)",
        (NOW.timestamp() - 60,),
    )
    rep = _dream(fx, paths, config)
    agent.execute(
        "INSERT INTO messages(session_id, role, content, timestamp) VALUES "
        "('s9', 'user', 'still writable', 2)"
    )
    agent.commit()
    agent.close()
    assert any(c.kind == "consolidated" for c in rep.run_changes)
    assert "written while the dream runs" not in _all_text(fx)  # uncommitted: not seen


def test_dry_run_writes_nothing(tmp_path):
    fx, paths, config = _setup(tmp_path)
    vault_before = snapshot(fx.vault)
    mem_before = snapshot(fx.hermes_home / "memories")
    rep = _dream(fx, paths, config, dry_run=True)
    assert rep.run_changes and rep.dry_run
    assert snapshot(fx.vault) == vault_before
    assert snapshot(fx.hermes_home / "memories") == mem_before


def test_undo_on_the_laptop_then_on_the_server(tmp_path):
    """The laptop has no Hermes memory files: it restores the notes and leaves MEMORY.md and
    USER.md to an undo where the agent runs, which then restores only those."""
    fx, paths, config = _setup(tmp_path)
    vault_before = snapshot(fx.vault)
    memories_before = fx.memory_file.read_bytes(), fx.user_file.read_bytes()
    _dream(fx, paths, config)
    laptop = undo_dream(fx.vault, "2026-11-28", tmp_path / "no-hermes-here" / "memories")
    assert laptop.elsewhere == ["MEMORY.md", "USER.md"] and laptop.restored
    assert fx.memory_file.read_bytes() != memories_before[0]
    assert not load_report(fx.vault, "2026-11-28").undone_at
    server = undo_dream(fx.vault, "2026-11-28", fx.hermes_home / "memories")
    assert sorted(server.restored) == ["MEMORY.md", "USER.md"] and not server.removed
    assert (fx.memory_file.read_bytes(), fx.user_file.read_bytes()) == memories_before
    assert {
        k: v for k, v in snapshot(fx.vault).items() if not k.startswith(".companion/")
    } == vault_before
    assert load_report(fx.vault, "2026-11-28").undone_at


def test_alias_added_later_is_seen_through_the_cache(tmp_path):
    fx, paths, config = _setup(tmp_path)
    _dream(fx, paths, config)  # fills the alias cache
    note = fx.vault / "knowledge/Backups.md"
    note.write_text(
        note.read_text(encoding="utf-8").replace(
            "tags: [infra]", "tags: [infra]\naliases: [Snapshots]"
        ),
        encoding="utf-8",
    )
    then = (NOW - dt.timedelta(days=2)).timestamp()  # the alias was added days ago
    os.utime(note, (then, then))
    j = fx.vault / "journal/2026-11-29.md"
    j.write_text(
        "# 2026-11-29\n\n## Learned\n- Snapshots older than a year can be pruned safely.\n",
        encoding="utf-8",
    )
    rep = run_dream(fx.vault, config, NOW.replace(day=29), paths=paths, explain=True)
    hit = [e for e in rep.explanations if "older than a year" in (e["text"] or "")]
    assert hit and hit[0]["note"] == "knowledge/Backups.md" and "alias" in hit[0]["why"]
