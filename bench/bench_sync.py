"""Sync benchmark: Vault Companion beside Syncthing, both started here, in the same run.

Targets (issues 4 and 17), 10,000 notes (~23 MB): propagation (save on A -> new bytes on disk
on B) median <= 100 ms, p95 <= 500 ms; first upload from A <= 3 s; first download into an
empty copy <= 3 s and faster than Syncthing; the whole first sync (init A + upload + init B +
download) <= 8 s; a quiet `companion sync` from the command line <= 150 ms; quiet rescan
<= 100 ms; daemon RSS with 100,000 files indexed <= 200 MB; and a vault shaped like Obsidian's
help vault, 11,000 files and 284 MB, mostly attachments, uploaded in <= 10 s.

The floors of this machine are measured in the same run, for the ratios: the disk (writing the
same files and flushing them once), AES-GCM over the same bytes (one call per file), and
Python's start-up.

Run:  python bench/bench_sync.py [--quick | --smoke] [--only syncthing|companion] [--big]
Prints one Markdown table (metric | Vault Companion | Syncthing | ratio | target) and writes
the raw samples as JSON to bench/out/. Everything runs on 127.0.0.1 under one temp dir that is
deleted at the end (--keep leaves it). See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from syncthing_peer import (  # noqa: E402
    ST_PRIVATE,
    ST_TEMP_PREFIXES,
    SyncthingPair,
    child_pids,
    stop_process,
    syncthing_version,
)

# Names that belong to a sync tool, not to the user's notes, skipped when comparing trees.
# each copy's own folder marker (companion/sync/local/folder.py) never syncs: not a user file
PRIVATE_NAMES = {*ST_PRIVATE, ".companion", ".companion-folder.json"}
TEMP_PREFIXES = (*ST_TEMP_PREFIXES, ".companion-tmp", ".~tmp")
PASSPHRASE = "correct horse battery staple bench"
# REST polling interval while a first sync runs: often enough for a 10-30 s measurement,
# rare enough not to load the Syncthing worker being measured
POLL_S = 0.2


class BenchError(RuntimeError):
    """A system under test failed; the message carries the command and its output."""


# ---------------------------------------------------------------------------------------------
# small helpers


def now() -> float:
    return time.perf_counter()


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def p95(xs: list[float]) -> float | None:
    if not xs:
        return None
    if len(xs) == 1:
        return xs[0]
    return statistics.quantiles(xs, n=100, method="inclusive")[94]


def tree_files(root: Path) -> Iterable[tuple[str, Path]]:
    """(relative posix path, absolute path) of every user file under root, sorted."""
    out: list[tuple[str, Path]] = []
    stack = [(root, "")]
    while stack:
        d, rel = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                if e.name in PRIVATE_NAMES or e.name.startswith(TEMP_PREFIXES):
                    continue
                r = f"{rel}{e.name}"
                if e.is_dir(follow_symlinks=False):
                    stack.append((Path(e.path), r + "/"))
                elif e.is_file(follow_symlinks=False):
                    out.append((r, Path(e.path)))
    out.sort()
    return out


def tree_digest(root: Path) -> tuple[str, int]:
    """A hash over every user file's path and content, and the file count."""
    h = hashlib.sha256()
    n = 0
    for rel, p in tree_files(root):
        h.update(rel.encode("utf-8") + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
        n += 1
    return h.hexdigest(), n


def tree_diff(a: Path, b: Path, limit: int = 8) -> str:
    """A short description of how two trees differ (for error reports)."""
    fa = dict(tree_files(a))
    fb = dict(tree_files(b))
    only_a = sorted(set(fa) - set(fb))
    only_b = sorted(set(fb) - set(fa))
    differ = [r for r in sorted(set(fa) & set(fb)) if fa[r].read_bytes() != fb[r].read_bytes()]
    return (
        f"{len(fa)} vs {len(fb)} files; only on A: {len(only_a)} {only_a[:limit]}; "
        f"only on B: {len(only_b)} {only_b[:limit]}; "
        f"content differs: {len(differ)} {differ[:limit]}"
    )


def proc_status(pid: int, key: str) -> float:
    """A /proc/PID/status size field (VmRSS, VmHWM) in MB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cpu_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return -1


def cpu_s(pids: Iterable[int]) -> float:
    """CPU seconds (user + system) used so far by the processes."""
    return sum(max(0, cpu_ticks(p)) for p in pids) / os.sysconf("SC_CLK_TCK")


def wait_cpu_quiet(pids: list[int], quiet_s: float = 1.5, timeout: float = 120.0) -> float:
    """Wait until the processes used (almost) no CPU for `quiet_s`; returns the seconds waited."""
    t0 = now()
    deadline = t0 + timeout
    last = [cpu_ticks(p) for p in pids]
    since = now()
    while now() < deadline:
        time.sleep(0.25)
        cur = [cpu_ticks(p) for p in pids]
        if any(c - p > 1 for c, p in zip(cur, last, strict=True)):
            since = now()
        last = cur
        if now() - since >= quiet_s:
            return now() - t0
    return now() - t0


class Trash:
    """Old trees are moved here (cheap rename) and deleted only after all timed runs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.n = 0

    def move(self, path: Path) -> None:
        if path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            self.n += 1
            os.rename(path, self.root / f"{self.n:03d}-{path.name}")


# ---------------------------------------------------------------------------------------------
# the systems under test


class System(Protocol):
    """What the benchmark drives: two copies of one vault kept in sync by some tool."""

    name: str
    vault_a: Path
    vault_b: Path

    def setup(self, vault_a: Path, vault_b: Path) -> None: ...
    def start(self) -> None: ...
    def wait_converged(self, timeout: float = 300.0) -> float: ...
    def stop(self) -> None: ...
    def rss(self) -> dict[str, float]: ...
    def settle(self) -> None: ...


class SyncthingSystem:
    """Syncthing 1.19 (Debian package): two devices on loopback, see syncthing_peer.py."""

    name = "syncthing"

    low_priority = False  # Syncthing's default is nice 11; the bench runs both at nice 0

    def __init__(self, work: Path, *, watcher_delay_s: float = 10, paused_b: bool = False) -> None:
        self.work = work
        self.watcher_delay_s = watcher_delay_s
        self.paused_b = paused_b
        self.pair: SyncthingPair | None = None
        self.vault_a = self.vault_b = Path()
        self.expected_files = 0

    def setup(self, vault_a: Path, vault_b: Path) -> None:
        self.vault_a, self.vault_b = vault_a, vault_b
        self.pair = SyncthingPair(
            self.work,
            vault_a,
            vault_b,
            watcher_delay_s=self.watcher_delay_s,
            paused=(False, self.paused_b),
            low_priority=self.low_priority,
        )
        self.pair.configure()

    def start(self) -> None:
        assert self.pair is not None
        self.pair.start()

    def wait_converged(self, timeout: float = 600.0) -> float:
        """Wait until B holds every file of A and both are idle; returns the wait."""
        assert self.pair is not None
        t0 = now()
        self.pair.wait_idle("a", min_files=self.expected_files, timeout=timeout)
        self.pair.wait_idle("b", min_files=self.expected_files, timeout=timeout)
        return now() - t0

    def settle(self) -> None:
        assert self.pair is not None
        self.pair.wait_idle("a", timeout=120)
        self.pair.wait_idle("b", timeout=120)

    def stop(self) -> None:
        if self.pair is not None:
            self.pair.stop()

    def rss(self) -> dict[str, float]:
        assert self.pair is not None
        out = {}
        for d in ("a", "b"):
            pid = self.pair.worker_pid(d)
            out[f"{d}_rss_mb"] = proc_status(pid, "VmRSS")
            out[f"{d}_hwm_mb"] = proc_status(pid, "VmHWM")
        return out

    def pids(self) -> list[int]:
        assert self.pair is not None
        return [self.pair.worker_pid("a"), self.pair.worker_pid("b")]


@dataclass
class CompanionDevice:
    name: str
    home: Path
    vault: Path
    proc: subprocess.Popen[bytes] | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.home / "watch.log"


class CompanionSystem:
    """Vault Companion through its CLI contract: a relay and two devices (agent kind)."""

    name = "companion"

    def __init__(self, work: Path, *, timeout: float = 900.0) -> None:
        self.work = work
        self.timeout = timeout
        self.relay_proc: subprocess.Popen[bytes] | None = None
        self.relay_url = ""
        self.relay_data = work / "relay-data"
        self.pass_file = work / "passphrase"
        self.a: CompanionDevice | None = None
        self.b: CompanionDevice | None = None
        self.vault_a = self.vault_b = Path()
        self.times: dict[str, float] = {}
        self.last_cpu_s = 0.0  # CPU of the last CLI command plus the relay meanwhile
        self.last_peak_mb = 0.0  # peak RSS of the last CLI command

    # -- plumbing ---------------------------------------------------------------------------
    def env(self, home: Path) -> dict[str, str]:
        env = dict(os.environ)
        for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
            env.pop(key, None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as an installed package has
        env.update(
            COMPANION_HOME=str(home),
            COMPANION_PASSPHRASE_FILE=str(self.pass_file),
            NO_PROXY="127.0.0.1,localhost",
            PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
            PYTHONPYCACHEPREFIX=str(self.work.parent / "pycache"),
        )
        return env

    def run(self, home: Path, *args: str, timeout: float | None = None) -> tuple[float, str]:
        """Run `python -m companion ARGS` for one device; returns (wall seconds, stdout).

        Waited with wait4 so its own CPU time and peak RSS are known (`last_cpu_s` adds the
        relay's CPU meanwhile; `last_peak_mb`)."""
        cmd = [sys.executable, "-m", "companion", *args]
        limit = timeout or self.timeout
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            relay0 = self.relay_cpu_s()
            t0 = now()
            p = subprocess.Popen(
                cmd, env=self.env(home), cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=err
            )
            hwm, polls = 0.0, 0
            while True:
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                if now() - t0 > limit:
                    p.kill()
                    p.wait()
                    raise BenchError(f"timed out after {limit:.0f} s: {' '.join(cmd)}")
                polls += 1
                if polls % 10 == 0:  # every ~20 ms: the child's own high-water mark
                    hwm = max(hwm, proc_status(p.pid, "VmHWM"))
                time.sleep(0.002)
            wall = now() - t0
            p.returncode = os.waitstatus_to_exitcode(status)
            self.last_cpu_s = usage.ru_utime + usage.ru_stime + self.relay_cpu_s() - relay0
            # Not ru_maxrss: Linux carries the forking process's own high-water mark into the
            # child across exec, so it reported this benchmark's RSS (the 284 MB vault it had
            # read) instead of the command's. VmHWM is the exec'd program's alone (read while
            # it runs, so the last ~20 ms can be missed).
            self.last_peak_mb = hwm
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode(errors="replace")
            stderr = err.read().decode(errors="replace")
        if p.returncode != 0:
            raise BenchError(
                f"exit {p.returncode}: COMPANION_HOME={home} {' '.join(cmd)}\n"
                f"stdout: {stdout[-1500:]}\nstderr: {stderr[-3000:]}"
            )
        return wall, stdout

    def relay_cpu_s(self) -> float:
        return cpu_s([self.relay_proc.pid]) if self.relay_proc is not None else 0.0

    def device(self, which: str) -> CompanionDevice:
        d = {"a": self.a, "b": self.b}[which]
        assert d is not None
        return d

    def _home(self, name: str, vault: Path) -> CompanionDevice:
        home = self.work / f"home-{name.lower()}"
        (home / "config").mkdir(parents=True, exist_ok=True)
        (home / "config" / "config.toml").write_text('[secrets]\nbackend = "file"\n')
        vault.mkdir(parents=True, exist_ok=True)
        return CompanionDevice(name, home, vault)

    def start_relay(self) -> None:
        self.relay_data.mkdir(parents=True, exist_ok=True)
        port_file = self.work / "relay.port"
        port_file.unlink(missing_ok=True)
        home = self.work / "home-relay"
        home.mkdir(exist_ok=True)
        log = open(self.work / "relay.log", "ab")  # noqa: SIM115 - the child owns it
        self.relay_proc = subprocess.Popen(
            [sys.executable, "-m", "companion", "relay", "serve", "--data", str(self.relay_data)]
            + ["--port", "0", "--port-file", str(port_file)],
            env=self.env(home),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = now() + 60
        while now() < deadline:
            if self.relay_proc.poll() is not None:
                raise BenchError("relay exited:\n" + (self.work / "relay.log").read_text()[-3000:])
            if port_file.exists() and port_file.read_text().strip():
                self.relay_url = f"http://127.0.0.1:{int(port_file.read_text().strip())}"
                return
            time.sleep(0.05)
        raise BenchError("relay did not write its port file within 60 s")

    def invite(self) -> str:
        _, out = self.run(
            self.work / "home-relay", "relay", "invite", "--data", str(self.relay_data)
        )
        return out.strip().splitlines()[-1].strip()

    def init(self, which: str) -> float:
        d = self.device(which)
        wall, _ = self.run(
            d.home,
            "init",
            str(d.vault),
            "--relay",
            self.relay_url,
            "--invite",
            self.invite(),
            "--device-name",
            d.name,
            "--kind",
            "agent",
        )
        return wall

    def sync(self, which: str, *extra: str) -> float:
        d = self.device(which)
        wall, _ = self.run(d.home, "sync", str(d.vault), *extra)
        return wall

    # -- the System interface ---------------------------------------------------------------
    def setup(self, vault_a: Path, vault_b: Path) -> None:
        """Relay up, device A joined and uploaded, device B joined (not yet synced)."""
        self.vault_a, self.vault_b = vault_a, vault_b
        self.work.mkdir(parents=True, exist_ok=True)
        self.pass_file.write_text(PASSPHRASE + "\n")
        self.pass_file.chmod(0o600)
        self.a = self._home("A", vault_a)
        self.b = self._home("B", vault_b)
        self.start_relay()
        self.times["init_a_s"] = self.init("a")
        self.times["upload_a_s"] = self.sync("a")
        self.times["init_b_s"] = self.init("b")

    def start(self) -> None:
        for d in (self.device("a"), self.device("b")):
            log = open(d.log, "ab")  # noqa: SIM115 - the child owns it
            d.proc = subprocess.Popen(
                [sys.executable, "-m", "companion", "watch", str(d.vault)],
                env=self.env(d.home),
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            log.close()

    def check_alive(self) -> None:
        for d in (self.a, self.b):
            if d is not None and d.proc is not None and d.proc.poll() is not None:
                tail = d.log.read_text(errors="replace")[-3000:]
                raise BenchError(f"`companion watch` {d.name} exited {d.proc.returncode}:\n{tail}")

    def settle(self) -> None:
        self.check_alive()
        wait_cpu_quiet(self.pids(), quiet_s=1.0, timeout=120)
        self.check_alive()

    def wait_converged(self, timeout: float = 300.0) -> float:
        t0 = now()
        deadline = t0 + timeout
        while now() < deadline:
            self.check_alive()
            if tree_digest(self.vault_a) == tree_digest(self.vault_b):
                return now() - t0
            time.sleep(0.2)
        raise BenchError(
            f"companion copies did not converge in {timeout:.0f} s: "
            + tree_diff(self.vault_a, self.vault_b)
        )

    def pids(self) -> list[int]:
        return [d.proc.pid for d in (self.device("a"), self.device("b")) if d.proc is not None]

    def rss(self) -> dict[str, float]:
        out = {}
        for which in ("a", "b"):
            d = self.device(which)
            if d.proc is None:
                continue
            pids = [d.proc.pid, *_descendants(d.proc.pid)]
            out[f"{which}_rss_mb"] = sum(proc_status(p, "VmRSS") for p in pids)
            out[f"{which}_hwm_mb"] = proc_status(d.proc.pid, "VmHWM")
            out[f"{which}_processes"] = len(pids)
        return out

    def stop(self) -> None:
        for d in (self.a, self.b):
            if d is not None and d.proc is not None:
                stop_process(d.proc, timeout=15)
                d.proc = None

    def close(self) -> None:
        self.stop()
        if self.relay_proc is not None:
            stop_process(self.relay_proc, timeout=15)
            self.relay_proc = None


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = child_pids(todo.pop())
        out += kids
        todo += kids
    return out


# ---------------------------------------------------------------------------------------------
# measurements


@dataclass
class Run:
    """Shared state of one benchmark run."""

    work: Path
    trash: Trash
    src: Path
    n_notes: int
    n_files: int
    digest: str
    args: argparse.Namespace
    results: dict[str, Any] = field(default_factory=dict)
    help_src: Path | None = None
    help_files: int = 0
    errors: dict[str, str] = field(default_factory=dict)

    def copy_vault(self, dest: Path) -> Path:
        if not dest.exists():
            shutil.copytree(self.src, dest, symlinks=True)
        return dest

    def verify(self, vault: Path, what: str) -> None:
        got, n = tree_digest(vault)
        if got != self.digest:
            raise BenchError(f"{what}: B is not byte-identical to A: " + tree_diff(self.src, vault))


def log(msg: str) -> None:
    print(f"[{dt.datetime.now():%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


def first_sync_syncthing(run: Run, rep: int, keep: bool) -> SyncthingSystem | None:
    """Two numbers: cold start (both fresh, A must scan) and from unpausing B's folder."""
    out = run.results.setdefault("syncthing", {})
    vault_a = run.copy_vault(run.work / "st-vault-a")
    # cold start
    b = run.work / f"st-r{rep}-cold-b"
    st = SyncthingSystem(run.work / f"st-r{rep}-cold")
    st.expected_files = run.n_files
    st.setup(vault_a, b)
    t0 = now()
    st.start()
    st.pair.wait_idle("b", min_files=run.n_files, timeout=900, interval=POLL_S)  # type: ignore[union-attr]
    cold = now() - t0
    out.setdefault("first_sync_cold_cpu_s", []).append(cpu_s(st.pids()))
    run.verify(b, "syncthing cold start")
    out.setdefault("first_sync_cold_s", []).append(cold)
    out.setdefault("first_sync_rss", []).append(st.rss())
    log(f"syncthing first sync (cold start) rep {rep}: {cold:.2f} s")
    st.stop()
    # from unpausing B's folder, after A has scanned
    b2 = run.work / f"st-r{rep}-unpause-b"
    st2 = SyncthingSystem(run.work / f"st-r{rep}-unpause", paused_b=True)
    st2.expected_files = run.n_files
    st2.setup(vault_a, b2)
    st2.start()
    assert st2.pair is not None
    st2.pair.wait_idle("a", min_files=run.n_files, timeout=900, interval=POLL_S)
    time.sleep(1.0)
    c0 = cpu_s(st2.pids())
    t0 = now()
    st2.pair.unpause("b")
    st2.pair.wait_idle("b", min_files=run.n_files, timeout=900, interval=POLL_S)
    unpause = now() - t0
    out.setdefault("first_sync_unpause_cpu_s", []).append(cpu_s(st2.pids()) - c0)
    run.verify(b2, "syncthing from unpause")
    out.setdefault("first_sync_unpause_s", []).append(unpause)
    log(f"syncthing first sync (from unpause) rep {rep}: {unpause:.2f} s")
    if keep:
        return st2
    st2.stop()
    return None


def first_sync_companion(run: Run, rep: int, keep: bool) -> CompanionSystem | None:
    """Upload from A (`companion sync`), then time `companion sync` on the empty B."""
    out = run.results.setdefault("companion", {})
    vault_a = run.copy_vault(run.work / "co-vault-a")
    co = CompanionSystem(run.work / f"co-r{rep}")
    try:
        co.setup(vault_a, run.work / f"co-r{rep}-b")
        t = co.sync("b")
        out.setdefault("first_sync_b_cpu_s", []).append(co.last_cpu_s)
        out.setdefault("first_sync_b_peak_mb", []).append(co.last_peak_mb)
        run.verify(co.vault_b, "companion first sync")
    except BaseException:
        co.close()
        raise
    for k, v in co.times.items():
        out.setdefault(k, []).append(v)
    out.setdefault("first_sync_b_s", []).append(t)
    total = co.times["init_a_s"] + co.times["upload_a_s"] + co.times["init_b_s"] + t
    out.setdefault("first_sync_total_s", []).append(total)
    log(
        f"companion rep {rep}: init A {co.times['init_a_s']:.2f} s, upload A "
        f"{co.times['upload_a_s']:.2f} s, init B {co.times['init_b_s']:.2f} s, sync B {t:.2f} s"
    )
    if keep:
        return co
    co.close()
    return None


@dataclass
class LatencyTarget:
    label: str
    system: Any
    a: Path
    b: Path
    timeout: float
    samples: list[dict[str, Any]] = field(default_factory=list)


def latency_sample(t: LatencyTarget, i: int, idle_s: float, warmup: bool = False) -> float:
    """Idle, then save a note on A and poll B every 2 ms until the new bytes are there."""
    t.system.settle()
    time.sleep(idle_s)
    marker = f"bench-marker {t.label} {i} {time.time_ns()}"
    kind = "new" if i % 2 == 0 else "edit"
    rel = f"latency/{t.label}-{i}.md" if kind == "new" else "latency/edited.md"
    src, dst = t.a / rel, t.b / rel
    old = src.read_bytes() if src.exists() else b""
    data = old + f"\n- {marker}\n".encode() if kind == "edit" else f"# {marker}\n".encode() * 8
    t0 = now()
    src.write_bytes(data)
    deadline = t0 + t.timeout
    while True:
        try:
            if dst.read_bytes() == data:
                break
        except OSError:
            pass
        if now() > deadline:
            raise BenchError(f"{t.label}: {rel} did not reach B within {t.timeout:.0f} s")
        time.sleep(0.002)
    dt_s = now() - t0
    if not warmup:
        t.samples.append({"i": i, "kind": kind, "s": dt_s})
    return dt_s


def latency_prepare(t: LatencyTarget) -> None:
    """Create the latency folder and the note that gets edited, and wait until B has them."""
    (t.a / "latency").mkdir(exist_ok=True)
    seed = t.a / "latency" / "edited.md"
    if not seed.exists():
        seed.write_text("# A note edited by the latency benchmark\n")
    deadline = now() + max(60.0, 3 * t.timeout)
    while now() < deadline:
        dst = t.b / "latency" / "edited.md"
        if dst.exists() and dst.read_bytes() == seed.read_bytes():
            return
        time.sleep(0.05)
    raise BenchError(f"{t.label}: the latency folder did not reach B")


def measure_latency(run: Run, targets: list[LatencyTarget], n: int, idle_s: float) -> None:
    """n samples per target, alternating targets (A B A B, order flipped every round)."""
    alive = list(targets)
    for t in alive:
        latency_prepare(t)
        latency_sample(t, -1, idle_s, warmup=True)
    for i in range(n):
        order = alive if i % 2 == 0 else alive[::-1]
        for t in list(order):
            try:
                s = latency_sample(t, i, idle_s)
                log(f"latency {t.label} #{i}: {s * 1000:.1f} ms")
            except Exception as exc:  # keep measuring the others
                run.errors[f"latency {t.label}"] = f"{exc}"
                log(f"latency {t.label} failed: {exc}")
                alive.remove(t)


def summarize_latency(t: LatencyTarget) -> dict[str, Any]:
    xs = [s["s"] for s in t.samples]
    by = {k: [s["s"] for s in t.samples if s["kind"] == k] for k in ("new", "edit")}
    return {
        "n": len(xs),
        "median_s": median(xs),
        "p95_s": p95(xs),
        "max_s": max(xs) if xs else None,
        "median_new_s": median(by["new"]),
        "median_edit_s": median(by["edit"]),
        "samples": t.samples,
    }


LIBRARIES = """
import sqlite3
import click, pathspec
import companion.relayclient.lean  # httpcore, the relay client's transport
"""  # cryptography is not here: a quiet round has not loaded it since 2026-12-05

WALK = """
import os, sys

def walk(folder):
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.stat(follow_symlinks=False) and entry.is_dir(follow_symlinks=False):
                walk(entry.path)

walk(sys.argv[1])
"""

LIBRARY_FLOOR = LIBRARIES + WALK

# The floor of the quiet round's own I/O in Python, with no library and none of our code: read
# the copy's index rows (path and stat) from SQLite, walk the vault comparing each file's lstat
# with its row, and ask the relay one question over loopback on a bare socket (no HTTP library,
# no TLS, no token). A quiet one-shot `companion sync` does this much and more (ignore rules,
# the lock, status, a checked reply), so no one-shot Python command can beat it on this machine.
# `_QUIET_IO` is the part before the request, shared by the two floors below.
_QUIET_IO = """
import glob, json, os, sqlite3, sys

vault, home = sys.argv[1], sys.argv[2]
state = glob.glob(os.path.join(home, "data", "sync", "*", "device.json"))[0]
device = json.load(open(state))
db = sqlite3.connect(os.path.join(os.path.dirname(state), "index.sqlite"))
known = {r[0]: r[1:] for r in db.execute(
    "SELECT path, mtime_ns, size, inode, ctime_ns FROM files WHERE deleted=0")}
changed = []
stack = [(vault, "")]
while stack:
    folder, rel_dir = stack.pop()
    with os.scandir(folder) as entries:
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            rel = rel_dir + entry.name
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, rel + "/"))
            elif known.pop(rel, None) != (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns):
                changed.append(rel)
"""

IO_FLOOR = (
    _QUIET_IO
    + """
import socket
host, port = device["relay_url"].rsplit("/", 1)[1].rsplit(":", 1)
with socket.create_connection((host, int(port))) as conn:
    conn.sendall(b"GET /v1/health HTTP/1.1\\r\\nHost: relay\\r\\nConnection: close\\r\\n\\r\\n")
    reply = b"".join(iter(lambda: conn.recv(65536), b""))
assert reply.startswith(b"HTTP/1.1 200"), reply[:100]
"""
)

# The same I/O with the request sent through the relay client's transport (httpcore, imported
# the way the client imports it): the floor of any quiet round that keeps the project's one
# HTTP client (TLS, proxies, timeouts) instead of a hand-written one.
IO_TRANSPORT_FLOOR = (
    _QUIET_IO
    + """
import companion.relayclient.lean  # imports httpcore as the relay client does
import httpcore
with httpcore.ConnectionPool() as pool:
    reply = pool.request("GET", device["relay_url"] + "/v1/health")
assert reply.status == 200, reply.status
"""
)


def quiet_rescan_companion(run: Run, co: CompanionSystem, repeat: int) -> None:
    """`companion sync` with nothing changed (CLI wall): first while `companion watch` owns the
    copy (its engine runs the round), then alone; and an in-process scan if possible."""
    out = run.results.setdefault("companion", {})
    if co.a is not None and co.a.proc is not None and co.a.proc.poll() is None:
        co.settle()
        out["quiet_sync_cli_watch_s"] = [co.sync("a") for _ in range(repeat)]
        out["quiet_sync_cli_watch_rescan_s"] = [co.sync("a", "--rescan") for _ in range(repeat)]
    co.stop()
    walls = [co.sync("a") for _ in range(repeat)]
    out["quiet_sync_cli_s"] = walls
    # Python's own start-up, for context: the floor of any CLI number
    floor = []
    for _ in range(3):
        t0 = now()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        floor.append(now() - t0)
    out["python_startup_s"] = floor
    # The floor of any Python round built on this project's libraries: start-up, importing
    # them (httpcore as the client imports it), and one lstat walk of the vault; none of our code.
    # Then the walk without the libraries: what any one-shot command looking at every file pays.
    assert co.a is not None
    for key, code in (
        ("library_floor_s", LIBRARY_FLOOR),
        ("walk_floor_s", WALK),
        ("io_floor_s", IO_FLOOR),
        ("io_transport_floor_s", IO_TRANSPORT_FLOOR),
    ):
        walls = []
        for _ in range(repeat):
            t0 = now()
            subprocess.run([sys.executable, "-c", code, str(co.a.vault), str(co.a.home)],
                           check=True, cwd=REPO, env=co.env(co.a.home))  # fmt: skip
            walls.append(now() - t0)
        out[key] = walls
    try:
        r = inprocess_quiet_scan(co, repeat)
        out["quiet_round_inprocess_s"] = r["round_s"]
        out["quiet_scan_inprocess_s"] = r["scan_s"]
    except Exception as exc:  # the engine's API is not there (yet)
        run.errors["in-process quiet scan"] = f"{type(exc).__name__}: {exc}"


# Runs in a child with the device's COMPANION_HOME: the engine's own quiet round (pull from the
# relay + full scan + nothing to push), then its scanner alone, with no CLI start-up counted.
INPROCESS_CHILD = r"""
import json, sys, time
from companion.config import load_config
from companion.paths import device_paths
from companion.sync.round.engine import SyncEngine
from companion.sync.round.scanner import scan

vault, repeat = sys.argv[1], int(sys.argv[2])
paths = device_paths()
eng = SyncEngine(vault, paths, load_config(paths), settle_ns=0)
rounds, scans, changed = [], [], 0
try:
    eng.round()  # warm: imports, connection, page cache
    for _ in range(repeat):
        t = time.perf_counter()
        rep = eng.round()
        rounds.append(time.perf_counter() - t)
        changed += rep.changed
    for _ in range(repeat):
        t = time.perf_counter()
        res = scan(eng.core.root, eng.core.index, eng.core.ignore, settle_ns=0)
        scans.append(time.perf_counter() - t)
        changed += len(res.changed)
finally:
    eng.close()
print(json.dumps({"round_s": rounds, "scan_s": scans, "changed": changed}))
"""


def inprocess_quiet_scan(co: CompanionSystem, repeat: int) -> dict[str, Any]:
    """The engine's quiet round and scanner timed inside one process for device A."""
    d = co.device("a")
    p = subprocess.run(
        [sys.executable, "-c", INPROCESS_CHILD, str(d.vault), str(repeat)],
        env=co.env(d.home),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if p.returncode != 0:
        raise BenchError(f"in-process quiet round failed:\n{p.stderr[-3000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if out["changed"]:
        raise BenchError(f"a quiet round reported {out['changed']} changes")
    return out


def quiet_rescan_syncthing(run: Run, st: SyncthingSystem, repeat: int) -> None:
    """POST /rest/db/scan on A with nothing changed (returns when the scan is done)."""
    assert st.pair is not None
    st.settle()
    times = []
    for _ in range(repeat):
        t0 = now()
        st.pair.scan("a")
        times.append(now() - t0)
    run.results.setdefault("syncthing", {})["quiet_scan_rest_s"] = times


def big_tree(root: Path, n: int) -> None:
    """n tiny notes in n/100 folders (the 100,000-file memory test)."""
    for i in range(n):
        d = root / f"d{i // 100:04d}"
        if i % 100 == 0:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"n{i}.md").write_bytes(f"# note {i}\n".encode())


def measure_big(run: Run, n: int, systems: set[str]) -> None:
    """RSS of the idle daemons once n files are indexed and synced."""
    src = run.work / "big-src"
    t0 = now()
    big_tree(src, n)
    log(f"{n:,} tiny files written in {now() - t0:.1f} s")
    if "companion" in systems:
        co = CompanionSystem(run.work / "big-co")
        try:
            a = run.work / "big-co-a"
            shutil.copytree(src, a)
            co.setup(a, run.work / "big-co-b")
            t_b = co.sync("b")
            peak_b = co.last_peak_mb
            co.start()
            co.settle()
            time.sleep(2)
            co.settle()
            r = co.rss()
            run.results.setdefault("companion", {})["big"] = {
                **co.times,
                "sync_b_s": t_b,
                "sync_b_peak_mb": peak_b,
                **r,
            }
            log(f"companion {n:,} files: {r}")
        except Exception as exc:
            run.errors["companion --big"] = f"{exc}"
            log(f"companion --big failed: {exc}")
        finally:
            co.close()
    if "syncthing" in systems:
        st = SyncthingSystem(run.work / "big-st")
        st.expected_files = n
        try:
            st.setup(src, run.work / "big-st-b")
            t0 = now()
            st.start()
            st.wait_converged(timeout=1800)
            t_sync = now() - t0
            time.sleep(2)
            wait_cpu_quiet(st.pids(), quiet_s=1.5, timeout=300)
            r = st.rss()
            run.results.setdefault("syncthing", {})["big"] = {"cold_sync_s": t_sync, **r}
            log(f"syncthing {n:,} files: {r}")
        except Exception as exc:
            run.errors["syncthing --big"] = f"{exc}"
        finally:
            st.stop()


def measure_floors(run: Run, src: Path, key: str) -> None:
    """This machine's floors for the files of `src`: writing them all into a new folder and
    flushing once (`syncfs`, the way a first download ends), AES-GCM over each file's bytes,
    and SHA-256 over them (what the scanner pays)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    files = [p for _, p in tree_files(src)]
    datas = [p.read_bytes() for p in files]
    dest = run.work / f"floor-{key}-{len(run.results.get('floors', {}))}"
    t0 = now()
    for p, data in zip(files, datas, strict=True):
        target = dest / p.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    _syncfs(dest)
    disk = now() - t0
    aes = AESGCM(os.urandom(32))
    t0 = now()
    for i, data in enumerate(datas):
        aes.encrypt(i.to_bytes(12, "big"), data, b"")
    aes_s = now() - t0
    t0 = now()
    for data in datas:
        hashlib.sha256(data).digest()
    sha_s = now() - t0
    floors = run.results.setdefault("floors", {}).setdefault(key, {})
    for name, v in (("disk_write_s", disk), ("aes_gcm_s", aes_s), ("sha256_s", sha_s)):
        floors.setdefault(name, []).append(v)
    floors["files"], floors["bytes"] = len(datas), sum(len(d) for d in datas)
    run.trash.move(dest)
    log(f"floors ({key}): write+flush {disk:.2f} s, AES-GCM {aes_s:.2f} s, SHA-256 {sha_s:.2f} s")


def _syncfs(path: Path) -> None:
    import ctypes

    fd = os.open(path, os.O_RDONLY)
    try:
        if ctypes.CDLL(None).syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def help_vault(root: Path, seed: int = 1) -> tuple[int, int]:
    """A vault shaped like Obsidian's help vault: 34 folders of 200 notes with their links and
    attachments, grown with media to 11,000 files and 284 MB. (files, bytes)."""
    from gen_obsidian_vault import add_media, generate

    generate(root, 34, 200, seed)
    add_media(root, HELP_FILES, HELP_BYTES, seed)
    _, n = tree_digest(root)
    return n, sum(p.stat().st_size for _, p in tree_files(root))


HELP_FILES = 11_000
HELP_BYTES = 284_000_000


def help_vault_upload(run: Run, rep: int) -> None:
    """`companion sync` on A uploading the help-shaped vault; Syncthing's cold start of it."""
    src = run.help_src
    assert src is not None
    out = run.results.setdefault("companion", {})
    co = CompanionSystem(run.work / f"help-co-r{rep}")
    try:
        vault_a = run.work / f"help-co-r{rep}-a"
        shutil.copytree(src, vault_a)
        time.sleep(1.0)  # older than the quiet period a fresh large file needs
        co.vault_a, co.vault_b = vault_a, run.work / f"help-co-r{rep}-b"
        co.work.mkdir(parents=True, exist_ok=True)
        co.pass_file.write_text(PASSPHRASE + "\n")
        co.pass_file.chmod(0o600)
        co.a = co._home("A", vault_a)
        co.b = co._home("B", co.vault_b)
        co.start_relay()
        co.init("a")
        t = co.sync("a")
        out.setdefault("help_upload_s", []).append(t)
        out.setdefault("help_upload_cpu_s", []).append(co.last_cpu_s)
        log(f"companion help-vault upload rep {rep}: {t:.2f} s")
    finally:
        co.close()


def help_vault_syncthing(run: Run, rep: int) -> None:
    src = run.help_src
    assert src is not None
    st = SyncthingSystem(run.work / f"help-st-r{rep}")
    st.expected_files = run.help_files
    try:
        st.setup(src, run.work / f"help-st-r{rep}-b")
        t0 = now()
        st.start()
        st.pair.wait_idle("b", min_files=run.help_files, timeout=1800, interval=POLL_S)  # type: ignore[union-attr]
        t = now() - t0
        run.results.setdefault("syncthing", {}).setdefault("help_cold_s", []).append(t)
        log(f"syncthing help-vault cold start rep {rep}: {t:.2f} s")
    finally:
        st.stop()


# ---------------------------------------------------------------------------------------------
# report


def fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


def fmt_cpu(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f} s CPU"


def fmt_mb(x: float | None) -> str:
    return "—" if x is None else f"{x:.0f} MB"


def ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def table(run: Run) -> str:
    co = run.results.get("companion", {})
    st = run.results.get("syncthing", {})
    n = f"{run.n_notes:,}"
    rows: list[tuple[str, str, str, str, str]] = []

    def row(
        metric: str, a: float | None, b: float | None, target: str, f: Callable = fmt_s
    ) -> None:
        rows.append((metric, f(a), f(b), ratio(a, b), target))

    lat = run.results.get("latency", {})
    ours = lat.get("companion", {})
    for label, key in (
        ("watcher delay 10 s, default", "syncthing-10s"),
        ("fsWatcherDelayS=1", "syncthing-1s"),
    ):
        theirs = lat.get(key, {})
        nn = f"n={ours.get('n', 0)}/{theirs.get('n', 0)}"
        row(
            f"propagation median, save on A → bytes on B (Syncthing {label}; {nn})",
            ours.get("median_s"),
            theirs.get("median_s"),
            "≤ 100 ms",
        )
        row(
            f"propagation p95 (Syncthing {label})",
            ours.get("p95_s"),
            theirs.get("p95_s"),
            "≤ 500 ms",
        )
    fl = run.results.get("floors", {})
    notes_fl = {k: median(v) for k, v in fl.get("notes", {}).items() if isinstance(v, list)}
    help_fl = {k: median(v) for k, v in fl.get("help", {}).items() if isinstance(v, list)}

    def vs(x: float | None, floors: dict[str, float | None]) -> str:
        parts = []
        for name, k in (("disk", "disk_write_s"), ("AES-GCM", "aes_gcm_s")):
            f = floors.get(k)
            if x is not None and f:
                parts.append(f"{x / f:.1f}× {name} ({fmt_s(f)})")
        return "; ".join(parts) or ""

    def row_f(metric: str, a: float | None, b: float | None, target: str,
              floors: dict[str, float | None]) -> None:  # fmt: skip
        rows.append(
            (
                metric,
                fmt_s(a),
                fmt_s(b),
                ratio(a, b),
                target + (f"; {vs(a, floors)}" if vs(a, floors) else ""),
            )
        )

    row_f(
        f"first upload, {n} notes (`companion sync` on A, from its start to its exit)",
        median(co.get("upload_a_s", [])),
        None,
        "≤ 3 s",
        notes_fl,
    )
    row_f(
        "first download into an empty copy (ours: `sync` on B; Syncthing: from unpause)",
        median(co.get("first_sync_b_s", [])),
        median(st.get("first_sync_unpause_s", [])),
        "≤ 3 s, < Syncthing",
        notes_fl,
    )
    row(
        "  CPU used for it (ours: `sync` on B + relay; Syncthing: both workers)",
        median(co.get("first_sync_b_cpu_s", [])),
        median(st.get("first_sync_unpause_cpu_s", [])),
        "",
        fmt_cpu,
    )
    row(
        "  peak RSS of the one-shot `companion sync` on B",
        median(co.get("first_sync_b_peak_mb", [])),
        None,
        "",
        fmt_mb,
    )
    row(
        "whole first sync (ours: init A + upload + init B + sync B; Syncthing: cold start)",
        median(co.get("first_sync_total_s", [])),
        median(st.get("first_sync_cold_s", [])),
        "≤ 8 s",
    )
    row(
        "  of which `companion init` on A (creates the key; Argon2id)",
        median(co.get("init_a_s", [])),
        None,
        "",
    )
    row(
        "  of which `companion init` on B (joins; Argon2id)",
        median(co.get("init_b_s", [])),
        None,
        "",
    )
    row(
        f"quiet rescan, {n} notes (ours: in-process scanner; Syncthing: REST /rest/db/scan)",
        median(co.get("quiet_scan_inprocess_s", [])),
        median(st.get("quiet_scan_rest_s", [])),
        "≤ 100 ms",
    )
    row(
        "quiet round in-process (engine.round(): relay pull + scan, nothing to push)",
        median(co.get("quiet_round_inprocess_s", [])),
        None,
        "",
    )
    row(
        "quiet round, CLI wall incl. Python start-up (`companion sync`, nothing changed)",
        median(co.get("quiet_sync_cli_s", [])),
        None,
        "≤ 150 ms",
    )
    row(
        "  the same while `companion watch` owns the copy (its engine runs the round)",
        median(co.get("quiet_sync_cli_watch_s", [])),
        None,
        "≤ 150 ms",
    )
    row(
        "  ... with `--rescan` (the watch's engine looks at every file)",
        median(co.get("quiet_sync_cli_watch_rescan_s", [])),
        None,
        "",
    )
    row(
        "  Python interpreter start-up alone (`python -c pass`)",
        median(co.get("python_startup_s", [])),
        None,
        "",
    )
    row(
        "  floor: start-up, importing the libraries a round uses, one lstat walk (no code of ours)",
        median(co.get("library_floor_s", [])),
        None,
        "",
    )
    row(
        "  floor: start-up and one lstat walk (no library, no code of ours)",
        median(co.get("walk_floor_s", [])),
        None,
        "",
    )
    row(
        "  floor: the quiet round's I/O (index rows, lstat walk compared, one request on a bare "
        "socket)",
        median(co.get("io_floor_s", [])),
        None,
        "",
    )
    row(
        "  floor: the same I/O, the request through the relay client's transport (httpcore)",
        median(co.get("io_transport_floor_s", [])),
        None,
        "",
    )
    if co.get("help_upload_s") or st.get("help_cold_s"):
        hf = fl.get("help", {})
        what = f"{hf.get('files', 0):,} files, {hf.get('bytes', 0) / 1e6:.0f} MB"
        row_f(
            f"first upload of a help-vault-shaped vault ({what}; Syncthing: cold start to B)",
            median(co.get("help_upload_s", [])),
            median(st.get("help_cold_s", [])),
            "≤ 10 s",
            help_fl,
        )
    for label, floors in ((f"{n} notes", notes_fl), ("help-shaped vault", help_fl)):
        if floors:
            rows.append((
                f"  floors, {label}: write every file + one flush (AES-GCM, SHA-256 per file)",
                fmt_s(floors.get("disk_write_s")), "", "",
                f"AES-GCM {fmt_s(floors.get('aes_gcm_s'))}, "
                f"SHA-256 {fmt_s(floors.get('sha256_s'))}",
            ))  # fmt: skip
    rss_c = co.get("rss", {})
    rss_s = st.get("rss", {})
    row(
        f"idle daemon RSS, {n} notes synced (device A)",
        rss_c.get("a_rss_mb"),
        rss_s.get("a_rss_mb"),
        "",
        fmt_mb,
    )
    row(
        f"idle daemon RSS, {n} notes synced (device B)",
        rss_c.get("b_rss_mb"),
        rss_s.get("b_rss_mb"),
        "",
        fmt_mb,
    )
    big_c, big_s = co.get("big", {}), st.get("big", {})
    if big_c or big_s:
        nb = f"{run.args.big_files:,}"
        row(
            f"idle daemon RSS, {nb} files indexed (device A)",
            big_c.get("a_rss_mb"),
            big_s.get("a_rss_mb"),
            "≤ 200 MB",
            fmt_mb,
        )
        row(
            f"idle daemon RSS, {nb} files (device B, after first sync)",
            big_c.get("b_rss_mb"),
            big_s.get("b_rss_mb"),
            "",
            fmt_mb,
        )
        row(
            f"peak RSS of the one-shot `companion sync` on B, {nb} files",
            big_c.get("sync_b_peak_mb"),
            None,
            "",
            fmt_mb,
        )
        row(
            f"first sync of {nb} tiny files (ours: sync B; Syncthing: cold start)",
            big_c.get("sync_b_s"),
            big_s.get("cold_sync_s"),
            "",
        )
    lines = [
        "| metric | Vault Companion | Syncthing | ratio | target |",
        "|---|---:|---:|---:|---|",
        *(f"| {' | '.join(r)} |" for r in rows),
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2,000 notes, fewer samples")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="a smoke run in seconds (CI): 200 notes, 2 samples, no 10 s-delay row, no help vault",
    )
    ap.add_argument("--only", choices=("syncthing", "companion"))
    ap.add_argument("--big", action="store_true", help="also the 100,000-file RSS test")
    ap.add_argument("--notes", type=int, help="vault size (default 10,000; --quick 2,000)")
    ap.add_argument("--samples", type=int, help="latency samples per system (default 30)")
    ap.add_argument("--samples-10s", type=int, help="samples at Syncthing's 10 s delay (5)")
    ap.add_argument("--reps", type=int, help="first-sync repetitions (default 3)")
    ap.add_argument("--idle", type=float, default=2.0, help="idle seconds before each sample")
    ap.add_argument("--big-files", type=int, default=100_000)
    ap.add_argument(
        "--no-help-vault", action="store_true", help="skip the 11,000-file, 284 MB upload"
    )
    ap.add_argument(
        "--st-low-priority",
        action="store_true",
        help="keep Syncthing's default nice 11 worker (default: nice 0 like ours)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (prints its path)")
    ap.add_argument("--out", type=Path, default=HERE / "out")
    args = ap.parse_args(argv)
    if args.smoke:  # every code path once, on tiny sizes: the numbers mean nothing
        args.notes = args.notes or 200
        args.samples = 2 if args.samples is None else args.samples
        args.samples_10s = 0 if args.samples_10s is None else args.samples_10s
        args.reps = args.reps or 1
        args.idle = 0.5
        args.no_help_vault = True
        args.repeat = 1
        return args
    q = args.quick
    args.notes = args.notes or (2_000 if q else 10_000)
    args.samples = args.samples if args.samples is not None else (6 if q else 30)
    args.samples_10s = args.samples_10s if args.samples_10s is not None else (2 if q else 5)
    args.reps = args.reps or (1 if q else 3)
    args.repeat = 3 if q else 7
    return args


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # stop cleanly (daemons, temp dir) on Ctrl-C or SIGTERM, even when started in background
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    SyncthingSystem.low_priority = args.st_low_priority
    systems = {"syncthing", "companion"} if args.only is None else {args.only}
    from gen_vault import generate_vault

    work = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    trash = Trash(work / "trash")
    log(f"work dir {work}")
    src = work / "src"
    t0 = now()
    stats = generate_vault(args.notes, src, seed=1)
    digest, n_files = tree_digest(src)
    log(
        f"vault: {stats.notes} notes + {stats.files} files, "
        f"{stats.bytes / 1e6:.1f} MB ({now() - t0:.1f} s)"
    )
    run = Run(work, trash, src, args.notes, n_files, digest, args)
    if not args.no_help_vault:
        t0 = now()
        run.help_src = work / "help-src"
        run.help_files, help_bytes = help_vault(run.help_src)
        log(f"help-shaped vault: {run.help_files:,} files, {help_bytes / 1e6:.0f} MB "
            f"({now() - t0:.1f} s)")  # fmt: skip
    run.results["meta"] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "python": sys.version.split()[0],
        "syncthing": syncthing_version() if "syncthing" in systems else None,
        "notes": args.notes,
        "files": n_files,
        "bytes": stats.bytes,
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    st_live: SyncthingSystem | None = None
    co_live: CompanionSystem | None = None
    try:
        # 0. the floors of this machine, in this run
        for _ in range(2):
            measure_floors(run, src, "notes")
            if run.help_src is not None:
                measure_floors(run, run.help_src, "help")
        # 1. first sync, alternating the systems (and which goes first) rep by rep
        for rep in range(args.reps):
            order = sorted(systems) if rep % 2 == 0 else sorted(systems, reverse=True)
            last = rep == args.reps - 1
            for name in order:
                try:
                    if name == "syncthing":
                        st_live = first_sync_syncthing(run, rep, keep=last) or st_live
                    elif "companion" not in run.errors:
                        co_live = first_sync_companion(run, rep, keep=last) or co_live
                except Exception as exc:
                    run.errors[name] = f"first sync rep {rep}: {exc}"
                    log(f"{name} first sync failed: {exc}")
        # 2. live daemons: latency, alternating
        targets: list[LatencyTarget] = []
        if co_live is not None:
            try:
                co_live.start()
                co_live.settle()
                targets.append(
                    LatencyTarget("companion", co_live, co_live.vault_a, co_live.vault_b, 30)
                )
            except Exception as exc:
                run.errors["companion watch"] = f"{exc}"
                log(f"companion watch failed: {exc}")
        lat = run.results.setdefault("latency", {})
        if st_live is not None and st_live.pair is not None:
            if args.samples_10s > 0:
                st10 = LatencyTarget("syncthing-10s", st_live, st_live.vault_a, st_live.vault_b, 60)
                log("syncthing at its default 10 s watcher delay")
                # idle longer than the delay, so each sample starts from a quiet watcher
                measure_latency(run, [st10], args.samples_10s, max(args.idle, 12.0))
                lat["syncthing-10s"] = summarize_latency(st10)
            st_live.pair.set_folder(fsWatcherDelayS=1)
            st_live.settle()
            targets.append(
                LatencyTarget("syncthing-1s", st_live, st_live.vault_a, st_live.vault_b, 30)
            )
        if targets:
            measure_latency(run, targets, args.samples, args.idle)
            for t in targets:
                lat[t.label] = summarize_latency(t)
        # 3. memory of the idle daemons, then quiet rescans
        if co_live is not None and co_live.a is not None and co_live.a.proc is not None:
            with contextlib.suppress(Exception):
                co_live.settle()
            run.results["companion"]["rss"] = co_live.rss()
        if st_live is not None:
            st_live.settle()
            run.results["syncthing"]["rss"] = st_live.rss()
            quiet_rescan_syncthing(run, st_live, args.repeat)
            st_live.stop()
            st_live = None
        if co_live is not None:
            try:
                quiet_rescan_companion(run, co_live, args.repeat)
            except Exception as exc:
                run.errors["companion quiet rescan"] = f"{exc}"
            co_live.close()
            co_live = None
        # 4. the help-shaped vault, alternating
        if run.help_src is not None:
            for rep in range(min(args.reps, 2)):
                order = sorted(systems) if rep % 2 == 0 else sorted(systems, reverse=True)
                for name in order:
                    try:
                        if name == "companion":
                            help_vault_upload(run, rep)
                        elif rep == 0:
                            help_vault_syncthing(run, rep)
                    except Exception as exc:
                        run.errors[f"{name} help vault"] = f"{exc}"
                        log(f"{name} help vault failed: {exc}")
        # 5. optional: 100,000 files
        if args.big:
            measure_big(run, args.big_files, systems)
    except KeyboardInterrupt:
        log("interrupted")
    except Exception:
        run.errors["harness"] = traceback.format_exc()
        log(run.errors["harness"])
    finally:
        if st_live is not None:
            st_live.stop()
        if co_live is not None:
            co_live.close()
        run.results["errors"] = run.errors
        run.results["meta"]["loadavg_end"] = os.getloadavg()
        args.out.mkdir(parents=True, exist_ok=True)
        out = args.out / f"bench_sync-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
        out.write_text(json.dumps(run.results, indent=2, default=str))
        print(
            f"## Sync: Vault Companion vs Syncthing ({run.n_notes:,} notes, {n_files:,} files, "
            f"{stats.bytes / 1e6:.1f} MB; {os.cpu_count()} CPUs, load "
            f"{run.results['meta']['loadavg_start'][0]:.1f}→{os.getloadavg()[0]:.1f}; "
            f"{run.results['meta']['syncthing'] or ''})\n"
        )
        print(table(run))
        print(
            "\nratio = Vault Companion / Syncthing (below 1: ours is faster/smaller). "
            f"Medians; raw samples in {out.relative_to(REPO) if out.is_relative_to(REPO) else out}."
        )
        for k, v in run.errors.items():
            print(f"\n**error ({k})**: {v.strip().splitlines()[0] if v.strip() else v}")
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if run.errors else 0


if __name__ == "__main__":
    sys.exit(main())
