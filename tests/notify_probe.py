"""The desktop app's dream notification on a real X screen, clicked: run in its own process.

    python -m tests.notify_probe SCREENSHOT.png [--click-with-dunstctl]

Qt on the display in `DISPLAY` (xcb), the session bus in `DBUS_SESSION_BUS_ADDRESS`, the
home in `COMPANION_HOME`. Writes the sample vault, starts `CompanionApp` as `companion` does
(logging to the log file, the tray, desktop notifications when the bus has a notification
service), waits for the dream notification, clicks it (the tray balloon with the mouse; a
desktop notification through `dunstctl action 0`, the daemon's own click), waits for the review
window, takes a screenshot of the screen, and prints one JSON line with what happened.

Also the private session bus the notification tests use (`start_private_bus`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir={tmp}</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def start_private_bus(folder: Path) -> tuple[subprocess.Popen[str], str]:
    """A session bus of its own with no service files: nothing answers as the notification
    service unless a test starts one. Returns the process and its address."""
    import pytest

    if shutil.which("dbus-daemon") is None:
        pytest.skip("needs dbus-daemon (apt-get install dbus; see .ci/run)")
    folder.mkdir(parents=True, exist_ok=True)
    conf = folder / "bus.conf"
    conf.write_text(BUS_CONFIG.format(tmp=folder), encoding="utf-8")
    proc = subprocess.Popen(
        ["dbus-daemon", f"--config-file={conf}", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    address = proc.stdout.readline().strip()  # printed once it listens
    if not address:
        proc.kill()
        pytest.fail(f"dbus-daemon did not start (exit status {proc.wait()})")
    return proc, address


def wait_until(cond: Callable[[], object], timeout_ms: int, what: str) -> None:
    """Run the event loop until `cond()` holds (checked every 20 ms), at most `timeout_ms`."""
    from PySide6.QtCore import QEventLoop, QTimer

    if cond():
        return
    loop = QEventLoop()
    check = QTimer()
    check.setInterval(20)
    check.timeout.connect(lambda: loop.quit() if cond() else None)
    deadline = QTimer()
    deadline.setSingleShot(True)
    deadline.timeout.connect(loop.quit)
    check.start()
    deadline.start(timeout_ms)
    loop.exec()
    check.stop()
    if not cond():
        raise SystemExit(f"timed out after {timeout_ms} ms waiting for {what}")


def main(argv: list[str]) -> int:
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QWidget

    from companion.config import load_config
    from companion.gui.app import CompanionApp, create_engine
    from companion.gui.sample import write_sample_vault
    from companion.logs import setup_logging
    from companion.paths import device_paths

    shot = Path(argv[0])
    app = QApplication(["vault-companion"])
    paths = device_paths()
    setup_logging(paths.log_dir)
    vault = Path(os.environ["COMPANION_HOME"]) / "vault"
    write_sample_vault(vault)
    config = load_config(paths)
    config.set("vault", "path", str(vault))
    config.set("notify", "morning_time", "00:00")  # told at once, whatever the time of day
    config.set("dream", "local_fallback", False)
    config.save()
    companion = CompanionApp(config, create_engine(config), dream_clock=False)
    companion.start()
    wait_until(lambda: companion.notifier.shown, 20_000, "the dream notification")
    backend, note = companion.notifier.shown[0]
    if backend == "tray":

        def balloon() -> QWidget | None:
            for w in QApplication.topLevelWidgets():
                if w.isVisible() and w.metaObject().className() == "QBalloonTip":
                    return w
            return None

        wait_until(balloon, 10_000, "the tray balloon")
        tip = balloon()
        assert tip is not None
        QTest.mouseClick(tip, Qt.MouseButton.LeftButton, pos=QPoint(tip.width() // 2, 20))
    elif "--click-with-dunstctl" in argv:
        subprocess.run(["dunstctl", "action", "0"], check=True, timeout=30)
    report = Path(note.action.target) if note.action and note.action.target else None
    wait_until(
        lambda: report in companion.reviews and companion.reviews[report].isVisible(),
        10_000,
        "the review window",
    )
    window = companion.reviews[report] if report else None
    assert window is not None
    wait_until(
        lambda: window.windowHandle() and window.windowHandle().isExposed(), 10_000, "exposed"
    )
    QApplication.processEvents()
    screen = QGuiApplication.primaryScreen()
    screen.grabWindow(0).save(str(shot))
    print(
        json.dumps(
            {
                "backend": backend,
                "title": note.title,
                "review": str(report),
                "changes": window.changes.topLevelItemCount(),
                "log": str(paths.log_file),
            }
        ),
        flush=True,
    )
    companion.shutdown()
    for w in [companion.main, companion.settings, *companion.reviews.values()]:
        if w is not None:
            w.hide()
    app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
