"""Screenshots of the desktop app for the docs, taken from the real morning loop on a virtual
X screen.

The flow is the one the end-to-end test drives (`tests/desktop_world.py`): a relay on loopback,
an agent device that dreams over Hermes-format transcripts with `companion dream`, and a laptop
joined with `companion init`, whose tray app is photographed: the tray menu (and its conflicts
submenu), the morning notification as it arrives (the tray balloon Qt shows when the desktop has
no notification service), every settings tab, a field with an error, the morning review window
(the review note's items), the dream report's own window (and a refused revert) and the main
window.

It needs the Debian packages in packaging/debian-gui-packages.txt (Xvfb, trayer and the X11
libraries Qt's xcb plugin loads). Missing ones are installed when this runs as root with
apt-get (unless --no-install), else named in one line. Xvfb and trayer are stopped whatever
happens: the Qt part runs in a child process, so even Qt aborting cannot leave them behind, and
both are started with a parent-death signal. Example:

    python packaging/screenshots.py --lang es --display :53
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCREEN = (1280, 800)
PACKAGES_FILE = ROOT / "packaging" / "debian-gui-packages.txt"
DEVICE_NAMES = {"en": "Laptop", "es": "Portátil"}


# ---- packages ----------------------------------------------------------------------------------


def needed_packages() -> list[str]:
    lines = PACKAGES_FILE.read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def missing_packages(packages: list[str]) -> list[str]:
    if shutil.which("dpkg-query") is None:
        return []  # not Debian: the tools are checked by name below
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n", *packages],
        capture_output=True,
        text=True,
    ).stdout
    installed = {ln.split()[0] for ln in out.splitlines() if ln.endswith(" installed")}
    return [p for p in packages if p not in installed]


def ensure_packages(install: bool) -> None:
    missing = missing_packages(needed_packages())
    if missing and install and os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"installing {' '.join(missing)}", file=sys.stderr)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update"], check=True, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(
            ["apt-get", "install", "-y", "--no-install-recommends", *missing], check=True, env=env
        )
        missing = missing_packages(missing)
    if missing:
        raise SystemExit(
            f"error: missing Debian packages: sudo apt-get install {' '.join(missing)}"
        )
    for tool in ("Xvfb", "trayer"):
        if shutil.which(tool) is None:
            raise SystemExit(
                f"error: {tool} is not installed (Debian: apt-get install xvfb trayer)"
            )


# ---- the virtual desktop -------------------------------------------------------------------------


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when this script's process goes, however it goes."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def start_xvfb(display: str | None) -> tuple[subprocess.Popen[bytes], str]:
    """Xvfb on `display`, or on a free display number it reports through -displayfd."""
    screen = ["-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24", "-nolisten", "tcp"]
    # -displayfd: the server writes its display number once it listens (and exits without
    # writing it when `display` is taken); with no display given it picks a free one itself.
    # Asking `display` whether it answers could not tell this Xvfb from another one on it.
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        ["Xvfb", *([display] if display else []), "-displayfd", str(write_fd), *screen],
        pass_fds=(write_fd,),
        stderr=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,  # noqa: PLW1509 - only a prctl, no locks taken
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        number = f.readline().strip()
    if not number:
        _stop(proc)
        where = f" on {display} (in use?)" if display else ""
        raise SystemExit(f"error: Xvfb did not start{where}")
    return proc, f":{number}"


def start_trayer(display: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            "trayer", "--edge", "top", "--align", "right", "--widthtype", "percent",
            "--width", "100", "--height", "30", "--iconspacing", "4", "--transparent", "true",
            "--alpha", "0", "--tint", "0x2d333b", "--SetDockType", "true",
        ],
        env=dict(os.environ, DISPLAY=display),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,  # noqa: PLW1509
    )  # fmt: skip


@contextlib.contextmanager
def virtual_desktop(display: str | None) -> Iterator[str]:
    """An X screen with a tray host; both are stopped on the way out, whatever happened (an
    exception, Ctrl+C or SIGTERM: the handler turns the signal into SystemExit)."""
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    xvfb: subprocess.Popen[bytes] | None = None
    trayer: subprocess.Popen[bytes] | None = None
    try:
        xvfb, display = start_xvfb(display)
        trayer = start_trayer(display)
        yield display
    finally:
        _stop(trayer)
        _stop(xvfb)
        signal.signal(signal.SIGTERM, previous)


# ---- shooting (the child process, on the virtual screen) ---------------------------------------


def take(out: Path, lang: str) -> list[Path]:
    """Run the real flow and the app on the current DISPLAY; save the screenshots."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QColor, QLinearGradient, QPainter
    from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

    # a signal (the parent going: PR_SET_PDEATHSIG) unwinds, so the relay and the devices'
    # processes the flow started are stopped too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    app = QApplication([sys.argv[0], "-platform", "xcb"])
    app.setApplicationName("vault-companion")

    class Wallpaper(QWidget):
        def paintEvent(self, _event: object) -> None:  # noqa: N802 - Qt's name
            p = QPainter(self)
            g = QLinearGradient(0, 0, self.width(), self.height())
            g.setColorAt(0, QColor("#c9d6e3"))
            g.setColorAt(1, QColor("#8fa7bf"))
            p.fillRect(self.rect(), g)

    wallpaper = Wallpaper()
    wallpaper.setWindowFlags(Qt.WindowType.FramelessWindowHint)
    wallpaper.setGeometry(0, 0, *SCREEN)
    wallpaper.show()

    def pump(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)

    deadline = time.monotonic() + 15
    while not QSystemTrayIcon.isSystemTrayAvailable():
        if time.monotonic() > deadline:
            raise SystemExit("error: trayer did not provide a system tray")
        pump(0.1)
    from tests.desktop_world import DesktopWorld

    base = Path(tempfile.gettempdir()) / "vault-companion-demo"  # a tidy path in the shots
    shutil.rmtree(base, ignore_errors=True)
    try:
        with DesktopWorld(base, language=lang, laptop_name=DEVICE_NAMES[lang]) as world:
            return _shoot(app, world, out, lang, pump)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _conflict(world: Any) -> None:
    """The person and the agent change the same line: the person's stays, the agent's goes
    to a conflict copy next to the note (what the tray's Conflicts submenu lists)."""
    rel = "projects/Blog.md"
    for vault, line in (
        (world.agent_vault, "Status: the agent thinks two drafts are ready."),
        (world.laptop_vault, "Status: I published the sensors post."),
    ):
        p = vault / rel
        p.write_text(
            p.read_text("utf-8").replace("Status: three drafts in progress.", line), "utf-8"
        )
    world.agent_cli("sync", str(world.agent_vault))
    world.laptop_cli("sync", str(world.laptop_vault))


def _shoot(
    app: QApplication, world: Any, out: Path, lang: str, pump: Callable[[float], None]
) -> list[Path]:
    from PySide6.QtCore import QPoint, QRect, Qt
    from PySide6.QtWidgets import QWidget

    from companion.config import load_config
    from companion.dream.report import read_report
    from companion.gui.app import CompanionApp, create_engine
    from companion.gui.i18n import set_language

    _conflict(world)
    report_path = world.dream()
    report = read_report(report_path)
    shots: list[Path] = []
    out.mkdir(parents=True, exist_ok=True)
    screen = app.primaryScreen()
    suffix = "" if lang == "en" else f"-{lang}"

    def save_region(name: str, rect: QRect) -> None:
        path = out / name.replace(".png", f"{suffix}.png")
        screen.grabWindow(0, rect.x(), rect.y(), rect.width(), rect.height()).save(str(path))
        shots.append(path)

    def save_widget(name: str, widget: QWidget) -> None:
        path = out / name.replace(".png", f"{suffix}.png")
        widget.grab().save(str(path))
        shots.append(path)

    config = load_config(world.laptop_paths(), lenient=True)
    set_language(str(config.get("gui", "language")))  # what `run_tray` does at start
    companion = CompanionApp(
        config, create_engine(config), tray_available=True, use_desktop_notifications=False
    )
    companion.start()
    tray = companion.tray
    assert tray is not None

    # 1. the morning notification, the moment the report arrives by sync
    key = f"dream:{report.date}"
    deadline = time.monotonic() + 60
    while not any(n.key == key for _, n in companion.notifier.shown):
        if time.monotonic() > deadline:
            raise SystemExit("error: the dream's notification never came")
        pump(0.1)
    pump(0.8)
    icon_rect = tray.icon.geometry()
    if icon_rect.isEmpty():  # some tray hosts report nothing: assume the top-right corner
        icon_rect = QRect(screen.geometry().right() - 30, 0, 30, 30)
    balloons = [  # Qt's balloon is a tool-tip window (QBalloonTip)
        w
        for w in app.topLevelWidgets()
        if w.isVisible() and w.windowType() == Qt.WindowType.ToolTip
    ]
    area = icon_rect
    for w in balloons:
        area = area.united(w.geometry())
    save_region("notification.png", area.adjusted(-16, -4, 16, 16).intersected(screen.geometry()))
    for w in balloons:
        w.hide()
    while companion.worker.last_view is None or companion.worker.last_view.snapshot.syncing:
        pump(0.1)
    pump(0.5)

    # 2. the tray menu, opened from the icon, and its conflicts submenu
    menu = tray.menu
    menu.popup(QPoint(icon_rect.right() - menu.sizeHint().width(), icon_rect.bottom() + 2))
    pump(0.8)
    area = menu.geometry().united(icon_rect).adjusted(-40, -4, 8, 24)
    save_region("tray-menu.png", area.intersected(screen.geometry()))
    conflicts_action = tray.conflicts_menu.menuAction()
    menu.setActiveAction(conflicts_action)
    tray.conflicts_menu.popup(
        QPoint(
            menu.geometry().left() - tray.conflicts_menu.sizeHint().width(),
            menu.actionGeometry(conflicts_action).top() + menu.geometry().top(),
        )
    )
    pump(0.8)
    area = menu.geometry().united(tray.conflicts_menu.geometry()).united(icon_rect)
    save_region(
        "tray-menu-conflicts.png", area.adjusted(-8, -4, 8, 24).intersected(screen.geometry())
    )
    tray.conflicts_menu.hide()
    menu.hide()
    pump(0.3)

    # 3. settings: every tab, then a field with an error
    settings = companion.open_settings("sync")
    settings.move(60, 60)
    deadline = time.monotonic() + 15
    while settings.key_store_pending() and time.monotonic() < deadline:
        pump(0.05)  # the Keys tab shows the fingerprint, not "Asking the keyring…"
    pump(0.5)
    for index, name in enumerate(("sync", "keys", "schedule", "memory", "advanced")):
        settings.tabs.setCurrentIndex(index)
        settings.adjustSize()
        pump(0.3)
        save_widget(f"settings-{name}.png", settings)
    settings.tabs.setCurrentIndex(2)
    settings.dream_time.setText("25:00")
    settings.window_hours.setValue(72)
    settings.adjustSize()
    pump(0.3)
    save_widget("settings-invalid.png", settings)
    settings.dream_time.setText(str(config.get("dream", "time")))
    settings.window_hours.setValue(int(config.get("dream", "window_hours")))
    settings.hide()

    lessons = [c for c in report.changes if c.kind == "consolidated"]
    from_agent = [c for c in lessons if str(c.provenance[0].get("source")).startswith("hermes:")]
    lesson = (from_agent or lessons)[0]  # a lesson from the agent's own transcript

    # 4. the morning review: the items of the night's review note, as the notification opens
    # it (read from the relay's history, off the GUI thread)
    morning = companion.open_review_note(f"review/{report.date}.md")
    morning.resize(1100, 660)
    morning.move(40, 40)
    deadline = time.monotonic() + 60
    while morning.view is None or not morning.view.attested:
        if time.monotonic() > deadline:
            raise SystemExit("error: the review note's items were never read")
        pump(0.1)
    item = next((it for it in morning.view.items if it.file == lesson.note), None)
    if item is not None:
        morning.select(item.id)
    pump(0.5)
    save_widget("review-note.png", morning)
    morning.hide()

    # 5. the dream report's own window (a vault with no relay, where no review note is
    # written), then a revert refused after an edit
    from companion.gui.review import ReviewWindow

    locator = companion.locator()
    assert locator is not None
    review = ReviewWindow(world.laptop_vault / ".companion" / "dreams" / report_path.name, locator)
    review.resize(1100, 660)
    review.move(40, 40)
    review.show()
    review.select_change(lesson.id)
    pump(0.5)
    save_widget("review.png", review)
    edited = next(c for c in report.changes if c.kind == "recorded")
    note_path = world.laptop_vault / edited.note
    note_path.write_text(note_path.read_text("utf-8") + "- my own line\n", "utf-8")
    review.reload()
    review.select_change(edited.id)
    review.revert_current()
    pump(0.3)
    save_widget("review-refused.png", review)
    review.hide()

    # 6. the main window
    main = companion.show_main()
    main.move(80, 80)
    pump(0.8)
    save_widget("main-window.png", main)

    companion.quit()
    return shots


# ---- the command -------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--lang", choices=("en", "es"), default="en")
    parser.add_argument("--display", help="X display for Xvfb, e.g. :53 (default: a free one)")
    parser.add_argument("--no-install", action="store_true", help="Only name missing packages.")
    parser.add_argument("--shoot", action="store_true", help=argparse.SUPPRESS)  # the child
    args = parser.parse_args()
    if args.shoot:
        for path in take(args.out, args.lang):
            print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        return 0
    ensure_packages(install=not args.no_install)
    with virtual_desktop(args.display) as display, tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb", COMPANION_HOME=home)
        env.pop("WAYLAND_DISPLAY", None)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        child = [sys.executable, __file__, "--shoot", "--out", str(args.out), "--lang", args.lang]
        proc = subprocess.Popen(child, env=env, preexec_fn=_die_with_parent)  # noqa: PLW1509
        try:
            return proc.wait()
        finally:  # interrupted: let the child stop its relay and devices before the screen goes
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


if __name__ == "__main__":
    sys.exit(main())
