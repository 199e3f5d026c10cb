"""The one atomic write (#14.1): unique temp name beside the target, mode before the first byte,
fsync of file and folder, explicit symlink policy; and the private-file creation."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from companion import fileio
from companion.errors import InputError
from companion.fileio import (
    KEEP,
    TEMP_PREFIX,
    SymlinkRefused,
    temp_name,
    write_atomic,
    write_new_private,
)


def test_mode_is_set_before_the_first_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "secrets.toml"
    seen: list[int] = []
    real_write = os.write

    def spy(fd: int, data: bytes) -> int:
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_write(fd, data)

    monkeypatch.setattr(fileio.os, "write", spy)
    old = os.umask(0)  # a permissive umask must not leak into the file
    try:
        write_atomic(target, b"token = 'x'\n")
    finally:
        os.umask(old)
    assert seen and set(seen) == {0o600}
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_temp_files_are_unique_and_ignored_names(tmp_path: Path, monkeypatch) -> None:
    names: list[str] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        names.append(Path(src).name)
        real_replace(src, dst)

    monkeypatch.setattr(fileio.os, "replace", spy)
    write_atomic(tmp_path / ".companionignore", b"a\n", mode=KEEP)
    write_atomic(tmp_path / ".companionignore", b"b\n", mode=KEEP)
    assert len(set(names)) == 2 and all(n.startswith(TEMP_PREFIX) for n in names)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".companionignore"]


def test_file_and_folder_are_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(fileio.os, "fsync", spy)
    write_atomic(tmp_path / "a.json", b"{}")
    assert synced == ["file", "dir"]
    synced.clear()
    write_atomic(tmp_path / "status.json", b"{}", durable=False)  # rebuilt state: no fsync
    assert synced == [] and (tmp_path / "status.json").read_bytes() == b"{}"


def test_the_sync_engines_own_state_files_go_through_the_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The device state, the status file and the lock's holder note: owner-only, no fixed
    temporary name two writers could share."""
    from companion.sync.service.lock import VaultLock
    from companion.sync.state.status import StatusStore

    calls: list[Path] = []
    real = fileio.write_atomic

    def spy(path, data, **kw):  # type: ignore[no-untyped-def]
        calls.append(Path(path))
        return real(path, data, **kw)

    monkeypatch.setattr(fileio, "write_atomic", spy)
    StatusStore(tmp_path / "state" / "status.json").add_error("relay", "down")
    (tmp_path / "lockdir").mkdir()
    with VaultLock(tmp_path / "lockdir", command="sync") as lock:
        assert stat.S_IMODE(lock.holder_path.stat().st_mode) == 0o600
    assert [c.name for c in calls] == ["status.json", lock.holder_path.name]
    assert stat.S_IMODE((tmp_path / "state" / "status.json").stat().st_mode) == 0o600


def test_keep_keeps_a_files_mode_and_new_files_follow_the_umask(tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_text("x")
    note.chmod(0o640)
    write_atomic(note, b"y", mode=KEEP)
    assert stat.S_IMODE(note.stat().st_mode) == 0o640
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "new.md", b"z", mode=KEEP)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o644


def test_symlinks_are_refused_unless_followed(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "MEMORY.md"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "MEMORY.md"
    link.symlink_to(real)
    with pytest.raises(SymlinkRefused):
        write_atomic(link, b"new")
    assert real.read_text() == "old"
    write_atomic(link, b"new", follow_symlinks=True)
    assert link.is_symlink() and real.read_text() == "new"


def test_a_failed_write_leaves_the_old_bytes_and_no_temp(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "state.json"
    target.write_text("old")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fileio.os, "fsync", full)
    with pytest.raises(OSError):
        write_atomic(target, b"new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_new_private_files_refuse_to_overwrite(tmp_path: Path) -> None:
    f = tmp_path / "recovery.txt"
    write_new_private(f, b"KEY\n")
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    with pytest.raises(InputError):
        write_new_private(f, b"OTHER\n")
    assert f.read_bytes() == b"KEY\n"


def test_the_settings_windows_recovery_key_file_is_never_readable_by_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key never sits in a file others can read, not even for a moment: a mode set after
    the bytes (which a failure in between leaves behind) is the bug this guards against."""
    from companion.gui.settings import write_private

    existing = tmp_path / "vault-companion-recovery-key.txt"
    existing.write_text("old\n")
    existing.chmod(0o644)  # the person picked a file others can read

    def chmod_fails(*_a: object, **_k: object) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "chmod", chmod_fails)
    try:
        write_private(existing, "AAAA-BBBB\n")
    except OSError:
        pass
    monkeypatch.undo()
    if "AAAA-BBBB" in existing.read_text():
        assert stat.S_IMODE(existing.stat().st_mode) == 0o600


def test_temp_names_are_unique_across_threads_and_a_fork() -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        names = list(pool.map(lambda _: temp_name(), range(4000)))
    assert len(set(names)) == 4000 and all(n.startswith(TEMP_PREFIX) for n in names)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child draws its own random part: it cannot collide with the parent
        os.write(write, temp_name().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 200).decode()
    os.close(read)
    os.close(write)
    mine = temp_name()
    assert child.rsplit("-", 1)[0] != mine.rsplit("-", 1)[0]
