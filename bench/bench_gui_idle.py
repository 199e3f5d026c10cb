"""The desktop app at rest: CPU and memory of `python -m companion` (the tray) doing nothing.

Target (issue 6): idle for 60 s, at most 0.5% of one core and at most 150 MB RSS.

Two cases, each with a fresh COMPANION_HOME and a small vault:

- `idle`: a vault with no sync set up (the `IdleEngine`: reports and conflicts only);
- `synced`: a vault copy joined to a real relay (`companion relay serve` on 127.0.0.1, in
  another process that is not measured): the sync daemon runs in the app, watching the folder
  and long-polling the relay, with nothing to do.

The app runs on a virtual X screen with a tray host (Xvfb + trayer) when both are installed,
else with Qt's offscreen platform. After `--settle` seconds the script samples
`/proc/PID/stat` (utime + stime of the app and its live children, plus reaped children) and
`VmRSS` every second for `--seconds`, and prints a Markdown table. The local fallback dream
is switched off so a dream does not run inside the window (it runs once a night at most).
Linux only (/proc).

Example:

    python bench/bench_gui_idle.py
    python bench/bench_gui_idle.py --modes synced --seconds 120 --display offscreen
    python bench/bench_gui_idle.py --quick --display xvfb   # a smoke run: 2 s settle, 2 s window

It exits 1 when a target is missed, except with `--quick`, whose windows are too short to mean
anything: that run only shows the app starts, idles and stops in both cases.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CPU_TARGET_PCT = 0.5
RSS_TARGET_MB = 150.0
TICK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------- /proc


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces: split after its closing parenthesis
    return [str(pid), "comm", *raw[raw.rindex(")") + 2 :].split()]


def descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None:
                parents[int(entry)] = int(fields[3])
    out, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out.extend(kids)
        frontier.extend(kids)
    return out


def cpu_ticks(pid: int) -> int:
    """CPU time of `pid`, its live descendants and the children it has reaped, in ticks."""
    total = 0
    fields = _stat(pid)
    if fields is not None:
        total += sum(int(fields[i]) for i in (13, 14, 15, 16))  # utime stime cutime cstime
    for child in descendants(pid):
        f = _stat(child)
        if f is not None:
            total += int(f[13]) + int(f[14])
    return total


def status_value(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kb(pid: int) -> tuple[int, int]:
    """(RSS of the app, RSS of the app and its descendants), in kB."""
    own = status_value(pid, "VmRSS")
    return own, own + sum(status_value(c, "VmRSS") for c in descendants(pid))


def switches(pid: int) -> int:
    """Context switches of every thread of `pid` (each wake-up counts at least one)."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            text = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                total += int(line.split()[1])
    return total


def threads(pid: int) -> int:
    return status_value(pid, "Threads")


# ---------------------------------------------------------------------------------- display


@contextlib.contextmanager
def display(kind: str) -> Iterator[dict[str, str]]:
    """Environment for the app: a virtual X screen with a tray, or Qt's offscreen platform."""
    if kind == "auto":
        kind = "xvfb" if shutil.which("Xvfb") and shutil.which("trayer") else "offscreen"
    if kind == "offscreen":
        yield {"QT_QPA_PLATFORM": "offscreen"}
        return
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        number = f.readline().strip()
    env = {"DISPLAY": f":{number}", "QT_QPA_PLATFORM": "xcb"}
    trayer = subprocess.Popen(
        ["trayer", "--edge", "top", "--align", "right", "--widthtype", "request"],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)
    try:
        yield env
    finally:
        for proc in (trayer, xvfb):
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)


# ---------------------------------------------------------------------------------- setups


def write_config(home: Path, vault: Path, extra: str = "") -> None:
    cfg = home / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    text = cfg.read_text(encoding="utf-8") if cfg.exists() else ""
    text += (
        f'\n[vault]\npath = "{vault}"\n\n[dream]\nlocal_fallback = false\n\n'
        '[notify]\nmorning_time = "00:00"\n' + extra
    )
    cfg.write_text(text, encoding="utf-8")


@contextlib.contextmanager
def setup(mode: str, base: Path) -> Iterator[Path]:
    """A COMPANION_HOME whose configured vault is ready for `mode`; yields the home."""
    from companion.gui.sample import write_sample_vault

    if mode == "idle":
        home, vault = base / "home", base / "vault"
        write_sample_vault(vault)
        write_config(home, vault)
        yield home
        return
    from tests.syncharness import SyncCluster

    with SyncCluster(base / "cluster", relay="process", relay_log_level="warning") as cluster:
        laptop = cluster.add_device("laptop", "human")
        write_sample_vault(laptop.vault)
        laptop.sync()  # the copy starts synced: nothing to do while measured
        laptop.close()
        write_config(laptop.home, laptop.vault)
        yield laptop.home


# ---------------------------------------------------------------------------------- measure


@dataclass
class Result:
    mode: str
    display: str
    seconds: float
    cpu_pct: float
    rss_mean_mb: float
    rss_max_mb: float
    rss_tree_max_mb: float
    wakeups_s: float
    threads: int


def measure(mode: str, display_kind: str, settle: float, seconds: float) -> Result:
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-gui-"))
        home = stack.enter_context(setup(mode, Path(tmp)))
        denv = stack.enter_context(display(display_kind))
        env = {**os.environ, **denv, "COMPANION_HOME": str(home)}
        env.pop("COMPANION_PASSPHRASE_FILE", None)
        log = Path(tmp) / "app.log"
        with log.open("wb") as out:
            app = subprocess.Popen(
                [sys.executable, "-m", "companion"], env=env, stdout=out, stderr=out
            )
        try:
            time.sleep(settle)
            if app.poll() is not None:
                raise SystemExit(f"the app exited early:\n{log.read_text()[-3000:]}")
            t0, c0, s0 = time.monotonic(), cpu_ticks(app.pid), switches(app.pid)
            own, tree = [], []
            while time.monotonic() - t0 < seconds:
                time.sleep(1.0)
                a, b = rss_kb(app.pid)
                own.append(a)
                tree.append(b)
            elapsed = time.monotonic() - t0
            c1, s1 = cpu_ticks(app.pid), switches(app.pid)
            n_threads = threads(app.pid)
        finally:
            app.send_signal(signal.SIGTERM)
            try:
                app.wait(30)
            except subprocess.TimeoutExpired:
                app.kill()
        name = denv.get("QT_QPA_PLATFORM", "")
        return Result(
            mode=mode,
            display="Xvfb + trayer" if name == "xcb" else name,
            seconds=elapsed,
            cpu_pct=100.0 * (c1 - c0) / TICK / elapsed,
            rss_mean_mb=sum(own) / len(own) / 1024,
            rss_max_mb=max(own) / 1024,
            rss_tree_max_mb=max(tree) / 1024,
            wakeups_s=(s1 - s0) / elapsed,
            threads=n_threads,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", default="idle,synced", help="comma list: idle, synced")
    parser.add_argument("--display", default="auto", choices=("auto", "xvfb", "offscreen"))
    parser.add_argument("--settle", type=float, default=10.0, help="seconds before sampling")
    parser.add_argument("--seconds", type=float, default=60.0, help="sampling window")
    parser.add_argument(
        "--quick", action="store_true", help="2 s settle, 2 s window, targets not enforced"
    )
    args = parser.parse_args()
    if args.quick:
        args.settle, args.seconds = 2.0, 2.0
    if not Path("/proc/self/stat").exists():
        raise SystemExit("this benchmark reads /proc: Linux only")
    results = [
        measure(m.strip(), args.display, args.settle, args.seconds)
        for m in args.modes.split(",")
        if m.strip()
    ]
    import PySide6

    print(
        f"Python {platform.python_version()}, PySide6 {PySide6.__version__}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs; "
        f"settle {args.settle:.0f} s, window {args.seconds:.0f} s\n"
    )
    print(
        "| case | display | CPU, % of one core | RSS mean MB | RSS max MB | "
        "RSS with children MB | wake-ups/s | threads | target met |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    ok = True
    for r in results:
        met = r.cpu_pct <= CPU_TARGET_PCT and r.rss_max_mb <= RSS_TARGET_MB
        ok &= met
        print(
            f"| {r.mode} | {r.display} | {r.cpu_pct:.3f} | {r.rss_mean_mb:.1f} | "
            f"{r.rss_max_mb:.1f} | {r.rss_tree_max_mb:.1f} | {r.wakeups_s:.1f} | {r.threads} | "
            f"{'yes' if met else 'NO'} |"
        )
    print(f"\nTarget: at most {CPU_TARGET_PCT}% of one core and {RSS_TARGET_MB:.0f} MB RSS.")
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
