"""The evaluation world of `bench/bench_dream_quality.py`: Lucía's vault, three days of journal in
Spanish and English, Hermes sessions written by Hermes's own code, a Claude Code session in its
published JSONL format, and a second agent that logs in the companion's generic JSONL format.

What a careful person expects the dream to do with all of it is in `key.yaml` beside this file;
the scorer reads both. Everything is dated relative to `NIGHT1` (02:00 Europe/Madrid on
2026-11-28), so the world is the same on every run.

- The Hermes `state.db` and the memory files are written by Hermes Agent's real `SessionDB` and
  `memory_tool` (the pinned release, in its venv, through `tests/interop/hermes_driver.py`):
  every memory write has the result Hermes gave it, and MEMORY.md / USER.md hold what Hermes
  applied. Their modification times are then set to the world's timeline (the last write
  Hermes made), as they would be on the agent's machine.
- The Claude Code session follows its session format (`type`, `uuid`, `parentUuid`,
  `sessionId`, `timestamp`, `message.content` parts).
- The generic log is the format documented in docs/dream.md; tool calls there count without a
  result, so the dream is the one that applies them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MADRID = ZoneInfo("Europe/Madrid")
NIGHT1 = dt.datetime(2026, 11, 28, 2, 0, tzinfo=MADRID)
NIGHT2 = NIGHT1 + dt.timedelta(days=1)
OLD = NIGHT1 - dt.timedelta(days=30)


def utc(d: int, h: int, mi: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, d, h, mi, tzinfo=dt.UTC)


HOME = """---
tags: [inicio]
---
# Inicio

Mapa de la bóveda de Lucía.

## Conocimiento
- [[NAS Synology]]
- [[Copias de seguridad]]
- [[PostgreSQL]]

## Proyectos
- [[Blog]]
"""

NOTES: dict[str, str] = {
    "knowledge/NAS Synology.md": """---
tags: [infra]
date: 2026-09-10
aliases: [Synology]
---
# NAS Synology

El NAS es un Synology DS220+ en el armario del pasillo, con DSM 7.2.

- El disco USB externo guarda la segunda copia de las fotos.
- DSM se actualiza solo los domingos por la noche.
""",
    "knowledge/Copias de seguridad.md": """---
tags: [infra]
date: 2026-09-12
---
# Copias de seguridad

Las copias de la bóveda y de las fotos se hacen con restic al NAS.

- Las copias del NAS empiezan a las 03:00.
- Restic necesita --limit-upload en la subida de casa o las videollamadas se cortan, sobre todo
  por la tarde cuando los niños ven vídeos.
""",
    "knowledge/PostgreSQL.md": """---
tags: [databases]
date: 2026-10-02
---
# PostgreSQL

The blog's database runs PostgreSQL 15 on the home server.

- Backups use pg_dump every night.
""",
    "knowledge/Docker networking.md": """---
tags: [infra/docker]
date: 2026-10-20
---
# Docker networking

Bridge networks, published ports and DNS between containers on the home server.
""",
    "knowledge/Raspberry Pi.md": """---
tags: [hardware]
date: 2026-10-05
aliases: [Pi]
---
# Raspberry Pi

The weather station runs on a Raspberry Pi 4 with Raspberry Pi OS Lite.

- The BME280 sensor is wired to the Pi over I2C.
""",
    "knowledge/Tailscale.md": """---
tags: [network]
date: 2026-10-11
---
# Tailscale

The VPN between the laptop, the NAS and the weather station.
""",
    "knowledge/DNS.md": """---
tags: [network]
date: 2026-10-12
---
# DNS

Pi-hole answers DNS for the whole house.
""",
    "knowledge/Home Assistant.md": """---
tags: [home]
date: 2026-11-01
---
# Home Assistant

Automations for the house.

- The heating schedule lives in""",
    "projects/Blog.md": """---
tags: [project]
date: 2026-09-01
---
# Blog

El blog de la estación y del huerto.
""",
    "projects/Estación meteorológica.md": """---
tags: [project]
date: 2026-09-01
---
# Estación meteorológica

Una Raspberry Pi con un BME280 en el balcón.
""",
}
# Lucía is still typing in this note twenty minutes before the first night
BEING_EDITED = "knowledge/Home Assistant.md"

JOURNAL: dict[str, str] = {
    "journal/2026-11-26.md": """---
tags: [diario]
date: 2026-11-26
---
# 2026-11-26

## Hecho
- Cambié el cable USB del NAS.
- Estado: [[Estación meteorológica]] registra lecturas cada 5 minutos.

## Decidido
- [[Blog]]: publicar los martes por la mañana.

## Aprendido
- El disco USB del NAS se desmonta cuando entra en hibernación.
- Hoy ha sido un día largo.
- Mañana a las 18:00 tengo dentista.
- Las copias del NAS ahora empiezan a las 04:30.
""",
    "journal/2026-11-27.md": """---
tags: [diario]
date: 2026-11-27
---
# 2026-11-27

## Done
- Moved the blog database to the new disk.

## Learned
- PostgreSQL 16 needs `pg_upgrade` with the old binaries still installed.
- Today I work from home.
- Containers on a user-defined network resolve each other by name.
- The Pi loses time without network; chrony fixes it.
- remember: Tailscale needs the exit node enabled on the NAS before the laptop can reach it.
- always: answer in Spanish, even when I write in English.
""",
}

MEMORY_BEFORE = [
    "El servidor de pruebas se llama kestrel.",
    "Las copias de seguridad usan restic.",
]


@dataclass
class World:
    root: Path
    vault: Path
    hermes_home: Path
    state_db: Path
    claude_dir: Path
    generic_log: Path

    @property
    def memories(self) -> Path:
        return self.hermes_home / "memories"

    def sources(self) -> list[dict[str, str]]:
        return [
            {"kind": "hermes", "path": str(self.state_db)},
            {"kind": "claude", "path": str(self.claude_dir)},
            {"kind": "jsonl", "path": str(self.generic_log)},
        ]


def _touch(path: Path, when: dt.datetime) -> None:
    ts = when.timestamp()
    os.utime(path, (ts, ts))


def _write(path: Path, text: str, when: dt.datetime) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    _touch(path, when)


def _turn(db: Path, session: str, at: dt.datetime, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "op": "turn",
        "db": str(db),
        "session": session,
        "timestamp": at.timestamp(),
        "args": args,
    }


def _say(db: Path, session: str, role: str, at: dt.datetime, text: str) -> dict[str, Any]:
    return {
        "op": "append",
        "db": str(db),
        "session": session,
        "role": role,
        "content": text,
        "timestamp": at.timestamp(),
    }


def hermes_steps(db: Path) -> list[dict[str, Any]]:
    """Three Spanish sessions, in Hermes's own store, with its own memory tool."""
    steps: list[dict[str, Any]] = [
        {"op": "session", "db": str(db), "session": s} for s in ("s0", "s1", "s2", "s3")
    ]
    steps += [
        # s0, before the window: what USER.md said until now
        _turn(
            db,
            "s0",
            utc(20, 9),
            {"action": "add", "target": "user", "content": "Lucía vive en Valencia."},
        ),
        # s1
        _say(db, "s1", "user", utc(26, 10), "recuerda: hoy trabajo desde casa."),
        _say(
            db,
            "s1",
            "assistant",
            utc(26, 10, 2),
            "Lección: el DNS de casa deja de responder cuando el Pi-hole se reinicia; "
            "hay que esperar un minuto.",
        ),
        _turn(
            db,
            "s1",
            utc(26, 10, 3),
            {"action": "add", "target": "memory", "content": "El NAS se llama atlas."},
        ),
        _turn(
            db,
            "s1",
            utc(26, 10, 5),
            {
                "action": "replace",
                "target": "user",
                "old_text": "vive en Valencia",
                "content": "Lucía vive en Bilbao.",
            },
        ),
        # s2
        _say(db, "s2", "user", utc(27, 9), "recuerda: hoy trabajo desde casa."),
        _say(db, "s2", "user", utc(27, 9, 1), "recuerda: prefiero que me llames Lu"),
        _say(
            db,
            "s2",
            "assistant",
            utc(27, 9, 2),
            "Lección: el BME280 necesita 3,3 V; a 5 V se estropea.",
        ),
        _say(
            db,
            "s2",
            "assistant",
            utc(27, 9, 3),
            "Lección: Restic necesita --limit-upload en la subida de casa o las "
            "videollamadas se cortan.",
        ),
        # s3
        _say(db, "s3", "user", utc(27, 18), "recuerda: hoy trabajo desde casa."),
        _say(
            db,
            "s3",
            "user",
            utc(27, 18, 1),
            "decidido: [[Blog]] las entradas se publican los martes por la mañana.",
        ),
        _say(
            db,
            "s3",
            "assistant",
            utc(27, 18, 2),
            "Lección: DSM se actualiza solo los domingos por la noche.",
        ),
    ]
    return steps


def claude_lines() -> list[dict[str, Any]]:
    sid = "5b1e9c0a-77aa-4f1e-9d1c-0c3f2e1a9b10"
    base = {"sessionId": sid, "cwd": "/home/lucia/casa", "version": "2.0.14", "isSidechain": False}
    return [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-11-27T16:00:00.000Z",
            "message": {
                "role": "user",
                "content": "TIL: Home Assistant keeps its automations in automations.yaml; a "
                "bad indent disables all of them.",
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-11-27T16:00:04.000Z",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": "Right.\nLesson: SQLite WAL mode needs shared memory, so it "
                        "fails on NFS shares.\nLesson: the blog's PostgreSQL backups with "
                        "pg_dump usually take 4 minutes at 02:30.",
                    }
                ],
            },
        },
    ]


def generic_lines() -> list[dict[str, Any]]:
    """Another agent keeping MEMORY.md through the companion: it removes and replaces."""
    return [
        {
            "id": "g1",
            "session": "garden",
            "timestamp": utc(27, 12).isoformat(),
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "name": "memory",
                    "arguments": {"action": "remove", "target": "memory", "old_text": "kestrel"},
                },
                {
                    "name": "memory",
                    "arguments": {
                        "action": "replace",
                        "target": "memory",
                        "old_text": "usan restic",
                        "content": "Las copias de seguridad usan restic con una purga de 30 días.",
                    },
                },
            ],
        }
    ]


def build_world(root: Path, hermes: Any) -> World:
    """The whole world under `root`. `hermes` is `tests.interop.hermes.Hermes`."""
    root = Path(root)
    vault = root / "vault"
    for rel, text in {"Home.md": HOME, **NOTES, **JOURNAL}.items():
        when = OLD
        if rel.startswith("journal/"):
            day = dt.date.fromisoformat(rel[8:18])
            when = dt.datetime.combine(day, dt.time(22), MADRID)
        if rel == BEING_EDITED:
            when = NIGHT1 - dt.timedelta(minutes=20)
        _write(vault / rel, text, when)
    home = root / "hermes"
    memories = home / "memories"
    memories.mkdir(parents=True)
    (memories / "MEMORY.md").write_text("\n§\n".join(MEMORY_BEFORE), encoding="utf-8")
    db = home / "state.db"
    hermes.run(home, *hermes_steps(db))
    # the memory files as the agent's machine has them: last written by Hermes on the 26th
    for name in ("MEMORY.md", "USER.md"):
        _touch(memories / name, utc(26, 10, 5))
    claude = root / "claude" / "projects" / "-home-lucia-casa"
    claude.mkdir(parents=True)
    (claude / "5b1e9c0a-77aa-4f1e-9d1c-0c3f2e1a9b10.jsonl").write_text(
        "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in claude_lines()), "utf-8"
    )
    log = root / "logs" / "garden-agent.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text(
        "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in generic_lines()), "utf-8"
    )
    return World(root, vault, home, db, claude.parent, log)


def morning_after_night1(world: World) -> None:
    """What Lucía does the next morning: she deletes the "always" fact from MEMORY.md by hand
    (she changed her mind). She left her Home Assistant note as it was."""
    mem = world.memories / "MEMORY.md"
    entries = [e for e in mem.read_text(encoding="utf-8").split("\n§\n") if e.strip()]
    kept = [e for e in entries if "Spanish" not in e]
    mem.write_text("\n§\n".join(kept), encoding="utf-8")
    _touch(mem, NIGHT1 + dt.timedelta(hours=7))
