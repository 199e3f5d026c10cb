"""The vault folder's identity (issue #42, finding 1): a folder that is not the vault's (an
unmounted drive's bare mount point, a folder swapped in under the engine, another vault's
copy) is never written to, never deleted from, and no deletion is derived from it; the
engine says "vault folder missing" (status, exit 6) and syncs again, rescanning everything,
once the vault's folder is back.

Devices sync through a real relay on 127.0.0.1; the mount is a real bind mount where the
test runs as root (`mount --bind`), and a folder renamed and replaced under the engine
everywhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from companion.sync.local.folder import (
    EXIT_VAULT_MISSING,
    MARKER_NAME,
    VaultMissing,
    check_folder,
    read_marker,
    write_marker,
)
from companion.sync.local.ignore import IgnoreRules
from companion.sync.service.daemon import Daemon
from companion.sync.state.index import SyncIndex
from tests.conftest import wait_for
from tests.syncharness import Device, SyncCluster


@pytest.fixture
def cluster(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        yield c


class Running:
    """A device's daemon on a background thread (as `companion watch` runs it)."""

    def __init__(self, dev: Device) -> None:
        self.daemon = Daemon(dev.engine(), rescan_interval_s=None)
        self.thread = threading.Thread(target=self.daemon.run, daemon=True)
        self.thread.start()
        assert self.daemon.ready.wait(15), "first round did not finish"

    def round(self):
        outcome = self.daemon.wait_round(self.daemon.request_round(), 30)
        assert outcome is not None, "the round asked for did not finish"
        return outcome

    def stop(self) -> None:
        self.daemon.stop()
        self.thread.join(10)
        assert not self.thread.is_alive()


def _can_bind_mount() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None


def _mount(src: Path, target: Path) -> None:
    subprocess.run(["mount", "--bind", str(src), str(target)], check=True)


def _umount(target: Path) -> None:
    subprocess.run(["umount", str(target)], check=True)


def _relay_paths(dev: Device) -> dict[str, bool]:
    """Every path the relay holds, as this device sees it: path -> deleted."""
    pulled = dev.engine().core.remote.pull(0, lambda _ids: {})
    return {ch.path: ch.deleted for ch in pulled.changes}


def _laptop_and_phone(cluster: SyncCluster, laptop_vault: Path | None = None):
    a = cluster.add_device("laptop", "human", vault=laptop_vault)
    b = cluster.add_device("phone", "human")
    a.write("Home.md", "# Home\n")
    a.write("knowledge/fact.md", "a fact\n")
    a.write("journal/today.md", "# Today\n")
    a.sync()
    b.sync()
    return a, b


# ------------------------------------------------------------------------------ end to end


@pytest.mark.skipif(not _can_bind_mount(), reason="a bind mount needs root")
def test_an_unmounted_vault_drive_gets_no_note_and_loses_none(tmp_path: Path) -> None:
    """The vault is a mount; the drive goes away while `watch` runs and the phone adds a
    note. The old engine wrote that note into the bare mount point; mounted back, the note
    was hidden, the engine saw it gone and deleted it on every device."""
    disk = tmp_path / "disk"
    point = tmp_path / "mnt" / "vault"
    disk.mkdir()
    point.mkdir(parents=True)
    _mount(disk, point)
    mounted = True
    try:
        with SyncCluster(tmp_path / "c") as cluster:
            a, b = _laptop_and_phone(cluster, laptop_vault=point)
            running = Running(a)
            try:
                _umount(point)
                mounted = False
                b.write("phone.md", "written on the phone\n")
                b.sync()
                outcome = running.round()
                assert isinstance(outcome.error, VaultMissing), outcome
                assert os.listdir(point) == []  # nothing written into the bare mount point
                assert f"vault folder missing: {os.path.realpath(point)}" in str(outcome.error)
                status = a.engine().core.status.read()
                assert status.state == "vault_missing"
                assert status.errors[-1].kind == "vault_missing"
                _mount(disk, point)
                mounted = True
                wait_for(
                    lambda: a.read("phone.md") == b"written on the phone\n",
                    timeout=30,
                    what="the phone's note on the laptop once the drive is back",
                )
                done = running.round()
                assert done.error is None, done
                assert a.engine().core.status.read().state == "synced"
            finally:
                running.stop()
            b.sync()
            expected = {
                "Home.md": b"# Home\n",
                "journal/today.md": b"# Today\n",
                "knowledge/fact.md": b"a fact\n",
                "phone.md": b"written on the phone\n",
            }
            assert a.files() == expected
            assert b.files() == expected
            assert not any(_relay_paths(b).values())  # no deletion ever reached the relay
    finally:
        if mounted:
            subprocess.run(["umount", str(point)], check=False)


def test_a_folder_swapped_under_a_running_engine_gets_no_note_and_loses_none(
    cluster: SyncCluster,
) -> None:
    """Without root: the vault folder is renamed away and an empty one put in its place (what
    an unmounted drive leaves) while `watch` runs; then the vault's folder comes back."""
    a, b = _laptop_and_phone(cluster)
    running = Running(a)
    away = a.vault.with_name("laptop-away")
    try:
        a.vault.rename(away)
        a.vault.mkdir()  # the bare mount point
        b.write("phone.md", "written on the phone\n")
        b.sync()
        outcome = running.round()
        assert isinstance(outcome.error, VaultMissing), outcome
        assert os.listdir(a.vault) == []  # no note, no marker: nothing written into it
        assert a.engine().core.status.read().state == "vault_missing"
        again = running.round()  # each round checks again, still writes nothing
        assert isinstance(again.error, VaultMissing) and os.listdir(a.vault) == []
        a.vault.rmdir()
        away.rename(a.vault)
        wait_for(
            lambda: a.read("phone.md") == b"written on the phone\n",
            timeout=30,
            what="the phone's note once the folder is back",
        )
        a.write("laptop.md", "written once it was back\n")
        wait_for(
            lambda: (b.sync(), b.read("laptop.md"))[1] == b"written once it was back\n",
            timeout=30,
            what="the laptop's note on the phone",
        )
    finally:
        running.stop()
    expected = {
        "Home.md": b"# Home\n",
        "journal/today.md": b"# Today\n",
        "knowledge/fact.md": b"a fact\n",
        "laptop.md": b"written once it was back\n",
        "phone.md": b"written on the phone\n",
    }
    assert a.files() == expected and b.files() == expected
    assert not any(_relay_paths(b).values())


def test_another_vaults_folder_swapped_in_is_neither_pushed_nor_emptied(
    cluster: SyncCluster,
) -> None:
    """A folder of another vault copy (its own marker, its own notes) appears at the vault's
    path: none of its files goes out, none of the vault's is deleted, nothing is written."""
    a, b = _laptop_and_phone(cluster)
    a.engine()
    away = a.vault.with_name("laptop-away")
    a.vault.rename(away)
    a.vault.mkdir()
    (a.vault / "other.md").write_text("another vault's note\n")
    write_marker(a.vault, "0" * 16, "1" * 16)
    before = {p.name: p.read_bytes() for p in a.vault.iterdir()}
    b.write("phone.md", "written on the phone\n")
    b.sync()
    with pytest.raises(VaultMissing, match="another vault or device"):
        a.sync()
    assert {p.name: p.read_bytes() for p in a.vault.iterdir()} == before
    assert "other.md" not in _relay_paths(b) and not any(_relay_paths(b).values())


# ------------------------------------------------------------------------------ the command


def test_sync_command_on_a_folder_that_is_not_the_vaults_exits_6(cluster: SyncCluster) -> None:
    a, b = _laptop_and_phone(cluster)
    relay_before = _relay_paths(b)
    b.write("phone.md", "written on the phone\n")
    b.sync()
    # a foreign marker: the folder holds another device's copy
    marker = a.vault / MARKER_NAME
    saved = marker.read_bytes()
    write_marker(a.vault, a.vault_id, "f" * 16)
    a.delete("knowledge/fact.md")  # would be a deletion, were the folder the vault's
    a.write("local.md", "would be an upload\n")
    local_before = a.files()
    res = a.cli("sync", str(a.vault))
    assert res.returncode == EXIT_VAULT_MISSING == 6, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert f"vault folder missing: {os.path.realpath(a.vault)}" in lines[0]
    assert a.files() == local_before  # nothing written or deleted here
    assert a.read("phone.md") is None
    b.sync()
    assert _relay_paths(b) == {**relay_before, "phone.md": False}  # nothing sent
    status = a.cli("status", str(a.vault), "--json", "--offline")
    assert json.loads(status.stdout)["state"] == "vault_missing"
    plain = a.cli("status", str(a.vault), "--offline")
    assert "vault folder missing" in plain.stdout
    # no marker at all, and none of the vault's files there: missing as well
    marker.unlink()
    shutil.rmtree(a.vault / "knowledge")
    shutil.rmtree(a.vault / "journal")
    a.delete("Home.md")
    res = a.cli("sync", str(a.vault))
    assert res.returncode == 6, res.stderr
    assert not marker.exists()  # the upgrade rule did not adopt an empty folder
    # the marker back: the folder is the vault's again, and what the person did in it counts
    marker.write_bytes(saved)
    res = a.cli("sync", str(a.vault))
    assert res.returncode == 0, res.stderr
    assert a.read("phone.md") == b"written on the phone\n"
    b.sync()
    assert b.files() == {"local.md": b"would be an upload\n", "phone.md": b"written on the phone\n"}


# ------------------------------------------------------------------------------ upgrade rule


def _index(tmp_path: Path, live: dict[str, bytes]) -> SyncIndex:
    from companion.sync.state.files import Entry

    index = SyncIndex(tmp_path / "index.sqlite")
    index.files.put_many(
        Entry(path, "0" * 64, len(data), 1, i + 1, rev=1, file_id=f"f{i}")
        for i, (path, data) in enumerate(live.items())
    )
    return index


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


VID, DID = "a" * 16, "b" * 16


def test_a_fresh_copy_gets_the_marker(tmp_path: Path, vault: Path) -> None:
    with _index(tmp_path, {}) as index:
        assert check_folder(vault, VID, DID, index.files) == "adopted"
    assert read_marker(vault) is not None
    data = json.loads((vault / MARKER_NAME).read_text())
    assert data["vault_id"] == VID and data["device_id"] == DID
    assert isinstance(data["created"], int)
    with _index(tmp_path, {}) as index:
        assert check_folder(vault, VID, DID, index.files) == "ok"


def test_a_copy_joined_before_markers_holding_a_known_file_is_adopted(
    tmp_path: Path, vault: Path
) -> None:
    (vault / "b.md").write_text("b\n")
    with _index(tmp_path, {"a.md": b"a\n", "b.md": b"b\n"}) as index:
        assert check_folder(vault, VID, DID, index.files) == "adopted"
    assert json.loads((vault / MARKER_NAME).read_text())["device_id"] == DID


def test_a_copy_without_marker_or_known_file_is_missing(tmp_path: Path, vault: Path) -> None:
    (vault / "unknown.md").write_text("not the vault's\n")
    (vault / "a.md").mkdir()  # a folder where the index knows a file is no file of it
    with (
        _index(tmp_path, {"a.md": b"a\n"}) as index,
        pytest.raises(VaultMissing, match="vault folder missing") as err,
    ):
        check_folder(vault, VID, DID, index.files)
    assert err.value.exit_code == 6
    assert not (vault / MARKER_NAME).exists()


@pytest.mark.parametrize(
    "content",
    [
        json.dumps({"vault_id": "c" * 16, "device_id": DID, "created": 1}),
        json.dumps({"vault_id": VID, "device_id": "d" * 16, "created": 1}),
        json.dumps({"vault_id": VID}),
        "[1, 2]",
        "{not json",
        "",
    ],
)
def test_a_foreign_or_unreadable_marker_is_missing(
    tmp_path: Path, vault: Path, content: str
) -> None:
    (vault / "a.md").write_text("a\n")  # even with the vault's files there
    (vault / MARKER_NAME).write_text(content)
    with (
        _index(tmp_path, {"a.md": b"a\n"}) as index,
        pytest.raises(VaultMissing, match="another vault or device"),
    ):
        check_folder(vault, VID, DID, index.files)
    assert (vault / MARKER_NAME).read_text() == content  # never overwritten


def test_no_folder_or_a_file_in_its_place_is_missing(tmp_path: Path) -> None:
    with _index(tmp_path, {}) as index:
        with pytest.raises(VaultMissing, match="not there"):
            check_folder(tmp_path / "gone", VID, DID, index.files)
        (tmp_path / "file").write_text("x")
        with pytest.raises(VaultMissing, match="not there"):
            check_folder(tmp_path / "file", VID, DID, index.files)


def test_the_marker_is_written_atomically_and_never_synced(tmp_path: Path, vault: Path) -> None:
    write_marker(vault, VID, DID)
    assert sorted(os.listdir(vault)) == [MARKER_NAME]  # no temp file left
    assert IgnoreRules(vault).is_ignored(MARKER_NAME)


def test_joining_writes_the_marker_and_it_stays_on_its_device(cluster: SyncCluster) -> None:
    a, b = _laptop_and_phone(cluster)
    for dev in (a, b):
        marker = read_marker(dev.vault)
        assert marker is not None
        assert marker["vault_id"] == dev.vault_id
        assert marker["device_id"] == dev.engine().core.device.device_id
    assert MARKER_NAME not in _relay_paths(a)


def test_an_engine_upgraded_from_before_markers_syncs_on(cluster: SyncCluster) -> None:
    a, b = _laptop_and_phone(cluster)
    (a.vault / MARKER_NAME).unlink()  # joined by a version without markers
    a.write("after.md", "after the upgrade\n")
    assert a.sync().uploaded == ["after.md"]
    assert read_marker(a.vault) is not None
    b.sync()
    assert b.read("after.md") == b"after the upgrade\n"
