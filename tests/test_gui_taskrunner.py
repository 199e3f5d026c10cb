"""A window that owns a `TaskRunner` (the Settings window: its key store read) is deleted
while one of its calls still runs: the deletion waits for the call and the app goes on. It
froze for good when the deletion came through a Python `event()` override, which holds the GIL
while the pool's destructor waits for a call that needs it (a hung suite, under load)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# in a child process: a deadlock there is a failed test, not a hung suite (pytest-timeout cannot
# interrupt a main thread blocked in C++ with the GIL held)
CHILD = r"""
import threading, time
from PySide6.QtCore import QCoreApplication, QEvent, QObject
from companion.gui.bridge import TaskRunner

app = QCoreApplication([])


class Window(QObject):
    def event(self, e):  # as SettingsWindow.event: Qt's deletion runs inside Python
        return super().event(e)


window = Window()
runner = TaskRunner(parent=window)
started, finished = threading.Event(), []
runner.call_done.connect(lambda name, result: None)


def read():
    started.set()
    time.sleep(0.5)  # a slow keyring, still answering when the window goes
    finished.append(sum(range(1000)))  # Python: needs the GIL
    return "answer"


runner.run("key store", read)
started.wait(10)
window.deleteLater()
app.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
print("deleted", finished)
"""


def test_deleting_the_owner_of_a_running_call_waits_for_it() -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "deleted [499500]"
