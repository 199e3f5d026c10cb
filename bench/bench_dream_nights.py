"""Nights in a row on the server setup of docs/server-setup.md, driven by its units' commands.

    python bench/bench_dream_nights.py [--nights 10] [--base DIR]

A relay (`companion relay serve` on 127.0.0.1, a free port), a server copy joined as an agent
(`companion init`, `companion vault init`, `companion sync`), `companion -v watch VAULT`
running as its unit runs it, then one `companion -v dream VAULT --now NIGHT` per night, as the
dream unit runs it (every third night without new material; on the others the person's journal
of the day before gains two lessons and the agent writes a note late that evening with a plain
file write), and finally the last night once more (a dream that writes nothing). Each row: the
night, whether it had material, the exit status, the wall time of the command, the dream's own
steps (the report's timings), its Verify record and what `companion status --json` says is
pending afterwards. Issue 39: each must exit 0, in seconds, with nothing pending.

Everything runs under DIR (a fresh temporary folder by default) with its own COMPANION_HOME;
no secret is printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

PY = [sys.executable, "-m", "companion"]
PASSPHRASE = "correct horse battery staple, ten nights of dreams"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PY, *args], env=env, capture_output=True, text=True, timeout=600)


def _ok(args: list[str], env: dict[str, str]) -> str:
    out = _run(args, env)
    if out.returncode != 0:
        raise SystemExit(f"companion {args[0]} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def _wait(cond: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.1)


def _up(url: str) -> bool:
    try:
        urllib.request.urlopen(url + "/v1/health", timeout=1).close()
    except OSError:
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nights", type=int, default=10)
    ap.add_argument("--base", type=Path, default=None)
    args = ap.parse_args()
    base = args.base or Path(tempfile.mkdtemp(prefix="dream-nights-"))
    base.mkdir(parents=True, exist_ok=True)
    env0 = {k: v for k, v in os.environ.items() if k != "COMPANION_TEST_WEAK_KDF"}
    relay_env = dict(env0, COMPANION_HOME=str(base / "relay-home"))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    data = str(base / "relay-data")
    relay_log = (base / "relay.log").open("wb")
    relay = subprocess.Popen(
        [*PY, "relay", "serve", "--data", data, "--host", "127.0.0.1", "--port", str(port)],
        env=relay_env, stdout=relay_log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    watch: subprocess.Popen[bytes] | None = None
    try:
        _wait(lambda: _up(url), "the relay")
        invite = _ok(["relay", "invite", "--data", data, "--kind", "agent"], relay_env).strip()
        home, vault, hermes = base / "server", base / "vault", base / "hermes"
        (home / "config").mkdir(parents=True, exist_ok=True, mode=0o700)
        vault.mkdir(exist_ok=True)
        (hermes / "memories").mkdir(parents=True, exist_ok=True)
        (home / "config" / "config.toml").write_text(
            '[secrets]\nbackend = "file"\n[sync]\nkind = "agent"\ndevice_name = "server"\n'
            f'[vault]\npath = "{vault.as_posix()}"\n[memory]\nhermes_home = "{hermes.as_posix()}"\n'
            '[dream]\ntime = "02:00"\ntimezone = "Europe/Madrid"\n',
            encoding="utf-8",
        )
        pw = base / "passphrase"
        fd = os.open(pw, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(PASSPHRASE + "\n")
        env = dict(env0, COMPANION_HOME=str(home), COMPANION_PASSPHRASE_FILE=str(pw))
        _ok(["init", str(vault), "--relay", url, "--invite", invite, "--device-name", "server",
             "--kind", "agent"], env)  # fmt: skip
        _ok(["vault", "init", str(vault)], env)
        _ok(["sync", str(vault)], env)
        watch_log = (base / "watch.log").open("wb")
        watch = subprocess.Popen(
            [*PY, "-v", "watch", str(vault)], env=env, stdout=subprocess.DEVNULL, stderr=watch_log
        )
        _wait(lambda: json.loads(_ok(["status", str(vault), "--json"], env)).get("daemon"),
              "companion watch")  # fmt: skip
        tz = dt.timezone(dt.timedelta(hours=1))
        first = dt.datetime.now(tz).replace(hour=2, minute=0, second=0, microsecond=0)
        first += dt.timedelta(days=2)  # the files written now are older than a day by then
        nights = [first + dt.timedelta(days=i) for i in range(args.nights)]
        print("| night | material | exit | wall | the dream's own steps | verify | pending |")
        print("|---|---|---:|---:|---:|---|---|")
        for i, night in enumerate([*nights, nights[-1]]):
            again = i == len(nights)
            material = not again and i % 3 != 2
            if material:
                day = (night - dt.timedelta(days=1)).date().isoformat()
                journal = vault / "journal" / f"{day}.md"
                text = journal.read_text(encoding="utf-8") if journal.exists() else f"# {day}\n"
                journal.write_text(
                    text + f"\n## Learned\n- The backup job {i} runs restic with "
                    f"--limit-upload 800 on night {i}.\n- [[Agent note {i}]] lists the disks "
                    f"of shelf {i} by serial number.\n",
                    encoding="utf-8",
                )
                note = vault / "knowledge" / f"Agent note {i}.md"
                note.write_text(f"# Agent note {i}\n\nWritten by the agent.\n", encoding="utf-8")
                late = (night - dt.timedelta(hours=2)).timestamp()
                os.utime(note, (late, late))
                os.utime(journal, (late - 3600, late - 3600))
            t0 = time.monotonic()
            out = _run(["-v", "dream", str(vault), "--now", night.isoformat()], env)
            wall = time.monotonic() - t0
            pending = json.loads(_ok(["status", str(vault), "--json"], env))["pending"]
            report = vault / ".companion" / "dreams" / f"{night.date().isoformat()}.json"
            rep = json.loads(report.read_text(encoding="utf-8"))
            own = sum(rep["runs"][-1].get("timings", {}).values())
            label = night.date().isoformat() + (" again" if again else "")
            verify = rep.get("verify", {})
            print(
                f"| {label} | {'yes' if material else 'no'} | {out.returncode} | {wall:.2f} s "
                f"| {own:.2f} s | {verify.get('status')} ({verify.get('attempts')} attempt) "
                f"| {pending['upload']} up, {pending['download']} down |",
                flush=True,
            )
            if out.returncode != 0:
                print(out.stdout + out.stderr)
        print(f"(files under {base})")
    finally:
        if watch is not None:
            watch.terminate()
            watch.wait(20)
        relay.terminate()
        relay.wait(20)


if __name__ == "__main__":
    main()
