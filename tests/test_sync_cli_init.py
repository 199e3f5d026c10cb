"""`companion init`: create or join a vault from the command line, passphrase sources, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from companion.paths import device_paths
from companion.sync.state.device import DeviceState
from tests.syncharness import CliRunnerInProcess as Cli
from tests.syncharness import SyncCluster


@pytest.fixture
def cluster(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        yield c


@pytest.fixture
def cli(cluster, monkeypatch, capsys):
    return lambda name: Cli(cluster, name, monkeypatch, capsys)


def _secret_file(path: Path, text: str, mode: int) -> Path:
    path.write_text(text + "\n")
    path.chmod(mode)
    return path


def test_first_device_creates_the_vault_and_the_second_joins(cli, cluster) -> None:
    laptop, server = cli("laptop"), cli("server")
    code, out, err = laptop.init()
    assert code == 0, err
    assert "created vault" in out and "key fingerprint" in out
    code, out2, err = server.init(kind="agent")
    assert code == 0, err
    assert "joined vault" in out2
    fp = [line for line in out.splitlines() if "fingerprint" in line]
    assert fp == [line for line in out2.splitlines() if "fingerprint" in line]
    state = DeviceState.load(device_paths(server.home), server.vault)
    assert state.kind == "agent" and state.key_ready
    # nothing secret in the state file, which is owner-only anyway
    f = DeviceState.file(device_paths(server.home), server.vault)
    assert f.stat().st_mode & 0o077 == 0
    secrets = (server.home / "config" / "secrets.toml").read_text()
    token = secrets.split(f"relay-token-{state.device_id} = ")[1].split()[0].strip('"')
    assert token not in f.read_text()


def test_every_joined_copy_gets_the_vault_layouts_folders(cli, cluster) -> None:
    """Sync carries files, not folders: `vault init`'s empty knowledge/ never reached the
    laptop (#39, item 8e). Joining creates the layout's folders on every copy (never Home.md,
    a note that arrives by sync), and leaves what is there alone."""
    server, laptop = cli("server"), cli("laptop")
    assert server("vault", "init", str(server.vault))[0] == 0
    assert server.init(kind="agent")[0] == 0
    assert server("sync", str(server.vault))[0] == 0
    laptop.vault.mkdir(parents=True)
    (laptop.vault / "journal").write_text("a file where a folder would go\n")
    code, _out, err = laptop.init()
    assert code == 0, err
    assert (laptop.vault / "knowledge").is_dir() and (laptop.vault / "projects").is_dir()
    assert (laptop.vault / "journal").is_file()  # kept as it was
    assert not (laptop.vault / "Home.md").exists()  # comes with the first sync
    assert list((laptop.vault / "knowledge").iterdir()) == []
    (laptop.vault / "journal").unlink()
    assert laptop("sync", str(laptop.vault))[0] == 0
    assert (laptop.vault / "Home.md").read_bytes() == (server.vault / "Home.md").read_bytes()


def test_passphrase_file_readable_by_others_is_refused(cli, cluster, tmp_path: Path) -> None:
    laptop = cli("laptop")
    laptop.passphrase_file = _secret_file(tmp_path / "loose.txt", "some passphrase", 0o644)
    code, _out, err = laptop.init()
    assert code == 2
    assert "can be read by other users" in err and "chmod 600" in err


def _relay_devices(cluster) -> dict[str, dict]:
    from companion.relay.sqlite_storage import SqliteStorage

    store = SqliteStorage(cluster.relay.data_dir)
    try:
        return {d.name: d for d in store.list_devices(cluster.vault_id)}
    finally:
        store.close()


def test_wrong_passphrase_leaves_no_working_token(cli, cluster, tmp_path: Path) -> None:
    """#12.6: a device whose passphrase does not unlock the key must not keep a working token."""
    assert cli("laptop").init()[0] == 0
    server = cli("server")
    server.passphrase_file = _secret_file(tmp_path / "wrong.txt", "not the passphrase", 0o600)
    code, _out, err = server.init(kind="agent")
    assert code == 1
    assert "wrong passphrase" in err and "token is revoked" in err and "new invite" in err
    # the relay revoked it; this device stored nothing and saved no state
    assert _relay_devices(cluster)["server"].revoked is not None
    assert not DeviceState.exists(device_paths(server.home), server.vault)
    secrets = server.home / "config" / "secrets.toml"
    assert not secrets.exists() or "relay-token" not in secrets.read_text()
    # with a new invite and the right passphrase it joins
    server.passphrase_file = cluster.passphrase_file
    code, out, err = server.init(kind="agent")
    assert code == 0, err
    assert "joined vault" in out


def test_no_key_with_other_devices_listed_is_refused(cli, cluster, monkeypatch) -> None:
    """#12.7: a relay hiding the wrapped key must not make a joining device create a second."""
    import companion.sync.commands.join as join

    assert cli("laptop").init()[0] == 0
    monkeypatch.setattr(join, "KEY_WAIT_S", 0.2)
    monkeypatch.setattr(join, "KEY_POLL_S", 0.05)
    monkeypatch.setattr(
        "companion.relayclient.client.RelayClient.get_key_blob", lambda self: None
    )  # the relay hides the key (the boundary under test; everything else is the real relay)
    server = cli("server")
    code, _out, err = server.init(kind="agent")
    assert code == 1
    assert "refusing to create a second key" in err and "laptop" in err
    assert _relay_devices(cluster)["server"].revoked is not None
    assert not DeviceState.exists(device_paths(server.home), server.vault)


def test_no_passphrase_source_is_a_clear_error(cli) -> None:
    laptop = cli("laptop")
    laptop.passphrase_file = None
    code, _out, err = laptop.init()
    assert code == 1
    assert "COMPANION_PASSPHRASE_FILE" in err


def test_used_invite_and_second_init_are_refused(cli, cluster) -> None:
    invite = cluster.invite("human")
    laptop, server = cli("laptop"), cli("server")
    assert laptop.init(invite=invite)[0] == 0
    code, _out, err = server.init(invite=invite)
    assert code == 1 and "invite" in err.lower()
    code, _out, err = laptop.init()
    assert code == 2 and "already set up" in err


def test_unreachable_relay_at_init(cli, cluster) -> None:
    laptop = cli("laptop")
    code, _out, err = laptop(
        "init", str(laptop.vault), "--relay", "http://127.0.0.1:9", "--invite", "x" * 40,
        "--device-name", "laptop", "--kind", "human",
    )  # fmt: skip
    assert code == 1 and "cannot reach the relay" in err
    assert not os.path.exists(DeviceState.file(device_paths(laptop.home), laptop.vault))


@pytest.fixture(scope="module")
def keyring_service(tmp_path_factory: pytest.TempPathFactory):
    from tests.keyring_service import start_keyring_service

    yield from start_keyring_service(tmp_path_factory)


def test_token_and_key_live_in_the_os_keyring(keyring_service, cluster, tmp_path: Path) -> None:
    import subprocess
    import sys

    home = tmp_path / "keyring-device"
    vault = tmp_path / "keyring-vault"
    env = dict(
        keyring_service.env,
        COMPANION_HOME=str(home),
        COMPANION_PASSPHRASE_FILE=str(cluster.passphrase_file),
        COMPANION_TEST_WEAK_KDF="1",
    )

    def companion(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "companion", *args], env=env, capture_output=True, text=True
        )

    r = companion(
        "init", str(vault), "--relay", cluster.relay.url, "--invite", cluster.invite("human"),
        "--device-name", "desk", "--kind", "human",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    (vault / "n.md").write_text("hello\n")
    r = companion("sync", str(vault))
    assert r.returncode == 0, r.stderr
    assert not (home / "config" / "secrets.toml").exists()  # nothing secret on disk
    state = DeviceState.load(device_paths(home), vault)
    probe = (
        "import keyring; "
        f"print(bool(keyring.get_password('vault-companion', '{state.token_name}')), "
        f"bool(keyring.get_password('vault-companion', '{state.key_name}')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["True", "True"], out.stderr


def test_the_invite_decides_the_kind(cli, cluster) -> None:
    assert cli("laptop").init()[0] == 0
    server = cli("server")
    code, out, err = server(
        "init", str(server.vault), "--relay", cluster.relay.url, "--invite",
        cluster.invite("agent"), "--device-name", "server",
    )  # fmt: skip
    assert code == 0, err
    assert "(agent)" in out
    desk = cli("desk")
    code, _out, err = desk.init(invite=cluster.invite("agent"), kind="human")
    assert code == 1 and "kind" in err and err.count("\n") == 1


def test_plain_http_to_another_host_needs_insecure_http(cli, cluster) -> None:
    """0.0.0.0 is not a loopback address, but connecting to it reaches this machine: the
    relay is really there, and still the token is not sent without --insecure-http."""
    laptop = cli("laptop")
    url = cluster.relay.url.replace("127.0.0.1", "0.0.0.0")
    invite = cluster.invite("human")
    args = ("init", str(laptop.vault), "--relay", url, "--invite", invite,
            "--device-name", "laptop", "--kind", "human")  # fmt: skip
    code, _out, err = laptop(*args)
    assert code == 2 and "in clear" in err and "--insecure-http" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = laptop(*args, "--insecure-http")
    assert code == 0, err
    state = DeviceState.load(device_paths(laptop.home), laptop.vault)
    assert state.insecure_http is True
    (laptop.vault / "n.md").write_text("over plain http, on purpose\n")
    code, out, err = laptop("sync", str(laptop.vault))  # later commands remember the choice
    assert code == 0, err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--relay", "ftp://relay.example.org"), "is not a relay URL"),
        (("--relay", "http://relay.example.org"), "in clear"),
        (("--relay", "https://relay.example.org", "--device-name", "a\x07b"), "device name"),
        (("--relay", "https://relay.example.org", "--invite", ""), "an invite code is needed"),
    ],
    ids=["not-http", "plain-http-to-another-host", "bad-device-name", "no-invite"],
)
def test_bad_arguments_are_refused_before_the_secret_store_is_opened(
    cli, monkeypatch, args: tuple[str, ...], says: str
) -> None:
    """A typo in the command is what the person must hear about, with exit status 2: not that
    this machine has no keyring (exit 1), and no keyring unlock prompt for a command that
    cannot run anyway."""
    laptop = cli("laptop")
    (laptop.home / "config" / "config.toml").write_text("")  # the OS keyring: none here
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    given = dict(zip(args[::2], args[1::2], strict=True))
    given.setdefault("--invite", "x" * 40)
    given.setdefault("--device-name", "laptop")
    flat = [part for pair in given.items() for part in pair]
    code, _out, err = laptop("init", str(laptop.vault), *flat, "--kind", "human")
    assert code == 2, err
    assert says in err and "keyring" not in err
    assert len(err.strip().splitlines()) == 1
    assert not laptop.vault.exists()


def test_a_second_init_is_refused_before_the_secret_store_is_opened(cli, monkeypatch) -> None:
    laptop = cli("laptop")
    assert laptop.init()[0] == 0
    (laptop.home / "config" / "config.toml").write_text("")  # now without any secret store
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    code, _out, err = laptop.init()
    assert code == 2 and "already set up for sync" in err and "keyring" not in err


def test_a_new_vaults_first_persons_device_writes_the_default_scopes(cli, cluster) -> None:
    """Issue 44, agents with scopes: the person's device that creates a vault grants agents
    knowledge/, projects/, journal/ and Home.md; a joining device and an agent that creates a
    vault write nothing (existing vaults keep no scope rule)."""
    laptop, phone = cli("laptop"), cli("phone")
    code, out, err = laptop.init()
    assert code == 0, err
    assert "wrote .companion/scopes.json" in out
    doc = json.loads((laptop.vault / ".companion" / "scopes.json").read_text(encoding="utf-8"))
    assert doc["default"]["write"] == ["knowledge/", "projects/", "journal/", "Home.md"]
    code, out, err = phone.init()
    assert code == 0, err
    assert "scopes" not in out and not (phone.vault / ".companion" / "scopes.json").exists()
    agent = cli("server")
    code, out, err = agent.init(invite=cluster.relay.invite(kind="agent", new_vault=True),
                                kind="agent")  # fmt: skip
    assert code == 0, err
    assert "created vault" in out and "scopes" not in out
    assert not (agent.vault / ".companion" / "scopes.json").exists()


def test_the_desktop_apps_join_of_a_new_vault_writes_the_default_scopes(cluster, tmp_path) -> None:
    """The settings window's join (`companion.sync.commands.vaultkeys.join`) as `companion init`."""
    from companion.config import load_config
    from companion.sync.commands import vaultkeys

    paths = device_paths(cluster.new_home("desk"))
    invite = cluster.relay.invite(new_vault=True, kind="human")
    result = vaultkeys.join(paths, load_config(paths), tmp_path / "v", cluster.relay.url, invite,
                            "desk", "human", cluster.passphrase)  # fmt: skip
    assert result.created_vault
    doc = json.loads((tmp_path / "v" / ".companion" / "scopes.json").read_text(encoding="utf-8"))
    assert doc["default"]["write"] == ["knowledge/", "projects/", "journal/", "Home.md"]
