"""Safety rails: the mass-deletion guard, the one-engine-per-copy lock, an unmounted vault."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from companion.sync.round.guard import MassDeleteRefused
from companion.sync.round.scanner import VaultMissing
from companion.sync.service.lock import LockHeld, VaultLock
from companion.sync.state.device import vault_dir
from tests.syncharness import SyncCluster


@pytest.fixture
def cluster(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        yield c


def _vault_of(cluster: SyncCluster, n: int):
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    for i in range(n):
        a.write(f"knowledge/n{i:02d}.md", f"note {i}\n")
    a.sync()
    b.sync()
    return a, b


def test_mass_deletion_is_held_until_confirmed(cluster: SyncCluster) -> None:
    a, b = _vault_of(cluster, 20)
    for i in range(15):
        a.delete(f"knowledge/n{i:02d}.md")
    a.write("knowledge/new.md", "still goes out\n")
    with pytest.raises(MassDeleteRefused) as err:
        a.sync()
    assert "delete 15 of 2" in str(err.value) and "--allow-mass-delete" in str(err.value)
    b.sync()
    assert len(b.files()) == 21  # nothing deleted elsewhere; the new note arrived
    assert b.read("knowledge/new.md") == b"still goes out\n"
    status = a.engine().core.status.read()
    assert status.errors[-1].kind == "mass_delete"
    with pytest.raises(MassDeleteRefused):
        a.sync()  # still held on the next round: nothing is forgotten
    report = a.sync(allow_mass_delete=True)
    assert len(report.deleted_remote) == 15
    b.sync()
    assert sorted(b.files()) == [f"knowledge/n{i:02d}.md" for i in range(15, 20)] + [
        "knowledge/new.md"
    ]


def test_small_deletions_need_no_confirmation(cluster: SyncCluster) -> None:
    a, b = _vault_of(cluster, 20)
    for i in range(9):  # below the minimum count, whatever the share
        a.delete(f"knowledge/n{i:02d}.md")
    assert len(a.sync().deleted_remote) == 9


def test_emptied_vault_folder_does_not_empty_other_devices(cluster: SyncCluster) -> None:
    a, b = _vault_of(cluster, 12)
    shutil.rmtree(a.vault / "knowledge")  # what an unmounted or wiped folder looks like
    with pytest.raises(MassDeleteRefused):
        a.sync()
    b.sync()
    assert len(b.files()) == 12


@pytest.mark.parametrize("notes", [1, 3, 9])
def test_an_emptied_small_vault_folder_does_not_empty_other_devices(
    cluster: SyncCluster, notes: int
) -> None:
    """A new vault of a few notes, on a drive that is not mounted (its empty mount point in
    its place): that folder is not the vault's (no marker, none of its files), so nothing is
    derived from it. Every note deleted at once in the vault's own folder is held back
    whatever the vault's size. Below 10 files the share alone never asked, so the other copies
    were emptied, exit 0."""
    a, b = _vault_of(cluster, notes)
    a.write("Home.md", "# Home\n")
    a.sync()
    b.sync()
    away = a.vault.with_name("unmounted")
    a.vault.rename(away)
    a.vault.mkdir()  # the bare mount point
    with pytest.raises(VaultMissing, match="vault folder missing"):
        a.sync()
    b.sync()
    assert len(b.files()) == notes + 1
    a.vault.rmdir()
    away.rename(a.vault)
    shutil.rmtree(a.vault / "knowledge")
    a.delete("Home.md")
    with pytest.raises(MassDeleteRefused) as err:
        a.sync()
    assert f"delete {notes + 1} of {notes + 1} files (100%)" in str(err.value)
    b.sync()
    assert len(b.files()) == notes + 1
    assert a.engine().core.status.read().errors[-1].kind == "mass_delete"
    report = a.sync(allow_mass_delete=True)  # the person meant it
    assert len(report.deleted_remote) == notes + 1
    b.sync()
    assert b.files() == {}


def test_deleting_some_notes_of_a_small_vault_needs_no_confirmation(
    cluster: SyncCluster,
) -> None:
    a, b = _vault_of(cluster, 3)
    a.delete("knowledge/n00.md")
    a.delete("knowledge/n01.md")
    assert len(a.sync().deleted_remote) == 2
    b.sync()
    assert list(b.files()) == ["knowledge/n02.md"]


def test_missing_vault_folder_is_an_error_not_a_deletion(cluster: SyncCluster) -> None:
    a, b = _vault_of(cluster, 3)
    a.engine()
    moved = a.vault.with_name("moved-away")
    a.vault.rename(moved)
    with pytest.raises(VaultMissing):
        a.sync()
    b.sync()
    assert len(b.files()) == 3


def test_one_engine_per_vault_copy(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    folder = vault_dir(a.paths, a.vault)
    with VaultLock(folder, command="companion watch ~/vault"):
        with pytest.raises(LockHeld) as err:
            VaultLock(folder).acquire()
        msg = str(err.value)
        assert "companion watch ~/vault" in msg and "pid" in msg
        assert err.value.exit_code == 4
    with VaultLock(folder):  # released: the next one gets it
        pass
