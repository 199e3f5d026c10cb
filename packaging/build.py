"""Build the one-folder app with PyInstaller and smoke-test it.

    pip install -e '.[build]'
    python packaging/build.py                 # dist/vault-companion/, then the smoke test
    python packaging/build.py --archive       # and dist/vault-companion-VERSION-OS-ARCH.tar.gz

Runs PyInstaller on packaging/vault-companion.spec (on Windows and macOS it first renders the
icons with packaging/icons.py), then runs the built `companion --version` and
`companion demo --headless` in a throwaway COMPANION_HOME, starts the tray app offscreen and
stops it, and prints the time, the size and the smoke test's output. Exit status 0 only
when the build and the smoke test pass.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "packaging" / "vault-companion.spec"
NAME = "vault-companion"


def folder_size(path: Path) -> tuple[int, int]:
    """(bytes, files) under `path`, symlinks not followed."""
    total = count = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            p = Path(dirpath) / f
            if not p.is_symlink():
                total += p.stat().st_size
                count += 1
    return total, count


def executable(dist: Path) -> Path:
    exe = (
        dist / NAME / ("companion.exe" if sys.platform.startswith("win") else "companion")
    ).resolve()
    if not exe.is_file():
        raise SystemExit(f"the build has no {exe}")
    return exe


def add_desktop_files(target: Path) -> None:
    """Linux: the desktop entry, icons and their installer, beside the binary
    (`vault-companion/desktop/install-desktop.sh` points the entries at this build)."""
    shutil.copytree(ROOT / "resources" / "linux", target, dirs_exist_ok=True)
    shutil.copy2(ROOT / "installers" / "linux" / "install-desktop.sh", target)


def run_pyinstaller(dist: Path, work: Path, clean: bool) -> None:
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        raise SystemExit("PyInstaller is not installed: pip install -e '.[build]'") from None
    if sys.platform.startswith("win") or sys.platform == "darwin":
        icons = [sys.executable, str(ROOT / "packaging" / "icons.py")]
        subprocess.run([*icons, "--out", str(ROOT / "build" / "icons")], check=True)
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN"]
    cmd += ["--distpath", str(dist), "--workpath", str(work)]
    if clean:
        cmd.append("--clean")
    subprocess.run([*cmd, str(SPEC)], check=True, cwd=ROOT)


def smoke_test(exe: Path, timeout: float = 600) -> list[tuple[str, int, str]]:
    """Run the built binary: `--version` and `demo --headless` (fresh COMPANION_HOME)."""
    results = []
    with tempfile.TemporaryDirectory(prefix="companion-smoke-") as home:
        env = dict(os.environ, COMPANION_HOME=home, QT_QPA_PLATFORM="offscreen")
        env.pop("PYTHONPATH", None)  # the frozen app must stand on its own
        for args in (["--version"], ["demo", "--headless"]):
            res = subprocess.run(
                [str(exe), *args],
                capture_output=True,
                text=True,
                env=env,
                cwd=home,  # not the repository: nothing may be imported from the source tree
                timeout=timeout,
            )
            results.append((" ".join(args), res.returncode, res.stdout + res.stderr))
        if os.name == "posix":
            results.append(tray_smoke(exe, env, Path(home)))
    return results


def tray_smoke(exe: Path, env: dict[str, str], home: Path, timeout: float = 60) -> tuple:
    """Start the tray app (offscreen), wait until it says it started, stop it with SIGTERM."""
    log = home / "log" / "companion.log"
    proc = subprocess.Popen(
        [str(exe)], env=env, cwd=home, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + timeout
    started = False
    while time.monotonic() < deadline and proc.poll() is None:
        if log.is_file() and "tray app started" in log.read_text(errors="replace"):
            started = True
            break
        time.sleep(0.2)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    code = proc.returncode if started else (proc.returncode or 1)
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if "gui" in ln][-3:]
    return ("(tray app, offscreen)", code, "\n".join([*lines, out.strip()]))


def archive(dist: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from companion import __version__

    system = {"linux": "linux", "darwin": "macos", "win32": "windows"}.get(sys.platform, "other")
    base = dist / f"{NAME}-{__version__}-{system}-{platform.machine().lower()}"
    fmt = "zip" if system in ("windows", "macos") else "gztar"
    return Path(shutil.make_archive(str(base), fmt, root_dir=dist, base_dir=NAME))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the one-folder app and smoke-test it.")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="output folder")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "pyinstaller")
    parser.add_argument("--clean", action="store_true", help="empty PyInstaller's cache first")
    parser.add_argument("--no-smoke", action="store_true", help="skip the smoke test")
    parser.add_argument("--archive", action="store_true", help="also pack the folder")
    args = parser.parse_args(argv)

    started = time.monotonic()
    run_pyinstaller(args.dist.resolve(), args.work.resolve(), args.clean)
    took = time.monotonic() - started
    exe = executable(args.dist.resolve())
    if sys.platform.startswith("linux"):
        add_desktop_files(exe.parent / "desktop")
    size, files = folder_size(exe.parent)
    print(f"built {exe.parent} in {took:.0f} s: {size / 2**20:.0f} MiB in {files} files")
    ok = True
    if not args.no_smoke:
        for cmd, code, out in smoke_test(exe):
            tail = "\n".join(out.strip().splitlines()[-8:])
            print(f"--- companion {cmd}: exit {code}\n{tail}")
            ok = ok and code == 0
    if args.archive:
        print(f"archive: {archive(args.dist.resolve())}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
