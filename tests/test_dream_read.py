"""Step 1, Read: transcript sources, the window, the journal, and never the dream's own output."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3

import pytest

from companion.config import load_config
from companion.dream.read import (
    SourceSpec,
    Window,
    find_messages,
    journal_entries,
    parse_time,
    read_transcripts,
    sources_from_config,
)
from companion.dream.readers.hermes import connect_ro
from companion.errors import ConfigError
from companion.paths import device_paths
from tests.fixtures.dream import (
    HERMES_SCHEMA,
    NOW,
    build_hermes_db,
    claude_lines,
    openclaw_lines,
    utc,
    write_jsonl,
)

WINDOW = Window(NOW - dt.timedelta(hours=48), NOW)


def texts(msgs):
    return [m.text for m in msgs]


def test_hermes_window_roles_and_hidden_rows(tmp_path):
    db = build_hermes_db(tmp_path / "state.db")
    res = read_transcripts([SourceSpec("hermes", str(db))], WINDOW)
    assert not res.problems
    body = "\n".join(texts(res.messages))
    assert "outside the window" not in body  # s0 is before the window
    assert "rewound away" not in body  # active = 0
    assert "hidden scaffolding" not in body  # display_kind = hidden
    assert "read from a file by a tool" not in body  # tool results are not sources
    assert "echoed dream line" not in body  # a line carrying a dream provenance comment
    assert "As the note says:" in body  # ...while the rest of that message stays
    assert all(m.role in ("user", "assistant") for m in res.messages)
    assert [m.time for m in res.messages] == sorted(m.time for m in res.messages)
    calls = [c for m in res.messages for c in m.tool_calls]
    assert {c.name for c in calls} == {"memory"}
    assert calls[0].arguments["action"] == "add"
    ids = {m.id for m in res.messages}
    again = read_transcripts([SourceSpec("hermes", str(db))], WINDOW)
    assert {m.id for m in again.messages} == ids  # stable ids


def test_hermes_newer_schema_with_extra_columns(tmp_path):
    db = build_hermes_db(tmp_path / "state.db", extra_column=True)
    res = read_transcripts([SourceSpec("hermes", str(db))], WINDOW)
    assert not res.problems and len(res.messages) > 5


def test_hermes_older_schema_without_optional_columns(tmp_path):
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.execute(
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, "
        "content TEXT, timestamp REAL)"
    )
    con.execute(
        "INSERT INTO messages VALUES (1, 's', 'user', 'lesson: old Hermes works.', ?)",
        (utc(2026, 11, 27, 8).timestamp(),),
    )
    con.commit()
    con.close()
    res = read_transcripts([SourceSpec("hermes", str(db))], WINDOW)
    assert texts(res.messages) == ["lesson: old Hermes works."]


def test_hermes_structured_content_prefix(tmp_path):
    db = tmp_path / "s.db"
    con = sqlite3.connect(db)
    con.executescript(HERMES_SCHEMA)
    parts = json.dumps([{"type": "text", "text": "Lesson: parts are joined."}])
    con.execute(
        "INSERT INTO messages(session_id, role, content, timestamp) VALUES "
        "('s', 'assistant', ?, ?)",
        ("\x00json:" + parts, utc(2026, 11, 27, 8).timestamp()),
    )
    con.commit()
    con.close()
    res = read_transcripts([SourceSpec("hermes", str(db))], WINDOW)
    assert texts(res.messages) == ["Lesson: parts are joined."]


def test_hermes_is_opened_read_only(tmp_path):
    db = build_hermes_db(tmp_path / "state.db")
    con = connect_ro(db)
    with pytest.raises(sqlite3.OperationalError):
        con.execute("DELETE FROM messages")
    con.close()


def test_missing_or_broken_source_is_a_problem_not_a_crash(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database at all" * 100)
    res = read_transcripts(
        [
            SourceSpec("hermes", str(tmp_path / "absent.db")),
            SourceSpec("hermes", str(bad)),
            SourceSpec("claude", str(tmp_path / "nowhere")),
        ],
        WINDOW,
    )
    assert res.messages == [] and len(res.problems) == 3


def test_claude_code_jsonl(tmp_path):
    folder = tmp_path / "projects"
    write_jsonl(folder / "p" / "s.jsonl", claude_lines())
    res = read_transcripts([SourceSpec("claude", str(folder))], WINDOW)
    body = texts(res.messages)
    assert any(t.startswith("TIL: pytest") for t in body)
    assert any("ruff format must run" in t for t in body)
    assert not any("tool output" in t or "meta messages" in t or "too old" in t for t in body)
    assert res.messages[0].id == "u1" and res.messages[0].line == 2
    assert res.messages[0].source == f"claude:{folder}/p/s.jsonl"
    assert res.messages[1].tool_calls[0].name == "Bash"
    assert any("not JSON" in p for p in res.problems)  # the broken last line is reported


def test_openclaw_jsonl(tmp_path):
    f = write_jsonl(tmp_path / "sessions" / "oc.jsonl", openclaw_lines())
    res = read_transcripts([SourceSpec("openclaw", str(f))], WINDOW)
    assert [m.id for m in res.messages] == ["m1", "m2"]
    assert res.messages[0].session == "oc-session-1"
    assert res.messages[1].tool_calls[0].name == "read"


def test_generic_jsonl(tmp_path):
    f = tmp_path / "log.jsonl"
    rows = [
        {
            "id": "a",
            "session": "x",
            "timestamp": "2026-11-27T08:00:00Z",
            "role": "user",
            "content": "remember: the generic format works.",
        },
        {
            "id": "b",
            "session": "x",
            "timestamp": utc(2026, 11, 27, 8, 1).timestamp(),
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "name": "memory",
                    "arguments": {"action": "add", "target": "user", "content": "Ana likes tea."},
                }
            ],
        },
        {"id": "c", "timestamp": "2026-11-01T08:00:00Z", "role": "user", "content": "old"},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    res = read_transcripts([SourceSpec("jsonl", str(f))], WINDOW)
    assert [m.id for m in res.messages] == ["a", "b"]
    assert res.messages[1].tool_calls[0].arguments["content"] == "Ana likes tea."


def test_find_messages_for_verify(tmp_path):
    db = build_hermes_db(tmp_path / "state.db")
    spec = SourceSpec("hermes", str(db))
    first = read_transcripts([spec], WINDOW).messages[0]
    found = find_messages(spec.name, {first.id, "999999"})
    assert found is not None and list(found) == [first.id]
    assert find_messages(f"hermes:{tmp_path}/gone.db", {"1"}) is None  # unreachable here


def test_parse_time_forms():
    assert parse_time(1764288000) == dt.datetime(2025, 11, 28, tzinfo=dt.UTC)
    assert parse_time(1764288000000) == dt.datetime(2025, 11, 28, tzinfo=dt.UTC)
    assert parse_time("2026-11-27T10:00:00.000Z") == utc(2026, 11, 27, 10)
    assert parse_time("not a time") is None and parse_time(None) is None


def test_sources_from_config(tmp_path, monkeypatch):
    paths = device_paths()
    paths.config_file.parent.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text(
        '[dream]\nsources = [{kind = "claude", path = "~/.claude"}]\n', encoding="utf-8"
    )
    specs, _ = sources_from_config(load_config(paths), None)
    assert specs == [SourceSpec("claude", "~/.claude")]
    paths.config_file.write_text(
        '[dream]\nsources = [{kind = "mystery", path = "x"}]\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="mystery"):
        sources_from_config(load_config(paths), None)
    paths.config_file.write_text("", encoding="utf-8")
    home = tmp_path / "hermes"
    build_hermes_db(home / "state.db")
    specs, notes = sources_from_config(load_config(paths), home)
    assert [s.kind for s in specs] == ["hermes"] and notes


def test_journal_entries_skip_dreaming_and_blocks():
    text = (
        "---\ndate: 2026-11-27\n---\n# Day\n\n## Done\n- Wired it.\n- Lesson: in Done.\n\n"
        "## Learned\n- A real lesson here.\n<!-- dream:begin -->\n- remember: from a block. "
        "<!-- src: x.md#L1 -->\n<!-- dream:end -->\n\nremember: a loose marked line.\n\n"
        "## Dreaming\n- remember: dream output.\n\n```\nremember: in code\n```\n"
    )
    entries = journal_entries("journal/2026-11-27.md", dt.date(2026, 11, 27), text)
    got = [(e.section, e.text, e.line) for e in entries]
    assert ("done", "Wired it.", 7) in got
    assert ("done", "Lesson: in Done.", 8) in got
    assert ("learned", "A real lesson here.", 11) in got
    assert any(t == "remember: a loose marked line." for _s, t, _l in got)
    body = " ".join(t for _s, t, _l in got)
    assert "from a block" not in body and "dream output" not in body and "in code" not in body


def _lines_at(path, rows, mtime):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{broken\n", encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def test_jsonl_folder_read_by_its_lines_times_not_only_the_file_time(tmp_path):
    """A session file whose modification time is older than the window (copied with its
    times kept, synced from a machine whose clock is behind, or a dream run with `--now`
    ahead of this clock) but whose lines are inside the window is read: the window is the
    transcripts' clock. A file old by both clocks is still skipped without being parsed."""
    before = (WINDOW.start - dt.timedelta(days=3)).timestamp()
    inside = (NOW - dt.timedelta(hours=5)).astimezone(dt.UTC)
    stale = (WINDOW.start - dt.timedelta(days=3)).astimezone(dt.UTC)
    said = "remember: the kiln controller needs a firmware reset after a power cut."
    claude_dir = tmp_path / "projects"

    def claude_row(uid, t):
        return {
            "sessionId": "s-kiln",
            "type": "user",
            "uuid": uid,
            "timestamp": t.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "message": {"role": "user", "content": said},
        }

    _lines_at(claude_dir / "kiln" / "new.jsonl", [claude_row("c1", inside)], before)
    _lines_at(claude_dir / "kiln" / "old.jsonl", [claude_row("c0", stale)], before)
    oc_dir = tmp_path / "sessions"
    oc_rows = [
        {"type": "session", "id": "oc-kiln", "timestamp": inside.isoformat()},
        {
            "type": "message",
            "id": "o1",
            "parentId": None,
            "timestamp": int(inside.timestamp() * 1000),  # OpenClaw may write milliseconds
            "message": {"role": "assistant", "content": [{"type": "text", "text": said}]},
        },
    ]
    _lines_at(oc_dir / "oc-kiln.jsonl", oc_rows, before)
    res = read_transcripts(
        [SourceSpec("claude", str(claude_dir)), SourceSpec("openclaw", str(oc_dir))], WINDOW
    )
    assert sorted(m.id for m in res.messages) == ["c1", "o1"]
    broken = [p for p in res.problems if "not JSON" in p]
    assert any("new.jsonl" in p for p in broken) and any("oc-kiln" in p for p in broken)
    assert not any("old.jsonl" in p for p in broken)  # not parsed: nothing new in it
