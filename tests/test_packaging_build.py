"""The PyInstaller one-folder build runs on its own: `--version`, the demo, the tray app, and the
parts PyInstaller cannot see by following imports (subcommands, uvicorn, detect-secrets' plugins,
keyring's backends, spawned worker processes, the icons).

A build takes a minute or more, so this module runs only with COMPANION_BUILD_TEST=1 (and
PyInstaller installed: pip install -e '.[build]'):

    COMPANION_BUILD_TEST=1 python -m pytest tests/test_packaging_build.py -q
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("COMPANION_BUILD_TEST") != "1",
        reason="builds the app with PyInstaller (minutes): set COMPANION_BUILD_TEST=1",
    ),
    pytest.mark.timeout(1800),
]


def _build_module():
    spec = importlib.util.spec_from_file_location("vc_build", ROOT / "packaging" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built `companion` executable (one build for the whole module)."""
    if importlib.util.find_spec("PyInstaller") is None:
        pytest.fail(
            "COMPANION_BUILD_TEST=1 but PyInstaller is not installed: pip install -e '.[build]'"
        )
    build = _build_module()
    out = tmp_path_factory.mktemp("build")
    code = build.main(["--dist", str(out / "dist"), "--work", str(out / "work"), "--no-smoke"])
    assert code == 0
    return build.executable(out / "dist")


def frozen(
    exe: Path, *args: str, home: Path, timeout: float = 300, **kw
) -> subprocess.CompletedProcess:
    env = dict(os.environ, COMPANION_HOME=str(home), QT_QPA_PLATFORM="offscreen")
    env.pop("PYTHONPATH", None)
    env.update(kw.pop("env", {}))
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, env=env, cwd=home, timeout=timeout, **kw
    )


def test_version_and_demo(built: Path, tmp_path: Path) -> None:
    from companion import __version__

    res = frozen(built, "--version", home=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"companion, version {__version__}"
    res = frozen(built, "demo", "--headless", home=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "MEMORY (your personal notes) [" in res.stdout
    assert "Traceback" not in res.stderr


def test_every_subcommand_loads(built: Path, tmp_path: Path) -> None:
    from companion.cli import LAZY_COMMANDS

    res = frozen(built, "--help", home=tmp_path)
    assert res.returncode == 0
    here = [name for name, target in LAZY_COMMANDS.items()
            if importlib.util.find_spec(target.split(":")[0]) is not None]  # fmt: skip
    for name in here:
        assert f"  {name} " in res.stdout, f"{name} missing from the frozen app's --help"
        sub = frozen(built, name, "--help", home=tmp_path)
        assert sub.returncode == 0 and "Example" in sub.stdout, (name, sub.stderr)


def test_tray_app_starts_and_stops(built: Path, tmp_path: Path) -> None:
    build = _build_module()
    env = dict(os.environ, COMPANION_HOME=str(tmp_path), QT_QPA_PLATFORM="offscreen")
    name, code, out = build.tray_smoke(built, env, tmp_path)
    assert code == 0, out
    assert "tray app started" in out


def test_relay_serves_and_doctor_reaches_it(built: Path, tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    env = dict(os.environ, COMPANION_HOME=str(tmp_path / "relay-home"))
    proc = subprocess.Popen(
        [str(built), "relay", "serve", "--data", str(tmp_path / "relay"), "--port", "0",
         "--port-file", str(port_file)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the frozen relay did not start"
            time.sleep(0.1)
        url = f"http://127.0.0.1:{int(port_file.read_text())}"
        (tmp_path / "home").mkdir()
        res = frozen(built, "doctor", "--relay", url, "--json", home=tmp_path / "home")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    checks = {c["name"]: c for c in json.loads(res.stdout)["checks"]}
    assert checks["relay"]["status"] == "ok", checks["relay"]
    assert checks["clock"]["status"] == "ok", checks["clock"]
    # keyring's backends come from entry points: the check must find the list, not crash
    assert "check itself failed" not in checks["keyring"]["detail"]
    assert "keyring.backends" in checks["keyring"]["detail"]


def test_secret_scanner_plugins_and_worker_processes(built: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(900):  # three chunks: --jobs 3 spawns workers (the frozen binary itself)
        (vault / f"n{i:03}.md").write_text(f"# note {i}\nnothing here\n")
    (vault / "n000.md").write_text("token: ghp_Z8kq2V7mT3xR9wL4pN6sJ1cY5bH0dF2gA8eQ\n")
    # these two only detect-secrets' plugins find (loaded by walking its package)
    (vault / "n450.md").write_text("mailchimp: 8f3b2c9d7e6a5f4b3c2d1e0f9a8b7c6d-us12\n")
    (vault / "n899.md").write_text(
        "artifactory: AKCp8jQ8gVM4vK9Xk3LmNqT2rB7sD1fH6wY0zE5aC4uG9xJ2pR8tL3nQ6vS1bW7yF0mK5hD\n"
    )
    res = frozen(built, "secrets", "scan", str(vault), "--jobs", "3", "--json", home=tmp_path)
    assert res.returncode == 1, res.stderr  # found something
    found = {f["kind"]: f["detector"] for f in json.loads(res.stdout)["findings"]}
    assert found == {
        "github-token": "companion",
        "mailchimp-key": "detect-secrets:MailchimpDetector",
        "artifactory-token": "detect-secrets:ArtifactoryDetector",
    }


@pytest.mark.needs("systemd")
def test_install_service_starts_the_frozen_binary(built: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    units = tmp_path / "units"
    res = frozen(built, "install-service", "watch", "--vault", str(vault), "--unit-dir",
                 str(units), home=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    text = (units / "companion-watch@.service").read_text()
    assert f"ExecStart={built} -v watch %f\n" in text
    inst = units / "companion-watch@x.service"
    inst.symlink_to(units / "companion-watch@.service")
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    check = subprocess.run(
        ["systemd-analyze", "verify", "--user", str(inst)],
        capture_output=True,
        text=True,
        env=dict(os.environ, XDG_RUNTIME_DIR=str(runtime)),
    )
    assert check.returncode == 0 and not check.stderr.strip(), check.stderr


def test_bundle_carries_icons_and_leaves_out_the_heavy_parts(built: Path) -> None:
    folder = built.parent
    internal = folder / "_internal"
    assert (internal / "companion" / "resources" / "icons" / "app.svg").is_file()
    assert (internal / "companion" / "resources" / "translations" / "es.json").is_file()
    plugins = internal / "PySide6" / "Qt" / "plugins"
    assert any((plugins / "iconengines").glob("*svg*"))
    assert any((plugins / "imageformats").glob("*qsvg*"))
    assert any((plugins / "platforms").glob("*qxcb*"))
    assert any((plugins / "platforms").glob("*qwayland*"))
    names = {p.name for p in internal.rglob("*")}
    dangling = [p for p in internal.rglob("*") if p.is_symlink() and not p.exists()]
    assert not dangling
    for heavy in ("libQt6WebEngineCore.so.6", "libQt6Quick.so.6", "libQt6Qml.so.6", "numpy"):
        assert heavy not in names, heavy
    if sys.platform.startswith("linux"):
        assert (folder / "desktop" / "install-desktop.sh").is_file()
        assert (folder / "desktop" / "vault-companion.desktop").is_file()
