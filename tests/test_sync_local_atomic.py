"""Atomic local writes: the changed-since-scan check, no temp leftovers, never outside the vault."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest

from companion.sync.local.atomic import (
    ChangedSinceScan,
    atomic_delete,
    atomic_rename,
    atomic_write,
    remove_stale_temps,
)
from companion.sync.local.filestate import FileState, current_state, hash_file
from companion.sync.local.pathsafe import TEMP_PREFIX, UnsafePath


def scanned(p: Path) -> FileState:
    return hash_file(p).state


def no_temp_files(root: Path) -> bool:
    return not any(n.startswith(TEMP_PREFIX) for _, _, files in os.walk(root) for n in files)


def test_create_new_file_with_parents(tmp_path: Path) -> None:
    st = atomic_write(tmp_path, "new/dir/n.md", b"hello\n", None)
    p = tmp_path / "new/dir/n.md"
    assert p.read_bytes() == b"hello\n"
    assert st == scanned(p)
    assert no_temp_files(tmp_path)


def test_replace_when_unchanged(tmp_path: Path) -> None:
    p = tmp_path / "n.md"
    p.write_bytes(b"v1")
    st = atomic_write(tmp_path, "n.md", b"v2", scanned(p), mtime_ns=1_700_000_000_123_456_789)
    assert p.read_bytes() == b"v2"
    assert st.mtime_ns == 1_700_000_000_123_456_789 == p.stat().st_mtime_ns
    assert st == scanned(p)


def test_changed_since_scan_is_refused_and_file_kept(tmp_path: Path) -> None:
    p = tmp_path / "n.md"
    p.write_bytes(b"scanned")
    seen = scanned(p)
    p.write_bytes(b"the person's newer edit")  # between scan and write
    with pytest.raises(ChangedSinceScan, match="modified"):
        atomic_write(tmp_path, "n.md", b"remote version", seen)
    assert p.read_bytes() == b"the person's newer edit"
    assert no_temp_files(tmp_path)


def test_same_size_same_mtime_edit_is_caught_by_the_hash(tmp_path: Path) -> None:
    p = tmp_path / "n.md"
    p.write_bytes(b"aaaa")
    seen = scanned(p)
    p.write_bytes(b"bbbb")
    os.utime(p, ns=(seen.mtime_ns, seen.mtime_ns))  # an editor restoring the mtime
    with pytest.raises(ChangedSinceScan):
        atomic_write(tmp_path, "n.md", b"cccc", seen)
    assert p.read_bytes() == b"bbbb"


def test_expected_absent_but_file_appeared(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_bytes(b"created meanwhile")
    with pytest.raises(ChangedSinceScan, match="created"):
        atomic_write(tmp_path, "n.md", b"remote", None)
    assert (tmp_path / "n.md").read_bytes() == b"created meanwhile"


def test_expected_present_but_file_deleted(tmp_path: Path) -> None:
    p = tmp_path / "n.md"
    p.write_bytes(b"x")
    seen = scanned(p)
    p.unlink()
    with pytest.raises(ChangedSinceScan, match="deleted"):
        atomic_write(tmp_path, "n.md", b"remote", seen)
    assert not p.exists() and no_temp_files(tmp_path)


def test_target_became_a_folder(tmp_path: Path) -> None:
    (tmp_path / "n.md").mkdir()
    with pytest.raises(ChangedSinceScan):
        atomic_write(tmp_path, "n.md", b"x", None)


def test_streamed_write_and_hash(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    st = atomic_write(tmp_path, "big.bin", io.BytesIO(data), None)
    assert (tmp_path / "big.bin").read_bytes() == data
    assert st.sha256 == scanned(tmp_path / "big.bin").sha256


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_permissions_kept_and_executable_flag(tmp_path: Path) -> None:
    p = tmp_path / "script.sh"
    p.write_bytes(b"#!/bin/sh\n")
    os.chmod(p, 0o750)
    atomic_write(tmp_path, "script.sh", b"#!/bin/sh\necho\n", scanned(p))
    assert stat.S_IMODE(p.stat().st_mode) == 0o750
    atomic_write(tmp_path, "script.sh", b"#!/bin/sh\n", scanned(p), executable=False)
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    atomic_write(tmp_path, "new.sh", b"x", None, executable=True)
    assert os.access(tmp_path / "new.sh", os.X_OK)


def test_never_writes_outside_the_vault(tmp_path: Path) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    vault.mkdir()
    outside.mkdir()
    (vault / "link").symlink_to(outside, target_is_directory=True)
    for rel in ("../escape.md", "/abs.md", "link/x.md", "a/../../x.md"):
        with pytest.raises(UnsafePath):
            atomic_write(vault, rel, b"x", None)
    assert list(outside.iterdir()) == [] and not (tmp_path / "escape.md").exists()


def test_delete_checks_state_and_prunes_empty_folders(tmp_path: Path) -> None:
    p = tmp_path / "a/b/n.md"
    p.parent.mkdir(parents=True)
    p.write_bytes(b"x")
    (tmp_path / "a/keep.md").write_bytes(b"k")
    seen = scanned(p)
    p.write_bytes(b"edited")
    with pytest.raises(ChangedSinceScan):
        atomic_delete(tmp_path, "a/b/n.md", seen)
    assert p.exists()
    assert atomic_delete(tmp_path, "a/b/n.md", scanned(p)) is True
    assert not (tmp_path / "a/b").exists() and (tmp_path / "a").is_dir()
    assert atomic_delete(tmp_path, "a/b/n.md", seen) is False  # already gone: fine


def test_rename_checks_state_and_refuses_to_clobber(tmp_path: Path) -> None:
    (tmp_path / "old.md").write_bytes(b"content")
    (tmp_path / "taken.md").write_bytes(b"other")
    seen = scanned(tmp_path / "old.md")
    with pytest.raises(ChangedSinceScan, match="already exists"):
        atomic_rename(tmp_path, "old.md", "taken.md", seen)
    assert (tmp_path / "taken.md").read_bytes() == b"other"
    st = atomic_rename(tmp_path, "old.md", "dir/new.md", seen)
    assert (tmp_path / "dir/new.md").read_bytes() == b"content"
    assert not (tmp_path / "old.md").exists()
    assert st == scanned(tmp_path / "dir/new.md")
    (tmp_path / "dir/new.md").write_bytes(b"edited after scan")
    with pytest.raises(ChangedSinceScan):
        atomic_rename(tmp_path, "dir/new.md", "x.md", st)


def test_case_only_rename(tmp_path: Path) -> None:
    (tmp_path / "Note.md").write_bytes(b"c")
    atomic_rename(tmp_path, "Note.md", "note.md", scanned(tmp_path / "Note.md"))
    assert os.listdir(tmp_path) == ["note.md"]


def test_remove_stale_temps_only_touches_temp_files(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / f"{TEMP_PREFIX}x").write_bytes(b"")
    (tmp_path / "d" / "note.md").write_bytes(b"")
    n = remove_stale_temps(tmp_path, [f"d/{TEMP_PREFIX}x", "d/note.md", "../x"])
    assert n == 1 and os.listdir(tmp_path / "d") == ["note.md"]


def test_current_state(tmp_path: Path) -> None:
    assert current_state(tmp_path / "missing") is None
    (tmp_path / "f").write_bytes(b"abc")
    s = current_state(tmp_path / "f", with_hash=True)
    assert s is not None and s.size == 3 and len(s.sha256) == 64
