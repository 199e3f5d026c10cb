"""A small vault with one hand-made dream report, for the GUI unit tests and trying the app out
(the screenshots and the end-to-end test use a real dream: `tests/desktop_world.py`).

The report follows the dream report format (`.companion/dreams/YYYY-MM-DD.json`) and its
snapshots match the files written, so every change can be reviewed and reverted for real.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

BEFORE_PI = """---
tags: [hardware, raspberry-pi]
date: 2025-11-20
---
# Raspberry Pi setup

The station runs on a Raspberry Pi 4 with Raspberry Pi OS Lite (64-bit).

## Sensors
- BME280 on I2C address `0x76` reads temperature, humidity and pressure.
"""

AFTER_PI = """---
tags: [hardware, raspberry-pi]
date: 2025-11-20
---
# Raspberry Pi setup

The station runs on a Raspberry Pi 4 with Raspberry Pi OS Lite (64-bit).

## Sensors
- BME280 on I2C address `0x76` reads temperature, humidity and pressure.
- Enable I2C with `raspi-config` before wiring, or the sensor is not detected.

## Power
- Use the official 5.1 V / 3 A supply: cheaper ones cause brown-outs under load.
"""

BEFORE_PROJECT = """# Weather station

Status: collecting data every 5 minutes.

## Decisions
- Store readings in SQLite on the Pi.
"""

AFTER_PROJECT = """# Weather station

Status: collecting data every 5 minutes; daily upload to the server works.

## Decisions
- Store readings in SQLite on the Pi, sync daily to the server.
"""

BEFORE_HOME = """# Home

## Knowledge
- [[Raspberry Pi setup]]

## Projects
- [[Weather station]]
"""

AFTER_HOME = """# Home

## Knowledge
- [[Raspberry Pi setup]]
- [[Backups]]

## Projects
- [[Weather station]]
"""

BACKUPS = """# Backups

- The vault is backed up nightly with restic to the NAS.
"""

JOURNAL = """# 2025-11-28

## Done
- Fixed the brown-outs with the official power supply.
"""

JOURNAL_AFTER = (
    JOURNAL
    + """
## Dreaming
- Consolidated 1 lesson into [[Raspberry Pi setup]]; corrected [[Weather station]].
- Linked [[Backups]] from [[Home]].
"""
)

DATE = "2025-11-28"


def _sha(text: str | None) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None


def _change(
    cid: str,
    kind: str,
    note: str,
    before: str | None,
    after: str | None,
    summary: str,
    provenance: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "id": cid,
        "kind": kind,
        "note": note,
        "before_sha256": _sha(before),
        "after_sha256": _sha(after),
        "before": before,
        "after": after,
        "provenance": provenance,
        "summary": summary,
    }


def sample_report() -> dict[str, Any]:
    changes = [
        _change(
            "c1",
            "consolidated",
            "knowledge/Raspberry Pi setup.md",
            BEFORE_PI,
            AFTER_PI,
            "Two lessons about I2C and power added to the existing note.",
            [
                {
                    "source": "journal/2025-11-27.md",
                    "line": 9,
                    "message_id": None,
                    "quote": "Enable I2C with raspi-config first, the sensor was not detected",
                },
                {
                    "source": "hermes:state.db",
                    "line": None,
                    "message_id": "m-4812",
                    "quote": "the cheap supply caused brown-outs; the official 5.1 V one fixed it",
                },
            ],
        ),
        _change(
            "c2",
            "corrected",
            "projects/Weather station.md",
            BEFORE_PROJECT,
            AFTER_PROJECT,
            "Project state updated: the daily upload now works.",
            [
                {
                    "source": "journal/2025-11-28.md",
                    "line": 4,
                    "message_id": None,
                    "quote": "daily upload to the server works",
                }
            ],
        ),
        _change(
            "c3",
            "represented",
            "Home.md",
            BEFORE_HOME,
            AFTER_HOME,
            "Linked the orphan note [[Backups]] from the index.",
            [
                {
                    "source": "knowledge/Backups.md",
                    "line": None,
                    "message_id": None,
                    "quote": "# Backups",
                }
            ],
        ),
        _change(
            "c4",
            "recorded",
            "journal/2025-11-28.md",
            JOURNAL,
            JOURNAL_AFTER,
            "What the dream did, in today's journal.",
            [{"source": "dream", "line": None, "message_id": None, "quote": "## Dreaming"}],
        ),
    ]
    counts = {"consolidated": 1, "corrected": 1, "promoted": 0, "represented": 1, "recorded": 1}
    return {"date": DATE, "ran_on": "server", "changes": changes, "counts": counts}


def write_sample_vault(vault: Path, *, conflicts: int = 1) -> Path:
    """Write the vault as the dream left it, plus conflict copies; returns the report path."""
    files = {
        "knowledge/Raspberry Pi setup.md": AFTER_PI,
        "knowledge/Backups.md": BACKUPS,
        "projects/Weather station.md": AFTER_PROJECT,
        "Home.md": AFTER_HOME,
        "journal/2025-11-28.md": JOURNAL_AFTER,
    }
    for rel, text in files.items():
        path = vault / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    for i in range(conflicts):
        copy = vault / "projects" / f"Weather station (conflict laptop 2025-11-2{8 - i} 140{i}).md"
        copy.write_bytes(BEFORE_PROJECT.encode("utf-8"))
    report = vault / ".companion" / "dreams" / f"{DATE}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps(sample_report(), indent=2, ensure_ascii=False), encoding="utf-8")
    return report
