"""The demo's embedded sample data: a small agent vault, a week of journal, Hermes memory.

The content tells one coherent story (an agent helping a person run a home weather-station
project and a Spanish-language blog) so the dream has real lessons, decisions and recurring facts
to consolidate. Everything is written relative to a given day so the demo works on any date.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

KNOWLEDGE = {
    "knowledge/Raspberry Pi setup.md": """---
tags: [hardware, raspberry-pi]
date: {d0}
---
# Raspberry Pi setup

The station runs on a Raspberry Pi 4 with Raspberry Pi OS Lite (64-bit).

## Sensors
- BME280 on I2C address `0x76` reads temperature, humidity and pressure.
- See [[Weather station]] for the project itself.
""",
    "knowledge/Backups.md": """---
tags: [ops]
date: {d0}
---
# Backups

- The vault is backed up nightly with restic to the NAS.
- Restores are tested on the first Sunday of each month. See [[Restore drill]].
""",
    "knowledge/Writing style.md": """---
tags: [blog, writing]
date: {d1}
---
# Writing style

- Posts are written in Spanish, with short paragraphs.
- Code samples go in fenced blocks with the language named.
""",
}

PROJECTS = {
    "projects/Weather station.md": """---
tags: [project, hardware]
date: {d0}
---
# Weather station

Status: collecting data every 5 minutes.

## Decisions
- Store readings in SQLite on the Pi, sync daily to the server.

## Relaunch
- `ssh pi@station.local` then `systemctl --user restart station`.
- Hardware notes in [[Raspberry Pi setup]].
""",
    "projects/Blog.md": """---
tags: [project, blog]
date: {d1}
---
# Blog

Status: three drafts in progress.

See [[Writing style]] and [[Publishing checklist]].
""",
}

# The sample's two broken links, there on purpose so `vault check` has something to find; the
# demo calls them planted only while they are exactly what the check reports.
PLANTED_BROKEN_LINKS = (
    ("knowledge/Backups.md", "[[Restore drill]]"),
    ("projects/Blog.md", "[[Publishing checklist]]"),
)

# One entry per day, oldest first: (english?, done, decided, learned)
JOURNAL_DAYS = [
    (
        True,
        ["Wired the BME280 sensor to the Pi."],
        ["[[Weather station]]: readings every 5 minutes is enough for now."],
        ["The BME280 reads about 1.5 °C high when next to the Pi's CPU; mount it on a cable."],
    ),
    (
        False,
        ["Terminé el borrador sobre sensores baratos."],
        ["[[Blog]]: publicar los martes por la mañana."],
        ["Los lectores prefieren entradas cortas con una foto del montaje."],
    ),
    (
        True,
        ["Set up restic backups to the NAS."],
        [],
        ["restic needs `--limit-upload` on the home uplink or video calls stutter."],
    ),
    (
        True,
        ["Moved station readings to SQLite."],
        ["[[Weather station]]: keep 90 days of raw readings, then hourly averages."],
        ["SQLite in WAL mode handles the 5-minute writes and daily reads without locking."],
    ),
    (
        False,
        ["Revisé la entrada de respaldo con restic."],
        [],
        ["Los lectores prefieren entradas cortas con una foto del montaje."],
    ),
    (
        True,
        ["Fixed the station's clock drift with chrony."],
        [],
        ["The Pi has no RTC: without network time the readings drift; chrony fixes it."],
    ),
    (
        True,
        ["Drafted a post about the station for the blog."],
        ["[[Blog]]: the station post goes out next Tuesday."],
        [],
    ),
]

HOME = """# Home

Map of this vault. The companion keeps the list below up to date; write anything you like
outside its block.

## Areas
- [[Weather station]]
- [[Blog]]
- [[Raspberry Pi setup]]
"""

MEMORY_ENTRIES = [
    "The user's weather station runs on a Raspberry Pi 4 at station.local.",
    "Blog posts are written in Spanish; the user reviews drafts before publishing.",
]
USER_ENTRIES = [
    "Name: Alex. Lives in Madrid (Europe/Madrid).",
    "Prefers short answers with the command first, explanation after.",
]


def journal_text(
    day: date, english: bool, done: list[str], decided: list[str], learned: list[str]
) -> str:
    heads = ("Done", "Decided", "Learned") if english else ("Hecho", "Decidido", "Aprendido")
    parts = [f"---\ntags: [journal]\ndate: {day.isoformat()}\n---\n# {day.isoformat()}\n"]
    for head, items in zip(heads, (done, decided, learned), strict=True):
        if items:
            parts.append(f"## {head}\n" + "".join(f"- {i}\n" for i in items))
    return "\n".join(parts)


def write_sample_vault(root: Path, today: date) -> list[Path]:
    """Write the sample vault under `root` (empty or absent); returns the files written."""
    root.mkdir(parents=True, exist_ok=True)
    d0 = (today - timedelta(days=30)).isoformat()
    d1 = (today - timedelta(days=20)).isoformat()
    written: list[Path] = []

    def put(rel: str, text: str) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        written.append(p)

    for rel, text in {**KNOWLEDGE, **PROJECTS}.items():
        put(rel, text.format(d0=d0, d1=d1))
    put("Home.md", HOME)
    start = today - timedelta(days=len(JOURNAL_DAYS))
    for i, (en, done, decided, learned) in enumerate(JOURNAL_DAYS):
        day = start + timedelta(days=i)
        put(f"journal/{day.isoformat()}.md", journal_text(day, en, done, decided, learned))
    return written


# Hermes Agent's state.db: the columns the dream reads (Hermes adds more; readers take extras).
HERMES_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT,
                       started_at REAL NOT NULL, ended_at REAL, title TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
                       role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT,
                       tool_name TEXT, timestamp REAL NOT NULL);
"""


def _memory_call(call_id: str, content: str, target: str = "memory") -> str:
    import json

    args = {"action": "add", "target": target, "content": content}
    fn = {"name": "memory", "arguments": json.dumps(args)}
    return json.dumps([{"id": call_id, "type": "function", "function": fn}])


def write_hermes_state(db_path: Path, dream_at: datetime) -> Path:
    """Two sessions from the day before `dream_at`: explicit lessons and a memory-tool call."""
    import sqlite3

    t0 = (dream_at - timedelta(hours=16)).timestamp()
    rows = [
        ("s1", "user", "The station stopped reporting at 14:00, can you look?", None),
        (
            "s1",
            "assistant",
            "lesson: the station's SD card filled up with logs; "
            "journald needs SystemMaxUse=200M on the Pi.",
            None,
        ),
        (
            "s1",
            "assistant",
            "Saved it.",
            _memory_call("c1", "The station's logs are capped with journald SystemMaxUse=200M."),
        ),
        # Hermes's answer to that call: only a write Hermes applied is promoted.
        ("s1", "tool", '{"success": true, "done": true, "message": "Entry added."}', "c1"),
        ("s2", "user", "remember: the NAS is called atlas and wakes up at 01:30.", None),
        ("s2", "assistant", "Noted. I'll keep backups after 01:30.", None),
    ]
    db_path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db_path)
    try:
        con.executescript(HERMES_SCHEMA)
        con.execute(
            "INSERT INTO sessions VALUES ('s1','cli','demo-model',?,?, 'station')", (t0, t0 + 600)
        )
        con.execute(
            "INSERT INTO sessions VALUES ('s2','cli','demo-model',?,?, 'nas')",
            (t0 + 3600, t0 + 4200),
        )
        for i, (sid, role, content, extra) in enumerate(rows):
            calls, call_id = (None, extra) if role == "tool" else (extra, None)
            con.execute(
                "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id,"
                " timestamp) VALUES (?,?,?,?,?,?)",
                (sid, role, content, calls, call_id, t0 + 60 * i + (3600 if sid == "s2" else 0)),
            )
        con.commit()
    finally:
        con.close()
    return db_path
