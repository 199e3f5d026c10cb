"""Render the app icon for the Windows and macOS builds: PNG sizes, an .ico and an .icns.

The source is the scalable icon of the Linux icon theme
(resources/linux/icons/hicolor/scalable/apps/vault-companion.svg). Qt's SVG renderer draws
each size (it is already a dependency); Pillow assembles the multi-size .ico and .icns
(`pip install -e '.[build]'`). Linux builds need none of this: desktops take the SVG.

    python packaging/icons.py --out build/icons
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "resources" / "linux" / "icons" / "hicolor" / "scalable" / "apps"
SOURCE = SOURCE / "vault-companion.svg"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512, 1024)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)


def render_pngs(svg: Path, out: Path, sizes: tuple[int, ...] = SIZES) -> dict[int, Path]:
    """`vault-companion-<size>.png` for each size, transparent background."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication([])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"cannot read {svg} as SVG")
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        path = out / f"vault-companion-{size}.png"
        if not image.save(str(path)):
            raise SystemExit(f"cannot write {path}")
        written[size] = path
    return written


def build_icons(out: Path) -> list[Path]:
    """PNGs, `vault-companion.ico` and `vault-companion.icns` in `out`."""
    from PIL import Image

    pngs = render_pngs(SOURCE, out)
    largest = Image.open(pngs[max(pngs)])
    ico = out / "vault-companion.ico"
    largest.save(ico, sizes=[(s, s) for s in ICO_SIZES])
    icns = out / "vault-companion.icns"
    largest.save(icns, append_images=[Image.open(pngs[s]) for s in (16, 32, 64, 128, 256, 512)])
    return [*pngs.values(), ico, icns]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "icons")
    args = parser.parse_args()
    for path in build_icons(args.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
