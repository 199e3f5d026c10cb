"""The house's layering, checked on the real import graph (#14.2): libraries never import a
command, the desktop app loads no command-line library, and no engine package loads Qt. Sync is
six layers, one package each, so a module's path names its layer; each imports only the layers
before it, and the relay server never imports its client (#43)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "companion"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_nothing_imports_the_top_level_command_line() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*.py")
        if p.name != "__main__.py" and "companion.cli" in _imports(p)
    ]
    assert offenders == []


def _loaded(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return set(out.stdout.split())


def test_the_desktop_app_loads_no_command_line_library() -> None:
    loaded = _loaded("companion.gui.app")
    assert "click" not in loaded
    assert not any(m.startswith("companion.") and m.endswith(".cli") for m in loaded)


@pytest.mark.parametrize(
    "module",
    ["companion.sync.round.engine", "companion.dream.engine", "companion.relay.app",
     "companion.mcp.server", "companion.memory.store", "companion.vault.check"],
)  # fmt: skip
def test_engine_packages_load_no_qt(module: str) -> None:
    assert not any(m.startswith("PySide6") for m in _loaded(module))


def test_the_sync_engine_loads_no_secret_detector() -> None:
    """The credential store and the secret guard are two packages (#14.5)."""
    loaded = _loaded("companion.sync.round.engine")
    assert "companion.credentials.store" in loaded
    assert not any(m.startswith(("companion.secrets", "detect_secrets")) for m in loaded)


@pytest.mark.parametrize("module", ["companion.sync.round.engine", "companion.sync.service.daemon"])
def test_a_device_reads_the_relay_without_pydantic(module: str) -> None:
    """The relay's answers are read by `relay/replies.py`: importing pydantic and building the
    relay's models cost a one-shot `companion sync` about 100 ms (#17)."""
    loaded = _loaded(module)
    assert "companion.relayclient.client" in loaded
    assert not any(m.startswith(("pydantic", "companion.relay.models")) for m in loaded)


def test_a_quiet_sync_loads_only_what_a_quiet_round_uses() -> None:
    """What the command line and the engine import up front is what every `companion sync`
    pays for, changes or not (#17): merging (merge3), similar-content matching (difflib), time
    zones and TOML writing come in when a round or a command uses them."""
    loaded = _loaded("companion.cli, companion.sync.commands.cli, companion.sync.round.engine")
    assert "companion.sync.round.scanner" in loaded
    late = {"merge3", "difflib", "zoneinfo", "tomlkit"}
    assert late & loaded == set()


def test_a_quiet_sync_pays_for_no_unused_http_or_lock_layers() -> None:
    """The relay client talks to httpcore (the transport httpx is built on) without httpx's own
    layer, reads the proxy settings without urllib.request when no variable names a proxy, and
    the engine lock is two system calls without filelock: together ~100 ms of a one-shot
    `companion sync`'s start-up on a slow machine (#17)."""
    loaded = _loaded(
        "companion.cli, companion.sync.commands.cli, companion.sync.round.engine,"
        " companion.sync.service.lock"
    )
    assert {"companion.relayclient.client", "httpcore", "companion.sync.service.lock"} <= loaded
    assert {"httpx", "filelock", "urllib.request", "http.client", "email.utils"} & loaded == set()


def test_the_engine_loads_the_cipher_only_when_a_key_is_used() -> None:
    """`companion.crypto` names its functions lazily and the engine builds the vault key on
    first use, so loading the engine (and a quiet round, see test_sync_cli_commands) does not
    load `cryptography` (#17)."""
    loaded = _loaded(
        "companion.cli, companion.sync.commands.cli, companion.sync.round.engine, companion.crypto"
    )
    assert {"companion.crypto", "companion.crypto.errors"} <= loaded
    assert {"cryptography", "companion.crypto.keys", "companion.crypto.records"} & loaded == set()


SYNC = ROOT / "sync"
# Bottom to top: each layer imports only itself and the layers before it.
SYNC_LAYERS = ("local", "state", "remote", "round", "service", "commands")


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, anywhere in it (lazy imports too), with the names of
    `from package import module` spelled out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}: relative import"
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_every_sync_module_lives_in_a_layer_package() -> None:
    """`companion/sync/<layer>/<module>.py`: the path names the layer."""
    assert sorted(p.name for p in SYNC.glob("*.py")) == ["__init__.py"]
    packages = sorted(p.name for p in SYNC.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert packages == sorted(SYNC_LAYERS)
    for layer in SYNC_LAYERS:
        assert (SYNC / layer / "__init__.py").is_file()
        nested = [p for p in (SYNC / layer).iterdir() if p.is_dir() and p.name != "__pycache__"]
        assert nested == [], f"{layer} has sub-packages: {nested}"


@pytest.mark.parametrize("layer", SYNC_LAYERS)
def test_a_sync_layer_imports_only_the_layers_before_it(layer: str) -> None:
    """The round imports no service or command, the local disk no remote, and so on down."""
    allowed = SYNC_LAYERS[: SYNC_LAYERS.index(layer) + 1]
    offenders = sorted(
        f"{p.relative_to(ROOT)} -> {m}"
        for p in (SYNC / layer).rglob("*.py")
        for m in _imported_modules(p)
        if m.startswith("companion.sync.") and m.split(".")[2] not in allowed
    )
    assert offenders == []


@pytest.mark.parametrize("layer", ["local", "state"])
def test_the_local_disk_and_the_state_never_talk_to_the_relay(layer: str) -> None:
    offenders = sorted(
        f"{p.relative_to(ROOT)} -> {m}"
        for p in (SYNC / layer).rglob("*.py")
        for m in _imported_modules(p)
        if m.startswith(("companion.relayclient", "companion.relay"))
    )
    assert offenders == []


def test_the_relay_server_never_imports_its_client_or_sync() -> None:
    offenders = sorted(
        f"{p.relative_to(ROOT)} -> {m}"
        for p in (ROOT / "relay").rglob("*.py")
        for m in _imported_modules(p)
        if m.startswith(("companion.relayclient", "companion.sync"))
    )
    assert offenders == []


def test_the_relay_client_shares_only_the_wire_format_with_the_server() -> None:
    """The client reads the server's blob frames and answer shapes, nothing of the server."""
    wire = {"companion.relay", "companion.relay.blobframes", "companion.relay.replies"}
    used = {
        ".".join(m.split(".")[:3])  # the module, without the names taken from it
        for p in (ROOT / "relayclient").rglob("*.py")
        for m in _imported_modules(p)
        if m == "companion.relay" or m.startswith("companion.relay.")
    }
    assert used <= wire
    loaded = _loaded("companion.relayclient.client")
    assert {m for m in loaded if m.startswith("companion.relay.")} <= wire
    assert not any(
        m.startswith(("fastapi", "starlette", "uvicorn", "companion.sync")) for m in loaded
    )
