"""Screenshots of the desktop app for the docs, taken on a virtual X screen.

Starts Xvfb with a tray host (trayer), runs the real app on a sample vault with a sample dream
report, and saves PNGs: the tray menu (and its conflicts submenu), a notification (the tray
balloon Qt shows when the desktop has no notification service), every settings tab, a field
with an error, the dream review window and the main window.

Needs Debian's xvfb and trayer, and the xcb libraries Qt loads (libxcb-icccm4, libxcb-keysyms1,
libxcb-cursor0). Example:

    python packaging/screenshots.py --out docs/screenshots --lang en
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

    from companion.config import Config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCREEN = (1280, 800)


def start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    """Xvfb on a free display number (it tells us which through -displayfd)."""
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [
            "Xvfb",
            "-displayfd",
            str(write_fd),
            "-screen",
            "0",
            f"{SCREEN[0]}x{SCREEN[1]}x24",
            "-nolisten",
            "tcp",
        ],
        pass_fds=(write_fd,),
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        number = f.readline().strip()
    if not number:
        proc.kill()
        raise SystemExit("error: Xvfb did not start")
    return proc, f":{number}"


def start_trayer() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            "trayer",
            "--edge",
            "top",
            "--align",
            "right",
            "--widthtype",
            "percent",
            "--width",
            "100",
            "--height",
            "30",
            "--iconspacing",
            "4",
            "--transparent",
            "true",
            "--alpha",
            "0",
            "--tint",
            "0x2d333b",
            "--SetDockType",
            "true",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def take(out: Path, lang: str) -> list[Path]:
    """Run the app on the current DISPLAY and save the screenshots; returns the files."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QColor, QLinearGradient, QPainter
    from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

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

    pump(0.5)
    trayer = start_trayer()
    try:
        deadline = time.monotonic() + 15
        while not QSystemTrayIcon.isSystemTrayAvailable():
            if time.monotonic() > deadline:
                raise SystemExit("error: trayer did not provide a system tray")
            pump(0.1)
        return _shoot(app, out, lang, pump)
    finally:
        trayer.terminate()
        trayer.wait(5)


def _shoot(app: QApplication, out: Path, lang: str, pump: Callable[[float], None]) -> list[Path]:
    from companion.config import load_config
    from companion.gui import i18n
    from companion.gui.sample import write_sample_vault
    from companion.paths import device_paths

    i18n.set_language(lang)
    work = Path(tempfile.gettempdir()) / "vault-companion-demo"  # a tidy path in the shots
    shutil.rmtree(work, ignore_errors=True)
    vault = work / "Agent vault"
    report_path = write_sample_vault(vault, conflicts=2)
    hermes = work / "hermes"
    (hermes / "memories").mkdir(parents=True)
    config = load_config(device_paths(work / "home"))
    config.set("vault", "path", str(vault))
    config.set("sync", "relay_url", "https://relay.example.org")
    config.set("sync", "device_name", "Laptop" if lang == "en" else "Portátil")
    config.set("memory", "hermes_home", str(hermes))
    config.set("notify", "dream_landed", False)  # the balloon is shown on purpose below
    config.set("secrets", "backend", "file")  # the demo device keeps its keys in a temp folder
    config.save()
    (vault / ".companionignore").write_text("drafts/\n*.tmp\n.obsidian/workspace*.json\n", "utf-8")
    relay = join_demo_relay(work, config, "Laptop" if lang == "en" else "Portátil")
    try:
        return _shoot_app(app, out, lang, pump, config, report_path)
    finally:
        relay.__exit__(None, None, None)


def join_demo_relay(work: Path, config: Config, device: str) -> AbstractContextManager[Any]:
    """A real relay on 127.0.0.1 with the demo vault joined to it, so the app shows a synced
    copy (the settings still show the example relay address)."""
    from companion.relay.testing import running_relay
    from companion.secrets.store import FileStore
    from companion.sync.join import TEST_KDF_PARAMS, join_vault

    relay = running_relay(work / "relay")
    live = relay.__enter__()
    join_vault(
        config.paths,
        FileStore(config.paths.secrets_file),
        Path(config.get("vault", "path")),
        relay_url=live.url,
        invite=live.invite(),
        device_name=device,
        kind="human",
        passphrase=lambda _vault_id, _creating: "a demo passphrase, long enough",
        kdf=TEST_KDF_PARAMS,
    )
    return relay


def _shoot_app(
    app: QApplication,
    out: Path,
    lang: str,
    pump: Callable[[float], None],
    config: Config,
    report_path: Path,
) -> list[Path]:
    from PySide6.QtCore import QPoint, QRect, Qt
    from PySide6.QtWidgets import QWidget

    from companion.gui.app import CompanionApp, create_engine
    from companion.gui.events import DreamLanded
    from companion.gui.notify_policy import notifications_for
    from companion.gui.report import load_report

    vault = Path(config.get("vault", "path"))
    work = vault.parent
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

    companion = CompanionApp(
        config,
        create_engine(config),
        tray_available=True,
        use_desktop_notifications=False,
        dream_clock=False,  # no local fallback dream over the sample vault
    )
    companion.start()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (
        companion.worker.last_view is None or companion.worker.last_view.snapshot.syncing
    ):
        pump(0.1)
    pump(1.0)
    tray = companion.tray
    assert tray is not None
    icon_rect = tray.icon.geometry()
    if icon_rect.isEmpty():  # some tray hosts report nothing: assume the top-right corner
        icon_rect = QRect(app.primaryScreen().geometry().right() - 30, 0, 30, 30)

    # 1. the tray menu, opened from the icon, and its conflicts submenu
    menu = tray.menu
    menu.popup(QPoint(icon_rect.right() - menu.sizeHint().width(), icon_rect.bottom() + 2))
    pump(0.8)
    area = menu.geometry().united(icon_rect).adjusted(-40, -4, 8, 24)
    area = area.intersected(screen.geometry())
    save_region("tray-menu.png", area)
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

    # 2. the morning notification, as the tray balloon
    report = load_report(report_path)
    event = DreamLanded(report_path, report.date, report.ran_on, report.counts)
    cfg = dict(config.values["notify"], dream_landed=True, morning_time="00:00")
    (note,) = notifications_for([event], cfg, datetime.now())
    companion.notifier.show(note)
    pump(1.2)
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

    # 3. settings: every tab, then a field with an error
    settings = companion.open_settings("sync")
    settings.move(60, 60)
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
    settings.dream_time.setText("02:00")
    settings.window_hours.setValue(48)
    settings.hide()

    # 4. the dream review window
    review = companion.open_review(report_path)
    assert review is not None
    review.resize(1100, 660)
    review.move(40, 40)
    review.select_change("c1")
    pump(0.5)
    save_widget("review.png", review)
    note_path = vault / "projects" / "Weather station.md"
    note_path.write_text(note_path.read_text("utf-8") + "- my own line\n", "utf-8")
    review.reload()
    review.select_change("c2")
    review.revert_current()
    pump(0.3)
    save_widget("review-refused.png", review)
    review.hide()

    # 5. the main window
    main = companion.show_main()
    main.move(80, 80)
    pump(0.5)
    save_widget("main-window.png", main)
    main.hide()

    companion.quit()
    shutil.rmtree(work, ignore_errors=True)
    return shots


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--lang", choices=("en", "es"), default="en")
    args = parser.parse_args()
    missing = [tool for tool in ("Xvfb", "trayer") if shutil.which(tool) is None]
    if missing:
        print(
            f"error: missing {', '.join(missing)} (Debian: apt-get install xvfb trayer)",
            file=sys.stderr,
        )
        return 2
    xvfb, display = start_xvfb()
    try:
        os.environ["DISPLAY"] = display
        os.environ["QT_QPA_PLATFORM"] = "xcb"
        os.environ.pop("WAYLAND_DISPLAY", None)
        os.environ["COMPANION_HOME"] = tempfile.mkdtemp(prefix="companion-home-")
        shots = take(args.out, args.lang)
    finally:
        xvfb.terminate()
        xvfb.wait(5)
    for path in shots:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
