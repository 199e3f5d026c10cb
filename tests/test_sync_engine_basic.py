"""The sync engine end to end against a real relay: propagation, renames, echo, content kinds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from companion.sync.state.status import Pending
from tests.syncharness import SyncCluster


@pytest.fixture(params=["thread", "pg2"])
def cluster(tmp_path: Path, request: pytest.FixtureRequest):
    """The relay in a thread (SQLite), and two relay processes on PostgreSQL with requests
    alternating between them."""
    with SyncCluster(tmp_path, relay=request.param) as c:
        yield c


def test_create_edit_delete_reach_the_other_device(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    a.write("journal/2024-05-01.md", "# Done\n- sync\n")
    a.write("Home.md", "# Home\n")
    report = a.sync()
    assert sorted(report.uploaded) == ["Home.md", "journal/2024-05-01.md"]
    assert report.converged
    report = b.sync()
    assert sorted(report.downloaded) == ["Home.md", "journal/2024-05-01.md"]
    assert b.read("journal/2024-05-01.md") == b"# Done\n- sync\n"

    a.write("journal/2024-05-01.md", "# Done\n- sync\n- tests\n")
    a.sync()
    b.sync()
    assert b.read("journal/2024-05-01.md") == b"# Done\n- sync\n- tests\n"

    a.delete("journal/2024-05-01.md")
    assert a.sync().deleted_remote == ["journal/2024-05-01.md"]
    assert b.sync().deleted_local == ["journal/2024-05-01.md"]
    assert not b.path("journal").exists()  # the emptied folder goes too
    cluster.assert_converged()


def test_applied_remote_changes_do_not_bounce_back(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    for i in range(5):
        a.write(f"knowledge/n{i}.md", f"note {i}\n")
    a.sync()
    b.sync()
    seq = b.engine().puller.cursor
    again = b.sync()
    assert not again.uploaded and not again.downloaded and again.passes == 1
    assert a.sync().downloaded == []
    assert b.engine().puller.cursor == seq  # nothing new was committed by anyone


def test_rename_is_applied_as_a_rename(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    a.write("projects/site.md", "state: draft\n")
    a.sync()
    b.sync()
    inode = os.stat(b.path("projects/site.md")).st_ino
    a.rename("projects/site.md", "archive/site-2024.md")
    report = a.sync()
    assert report.uploaded == ["archive/site-2024.md"]
    report = b.sync()
    assert report.renamed_local == [("projects/site.md", "archive/site-2024.md")]
    assert os.stat(b.path("archive/site-2024.md")).st_ino == inode  # moved, not rewritten
    assert not b.path("projects").exists()
    cluster.assert_converged()
    # the new path's history starts with a record that names where it came from
    hist = a.engine().history("archive/site-2024.md")
    assert hist[0].meta.rename_from == "projects/site.md"


def test_binary_empty_executable_and_multichunk_files(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    a.engine().core.chunk_size = 64 * 1024
    big = os.urandom(300 * 1024)  # five chunks
    a.write("assets/photo.bin", big)
    a.write("empty.md", b"")
    a.write("tools/run.sh", "#!/bin/sh\necho hi\n")
    a.path("tools/run.sh").chmod(0o755)
    a.sync()
    hist = a.engine().history("assets/photo.bin")
    assert len(hist[0].meta.chunks) == 5
    b.sync()
    assert b.read("assets/photo.bin") == big
    assert b.read("empty.md") == b""
    assert os.stat(b.path("tools/run.sh")).st_mode & 0o100
    cluster.assert_converged()
    partial = b.engine().core.partial_dir
    assert not partial.exists() or not any(partial.iterdir())  # resumable parts cleaned up


def test_a_mode_change_alone_is_no_change_and_the_bit_travels_with_the_next_edit(
    cluster: SyncCluster,
) -> None:
    """R24, decided: a change of the executable bit alone (the bytes unchanged) is not sent;
    the bit rides the file's next content change. Mode flips come in bulk from folders without
    modes (exFAT, SMB, a checkout with `core.fileMode`), and the phone has no modes at all."""
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    a.write("tools/run.sh", "#!/bin/sh\necho hi\n")
    a.sync()
    b.sync()
    a.path("tools/run.sh").chmod(0o755)
    report = a.sync()
    assert report.uploaded == []
    assert len(a.engine().history("tools/run.sh")) == 1
    b.sync()
    assert not os.stat(b.path("tools/run.sh")).st_mode & 0o100
    a.write("tools/run.sh", "#!/bin/sh\necho hello\n")
    a.path("tools/run.sh").chmod(0o755)
    assert a.sync().uploaded == ["tools/run.sh"]
    b.sync()
    assert os.stat(b.path("tools/run.sh")).st_mode & 0o100


def test_offline_edits_queue_until_the_relay_answers(tmp_path: Path) -> None:
    with SyncCluster(tmp_path, relay="process") as c:
        a = c.add_device("laptop", "human")
        b = c.add_device("server", "agent")
        a.write("a.md", "one\n")
        a.sync()
        b.sync()
        c.relay.stop()
        a.write("a.md", "one\ntwo\n")
        a.write("new.md", "made offline\n")
        from companion.relayclient.errors import RelayUnreachable

        with pytest.raises(RelayUnreachable):
            a.sync()
        status = a.engine().core.status.read()
        assert status.state == "offline" and status.online is False
        a.restart()  # the device restarts too: the queue is the disk and the index
        c.relay.restart()
        report = a.sync()
        assert sorted(report.uploaded) == ["a.md", "new.md"]
        b.sync()
        assert b.read("new.md") == b"made offline\n"
        c.assert_converged()


def test_ignored_files_stay_local_and_ignore_file_is_shared(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    a.write(".obsidian/workspace.json", "{}")
    a.write(".obsidian/workspace-mobile.json", "{}")
    a.write(".obsidian/workspaces.json", '{"workspaces": {"Writing": {}}}')
    a.write(".obsidian/app.json", '{"theme": "dark"}')
    a.write(".trash/old.md", "gone\n")
    a.write(".companionignore", "drafts/\n*.tmp\n")
    a.write("drafts/idea.md", "not yet\n")
    a.write("x.tmp", "scratch")
    a.write("kept.md", "kept\n")
    a.sync()
    b.sync()
    assert sorted(b.files()) == [
        ".companionignore",
        ".obsidian/app.json",
        ".obsidian/workspaces.json",  # saved layouts are shared; the open layout is not
        "kept.md",
    ]
    # the other side follows the shared rules for its own files too
    b.write("drafts/mine.md", "private draft\n")
    b.sync()
    a.sync()
    assert a.read("drafts/mine.md") is None


def test_status_file_records_the_round(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    a.write("n.md", "x\n")
    a.sync()
    data = a.engine().core.status.read()
    assert data.state == "synced" and data.version == 1
    assert data.online is True and data.last_sync
    assert data.last_round is not None and data.last_round["uploaded"] == ["n.md"]
    assert data.pending == Pending(upload=0, download=0)


def test_joining_device_with_existing_files(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    a.write("same.md", "identical\n")
    a.write("differs.md", "laptop text\n")
    a.sync()
    vault = cluster.base / "vaults" / "server"
    vault.mkdir(parents=True)
    (vault / "same.md").write_text("identical\n")
    (vault / "differs.md").write_text("server text\n")
    b = cluster.add_device("server", "agent", vault=vault)
    report = b.sync()
    assert [c.path for c in report.conflicts] == ["differs.md"]  # same.md: no conflict
    a.sync()
    files = cluster.assert_converged()
    copies = [p for p in files if p.startswith("differs (conflict server")]
    assert files["differs.md"] == b"laptop text\n"  # a person's version wins over an agent's
    assert len(copies) == 1 and files[copies[0]] == b"server text\n"


def test_revoked_device_gets_a_clear_error(cluster: SyncCluster) -> None:
    from companion.relayclient.errors import AuthError

    a = cluster.add_device("laptop", "human")
    a.write("n.md", "x\n")
    a.sync()
    cluster.relay.revoke(a.engine().core.device.device_id)
    a.write("n.md", "y\n")
    with pytest.raises(AuthError) as err:
        a.sync()
    assert "revoked" in str(err.value)
    assert a.engine().core.status.read().errors[-1].kind == "auth"
    assert a.read("n.md") == b"y\n"  # the local edit is untouched


def test_restore_brings_back_a_deleted_file(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    a.write("Home.md", "# Home\n")  # not the vault's last file: deleting that asks first
    a.write("k.md", "first\n")
    a.sync()
    a.write("k.md", "second\n")
    a.sync()
    a.delete("k.md")
    a.sync()
    revs = a.engine().history("k.md")
    assert [ch.rev for ch in revs] == [3, 2, 1] and revs[0].deleted
    a.engine().restore("k.md", 1)
    b.sync()
    assert b.read("k.md") == b"first\n"
    assert [ch.rev for ch in a.engine().history("k.md")][0] == 4


def test_a_note_is_compressed_once_on_upload_and_never_on_download(
    cluster: SyncCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note's blob frame and its merge base are the same zlib stream of the same bytes:
    the upload compresses each note once (it compressed each twice, ~10 % of a first
    upload's CPU) and the download keeps the stream it received (it compressed each note
    again); every base still reads back as the note, binary files aside."""
    import zlib

    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("phone", "human")
    notes = {f"notes/n{i}.md": (f"line of the note {i}\n" * 30).encode() for i in range(12)}
    for path, data in notes.items():
        a.write(path, data)
    a.write("img.png", os.urandom(3000))  # incompressible: stored as is, no base
    real = zlib.compress
    inputs: list[bytes] = []

    def counting(data: bytes, *args: object, **kw: object) -> bytes:
        inputs.append(bytes(data))
        return real(data, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(zlib, "compress", counting)
    a.sync()
    for data in notes.values():
        assert inputs.count(data) == 1
    index = a.engine().core.index
    for path, data in notes.items():
        assert index.bases.get(path) == data
    assert index.bases.get("img.png") is None
    inputs.clear()
    b.sync()  # the download keeps the stream each blob's frame brought: no compression at all
    assert not any(data in inputs for data in notes.values())
    monkeypatch.setattr(zlib, "compress", real)
    assert {p: b.read(p) for p in notes} == notes
    for path, data in notes.items():
        assert b.engine().core.index.bases.get(path) == data
    assert b.engine().core.index.bases.get("img.png") is None
