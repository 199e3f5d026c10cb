"""The edge cases real vaults and real editors hit (issue 17), each against a real relay.

1. a rename racing an edit: the edit follows the rename;
2. a save built from a stale buffer right after a remote change: merged, never silent;
3. an edit that keeps size and mtime: seen (inode change time), no round loops;
4. partial files: the usual temp names are ignored, a file is uploaded once it is stable;
5. NFC and NFD twins in one folder: both kept, one renamed visibly, reported;
6. a conflict is listed on every device's status, not only where it was detected;
7. a remote change refused because of a symbolic link is a problem (status, exit code);
8. `restore` (and held/quarantine decisions) go through the engine of a running `watch`.

Timing that real editors produce (a save 0.5 s after an apply, a copy that pauses) is set
with explicit mtimes or injected clocks, never with sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import unicodedata
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.syncharness import Device, SyncCluster


@pytest.fixture
def cluster(tmp_path: Path):
    with SyncCluster(tmp_path) as c:
        yield c


def _pair(cluster: SyncCluster, second_kind: str = "human") -> tuple[Device, Device]:
    return cluster.add_device("laptop", "human"), cluster.add_device("desk", second_kind)


def _copies(files: dict[str, bytes]) -> list[str]:
    return sorted(p for p in files if " (conflict " in p)


# ------------------------------------------------------------------ 1. rename racing an edit


@pytest.mark.parametrize("edit_first", [True, False])
def test_a_folder_rename_racing_an_edit_carries_the_edit(
    cluster: SyncCluster, edit_first: bool
) -> None:
    a, b = _pair(cluster)
    for i in range(200):
        a.write(f"old/n{i:03}.md", f"# Note {i}\nline\n")
    a.sync()
    b.sync()
    a.rename("old", "new")  # the whole folder
    b.write("old/n005.md", "# Note 5\nline\nedited on the desk\n")
    first, second = (b, a) if edit_first else (a, b)
    first.sync()
    second.sync()
    cluster.sync_all()
    files = cluster.assert_converged()
    assert [p for p in files if not p.startswith("new/")] == []  # nothing resurrected
    assert files["new/n005.md"] == b"# Note 5\nline\nedited on the desk\n"
    assert len(files) == 200 and _copies(files) == []  # no duplicate, no copy


@pytest.mark.parametrize("edit_first", [True, False])
def test_a_note_renamed_and_edited_here_merges_an_edit_made_there(
    cluster: SyncCluster, edit_first: bool
) -> None:
    a, b = _pair(cluster, "agent")
    a.write("plan.md", "title\nmiddle\nend\n")
    a.sync()
    b.sync()
    a.rename("plan.md", "projects/plan.md")
    a.write("projects/plan.md", "title, renamed and edited by the person\nmiddle\nend\n")
    b.write("plan.md", "title\nmiddle\nend, edited by the agent\n")
    first, second = (b, a) if edit_first else (a, b)
    first.sync()
    second.sync()
    cluster.sync_all()
    files = cluster.assert_converged()
    assert files == {
        "projects/plan.md": b"title, renamed and edited by the person\nmiddle\n"
        b"end, edited by the agent\n"
    }


# ------------------------------------------------------------------ 2. a save from a stale read


def _arrives(sender: Device, receiver: Device, before: str, after: str) -> None:
    """Both copies hold `before`; `sender` changes it to `after`, which `receiver` applies
    (the apply that opens the stale-save window)."""
    sender.write("n.md", before)
    sender.sync()
    receiver.sync()
    sender.write("n.md", after)
    sender.sync()
    assert receiver.sync().downloaded == ["n.md"]


def test_a_stale_save_right_after_a_remote_apply_is_merged(cluster: SyncCluster) -> None:
    a, b = _pair(cluster)
    a.write("n.md", "line 1\nline 2\nline 3\n")
    a.sync()
    b.sync()
    buffer = b.read("n.md")  # the editor on the desk read the note
    assert buffer is not None
    a.write("n.md", "line 1\nline 2, edited on the laptop\nline 3\n")
    a.sync()
    applied = b.sync()  # the laptop's edit lands on the desk
    assert applied.downloaded == ["n.md"]
    # 0.5 s later the editor writes its whole buffer: what it read, plus what was typed
    b.write("n.md", buffer + b"line 4, typed on the desk\n")
    report = b.sync()
    assert report.merged == ["n.md"] and not report.conflicts
    a.sync()
    files = cluster.assert_converged()
    assert files["n.md"] == (
        b"line 1\nline 2, edited on the laptop\nline 3\nline 4, typed on the desk\n"
    )


def test_a_stale_save_that_does_not_merge_leaves_a_conflict_copy(cluster: SyncCluster) -> None:
    a, b = _pair(cluster)
    a.write("n.md", "status: open\n")
    a.sync()
    b.sync()
    a.write("n.md", "status: done (laptop)\n")
    a.sync()
    b.sync()
    b.write("n.md", "status: blocked (desk, typed on the old text)\n")
    report = b.sync()
    assert len(report.conflicts) == 1
    cluster.sync_all()
    files = cluster.assert_converged()
    assert sorted(files.values()) == [
        b"status: blocked (desk, typed on the old text)\n", b"status: done (laptop)\n",
    ]  # fmt: skip


def test_an_edit_of_the_new_version_right_after_the_apply_is_an_ordinary_edit(
    cluster: SyncCluster,
) -> None:
    """Found by the state machine (`test_sync_props.py`), shrunk: the desk receives a line the
    laptop appended and at once appends one after it. That save holds the laptop's line, so it
    was made from the new version: it is pushed as it is. It was taken for a stale save, put in
    a conflict copy and the note reset; the next edit, which dropped the line only that copy
    held, was then "merged" with nothing in every pass and never uploaded."""
    a, b = _pair(cluster)
    _arrives(a, b, "v0\nline a\n", "v0\nline a\nfrom the laptop\n")
    b.write("n.md", "v0\nline a\nfrom the laptop\ntyped on the desk\n")
    report = b.sync()
    assert report.uploaded == ["n.md"] and not report.conflicts and not report.merged
    b.write("n.md", "v1, desk\nline a\nfrom the laptop\ntyped on the desk\n")
    report = b.sync()
    assert report.uploaded == ["n.md"] and report.converged
    a.sync()
    files = cluster.assert_converged()
    assert files == {"n.md": b"v1, desk\nline a\nfrom the laptop\ntyped on the desk\n"}


def test_an_edit_that_drops_the_line_the_new_version_dropped_is_ordinary(
    cluster: SyncCluster,
) -> None:
    """Both the new version and the save dropped the same line: the save was made from the
    new version (merge3 lists no region for an identical deletion; the test looks for it)."""
    a, b = _pair(cluster)
    _arrives(a, b, "v0\nx\ngone soon\n", "v0\nx\n")
    b.write("n.md", "v1, desk\nx\n")
    report = b.sync()
    assert report.uploaded == ["n.md"] and report.converged and report.passes <= 2
    a.sync()
    assert cluster.assert_converged() == {"n.md": b"v1, desk\nx\n"}


def test_a_stale_save_that_wins_its_conflict_is_pushed(cluster: SyncCluster) -> None:
    """The person's stale save clashes with the agent's change it never saw: the person's
    version stays in the note (a person's edit wins), the agent's goes to a conflict copy, and
    the note is pushed in that round. It was left unpushed, and every pass made the same
    decision again, until the stale-save window closed."""
    agent, person = cluster.add_device("server", "agent"), cluster.add_device("laptop", "human")
    _arrives(agent, person, "status: open\n", "status: done (agent)\n")
    person.write("n.md", "status: blocked (typed on the old text)\n")
    report = person.sync()
    assert "n.md" in report.uploaded
    assert len(report.conflicts) == 1 and report.converged
    agent.sync()
    files = cluster.assert_converged()
    assert files["n.md"] == b"status: blocked (typed on the old text)\n"
    assert [files[c] for c in _copies(files)] == [b"status: done (agent)\n"]


NOTE = "# Plan\nline 1\nline 2\nline 3\n"
RECEIVED = "# Plan\nline 1, from the laptop\nline 2\nline 3\n"


@pytest.mark.parametrize(
    ("saved", "edit"),
    [
        # holds the laptop's line 1, edits line 2: a new edit (issue 42.3)
        ("# Plan\nline 1, from the laptop\nline 2, the agent's\nline 3\n", True),
        # drops the laptop's line 1 while editing line 2: stale, reconciled (a conflict)
        ("# Plan\nline 1\nline 2, the agent's\nline 3\n", False),
    ],
)  # fmt: skip
def test_an_agent_edit_next_to_a_line_it_just_received(
    cluster: SyncCluster, saved: str, edit: bool
) -> None:
    """The agent receives the person's change to line 1 and, a second later, edits line 2 of
    the same note. Its save holds the received change, so it is a new edit: no conflict copy,
    both edits on every device. A save that drops the change just applied stays stale."""
    laptop, agent = cluster.add_device("laptop", "human"), cluster.add_device("server", "agent")
    third = cluster.add_device("desk", "human")
    _arrives(laptop, agent, NOTE, RECEIVED)
    agent.write("n.md", saved)  # within the window: its mtime is right after the apply
    report = agent.sync()
    cluster.sync_all()
    files = cluster.assert_converged()
    assert set(third.files()) == set(files)
    if edit:
        assert report.uploaded == ["n.md"] and not report.conflicts and not report.merged
        assert files == {"n.md": saved.encode()}
    else:  # the person's version stays, the agent's goes to a conflict copy
        assert len(report.conflicts) == 1
        assert files["n.md"] == RECEIVED.encode()
        assert [files[c] for c in _copies(files)] == [saved.encode()]


def test_a_save_long_after_the_apply_is_an_ordinary_edit(cluster: SyncCluster) -> None:
    a, b = _pair(cluster)
    a.write("n.md", "one\ntwo\n")
    a.sync()
    b.sync()
    a.write("n.md", "one\ntwo, laptop\n")
    a.sync()
    b.sync()
    b.write("n.md", "one, desk\ntwo\n")  # derives from the old text, but saved much later:
    later = time.time_ns() + 600 * 10**9  # the person's new version, as they wrote it
    os.utime(b.path("n.md"), ns=(later, later))
    report = b.sync()
    assert report.uploaded == ["n.md"] and not report.merged
    a.sync()
    assert cluster.assert_converged()["n.md"] == b"one, desk\ntwo\n"


# ------------------------------------------------------------------ 3. same size, same mtime


def _rewrite_keeping_stat(dev: Device, rel: str, data: bytes) -> None:
    st = os.stat(dev.path(rel))
    with open(dev.path(rel), "r+b") as f:  # in place: same inode
        f.write(data)
    os.utime(dev.path(rel), ns=(st.st_atime_ns, st.st_mtime_ns))  # `touch -d`
    after = os.stat(dev.path(rel))
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        st.st_size, st.st_mtime_ns, st.st_ino,
    )  # fmt: skip


def test_an_edit_that_keeps_size_and_mtime_is_seen(cluster: SyncCluster) -> None:
    a, b = _pair(cluster)
    a.write("n.md", b"a" * 40)
    a.sync()
    b.sync()
    _rewrite_keeping_stat(a, "n.md", b"b" * 40)
    assert a.sync().uploaded == ["n.md"]
    b.sync()
    assert b.read("n.md") == b"b" * 40


def test_a_hidden_edit_meeting_a_remote_edit_converges(cluster: SyncCluster) -> None:
    a, b = _pair(cluster)
    a.write("n.md", b"a" * 40)
    a.sync()
    b.sync()
    b.write("n.md", b"c" * 40)
    b.sync()
    _rewrite_keeping_stat(a, "n.md", b"b" * 40)
    report = a.sync()
    assert report.converged and len(report.conflicts) == 1
    cluster.sync_all()
    assert sorted(cluster.assert_converged().values()) == [b"b" * 40, b"c" * 40]


def _edit_no_stat_shows(device: Device, path: str, data: bytes) -> None:
    """Write `data` to `path`, then make the index's stat agree with the file's, as on a file
    system that keeps no inode change time: only re-hashing the file can show the edit."""
    from companion.sync.local.filestate import FileState

    device.path(path).write_bytes(data)
    key = FileState.from_stat(os.stat(device.path(path))).stat_key()
    device.engine().core.index.files.update_stats([(path, key)])


def test_the_rotating_hash_check_finds_an_edit_no_stat_shows(cluster: SyncCluster) -> None:
    """Where even the inode change time cannot help (a file system that does not keep it),
    every full round re-hashes a slice of the vault: going round it finds the edit."""
    a = cluster.add_device("laptop", "human", verify_per_round=2)
    for i in range(5):
        a.write(f"n{i}.md", f"note {i}\n")
    a.sync()
    _edit_no_stat_shows(a, "n3.md", b"note X\n")
    uploaded: list[str] = []
    for _ in range(3):
        uploaded += a.sync().uploaded
    assert uploaded == ["n3.md"]


def test_a_quiet_round_rehashes_a_bounded_number_of_bytes(
    cluster: SyncCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rotation is counted in bytes too: with attachments in the vault, a quiet round
    re-hashes at most its byte budget (or one file that is larger), and going round still finds
    an edit no stat shows."""
    import companion.sync.round.scanner as scanner_mod

    budget = 1 << 20
    a = cluster.add_device("laptop", "human", verify_bytes_per_round=budget)
    for i in range(6):
        a.write(f"attachments/p{i}.bin", os.urandom(400_000))
    for i in range(4):
        a.write(f"notes/n{i}.md", f"note {i}\n")
    a.sync()
    _edit_no_stat_shows(a, "notes/n2.md", b"note X\n")

    hashed: list[int] = []
    real_hash = scanner_mod.hash_file

    def counting(path: str, **kw: object) -> object:
        hashed.append(os.path.getsize(path))
        return real_hash(path, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(scanner_mod, "hash_file", counting)
    uploaded: list[str] = []
    for _ in range(6):
        hashed.clear()
        uploaded += a.sync().uploaded
        assert hashed, "every full round re-hashes a slice"
        assert sum(hashed) <= budget or len(hashed) == 1, hashed
    assert uploaded == ["notes/n2.md"]


# ------------------------------------------------------------------ 4. partial files


def test_browser_and_editor_temp_files_are_not_synced(cluster: SyncCluster) -> None:
    a, b = _pair(cluster)
    for name in (
        "inbox/video.mp4.crdownload", "inbox/paper.pdf.part", "inbox/#draft.md#",
        "inbox/.#draft.md", "inbox/book.epub.partial", "inbox/lu12345.tmp",
    ):  # fmt: skip
        a.write(name, "partial\n")
    a.write("inbox/draft.md", "the real note\n")
    assert a.sync().uploaded == ["inbox/draft.md"]


def test_a_file_still_being_written_waits_until_it_is_closed(cluster: SyncCluster) -> None:
    """A 12 MB copy that pauses between blocks: while the writer holds the file open, rounds
    leave it alone; once closed it goes out whole, as one revision."""
    from companion.sync.service.daemon import Daemon

    a, b = _pair(cluster)
    daemon = Daemon(a.engine(), rescan_interval_s=None)
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    try:
        assert daemon.ready.wait(15)
        block = os.urandom(2 << 20)
        with open(a.path("big.bin"), "wb") as out:
            for _ in range(3):
                with daemon.holding():  # no round until the watcher has seen this write
                    out.write(block)
                    out.flush()
                    wait_for(lambda: "big.bin" in daemon.busy_paths(), what="the writer seen")
                outcome = daemon.wait_round(daemon.request_round(), 30)
                assert outcome is not None and outcome.error is None
                assert a.engine().core.remote.head("big.bin") is None  # nothing torn went out
        wait_for(lambda: a.engine().core.remote.head("big.bin") is not None, what="upload")
        hist = a.engine().history("big.bin")
        assert [ch.meta.size for ch in hist] == [3 * len(block)]
    finally:
        daemon.stop()
        thread.join(10)
    b.sync()
    assert b.read("big.bin") == block * 3


def test_without_events_a_large_file_needs_a_longer_quiet_period(tmp_path: Path) -> None:
    """`companion sync` has no close events: a file is stable once unchanged for a quiet period
    that grows with its size (a copy pausing 120 ms between 2 MiB blocks is not done)."""
    from companion.sync.local.ignore import IgnoreRules
    from companion.sync.round.scanner import scan
    from companion.sync.state.index import SyncIndex

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "small.md").write_bytes(b"x" * 100)
    (vault / "big.bin").write_bytes(os.urandom(4 << 20))
    mtime = os.stat(vault / "big.bin").st_mtime_ns
    os.utime(vault / "small.md", ns=(mtime, mtime))
    with SyncIndex(tmp_path / "i.sqlite") as index:
        res = scan(vault, index, IgnoreRules(vault), clock=lambda: mtime + 120_000_000)
        assert res.unstable == ["big.bin"]
        assert [c.path for c in res.changed] == ["small.md"]
        res = scan(vault, index, IgnoreRules(vault), clock=lambda: mtime + 5 * 10**9)
        assert res.unstable == [] and len(res.changed) == 2


# ------------------------------------------------------------------ 5. NFC and NFD twins


def test_nfc_and_nfd_twins_are_both_kept_and_reported(cluster: SyncCluster) -> None:
    a, b = _pair(cluster)
    nfc = unicodedata.normalize("NFC", "notes/naïve.md")
    nfd = unicodedata.normalize("NFD", nfc)
    a.write(nfc, "composed\n")
    a.write(nfd, "decomposed\n")
    if len(os.listdir(a.path("notes"))) != 2:
        pytest.skip("this file system holds one file for both spellings")
    report = a.sync()
    assert [c.outcome for c in report.conflicts] == ["unicode_twin"]
    twin = report.conflicts[0].copy
    assert twin == "notes/naïve (unicode conflict).md"
    assert a.files() == {nfc: b"composed\n", twin: b"decomposed\n"}
    b.sync()
    assert cluster.assert_converged() == {nfc: b"composed\n", twin: b"decomposed\n"}
    again = a.sync()
    assert not again.changed and again.converged


# ------------------------------------------------------------------ 6. conflicts everywhere


def test_a_conflict_is_listed_on_every_device(cluster: SyncCluster) -> None:
    from companion.sync.commands.statusview import collect_status

    a, b = _pair(cluster, "agent")
    a.write("plan.md", "base\n")
    a.sync()
    b.sync()
    a.write("plan.md", "the person's\n")
    b.write("plan.md", "the agent's\n")
    b.sync()
    a.sync()  # the laptop detects it
    b.sync()  # the desk only receives the copy
    for dev in (a, b):
        status = collect_status(dev.paths, dev.config, dev.vault, probe=False)
        assert [c["copy"] for c in status["conflicts"]] == _copies(dev.files()), dev.name
        assert status["state"] == "conflict"
    out = b.cli("status", str(b.vault), "--offline")
    assert "conflicts (1" in out.stdout and "plan (conflict desk" in out.stdout


def test_a_note_named_like_a_conflict_copy_is_not_a_conflict(cluster: SyncCluster) -> None:
    """The round's state and `companion status` agree with the one rule of what a copy is
    (`conflicts.is_kept_copy`): a note the person named "... (conflict resolution)" is not one.
    The round used to put the vault in state "conflict" on the SQL pattern alone."""
    from companion.sync.commands.statusview import collect_status

    a, _ = _pair(cluster)
    a.write("Meeting (conflict resolution).md", "how we settle things\n")
    a.sync()
    assert a.engine().core.status.read().state == "synced"
    status = collect_status(a.paths, a.config, a.vault, probe=False)
    assert status["state"] == "synced" and status["conflicts"] == []


# ------------------------------------------------------------------ 7. refused through a link


def test_a_change_refused_because_of_a_symlink_is_a_problem(
    cluster: SyncCluster, tmp_path: Path
) -> None:
    a, b = _pair(cluster)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, a.path("notes"))
    b.write("notes/x.md", "from the desk\n")
    b.sync()
    a.restart()
    out = a.cli("sync", str(a.vault))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "notes/x.md" in out.stderr and "symbolic link" in out.stderr
    assert list(outside.iterdir()) == []  # nothing written through it
    status = json.loads(a.cli("status", str(a.vault), "--json", "--offline").stdout)
    assert [p["path"] for p in status["problems"]] == ["notes/x.md"]
    assert status["state"] != "synced"
    # the person replaces the link by a folder: the change arrives
    os.unlink(a.path("notes"))
    a.path("notes").mkdir()
    out = a.cli("sync", str(a.vault))
    assert out.returncode == 0, out.stderr
    assert a.read("notes/x.md") == b"from the desk\n"
    status = json.loads(a.cli("status", str(a.vault), "--json", "--offline").stdout)
    assert status["problems"] == []


# ------------------------------------------------------------------ 8. through a running watch


def _watch(dev: Device) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion", "watch", str(dev.vault)],
        env=dev.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    from companion.sync.commands.statusview import collect_status

    def up() -> bool:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        info = collect_status(dev.paths, dev.config, dev.vault, probe=False)
        return info["daemon"] is not None and info["last_sync"] is not None

    wait_for(up, 30, "watch started and synced")
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_restore_goes_through_a_running_watch(cluster: SyncCluster) -> None:
    a, b = _pair(cluster)
    a.write("n.md", "version 1\n")
    a.sync()
    a.write("n.md", "version 2\n")
    a.sync()
    a.restart()
    proc = _watch(a)
    try:
        out = a.cli("restore", str(a.vault), "n.md", "--rev", "1")
        assert out.returncode == 0, out.stderr
        assert "restored n.md to revision 1" in out.stdout
        assert a.read("n.md") == b"version 1\n"  # done when the command returns
        bad = a.cli("restore", str(a.vault), "n.md", "--rev", "9")
        assert bad.returncode == 2
        errors = [line for line in bad.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "no revision 9" in errors[0]
    finally:
        _stop(proc)
    b.sync()
    assert b.read("n.md") == b"version 1\n"
    assert [ch.rev for ch in b.engine().history("n.md")] == [3, 2, 1]


def test_sync_goes_through_a_running_watch(cluster: SyncCluster) -> None:
    """`companion sync` while `watch` owns the copy: the watch runs the round and the command
    prints its report and exits with its status, instead of exit 4 "locked"."""
    a, b = _pair(cluster)
    a.sync()
    a.restart()
    proc = _watch(a)
    try:
        b.write("from-desk.md", "written on the desk\n")
        b.sync()
        out = a.cli("sync", str(a.vault))
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("synced: ")
        assert a.read("from-desk.md") == b"written on the desk\n"  # done when it returns
        out = a.cli("sync", str(a.vault), "--json")
        assert out.returncode == 0, out.stderr
        summary = json.loads(out.stdout)
        assert summary["converged"] and summary["quarantined_files"] == []
        assert summary["full_scan"] is False  # its watcher vouched for what changed
        a.write("just-saved.md", "saved, then synced at once\n")
        out = a.cli("sync", str(a.vault), "--rescan", "--json")
        assert out.returncode == 0, out.stderr
        summary = json.loads(out.stdout)
        assert summary["full_scan"] is True
        b.sync()
        assert b.read("just-saved.md") == b"saved, then synced at once\n"
    finally:
        _stop(proc)


def test_commands_do_not_wait_on_a_holder_that_takes_no_requests(cluster: SyncCluster) -> None:
    """Another one-shot command (a `sync`, a `dream`) holds the lock: exit 4 at once, rather
    than wait ten minutes for a request nobody will take."""
    from companion.sync.service.lock import VaultLock
    from companion.sync.state.device import vault_dir

    a, _ = _pair(cluster)
    a.write("n.md", "version 1\n")
    a.sync()
    a.restart()
    with VaultLock(vault_dir(a.paths, os.path.realpath(a.vault)), command="companion sync"):
        for args in (("sync", str(a.vault)), ("restore", str(a.vault), "n.md", "--rev", "1")):
            out = a.cli(*args, timeout=60)
            assert out.returncode == 4, out.stderr
            assert "another companion is already syncing" in out.stderr


def test_held_decisions_are_carried_out_by_a_running_watch(cluster: SyncCluster) -> None:
    """The decision's round is a row in the job queue the running `watch` serves: the command
    prints that round's own report, not a guess (issue 43)."""
    a, server = _pair(cluster, "agent")
    server.write(".obsidian/hotkeys.json", '{"app:reload": []}\n')
    server.sync()
    a.sync()
    a.restart()
    proc = _watch(a)
    try:
        out = a.cli("held", "accept", str(a.vault), ".obsidian/hotkeys.json")
        assert out.returncode == 0, out.stderr
        assert "does it; waiting" in out.stderr  # the owner ran it
        assert out.stdout.splitlines() == [
            "accepted: .obsidian/hotkeys.json",
            "synced: 1 downloaded",  # the owner's round applied it
        ]
        assert a.read(".obsidian/hotkeys.json") == b'{"app:reload": []}\n'  # already done
    finally:
        _stop(proc)


def test_a_held_mass_deletion_is_the_outcome_of_every_round_asked_of_watch(
    cluster: SyncCluster,
) -> None:
    """`watch` saw the deletions once, in its own round, which held them back. A round asked of
    it afterwards scanned only what its watcher noted since, found nothing, and `companion
    sync` answered "synced: no changes", exit 0, while 15 deletions were held; run alone it
    exits 3. Now every asked round looks at the whole vault until one finds nothing held."""
    a, b = _pair(cluster)
    for i in range(20):
        a.write(f"knowledge/n{i:02d}.md", f"note {i}\n")
    a.sync()
    b.sync()
    a.restart()
    proc = _watch(a)
    try:
        for i in range(15):
            a.delete(f"knowledge/n{i:02d}.md")
        for _ in range(2):  # the second: after a round that held them back
            out = a.cli("sync", str(a.vault))
            assert out.returncode == 3, (out.stdout, out.stderr)
            assert "--allow-mass-delete" in out.stderr
        done = a.cli("sync", str(a.vault), "--allow-mass-delete")
        assert done.returncode == 0, done.stderr
        assert "15 deleted on other devices" in done.stdout
        again = a.cli("sync", str(a.vault))
        assert again.returncode == 0 and again.stdout == "synced: no changes\n", again.stderr
    finally:
        _stop(proc)
    b.sync()
    assert len(b.files()) == 5


def test_a_decision_through_a_running_watch_exits_with_its_rounds_status(
    tmp_path: Path,
) -> None:
    """The owner's round fails (the relay went away): `held accept` prints that round's error
    and exits 5, as it would have run alone, instead of claiming the decision was carried out."""
    with SyncCluster(tmp_path, relay="process") as cluster:
        a, server = _pair(cluster, "agent")
        server.write(".obsidian/hotkeys.json", '{"app:reload": []}\n')
        server.sync()
        a.sync()
        a.restart()
        proc = _watch(a)
        try:
            cluster.relay.stop()
            out = a.cli("held", "accept", str(a.vault), ".obsidian/hotkeys.json")
            assert out.returncode == 5, (out.stdout, out.stderr)
            assert out.stdout.splitlines() == ["accepted: .obsidian/hotkeys.json"]
            assert "does it; waiting" in out.stderr
            assert "local changes stay queued" in out.stderr
        finally:
            _stop(proc)


# ------------------------------------------------------------------ speed: the quiet round


def test_a_quiet_round_reads_no_row_of_the_files_table_it_does_not_need(
    cluster: SyncCluster,
) -> None:
    """The round a running engine runs for `companion sync` when its watcher saw nothing
    (`round(set())`) must find every row it reads through an index: on 10,000 notes, the two
    statements that read every row of `files` (the live count, the conflict copies) took 9 ms
    of a 13 ms round."""
    a, _ = _pair(cluster)
    for i in range(30):
        a.write(f"knowledge/n{i}.md", f"note {i}\n")
    a.write("plan (conflict desk 2026-01-02 0304).md", "a copy to find\n")
    a.write("gone.md", "deleted below: a tombstone to count\n")
    a.sync()
    a.delete("gone.md")
    a.sync()
    engine = a.engine()
    db = (
        engine.core.index.db.conn
    )  # no public hook shows the SQL a round runs; the test reads it here
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    try:
        report = engine.round(set())
    finally:
        db.set_trace_callback(None)
    assert report.converged and not report.changed
    assert engine.core.status.read().state == "conflict"  # the copy was found...
    assert engine.core.index.files.count_live() == 31  # ...and the tombstone not counted
    whole_reads = []
    for sql in {s for s in statements if s.lstrip().upper().startswith("SELECT")}:
        for row in db.execute("EXPLAIN QUERY PLAN " + sql).fetchall():
            if row[3].startswith("SCAN files") and "INDEX" not in row[3]:
                whole_reads.append(sql)
    assert whole_reads == []


# ------------------------------------------------------------------ what the scan leaves out


def test_local_files_the_scan_skips_are_listed_until_fixed(cluster: SyncCluster) -> None:
    """A file over the size limit, a name no other device can hold, a symbolic link: the scan
    skips them (never synced) and used to say so only in one warning per process, while the
    tray said synced. The round's status lists each with why, `status` prints them, and a
    round that looks at one again after it is fixed drops it, a full round or a watched one."""
    a, b = _pair(cluster)
    cfg = a.home / "config" / "config.toml"
    cfg.write_text(cfg.read_text() + "\n[sync]\nmax_file_mb = 0.001\n")  # 1,048 bytes
    a.restart()
    a.write("big.bin", b"x" * 5000)
    a.write("bad\x07name.md", "a bell in the name\n")
    os.symlink("/etc", a.path("etc-link"))
    a.write("ok.md", "fine\n")
    a.sync()
    status = a.engine().core.status.read()
    listed = {n.path: n for n in status.not_synced}
    assert set(listed) == {"big.bin", "bad\x07name.md", "etc-link"}
    assert listed["big.bin"].reason == "too_large"
    assert listed["big.bin"].detail == "5,000 bytes is over the sync size limit of 1,048 bytes"
    assert status.not_synced_count == 3
    out = a.cli("status", str(a.vault), "--offline")
    assert "not synced from here (3):" in out.stdout and "big.bin: " in out.stdout
    assert "bad\\x07name.md" in out.stdout  # the control character shown escaped
    assert "pending:    0 to upload" in out.stdout  # never going out is not waiting to
    b.sync()
    assert b.files() == {"ok.md": b"fine\n"}
    # fixed: the next full round drops it; a watched round looking at one path drops it too
    a.write("big.bin", b"small now\n")
    a.sync()
    assert {n.path for n in a.engine().core.status.read().not_synced} == {
        "bad\x07name.md", "etc-link"
    }  # fmt: skip
    os.unlink(a.path("etc-link"))
    a.sync(paths={"etc-link"})
    assert [n.path for n in a.engine().core.status.read().not_synced] == ["bad\x07name.md"]


def test_names_that_show_otherwise_than_they_are_are_not_synced(cluster: SyncCluster) -> None:
    """Issue 44.8: a bidirectional control shows `\u202egnp.md` as `dm.png`, and a fullwidth
    or leader dot passes for a hidden folder or '..'. Such a name never leaves the device it
    is on; the round lists it with why, and the rest syncs."""
    a, b = _pair(cluster)
    a.write("knowledge/\u202egnp.md", "reversed\n")
    a.write("\uff0eobsidian/plugins.md", "a fake config folder\n")
    a.write("knowledge/ok.md", "fine\n")
    a.sync()
    listed = {n.path: n.detail for n in a.engine().core.status.read().not_synced}
    assert "bidirectional" in listed["knowledge/\u202egnp.md"]
    assert "looks like a dot" in listed["\uff0eobsidian"] or any(
        "looks like a dot" in d for d in listed.values()
    )
    b.sync()
    assert b.files() == {"knowledge/ok.md": b"fine\n"}
