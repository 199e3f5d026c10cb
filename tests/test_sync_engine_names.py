"""File names across platforms: Unicode NFC/NFD, case-only renames, case collisions."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from tests.syncharness import SyncCluster

NFC = unicodedata.normalize("NFC", "knowledge/Café déjà vu.md")
NFD = unicodedata.normalize("NFD", NFC)


@pytest.fixture
def cluster(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        yield c


def test_nfd_names_from_macos_arrive_as_one_nfc_file(cluster: SyncCluster) -> None:
    assert NFC != NFD
    mac = cluster.add_device("mac", "human")
    linux = cluster.add_device("server", "agent")
    mac.write(NFD, "crème\n")  # what macOS hands over: decomposed accents
    mac.sync()
    linux.sync()
    assert linux.files() == {NFC: "crème\n".encode()}
    assert mac.files() == {NFC: "crème\n".encode()}  # renamed in place to the canonical form
    # both spellings address the same file: an edit under the NFD name updates it
    os.rename(mac.path(NFC), mac.path(NFD))
    mac.write(NFD, "crème brûlée\n")
    mac.sync()
    linux.sync()
    assert linux.files() == {NFC: "crème brûlée\n".encode()}
    assert len(mac.engine().history(NFD)) == 2  # one file id for both spellings


def test_case_only_rename(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    a.write("knowledge/Git.md", "rebase\n")
    a.sync()
    b.sync()
    a.rename("knowledge/Git.md", "knowledge/git.md")
    a.sync()
    report = b.sync()
    assert report.renamed_local == [("knowledge/Git.md", "knowledge/git.md")]
    assert b.files() == {"knowledge/git.md": b"rebase\n"}
    cluster.assert_converged()


def test_case_collision_on_a_case_insensitive_device_loses_nothing(cluster: SyncCluster) -> None:
    linux = cluster.add_device("server", "agent")
    mac = cluster.add_device("mac", "human", case_insensitive=True)
    linux.write("Notes.md", "capital\n")
    linux.write("notes.md", "lower\n")
    linux.sync()
    report = mac.sync()
    assert [c.outcome for c in report.conflicts] == ["case_collision"]
    files = mac.files()
    assert len(files) == 2
    assert sorted(files.values()) == [b"capital\n", b"lower\n"]
    folded = {p.casefold() for p in files}
    assert len(folded) == 2  # a case-insensitive disk can hold these names
    cluster.sync_all()
    converged = cluster.assert_converged()
    assert sorted(converged.values()) == [b"capital\n", b"lower\n"]
    assert len({p.casefold() for p in converged}) == 2  # the rename reached every device
