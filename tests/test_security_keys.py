"""Keys and passphrases (#12.14-#12.18, #12.20): one passphrase rule, test-only escape hatches
that cannot leak, `companion keys`, no core dumps, safe device names, sealed history times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from companion.credentials.store import FileStore
from companion.crypto import WeakPassphrase
from companion.crypto.passphrase import (
    check_new_passphrase,
    passphrase_problem,
    suggest_passphrase,
)
from companion.sync.state.device import DeviceState
from tests.syncharness import SyncCluster

STRONG = "correct horse battery staple, but longer"


@pytest.fixture
def strict(monkeypatch: pytest.MonkeyPatch) -> None:
    """The passphrase rule as users meet it (the suite's escape hatch off)."""
    monkeypatch.delenv("COMPANION_TEST_WEAK_PASSPHRASE", raising=False)


def _file(path: Path, text: str) -> Path:
    path.write_text(text + "\n")
    path.chmod(0o600)
    return path


# ---------------------------------------------------------------- 14. one passphrase rule


@pytest.mark.parametrize(
    "weak",
    ["a", "hunter2", "password1234", "Tr0ub4dor&3", "qwertyuiopasdf", "lucia1990lucia1990",
     "aaaaaaaaaaaaaaaa", "        x         "],
)  # fmt: skip
def test_weak_passphrases_are_refused_with_a_strong_suggestion(strict, weak: str) -> None:
    with pytest.raises(WeakPassphrase) as err:
        check_new_passphrase(weak)
    assert err.value.suggestion and err.value.suggestion not in str(err.value)
    assert passphrase_problem(err.value.suggestion) is None


# the suggestion is drawn when the test runs: a test id made of a random passphrase differs
# between pytest-xdist's workers, which then refuse to run (they must collect the same tests)
@pytest.mark.parametrize(
    "good", [STRONG, "mi gato se llama Tomás y come pescado los martes", None], ids=str
)
def test_strong_passphrases_pass(strict, good: str | None) -> None:
    check_new_passphrase(suggest_passphrase() if good is None else good)


def test_init_refuses_a_weak_passphrase_for_a_new_vault(strict, tmp_path: Path) -> None:
    with SyncCluster(tmp_path) as cluster:
        home = cluster.new_home("laptop")
        env = dict(os.environ, COMPANION_HOME=str(home), COMPANION_TEST_WEAK_KDF="1",
                   COMPANION_PASSPHRASE_FILE=str(_file(tmp_path / "pw.txt", "pw")))  # fmt: skip
        env.pop("COMPANION_TEST_WEAK_PASSPHRASE", None)
        out = subprocess.run(
            [sys.executable, "-m", "companion", "init", str(tmp_path / "v"), "--relay",
             cluster.relay.url, "--invite", cluster.relay.invite(kind="human", new_vault=True),
             "--device-name", "laptop"],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert out.returncode == 2
        lines = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
        assert len(lines) == 1 and "shorter than 12 characters" in lines[0]
        suggestion = lines[0].split("for example: ")[1]
        assert passphrase_problem(suggestion) is None
        log = (home / "logs").rglob("*.log")
        assert all(suggestion not in p.read_text() for p in log)  # shown, never logged


# ---------------------------------------------------------------- 15. escape hatches stay in tests


def test_weak_kdf_outside_the_test_suite_is_refused(tmp_path: Path) -> None:
    with SyncCluster(tmp_path) as cluster:
        env = dict(os.environ, COMPANION_HOME=str(cluster.new_home("laptop")),
                   COMPANION_TEST_WEAK_KDF="1",
                   COMPANION_PASSPHRASE_FILE=str(cluster.passphrase_file))  # fmt: skip
        env.pop("PYTEST_CURRENT_TEST", None)  # as in a shell profile or a systemd unit
        out = subprocess.run(
            [sys.executable, "-m", "companion", "init", str(tmp_path / "v"), "--relay",
             cluster.relay.url, "--invite", cluster.relay.invite(kind="human", new_vault=True),
             "--device-name", "laptop"],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert out.returncode == 2
        assert "COMPANION_TEST_WEAK_KDF is set, but it is only for the companion's own test" in (
            out.stderr
        )
        assert not (tmp_path / "v").exists()


def test_escape_hatches_need_the_test_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    from companion.errors import ConfigError
    from companion.testmode import escape_hatch

    monkeypatch.setenv("COMPANION_TEST_WEAK_PASSPHRASE", "1")
    assert escape_hatch("COMPANION_TEST_WEAK_PASSPHRASE")
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    with pytest.raises(ConfigError):
        escape_hatch("COMPANION_TEST_WEAK_PASSPHRASE")
    monkeypatch.delenv("COMPANION_TEST_WEAK_PASSPHRASE")
    assert not escape_hatch("COMPANION_TEST_WEAK_PASSPHRASE")


# ---------------------------------------------------------------- 16. companion keys


def test_keys_fingerprint_recovery_and_rewrap(tmp_path: Path) -> None:
    with SyncCluster(tmp_path) as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        laptop.write("a.md", "hello\n")
        laptop.sync()
        fp = laptop.cli("keys", "fingerprint", str(laptop.vault))
        assert fp.returncode == 0, fp.stderr
        assert fp.stdout == server.cli("keys", "fingerprint", str(server.vault)).stdout
        # export to an owner-only file, import on a new device with an invite
        rec = tmp_path / "recovery.txt"
        out = laptop.cli("keys", "export-recovery", str(laptop.vault), "--output", str(rec))
        assert out.returncode == 0, out.stderr
        assert rec.stat().st_mode & 0o777 == 0o600
        again = laptop.cli("keys", "export-recovery", str(laptop.vault), "--output", str(rec))
        assert again.returncode == 2 and "already exists" in again.stderr
        new_pass = _file(tmp_path / "new.txt", "a brand new passphrase for the vault")
        desk_home = cluster.new_home("desk")
        env = dict(laptop.env(), COMPANION_HOME=str(desk_home))
        out = subprocess.run(
            [sys.executable, "-m", "companion", "keys", "import-recovery", str(tmp_path / "desk"),
             "--recovery-file", str(rec), "--new-file", str(new_pass),
             "--relay", cluster.relay.url, "--invite", cluster.invite("human"),
             "--device-name", "desk"],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert fp.stdout.strip() in out.stdout
        assert "now opens with the new passphrase" in out.stdout
        # the old passphrase no longer joins, the new one does
        with pytest.raises(Exception, match="wrong passphrase"):
            cluster.add_device("phone", "human")
        cluster.add_device("tablet", "human", passphrase="a brand new passphrase for the vault")
        # rewrap from the local key (no old passphrase needed), human devices only
        pw3 = _file(tmp_path / "third.txt", "the third passphrase, after a repair")
        out = laptop.cli("keys", "rewrap", str(laptop.vault), "--new-file", str(pw3))
        assert out.returncode == 0, out.stderr
        refused = server.cli("keys", "rewrap", str(server.vault), "--new-file", str(pw3))
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1
        assert "only a human device can re-wrap the vault key" in refused.stderr
        cluster.add_device("tv", "human", passphrase="the third passphrase, after a repair")


def test_a_recovery_key_of_another_vault_is_refused(tmp_path: Path) -> None:
    from companion.crypto import VaultKey, export_recovery_key

    with SyncCluster(tmp_path) as cluster:
        laptop = cluster.add_device("laptop", "human")
        laptop.write("a.md", "hello\n")
        laptop.sync()
        rec = _file(tmp_path / "other.txt", export_recovery_key(VaultKey.generate()))
        new_pass = _file(tmp_path / "new.txt", "a brand new passphrase for the vault")
        out = laptop.cli("keys", "import-recovery", str(laptop.vault), "--recovery-file",
                         str(rec), "--new-file", str(new_pass))  # fmt: skip
        assert out.returncode == 2
        assert "does not open this vault's data" in out.stderr


# ---------------------------------------------------------------- 17. no core dumps


def test_daemon_and_relay_processes_cannot_dump_core(tmp_path: Path) -> None:
    from companion.hardening import disable_core_dumps, is_dumpable

    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        watch = subprocess.Popen(
            [sys.executable, "-m", "companion", "watch", str(laptop.vault)],
            env=laptop.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            for proc in (watch, cluster.relay.proc):
                assert proc is not None
                limits = _wait_for_core_limit(proc.pid)
                assert limits == ("0", "0"), limits
        finally:
            watch.terminate()
            watch.wait(15)
    code = "from companion.hardening import *; disable_core_dumps(); print(is_dumpable())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False"
    assert callable(disable_core_dumps) and is_dumpable() is not None


def _wait_for_core_limit(pid: int) -> tuple[str, str]:
    import time

    deadline = time.monotonic() + 20
    while True:
        text = Path(f"/proc/{pid}/limits").read_text()
        line = next(ln for ln in text.splitlines() if ln.startswith("Max core file size"))
        soft, hard = line.split()[4:6]
        if (soft, hard) == ("0", "0") or time.monotonic() > deadline:
            return soft, hard
        time.sleep(0.05)  # the interpreter is still starting; bounded by the deadline


# ---------------------------------------------------------------- 18. device names


@pytest.mark.parametrize("name", ["server\u202edm.exe", "lucia\u200b-laptop", "x\x1b[2Jy",
                                  "caf\u0085e"])  # fmt: skip
def test_invisible_and_control_characters_in_device_names_are_refused(
    tmp_path: Path, name: str
) -> None:
    import httpx

    with SyncCluster(tmp_path) as cluster:
        cluster.add_device("laptop", "human")
        home = cluster.new_home("bad")
        env = dict(os.environ, COMPANION_HOME=str(home),
                   COMPANION_PASSPHRASE_FILE=str(cluster.passphrase_file))  # fmt: skip
        out = subprocess.run(
            [sys.executable, "-m", "companion", "init", str(tmp_path / "v"), "--relay",
             cluster.relay.url, "--invite", cluster.invite(), "--device-name", name],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert out.returncode == 2 and out.stderr.count("\n") == 1
        assert "invisible or control character U+" in out.stderr
        # the relay refuses it too, whatever the client
        r = httpx.post(f"{cluster.relay.url}/v1/join",
                       json={"invite": cluster.invite(), "device_name": name})  # fmt: skip
        assert r.status_code == 422


def test_names_and_paths_are_shown_escaped() -> None:
    from companion.textsafe import shown

    assert shown("notes/\u202etxt.md") == "notes/\\u202etxt.md"
    assert shown("\x1b[31mred") == "\\x1b[31mred"
    assert shown("naïve café.md") == "naïve café.md"


# ---------------------------------------------------------------- 20. sealed times in history


def test_history_shows_the_sealed_time_not_the_relays(tmp_path: Path) -> None:
    from tests.syncharness import Exchange, WireProxy

    with SyncCluster(tmp_path) as cluster:
        laptop = cluster.add_device("laptop", "human")
        laptop.write("a.md", "hello\n")
        laptop.sync()
        proxy = WireProxy(cluster.relay.url)
        try:

            def lie_about_time(ex: Exchange) -> Exchange:
                if "/history" in ex.path and ex.status == 200:
                    body = json.loads(ex.response_body)
                    for r in body["records"]:
                        r["committed_at"] = 0.0  # 1970: the relay's clock is not authenticated
                    ex.response_body = json.dumps(body).encode()
                return ex

            proxy.tamper = lie_about_time
            state = DeviceState.load(laptop.paths, laptop.vault)
            state.relay_url = proxy.url
            state.save(laptop.paths)
            assert FileStore(laptop.paths.secrets_file).get(state.token_name)
            out = laptop.cli("history", str(laptop.vault), "a.md", "--json")
            assert out.returncode == 0, out.stderr
            (row,) = json.loads(out.stdout)
            assert row["time_source"] == "sealed" and row["time"] > 1.7e9
            text = laptop.cli("history", str(laptop.vault), "a.md").stdout
            assert "1970" not in text and "(laptop" not in text and "laptop (human)" in text
        finally:
            proxy.close()


def test_the_settings_window_uses_the_same_rule() -> None:
    from companion.gui import validate

    assert validate.passphrase("password1234", "password1234") is not None
    assert validate.passphrase(STRONG, STRONG) is None
    assert validate.device_name("lucia\u200b-laptop") is not None
    assert validate.device_name("Lucía's laptop") is None
