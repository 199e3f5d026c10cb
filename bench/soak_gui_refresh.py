"""The desktop app over many refreshes: does it lose references to None, grow, or die?

PySide6 6.12.0 on Python 3.11 left None one reference short on every void Qt call, and the
app aborted ("Fatal Python error: none_dealloc") after about 1,000 refreshes of its main
window, some 50 minutes of use (`companion/gui/qtcheck.py`). The idle benchmark
(`bench_gui_idle.py`, 60 s) cannot see that. This soak runs the real app (`CompanionApp` on the
sample vault, its engine, its worker thread, the main window and the tray) through
`--refreshes` refresh cycles, each the same as the 3 s timer's: the worker reads the engine on
its thread and the window and the tray show the view. It runs in a child process, so a crash
is a row of the table, not the end of the benchmark.

Example:

    python bench/soak_gui_refresh.py
    python bench/soak_gui_refresh.py --refreshes 20000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(refreshes: int) -> None:
    """The app itself: print one JSON line when all refreshes are done."""
    import gc
    import tempfile

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    home = tempfile.mkdtemp(prefix="soak-gui-")
    os.environ["COMPANION_HOME"] = home
    sys.path.insert(0, str(REPO))
    import PySide6
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    from companion.config import load_config
    from companion.gui.app import CompanionApp, create_engine
    from companion.gui.sample import write_sample_vault
    from companion.paths import device_paths

    qapp = QApplication([])
    vault = Path(home) / "vault"
    write_sample_vault(vault)
    config = load_config(device_paths())
    config.set("vault", "path", str(vault))
    config.set("dream", "local_fallback", False)
    config.save()
    app = CompanionApp(
        config,
        create_engine(config),
        tray_available=True,
        use_desktop_notifications=False,
        dream_clock=False,
    )
    app.start()
    app.timer.stop()  # the soak drives the refreshes itself, as fast as they run
    app.show_main()
    shown = [0]  # views shown so far (a count: keeping the views would hold references)

    def count(_view: object) -> None:
        shown[0] += 1

    app.worker.view_ready.connect(count)

    def refresh() -> None:
        want = shown[0] + 1
        app.worker.refresh()
        while shown[0] < want:
            qapp.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents)

    for _ in range(20):  # warm: caches, fonts, the first layouts
        refresh()
    gc.collect()
    none_before, rss_before, start = sys.getrefcount(None), _rss_mb(), time.perf_counter()
    for _ in range(refreshes):
        refresh()
    seconds = time.perf_counter() - start
    gc.collect()
    result = {
        "pyside6": PySide6.__version__,
        "none_lost_per_refresh": (none_before - sys.getrefcount(None)) / refreshes,
        "rss_growth_mb": _rss_mb() - rss_before,
        "ms_per_refresh": seconds * 1000 / refreshes,
    }
    print(json.dumps(result), flush=True)
    os._exit(0)  # the soak's result is out; skip the app's orderly shutdown


def _pyside6() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("PySide6-Essentials")
    except PackageNotFoundError:
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refreshes", type=int, default=3000, help="refresh cycles (3000)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.refreshes < 1:
        parser.error("--refreshes must be at least 1")
    if args.child:
        child(args.refreshes)
        return 0
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--child", "--refreshes", str(args.refreshes)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=3600,
    )
    wall = time.perf_counter() - started
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    python = platform.python_version()
    print(f"Desktop app soak: {args.refreshes} refreshes (main window + tray), Python {python}\n")
    print("| PySide6 | outcome | None refs lost / refresh | RSS growth | ms / refresh |")
    print("|---|---|---:|---:|---:|")
    if proc.returncode == 0 and lines:
        r = json.loads(lines[-1])
        print(
            f"| {r['pyside6']} | survived ({wall:.0f} s) | {r['none_lost_per_refresh']:.1f} "
            f"| {r['rss_growth_mb']:+.1f} MB | {r['ms_per_refresh']:.1f} |"
        )
        return 0
    fatal = next((x for x in proc.stderr.splitlines() if x.startswith("Fatal Python")), "")
    print(f"| {_pyside6()} | died: exit {proc.returncode} after {wall:.0f} s {fatal} | — | — | — |")
    return 1


if __name__ == "__main__":
    sys.exit(main())
