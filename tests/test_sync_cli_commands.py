"""`companion sync | status | history | restore` and their exit statuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from companion.paths import device_paths
from companion.sync.service.lock import VaultLock
from companion.sync.state.device import vault_dir
from tests.syncharness import CliRunnerInProcess, SyncCluster


@pytest.fixture
def cluster(tmp_path: Path):
    with SyncCluster(tmp_path, relay="process") as c:
        yield c


@pytest.fixture
def pair(cluster, monkeypatch, capsys):
    laptop = CliRunnerInProcess(cluster, "laptop", monkeypatch, capsys)
    server = CliRunnerInProcess(cluster, "server", monkeypatch, capsys)
    assert laptop.init()[0] == 0
    assert server.init(kind="agent")[0] == 0
    return laptop, server


def test_sync_status_history_restore(pair) -> None:
    laptop, server = pair
    note = laptop.vault / "knowledge" / "git.md"
    note.parent.mkdir(parents=True, exist_ok=True)  # the join made the layout (#39.8e)
    note.write_text("v1: rebase often\n")
    code, out, err = laptop("sync", str(laptop.vault))
    assert code == 0, err
    assert "2 uploaded" in out  # and the new vault's .companion/scopes.json (agents' scopes)
    note.write_text("v2: merge instead\n")
    assert laptop("sync", str(laptop.vault))[0] == 0
    code, out, err = server("sync", str(server.vault))
    assert code == 0 and "2 downloaded" in out  # the note and the scopes file
    assert (server.vault / "knowledge" / "git.md").read_text() == "v2: merge instead\n"

    note.write_text("v3: not synced yet\n")
    code, out, _ = laptop("status", str(laptop.vault), "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {
        "vault", "device", "vault_id", "key_fingerprint", "relay", "online", "state",
        "last_sync", "pending", "conflicts", "errors", "daemon",
    }  # fmt: skip
    assert data["device"]["name"] == "laptop" and data["device"]["kind"] == "human"
    assert data["online"] is True and data["state"] == "synced" and data["last_sync"]
    assert data["pending"] == {"upload": 1, "download": 0}
    code, out, _ = laptop("status", str(laptop.vault))
    assert "1 to upload" in out and "online" in out

    assert laptop("sync", str(laptop.vault))[0] == 0
    code, out, _ = server("history", str(server.vault), "knowledge/git.md")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 3 and lines[0].startswith("rev    3") and "laptop (human)" in lines[0]
    code, out, err = server("restore", str(server.vault), "knowledge/git.md", "--rev", "1")
    assert code == 0, err
    assert (server.vault / "knowledge" / "git.md").read_text() == "v1: rebase often\n"
    code, out, _ = server("history", str(server.vault), "knowledge/git.md", "--json")
    revs = json.loads(out)
    assert [r["rev"] for r in revs] == [4, 3, 2, 1] and revs[0]["device"] == "server"
    laptop("sync", str(laptop.vault))
    assert note.read_text() == "v1: rebase often\n"  # and v3 is still in the history


def test_exit_status_when_offline_locked_or_mass_deleting(pair, cluster) -> None:
    laptop, server = pair
    for i in range(12):
        (laptop.vault / f"n{i}.md").write_text(f"{i}\n")
    assert laptop("sync", str(laptop.vault))[0] == 0

    with VaultLock(vault_dir(device_paths(laptop.home), laptop.vault), command="companion watch"):
        code, _out, err = laptop("sync", str(laptop.vault))
    assert code == 4 and "companion watch" in err and "pid" in err

    for i in range(12):
        (laptop.vault / f"n{i}.md").unlink()
    code, _out, err = laptop("sync", str(laptop.vault))
    assert code == 3 and "--allow-mass-delete" in err
    code, out, err = laptop("sync", str(laptop.vault), "--allow-mass-delete", "--json")
    assert code == 0, err
    assert len(json.loads(out)["deleted_remote"]) == 12

    cluster.relay.stop()
    (laptop.vault / "late.md").write_text("written offline\n")
    code, _out, err = laptop("sync", str(laptop.vault))
    assert code == 5 and "stay queued" in err
    code, out, _ = laptop("status", str(laptop.vault), "--json")
    data = json.loads(out)
    assert data["online"] is False and data["state"] == "offline"
    assert data["pending"]["upload"] == 1
    assert "reach" in data["errors"][-1]["message"] or "answer" in data["errors"][-1]["message"]


def test_status_shows_an_error_only_until_a_later_round_succeeds(pair, cluster) -> None:
    """An old "cannot reach the relay" is history once a later round got through (#39, item
    8c): `status` shows the last round's error, `--json` keeps the rolling list beside it."""
    laptop, _server = pair
    (laptop.vault / "a.md").write_text("a\n")
    assert laptop("sync", str(laptop.vault))[0] == 0
    cluster.relay.stop()
    assert laptop("sync", str(laptop.vault))[0] == 5
    code, out, _ = laptop("status", str(laptop.vault), "--offline")
    assert code == 0 and "last error:" in out
    data = json.loads(laptop("status", str(laptop.vault), "--offline", "--json")[1])
    assert data["last_error"] is not None and data["last_error"]["kind"] == "offline"

    cluster.relay.restart()
    assert laptop("sync", str(laptop.vault))[0] == 0
    code, out, _ = laptop("status", str(laptop.vault))
    assert code == 0 and "online" in out
    assert "last error" not in out and "reach" not in out, out
    data = json.loads(laptop("status", str(laptop.vault), "--json")[1])
    assert data["last_error"] is None
    assert data["errors"][-1]["kind"] == "offline"  # still in the history


def test_not_initialised_folder_is_a_usage_error(pair, tmp_path: Path) -> None:
    laptop, _ = pair
    other = tmp_path / "plain-folder"
    other.mkdir()
    code, _out, err = laptop("sync", str(other))
    assert code == 2 and "companion init" in err
    code, _out, err = laptop("status", str(other))
    assert code == 2


@pytest.mark.parametrize("command", ["init", "sync", "watch", "status", "history", "restore"])
def test_every_command_has_help_with_an_example(command: str) -> None:
    from click.testing import CliRunner

    from companion.cli import cli

    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output and f"companion {command}" in result.output


def test_a_sync_command_keeps_the_collector_off_what_it_loaded(pair) -> None:
    """`companion sync` freezes the objects alive once the engine is imported (`heap.py`):
    the full collections a round's 10,000-entry dicts trigger, and the exit, skip them."""
    import gc

    laptop, _ = pair
    gc.unfreeze()
    try:
        assert laptop("sync", str(laptop.vault))[0] == 0
        assert gc.get_freeze_count() > 1000
    finally:
        gc.unfreeze()  # this test process goes on collecting as before


# Runs `companion sync` in a fresh interpreter and says which of the crypto modules it loaded.
_SYNC_AND_LIST_CRYPTO = """
import sys
from companion.cli import main
try:
    main(["sync", sys.argv[1]])
except SystemExit as exc:
    code = exc.code
names = ("cryptography", "companion.crypto.keys", "companion.crypto.records")
print("exit", code, "loaded", ",".join(n for n in names if n in sys.modules) or "-")
"""


def _sync_in_new_process(device: CliRunnerInProcess) -> list[str]:
    import os
    import subprocess
    import sys

    env = dict(os.environ, COMPANION_HOME=str(device.home), COMPANION_TEST_WEAK_KDF="1")
    p = subprocess.run(
        [sys.executable, "-c", _SYNC_AND_LIST_CRYPTO, str(device.vault)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_a_quiet_one_shot_sync_does_not_load_the_cipher(pair) -> None:
    """Nothing to seal or open, so the vault key is checked but not built, and `cryptography`
    (about a tenth of a quiet `companion sync`'s start-up) is not loaded (#17). The moment
    there is something to seal, the key is built and the change goes out."""
    laptop, _server = pair
    note = laptop.vault / "Home.md"
    note.write_text("v1\n")
    assert laptop("sync", str(laptop.vault))[0] == 0

    assert _sync_in_new_process(laptop) == ["synced: no changes", "exit 0 loaded -"]

    note.write_text("v2\n")
    out = _sync_in_new_process(laptop)
    assert out[0] == "synced: 1 uploaded"
    assert out[-1] == "exit 0 loaded cryptography,companion.crypto.keys,companion.crypto.records"


def _key_store(device: CliRunnerInProcess) -> tuple[Any, Any]:
    from companion.config import load_config
    from companion.credentials.store import open_store
    from companion.sync.state.device import DeviceState

    paths = device_paths(device.home)
    device.mp.setenv("COMPANION_HOME", str(device.home))
    return DeviceState.load(paths, device.vault), open_store(load_config(paths))


def test_a_missing_or_damaged_vault_key_stops_even_a_quiet_sync(pair) -> None:
    """The key is built late but checked at once: a quiet round does not report "synced" for a
    copy whose key is gone or damaged, and the error names the command that brings it back."""
    laptop, _server = pair
    assert laptop("sync", str(laptop.vault))[0] == 0
    state, store = _key_store(laptop)
    good = store.get(state.key_name)
    assert good
    for bad, says in (("zz" * 32, "is damaged"), (good[:-2], "is damaged"), ("", "is not in")):
        if bad:
            store.set(state.key_name, bad)
        else:
            store.delete(state.key_name)
        code, _out, err = laptop("sync", str(laptop.vault))
        assert code == 1 and says in err, err
        assert f"run `companion keys unlock {laptop.vault}`" in err, err
    store.set(state.key_name, good)
    assert laptop("sync", str(laptop.vault))[0] == 0


def test_a_key_the_store_lost_comes_back_with_the_passphrase(pair, tmp_path: Path) -> None:
    """The advice of the error above works: `companion keys unlock` opens the relay's wrapped
    key with the passphrase and stores it again. It used to say "run `companion init` again",
    which refuses a folder already set up: a person whose keyring lost the key was stuck."""
    laptop, _server = pair
    note = laptop.vault / "Home.md"
    note.write_text("v1\n")
    assert laptop("sync", str(laptop.vault))[0] == 0
    state, store = _key_store(laptop)
    fingerprint = state.key_fingerprint
    good = store.get(state.key_name)
    assert fingerprint and good

    store.delete(state.key_name)
    assert laptop("sync", str(laptop.vault))[0] == 1
    code, out, err = laptop("keys", "unlock", str(laptop.vault))
    assert code == 0, err
    assert out.strip() == f"vault key stored again; fingerprint {fingerprint}"
    assert store.get(state.key_name) == good
    note.write_text("v2\n")
    code, out, err = laptop("sync", str(laptop.vault))
    assert code == 0 and "1 uploaded" in out, err

    # held already: nothing is asked (no passphrase source at all)
    laptop.passphrase_file = None
    code, out, err = laptop("keys", "unlock", str(laptop.vault))
    assert code == 0, err
    assert out.strip() == f"the vault key is already stored here; fingerprint {fingerprint}"

    # a wrong key of the right shape is found out when first built, and replaced
    store.set(state.key_name, "00" * 32)
    note.write_text("v3\n")
    code, _out, err = laptop("sync", str(laptop.vault))
    assert code == 1 and "is not the one this device joined with" in err, err
    wrong = tmp_path / "wrong-pass"
    wrong.write_text("not the passphrase of this vault\n")
    wrong.chmod(0o600)
    laptop.passphrase_file = wrong
    code, _out, err = laptop("keys", "unlock", str(laptop.vault))
    assert code == 1 and "passphrase" in err.lower(), err
    assert store.get(state.key_name) == "00" * 32  # nothing stored, and the device stays joined
    laptop.passphrase_file = laptop.cluster.passphrase_file
    assert laptop("keys", "unlock", str(laptop.vault))[0] == 0
    code, out, err = laptop("sync", str(laptop.vault))
    assert code == 0 and "1 uploaded" in out, err


def test_a_device_whose_store_lost_everything_joins_again(pair, cluster) -> None:
    """A wiped keyring loses the relay token with the key. The errors lead out of it: the sync
    error sends to `companion init VAULT --rejoin --invite CODE` (it used to send to `keys
    unlock`, which needs the token and then sent there), and so does `keys unlock`. That joins
    the folder again as a new device of the same vault, with the key from the passphrase, and
    keeps its index. It used to say "`companion init` with --invite", which refuses a folder
    already set up."""
    from companion.sync.state.device import DeviceState

    laptop, server = pair
    note = laptop.vault / "Home.md"
    note.write_text("v1\n")
    assert laptop("sync", str(laptop.vault))[0] == 0
    old, store = _key_store(laptop)
    store.delete(old.key_name)
    store.delete(old.token_name)

    code, _out, err = laptop("sync", str(laptop.vault))
    assert code == 1 and f"`companion init {laptop.vault} --rejoin --invite CODE`" in err, err
    assert "keys unlock" not in err  # it would need the lost token
    code, _out, err = laptop("keys", "unlock", str(laptop.vault))
    assert code == 1 and f"`companion init {laptop.vault} --rejoin --invite CODE`" in err, err
    code, _out, err = laptop("init", str(laptop.vault), "--invite", cluster.invite("human"))
    assert code == 2 and "already set up" in err  # without --rejoin: as before

    code, out, err = laptop("init", str(laptop.vault), "--rejoin", "--invite",
                            cluster.invite("human"))  # fmt: skip
    assert code == 0, err
    assert f"joined vault {old.vault_id} again as 'laptop' (human)" in out
    new = DeviceState.load(device_paths(laptop.home), laptop.vault)
    assert new.vault_id == old.vault_id and new.device_id != old.device_id
    assert new.key_fingerprint == old.key_fingerprint and new.key_ready
    code, out, err = laptop("sync", str(laptop.vault))
    assert code == 0 and "no changes" in out, err  # the index was kept: nothing re-uploaded
    note.write_text("v2\n")
    code, out, err = laptop("sync", str(laptop.vault))
    assert code == 0 and "1 uploaded" in out, err
    assert server("sync", str(server.vault))[0] == 0
    assert (server.vault / "Home.md").read_text() == "v2\n"

    # with its token stored, a folder has nothing to rejoin; the invite stays unused
    spare = cluster.invite("human")
    code, _out, err = laptop("init", str(laptop.vault), "--rejoin", "--invite", spare)
    assert code == 2 and "still has its relay token" in err, err
    # --rejoin on a folder that never joined says so
    code, _out, err = laptop("init", str(laptop.vault.parent / "elsewhere"), "--rejoin",
                             "--invite", spare)  # fmt: skip
    assert code == 2 and "not set up for sync here" in err, err


def test_a_rejoin_with_a_wrong_invite_or_passphrase_changes_nothing(
    pair, cluster, tmp_path: Path
) -> None:
    """The new device leaves the relay again at once, the folder keeps its old state, and the
    rejoin can be tried again with the right invite and passphrase."""
    from companion.sync.state.device import DeviceState

    laptop, _server = pair
    assert laptop("sync", str(laptop.vault))[0] == 0
    old, store = _key_store(laptop)
    store.delete(old.key_name)
    store.delete(old.token_name)
    paths = device_paths(laptop.home)

    other_vault = cluster.relay.invite(new_vault=True, kind="human")
    code, _out, err = laptop("init", str(laptop.vault), "--rejoin", "--invite", other_vault)
    assert code == 2 and f"syncs vault {old.vault_id}" in err, err
    wrong = tmp_path / "wrong-pass"
    wrong.write_text("not the passphrase of this vault\n")
    wrong.chmod(0o600)
    laptop.passphrase_file = wrong
    code, _out, err = laptop("init", str(laptop.vault), "--rejoin", "--invite",
                             cluster.relay.invite(old.vault_id, kind="human"))  # fmt: skip
    assert code == 1 and "passphrase" in err.lower(), err
    assert DeviceState.load(paths, laptop.vault) == old
    assert store.get(old.key_name) is None and store.get(old.token_name) is None

    laptop.passphrase_file = cluster.passphrase_file
    code, _out, err = laptop("init", str(laptop.vault), "--rejoin", "--invite",
                             cluster.relay.invite(old.vault_id, kind="human"))  # fmt: skip
    assert code == 0, err
    assert laptop("sync", str(laptop.vault))[0] == 0
