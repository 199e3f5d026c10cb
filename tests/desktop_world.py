"""The morning loop as a person sets it up, for the desktop tests and the screenshots.

A real relay (`companion relay serve` in a subprocess, loopback), an agent device (its own
COMPANION_HOME) holding a sample vault and a Hermes `state.db` with real-format transcripts
(`companion.demo.sample`, what `companion demo` uses), and a laptop (its own COMPANION_HOME)
joined with `companion init`. Every step is the real command line; nothing is joined or synced
in-process.

    with DesktopWorld(tmp_path) as world:
        world.dream()                    # `companion dream` on the agent, which syncs
        world.laptop_cli("sync", str(world.laptop_vault))
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from companion.demo.sample import (
    MEMORY_ENTRIES,
    USER_ENTRIES,
    write_hermes_state,
    write_sample_vault,
)
from tests.syncharness import ProcessRelay

PASSPHRASE = "a long passphrase for the morning loop test"


class CliFailed(AssertionError):
    pass


class DesktopWorld:
    def __init__(
        self,
        base: Path,
        *,
        language: str = "en",
        today: dt.date | None = None,
        laptop_name: str = "laptop",
        agent_name: str = "server",
    ) -> None:
        self.base = Path(base)
        self.base.mkdir(parents=True, exist_ok=True)
        self.language = language
        self.today = today or dt.date.today()
        self.laptop_name = laptop_name
        self.agent_name = agent_name
        self.relay_data = self.base / "relay"
        self.agent_home = self.base / "agent-home"
        self.laptop_home = self.base / "laptop-home"
        self.agent_vault = self.base / "server" / "vault"
        self.laptop_vault = self.base / "laptop" / "Vault"
        self.hermes_home = self.base / "server" / "hermes"
        self.passphrase_file = self.base / "passphrase"
        self.passphrase_file.write_text(PASSPHRASE + "\n", encoding="utf-8")
        os.chmod(self.passphrase_file, 0o600)
        self.relay: ProcessRelay | None = None

    # ---- processes ---------------------------------------------------------------------------

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            COMPANION_HOME=str(home),
            COMPANION_PASSPHRASE_FILE=str(self.passphrase_file),
            HERMES_HOME=str(self.hermes_home),
            QT_QPA_PLATFORM=env.get("QT_QPA_PLATFORM", "offscreen"),
        )
        if os.environ.get("PYTEST_CURRENT_TEST"):  # the suite's cheap KDF; the screenshots
            env["COMPANION_TEST_WEAK_KDF"] = "1"  # (not a test) use the real one
        env.update(extra)
        return env

    def run(self, home: Path, *args: str, check: bool = True, timeout: float = 180) -> Any:
        proc = subprocess.run(
            [sys.executable, "-m", "companion", *args],
            capture_output=True,
            text=True,
            env=self.env(home),
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise CliFailed(
                f"companion {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
            )
        return proc

    def agent_cli(self, *args: str, **kw: Any) -> Any:
        return self.run(self.agent_home, *args, **kw)

    def laptop_cli(self, *args: str, **kw: Any) -> Any:
        return self.run(self.laptop_home, *args, **kw)

    # ---- setting up --------------------------------------------------------------------------

    def __enter__(self) -> DesktopWorld:
        self.relay = ProcessRelay(self.relay_data, die_with_parent=True)
        self._set_up_agent()
        self._set_up_laptop()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.relay is not None:
            self.relay.stop()

    def invite(self, kind: str) -> str:
        """`companion relay invite`, on the relay's own machine (the relay's data folder)."""
        res = self.run(
            self.base / "relay-admin-home", "relay", "invite", "--data", str(self.relay_data),
            "--kind", kind,
        )  # fmt: skip
        return res.stdout.strip().splitlines()[-1]

    def join(self, home: Path, vault: Path, name: str, kind: str) -> None:
        """The one place that says how a device gets its kind: the invite carries it
        (`relay invite --kind`); `init --kind` states the same expectation."""
        assert self.relay is not None
        code = self.invite(kind)
        self.run(
            home, "init", str(vault), "--relay", self.relay.url, "--invite", code,
            "--device-name", name, "--kind", kind,
        )  # fmt: skip

    def _config(self, home: Path, text: str) -> None:
        f = home / "config" / "config.toml"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text, encoding="utf-8")

    def _set_up_agent(self) -> None:
        self._config(
            self.agent_home,
            '[secrets]\nbackend = "file"\n[sync]\nkind = "agent"\n'
            f'[memory]\nhermes_home = "{self.hermes_home}"\n'
            "[dream]\nlocal_fallback = false\n",
        )
        write_sample_vault(self.agent_vault, self.today)
        from companion.memory import MemoryStore, Op

        MemoryStore(self.hermes_home, "memory").apply_batch(
            [Op("add", content=e) for e in MEMORY_ENTRIES]
        )
        MemoryStore(self.hermes_home, "user").apply_batch(
            [Op("add", content=e) for e in USER_ENTRIES]
        )
        self.join(self.agent_home, self.agent_vault, self.agent_name, "agent")
        self.agent_cli("sync", str(self.agent_vault))

    def _set_up_laptop(self) -> None:
        self._config(
            self.laptop_home,
            '[secrets]\nbackend = "file"\n'
            f'[gui]\nlanguage = "{self.language}"\n'
            '[notify]\nmorning_time = "00:00"\n'  # shown at once, whatever the time of day
            "[dream]\nlocal_fallback = false\n",  # the server dreams; the laptop never does
        )
        self.join(self.laptop_home, self.laptop_vault, self.laptop_name, "human")
        self.laptop_cli("sync", str(self.laptop_vault))

    # ---- the night ---------------------------------------------------------------------------

    def dream(self, at: dt.datetime | None = None) -> Path:
        """The agent's transcripts for the day, then `companion dream` on the server (which
        syncs the result through the relay). Returns the report's path on the server."""
        at = at or dt.datetime.now().astimezone()
        db = self.hermes_home / "state.db"
        db.unlink(missing_ok=True)
        write_hermes_state(db, at)
        self.agent_cli("dream", str(self.agent_vault), "--now", at.isoformat())
        reports = sorted((self.agent_vault / ".companion" / "dreams").glob("????-??-??.json"))
        assert reports, "the dream wrote no report"
        return reports[-1]

    def laptop_paths(self) -> Any:
        from companion.paths import device_paths

        return device_paths(self.laptop_home)
