"""`companion doctor`: every check says ok, warn, FAIL or skip with a fix, and FAIL means exit 1.

Real components throughout: a real relay on 127.0.0.1, a real gnome-keyring (when installed),
real files with real modes, a real process holding inotify watches.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from companion import doctor as doc
from companion.cli import cli
from companion.config import load_config
from companion.paths import device_paths
from companion.relay.testing import running_relay
from companion.services.units import relay_units, write_units
from tests.conftest import run_companion
from tests.keyring_service import KeyringService, start_keyring_service

LINE = re.compile(r"^(ok|warn|FAIL|skip)\s+[a-z]+\s+\S.*$")


def write_config(home: Path, text: str) -> None:
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "config.toml").write_text(text, encoding="utf-8")


def make_vault(root: Path) -> Path:
    for area in ("knowledge", "projects", "journal"):
        (root / area).mkdir(parents=True, exist_ok=True)
    (root / "Home.md").write_text("# Home\n", encoding="utf-8")
    return root


def doctor_json(*args: str) -> tuple[int, dict[str, dict[str, str]]]:
    res = CliRunner().invoke(cli, ["doctor", "--json", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    data = json.loads(res.output)
    assert data["ok"] == (res.exit_code == 0)
    return res.exit_code, {c["name"]: c for c in data["checks"]}


@pytest.fixture
def server_home(companion_home: Path, tmp_path: Path) -> Path:
    """A headless server device: file secrets, agent kind, a vault and a Hermes home."""
    vault = make_vault(tmp_path / "vault")
    write_config(
        companion_home,
        f'[secrets]\nbackend = "file"\n[sync]\nkind = "agent"\n[vault]\npath = "{vault}"\n',
    )
    hermes = Path(os.environ["HERMES_HOME"])
    (hermes / "memories").mkdir(parents=True)
    (hermes / "memories" / "MEMORY.md").write_text("Deploys go through CI\n§\nUse uv", "utf-8")
    return companion_home


def test_a_healthy_server_passes_with_the_relay_and_its_clock(server_home: Path, tmp_path) -> None:
    with running_relay(tmp_path / "relay") as relay:
        code, checks = doctor_json("--relay", relay.url)
    assert code == 0, checks
    for name in ("config", "keyring", "secrets", "vault", "relay", "clock", "watcher", "disk"):
        assert checks[name]["status"] == "ok", checks[name]
    assert checks["hermes"]["status"] == "ok"
    assert (
        "MEMORY.md" in checks["hermes"]["detail"] and "/2,200 chars" in checks["hermes"]["detail"]
    )
    assert "not used" in checks["keyring"]["detail"]  # a file-backed server needs no keyring
    assert relay.url in checks["relay"]["detail"]
    assert re.search(r"[+-]\d+\.\d s against the relay", checks["clock"]["detail"])
    # not set up for sync yet: a warning with the init command, not a failure
    assert checks["sync"]["status"] == "warn"
    assert checks["sync"]["fix"].startswith("companion init ")


def test_a_server_device_set_up_with_init_is_checked_end_to_end(
    server_home: Path, tmp_path: Path
) -> None:
    passphrase = tmp_path / "pass"
    passphrase.write_text("correct horse battery staple 42\n")
    passphrase.chmod(0o600)
    vault = tmp_path / "vault"
    with running_relay(tmp_path / "relay") as relay:
        res = run_companion(
            "init", str(vault), "--relay", relay.url, "--invite", relay.invite(),
            "--device-name", "server", "--kind", "agent",
            env={"COMPANION_PASSPHRASE_FILE": str(passphrase)},
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        code, checks = doctor_json()  # the vault from the config, the relay from its state
        assert code == 0, checks
        assert checks["sync"]["status"] == "ok", checks["sync"]
        assert "device 'server' (agent)" in checks["sync"]["detail"]
        assert checks["relay"]["status"] == "ok" and relay.url in checks["relay"]["detail"]
        # the relay token, the vault key and the device's signing key (docs/trust.md §1)
        assert "3 secret(s)" in checks["secrets"]["detail"]
        # the token vanishes from the secrets file: the device cannot reach its vault
        secrets = device_paths().secrets_file
        kept = [ln for ln in secrets.read_text().splitlines() if not ln.startswith("relay-token")]
        secrets.write_text("\n".join(kept) + "\n")
        code, checks = doctor_json()
    assert code == 1
    assert checks["sync"]["status"] == "FAIL"
    assert "relay token is missing" in checks["sync"]["detail"]
    assert checks["sync"]["fix"].startswith("join again with a new invite: companion init ")


def test_text_output_is_one_line_per_check_and_exit_1_on_failure(companion_home: Path) -> None:
    # no Secret Service and the keyring backend asked for: the keyring check fails
    res = run_companion(
        "doctor",
        "--relay",
        "http://127.0.0.1:9",
        env={"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"},
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    lines = res.stdout.strip().splitlines()
    checks = lines[: len(doc.CHECKS)]
    assert all(LINE.match(line) for line in checks), checks
    keyring = next(line for line in checks if line.split()[1] == "keyring")
    assert (
        keyring.startswith("FAIL")
        and '— fix: on a headless server set `backend = "file"`' in keyring
    )
    relay = next(line for line in checks if line.split()[1] == "relay")
    assert relay.startswith("FAIL") and "fix: check the URL" in relay
    assert lines[-1].startswith("2 problem(s), ")


def test_secrets_file_readable_by_others_fails_until_chmod(server_home: Path) -> None:
    secrets = device_paths().secrets_file
    secrets.parent.mkdir(parents=True, exist_ok=True)
    secrets.write_text('[secrets]\nrelay-token-x = "abc"\n', encoding="utf-8")
    secrets.chmod(0o644)
    code, checks = doctor_json()
    assert code == 1
    assert checks["secrets"]["status"] == "FAIL"
    assert checks["secrets"]["fix"] == f"chmod 600 {secrets}"
    assert "abc" not in json.dumps(checks)
    secrets.chmod(0o600)
    code, checks = doctor_json()
    assert checks["secrets"]["status"] == "ok", checks["secrets"]
    assert "1 secret(s)" in checks["secrets"]["detail"]


def test_a_broken_secrets_file_fails_without_leaking_it(server_home: Path) -> None:
    secrets = device_paths().secrets_file
    secrets.parent.mkdir(parents=True, exist_ok=True)
    secrets.write_text('[secrets]\ntoken = "s3cr3t-value\n', encoding="utf-8")
    secrets.chmod(0o600)
    code, checks = doctor_json()
    assert code == 1 and checks["secrets"]["status"] == "FAIL"
    assert "not valid TOML" in checks["secrets"]["detail"]
    assert "s3cr3t" not in json.dumps(checks)


def test_vault_layout_missing_parts_and_missing_vault(companion_home: Path, tmp_path) -> None:
    write_config(companion_home, '[secrets]\nbackend = "file"\n')
    partial = tmp_path / "partial"
    (partial / "knowledge").mkdir(parents=True)
    code, checks = doctor_json("--vault", str(partial))
    assert checks["vault"]["status"] == "warn"
    assert "Home.md" in checks["vault"]["detail"] and "journal/" in checks["vault"]["detail"]
    assert checks["vault"]["fix"].startswith(f"companion vault init {partial}")
    code, checks = doctor_json("--vault", str(tmp_path / "nope"))
    assert code == 1 and checks["vault"]["status"] == "FAIL"
    # following the fix makes the check pass
    assert CliRunner().invoke(cli, ["vault", "init", str(partial)]).exit_code == 0
    code, checks = doctor_json("--vault", str(partial))
    assert checks["vault"]["status"] == "ok"


def test_no_vault_and_no_relay_are_neutral(companion_home: Path) -> None:
    write_config(companion_home, '[secrets]\nbackend = "file"\n')
    code, checks = doctor_json()
    for name in ("vault", "sync", "relay", "clock"):
        assert checks[name]["status"] == "skip", checks[name]
    assert code == 0


def test_a_url_that_is_not_the_relay_fails_with_the_base_url_hint(
    server_home: Path, tmp_path
) -> None:
    with running_relay(tmp_path / "relay") as relay:
        code, checks = doctor_json("--relay", relay.url + "/not-here")
    assert code == 1
    assert checks["relay"]["status"] == "FAIL"
    assert "base URL" in checks["relay"]["fix"]
    assert checks["clock"]["status"] == "skip"


@pytest.mark.parametrize(
    ("skew", "status"), [(0.2, "ok"), (-12.0, "warn"), (20.0, "warn"), (900.0, "FAIL")]
)
def test_clock_skew_thresholds(skew: float, status: str) -> None:
    sent = 1_000_000.0
    check = doc.clock_check(sent, sent + 0.05 + skew, sent + 0.1)
    assert check.status == status
    assert f"{skew:+.1f} s" in check.detail
    assert bool(check.fix) == (status != "ok")


def test_a_slow_answer_widens_the_margin_instead_of_blaming_the_clock() -> None:
    # 20 s round trip: the relay's time could be anywhere in it, so 8 s is not a proven skew
    assert doc.clock_check(0.0, 18.0, 20.0).status == "ok"


@pytest.mark.parametrize(
    ("need", "limit", "used", "status"),
    [(10, 8192, 100, "ok"), (5000, 8192, 100, "warn"), (9000, 8192, 0, "FAIL")],
)
def test_inotify_headroom(need: int, limit: int, used: int, status: str) -> None:
    check = doc.watches_check(need, limit, used)
    assert check.status == status
    if status != "ok":
        value = int(re.search(r"max_user_watches=(\d+)", check.fix).group(1))
        assert value >= 2 * (need + used) and value >= doc.INOTIFY_SUGGESTED


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")
def test_inotify_usage_counts_watches_of_other_processes(tmp_path: Path) -> None:
    for i in range(25):
        (tmp_path / "tree" / f"d{i}").mkdir(parents=True)
    code = (
        "import sys, time\n"
        "from watchdog.observers.inotify import InotifyObserver\n"
        "from watchdog.events import FileSystemEventHandler\n"
        "o = InotifyObserver(); o.schedule(FileSystemEventHandler(), sys.argv[1], recursive=True)\n"
        "o.start(); print('ready', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "tree")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        mine, instances = doc.inotify_of(str(proc.pid))
        total, _ = doc.inotify_usage()
    finally:
        proc.kill()
        proc.wait()
    assert mine == 26 and instances == 1  # 25 folders and the root, one inotify instance
    assert total >= mine


def test_vault_folders_are_counted_for_the_watcher(server_home: Path, tmp_path) -> None:
    vault = tmp_path / "vault"
    for i in range(7):
        (vault / "knowledge" / f"t{i}").mkdir()
    os.symlink(tmp_path, vault / "loop")  # a symlink to a folder is not followed
    code, checks = doctor_json()
    if sys.platform.startswith("linux"):
        assert "the vault has 11 folder(s)" in checks["watcher"]["detail"]


def test_hermes_memory_over_budget_warns(server_home: Path) -> None:
    mem = Path(os.environ["HERMES_HOME"]) / "memories" / "MEMORY.md"
    mem.write_text("\n§\n".join(f"entry {i} " + "x" * 300 for i in range(10)), "utf-8")
    code, checks = doctor_json()
    assert checks["hermes"]["status"] == "warn"
    assert "over budget" in checks["hermes"]["detail"]
    assert "companion memory" in checks["hermes"]["fix"]


def test_missing_hermes_home_warns_on_an_agent_and_skips_on_a_laptop(
    companion_home: Path, tmp_path
) -> None:
    write_config(companion_home, '[secrets]\nbackend = "file"\n[sync]\nkind = "agent"\n')
    assert doctor_json()[1]["hermes"]["status"] == "warn"
    write_config(companion_home, '[secrets]\nbackend = "file"\n[sync]\nkind = "human"\n')
    assert doctor_json()[1]["hermes"]["status"] == "skip"


def test_world_writable_state_folder_fails(server_home: Path) -> None:
    data = device_paths().data_dir
    data.mkdir(parents=True, exist_ok=True)
    data.chmod(0o777)
    code, checks = doctor_json()
    assert code == 1 and checks["folders"]["status"] == "FAIL"
    assert checks["folders"]["fix"] == f"chmod go-w {data}"
    data.chmod(0o700)
    assert doctor_json()[1]["folders"]["status"] == "ok"


def test_services_that_start_a_vanished_interpreter_fail(server_home: Path, tmp_path) -> None:
    units = tmp_path / "units"
    code, checks = doctor_json("--unit-dir", str(units))
    if not sys.platform.startswith("linux"):
        return
    assert checks["services"]["status"] == "skip"
    paths = load_config().paths
    env = {"COMPANION_HOME": os.environ["COMPANION_HOME"]}
    write_units(relay_units([sys.executable, "-m", "companion"], paths.data_dir, env=env), units)
    code, checks = doctor_json("--unit-dir", str(units))
    assert checks["services"]["status"] in ("ok", "warn"), checks["services"]
    assert "companion-relay.service installed" in checks["services"]["detail"]
    gone = str(tmp_path / "old-venv" / "bin" / "python")
    write_units(relay_units([gone, "-m", "companion"], paths.data_dir, env=env), units)
    code, checks = doctor_json("--unit-dir", str(units))
    assert code == 1 and checks["services"]["status"] == "FAIL"
    assert gone in checks["services"]["detail"]
    assert "install-service relay" in checks["services"]["fix"]


def test_services_for_another_device_warn(server_home: Path, tmp_path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("systemd units are Linux only")
    units = tmp_path / "units"
    other = {"COMPANION_HOME": str(tmp_path / "other-device")}
    write_units(relay_units([sys.executable], tmp_path / "r", env=other), units)
    checks = doctor_json("--unit-dir", str(units))[1]
    assert checks["services"]["status"] == "warn"
    assert "different devices" in checks["services"]["detail"]


def test_a_crashing_check_is_one_failed_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def check_boom(c: doc.Context) -> doc.Check:
        raise RuntimeError("kaput")

    monkeypatch.setattr(doc, "CHECKS", [doc.check_config, check_boom])
    code, checks = doctor_json()
    assert code == 1
    assert checks["boom"] == {
        "name": "boom",
        "status": "FAIL",
        "detail": "the check itself failed: RuntimeError: kaput",
        "fix": "",
    }
    assert checks["config"]["status"] == "ok"


@pytest.fixture(scope="module")
def keyring_service(tmp_path_factory: pytest.TempPathFactory):
    yield from start_keyring_service(tmp_path_factory)


def test_a_real_secret_service_is_accepted(keyring_service: KeyringService, tmp_path) -> None:
    env = dict(keyring_service.env, COMPANION_HOME=str(tmp_path / "home"))
    started = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "companion", "doctor", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    checks = {c["name"]: c for c in json.loads(res.stdout)["checks"]}
    assert checks["keyring"]["status"] == "ok", checks["keyring"]
    assert "SecretService" in checks["keyring"]["detail"]
    assert time.monotonic() - started < 30
