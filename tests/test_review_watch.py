"""Issue 41 on the server setup of docs/server-setup.md: `companion watch` owns the server's
copy and `companion dream` runs beside it (as their units do). The night's review note is
written by the server's watch after the dream's round, reaches the laptop, and a proposal the
person ticks on the laptop is applied by that running watch, with the outcome on the line."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from companion.demo.sample import write_hermes_state, write_sample_vault
from companion.review import note as notes
from companion.review.rounds import install
from tests.conftest import wait_for
from tests.syncharness import cluster

NIGHT = dt.datetime(2026, 11, 29, 2, 0, tzinfo=ZoneInfo("Europe/Madrid"))
REVIEW = "review/2026-11-29.md"


@pytest.mark.timeout(600)
def test_the_servers_watch_writes_the_review_and_applies_a_tick_from_the_laptop(
    tmp_path: Path,
) -> None:
    with cluster(tmp_path / "c") as c:
        laptop = c.add_device("laptop", "human")
        server = c.add_device("server", "agent")
        write_sample_vault(laptop.vault, NIGHT.date())
        hermes = tmp_path / "hermes"
        write_hermes_state(hermes / "state.db", NIGHT)
        with server.paths.config_file.open("a", encoding="utf-8") as fh:
            fh.write(f'\n[memory]\nhermes_home = "{hermes.as_posix()}"\n')
            fh.write('\n[dream]\napply = "propose-all"\n')
        c.sync_all()
        server.restart()
        install(laptop.engine())
        watch = subprocess.Popen(
            [sys.executable, "-m", "companion", "-v", "watch", str(server.vault)],
            env=server.env(),
            stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "watch.log", "wb"),  # noqa: SIM115 - owned by the child
        )
        try:
            wait_for(lambda: any(server.paths.state_dir.rglob("status.json")), 30, "watch")
            out = server.cli("dream", str(server.vault), "--now", NIGHT.isoformat())
            assert out.returncode == 0, out.stdout + out.stderr

            def arrived() -> bool:
                laptop.sync()
                return laptop.read(REVIEW) is not None

            wait_for(arrived, 60, "the review note on the laptop", step=0.2)
            text = (laptop.read(REVIEW) or b"").decode()
            assert text == (server.read(REVIEW) or b"").decode()
            proposals = sorted({ln.id for ln in notes.parse_lines(text) if ln.id[0] == "p"})
            assert proposals, text
            item = proposals[0]
            laptop.write(REVIEW, notes.set_ticked(text, (item, "a")))
            laptop.sync()

            def applied() -> bool:
                laptop.sync()
                now = (laptop.read(REVIEW) or b"").decode()
                return any(ln.key == (item, "a") and ln.final for ln in notes.parse_lines(now))

            wait_for(applied, 60, "the server's watch applying the proposal", step=0.2)
            now = (laptop.read(REVIEW) or b"").decode()
            [ln] = [x for x in notes.parse_lines(now) if x.key == (item, "a")]
            assert ln.outcome and "ticked on laptop" in ln.outcome, ln.outcome
            memory = "".join(p.read_text() for p in (hermes / "memories").glob("*.md"))
            body = now.split(f"`{item}/a`")[0].rsplit("```diff\n", 1)[1].split("\n```")[0]
            assert body.splitlines()[-1][2:] in memory
        finally:
            watch.terminate()
            watch.wait(20)
        log = (tmp_path / "watch.log").read_text(errors="replace")
        assert "Traceback" not in log, log[-3000:]
