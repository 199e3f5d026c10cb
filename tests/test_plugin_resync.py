"""The Obsidian plugin after a relay restored from a backup (docs/protocol.md R3), end to end.

A real `companion relay serve` process, the plugin's `dist/cli.js` (a person's phone) and a
Python laptop. The relay's data folder is put back to an earlier copy while the phone keeps its
newer work, as `tests/test_sync_relay_restore.py` does for two Python devices. The phone's next
round sees `since_ahead`, compares each file it synced with the relay's head
(`resync.planResync`, the plugin's `plan_resync`) and offers again what the relay lost: a newer
version of a file the backup holds older, a file the backup lacks, a deletion the backup never
saw. Nothing is rolled back and the round does not stop with `RolledBack`; the laptop, which
synced only before the backup, then gets the phone's versions.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.syncharness import SyncCluster
from tests.test_plugin_interop import PluginDevice, plugin_cli


def restore(cluster: SyncCluster, backup: Path) -> None:
    """The admin puts the relay's data folder back to `backup`, on the same port."""
    relay = cluster.relay
    relay.stop()
    shutil.rmtree(relay.data_dir)
    shutil.copytree(backup, relay.data_dir)
    relay.restart()


def back_up(cluster: SyncCluster, backup: Path) -> None:
    relay = cluster.relay
    relay.stop()
    shutil.copytree(relay.data_dir, backup)
    relay.restart()


def test_the_plugin_offers_again_what_a_restored_relay_lost(tmp_path: Path) -> None:
    cli = plugin_cli()
    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        phone = PluginDevice(cluster, cli)
        phone.join()
        phone.write("notes/a.md", "a, version 1\n")
        phone.write("notes/b.md", "b stays\n")
        phone.write("notes/gone.md", "deleted after the backup\n")
        phone.synced()
        laptop.sync()
        assert laptop.read("notes/a.md") == b"a, version 1\n"
        backup = tmp_path / "relay-backup"
        back_up(cluster, backup)
        # the phone's work the backup does not hold; the laptop is away meanwhile
        phone.write("notes/a.md", "a, version 2 (after the backup)\n")
        phone.write("notes/c.md", "c, new after the backup\n")
        (phone.vault / "notes/gone.md").unlink()
        phone.synced()
        phone.write("notes/a.md", "a, version 3 (after the backup)\n")
        phone.synced()
        before = phone.files()
        restore(cluster, backup)  # the admin restores last night's backup
        first = phone.sync()
        out = first.stdout + first.stderr
        assert first.returncode == 0, out
        assert "RolledBack" not in out and "older than revision" not in out, out
        assert phone.files() == before  # nothing of the phone's rolled back
        errors = phone.status()["errors"]
        assert any(e["kind"] == "relay_restored" for e in errors), errors
        # what the relay lost reaches the laptop from the phone alone
        laptop.sync()
        assert laptop.read("notes/a.md") == b"a, version 3 (after the backup)\n"
        assert laptop.read("notes/c.md") == b"c, new after the backup\n"
        assert laptop.read("notes/gone.md") is None
        assert laptop.read("notes/b.md") == b"b stays\n"
        # and both rounds settle: nothing more to send, the copies the same
        again = phone.sync()
        assert again.returncode == 0, again.stdout + again.stderr
        laptop.sync()
        assert phone.files() == before
        assert laptop.files() == before
        desk = cluster.add_device("desk", "human")
        desk.sync()
        assert desk.files() == before


def test_watch_resyncs_when_the_relay_comes_back_restored(tmp_path: Path) -> None:
    """`cli.js watch` running while the relay is restored: its long-poll meets `since_ahead`
    and wakes a round (the relay went back: there is something to learn), and that round,
    scoped to what changed (nothing here), still scans and pushes what the relay lost."""
    cli = plugin_cli()
    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        phone = PluginDevice(cluster, cli)
        phone.join()
        phone.write("notes/a.md", "a, version 1\n")
        phone.synced()
        laptop.sync()
        backup = tmp_path / "relay-backup"
        back_up(cluster, backup)
        phone.write("notes/a.md", "a, version 2 (after the backup)\n")
        phone.write("notes/c.md", "c, new after the backup\n")
        phone.synced()
        last = phone.status()["last_sync"]
        proc = subprocess.Popen(
            ["node", str(phone.cli), "watch", str(phone.vault), "--rescan-minutes", "60"],
            env=phone.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_for(lambda: phone.status()["last_sync"] != last, what="the watch's first round")
            restore(cluster, backup)

            def arrived() -> bool:
                laptop.sync()
                return (
                    laptop.read("notes/a.md") == b"a, version 2 (after the backup)\n"
                    and laptop.read("notes/c.md") == b"c, new after the backup\n"
                )

            wait_for(arrived, timeout=60, what="the phone's versions after the restore")
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "older than revision" not in out + err, out + err
        assert phone.read("notes/a.md") == b"a, version 2 (after the backup)\n"


def test_the_plugin_notices_a_restore_others_carried_past_its_cursor(tmp_path: Path) -> None:
    """The phone's cursor is not ahead of the restored relay: the laptop committed past it
    first, so no `since_ahead`. The relay's `at_since` names another record at the phone's
    cursor than the one the phone saw there, and that is the restore noticed all the same."""
    cli = plugin_cli()
    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        phone = PluginDevice(cluster, cli)
        phone.join()
        phone.write("notes/a.md", "a\n")
        phone.synced()
        laptop.sync()
        backup = tmp_path / "relay-backup"
        back_up(cluster, backup)
        phone.write("notes/L.md", "the phone's, after the backup\n")
        phone.synced()  # its cursor: its own commit, which the backup lacks
        restore(cluster, backup)
        laptop.write("projects/s1.md", "s1, the laptop's\n")
        laptop.write("projects/s2.md", "s2, the laptop's\n")
        laptop.sync()  # past the phone's cursor
        first = phone.sync()
        out = first.stdout + first.stderr
        assert first.returncode == 0, out
        assert any(e["kind"] == "relay_restored" for e in phone.status()["errors"]), out
        assert phone.read("projects/s1.md") == b"s1, the laptop's\n"
        assert phone.read("projects/s2.md") == b"s2, the laptop's\n"
        laptop.sync()
        assert laptop.read("notes/L.md") == b"the phone's, after the backup\n"
        phone.write("notes/L.md", "the phone's, edited again\n")
        again = phone.sync()  # no RolledBack: the relay holds L.md again
        assert again.returncode == 0, again.stdout + again.stderr
        assert "RolledBack" not in again.stdout + again.stderr
        laptop.sync()
        assert laptop.read("notes/L.md") == b"the phone's, edited again\n"
        assert laptop.files() == phone.files()


@pytest.mark.parametrize("server_edits", [1, 2])
def test_the_plugin_keeps_both_edits_when_the_restored_relay_took_its_revision(
    tmp_path: Path, server_edits: int
) -> None:
    """The restore lost the phone's edit, and the Python server edited the same note on the
    restored relay, taking the revision the phone's edit had (and, with two edits, one more).
    Neither derives from the other (`planResync`'s `diverged`, as `plan_resync`'s `Diverged`;
    under a newer head, the relay's record at the phone's revision says so): the phone
    reconciles them like any two-sided change, the person's version keeps the note, the
    agent's goes to a conflict copy, and both devices list it (R3, R20, R22). With one edit it
    used to be re-offered on top, the server's edit left in the relay's history only; with
    two, the server's head replaced the phone's version, which was then nowhere."""
    from companion.sync.commands.statusview import collect_status

    cli = plugin_cli()
    with SyncCluster(tmp_path, relay="process") as cluster:
        server = cluster.add_device("server", "agent")
        phone = PluginDevice(cluster, cli)
        phone.join()
        phone.write("notes/a.md", "a, version 1\n")
        phone.synced()
        server.sync()
        backup = tmp_path / "relay-backup"
        back_up(cluster, backup)
        phone.write("notes/a.md", "a, the phone's version 2\n")
        phone.synced()
        restore(cluster, backup)
        for n in range(2, 2 + server_edits):  # the first at the phone's lost edit's revision
            server.write("notes/a.md", f"a, the server's version {n}\n")
            server.sync()
        theirs = f"a, the server's version {1 + server_edits}\n".encode()
        first = phone.sync()
        out = first.stdout + first.stderr
        assert first.returncode == 0, out
        assert any(e["kind"] == "relay_restored" for e in phone.status()["errors"]), out
        assert phone.read("notes/a.md") == b"a, the phone's version 2\n"
        copies = [p for p in phone.files() if p.startswith("notes/a (conflict server ")]
        assert len(copies) == 1, sorted(phone.files())
        assert phone.read(copies[0]) == theirs
        server.sync()
        again = phone.sync()
        assert again.returncode == 0, again.stdout + again.stderr
        assert server.files() == phone.files()
        assert set(phone.files()) == {"notes/a.md", copies[0]}
        assert [c["copy"] for c in phone.status()["conflicts"]] == copies
        st = collect_status(server.paths, server.config, server.vault, probe=False)
        assert [c["copy"] for c in st["conflicts"]] == copies


def test_the_plugin_resyncs_when_a_push_finds_the_relay_lost_its_revision(
    tmp_path: Path,
) -> None:
    """The phone's round stopped after its commit and before it pulled it back (its saved
    cursor is the one from before the round), and the backup lacks the commit while the record
    at the cursor is the same: no `since_ahead`, no `at_since` mismatch. Its next edit of the
    note is refused by the relay, which has no revision at or after the phone's: that is the
    restore, resynchronised like one, and the edit reaches the laptop instead of `RolledBack`
    round after round (R3, as `tests/test_sync_relay_restore.py` for Python)."""
    cli = plugin_cli()
    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        phone = PluginDevice(cluster, cli)
        phone.join()
        phone.write("notes/a.md", "a, version 1\n")
        phone.synced()
        laptop.sync()
        backup = tmp_path / "relay-backup"
        back_up(cluster, backup)
        state_file = next((phone.home / "data" / "obsidian-cli").iterdir()) / "state.json"
        cursor_before = {k: v for k, v in json.loads(state_file.read_text()).items()
                         if k in ("cursor", "cursorMark")}  # fmt: skip
        phone.write("notes/a.md", "a, the phone's version 2\n")
        phone.synced()
        # the round as it stood between its commit and its pull: the cursor not moved yet
        state = json.loads(state_file.read_text())
        state.update(cursor_before)
        state_file.write_text(json.dumps(state))
        restore(cluster, backup)
        phone.write("notes/a.md", "a, the phone's version 3\n")
        first = phone.sync()  # was: RolledBack, and again every round
        out = first.stdout + first.stderr
        assert first.returncode == 0, out
        errors = phone.status()["errors"]
        assert any(e["kind"] == "relay_restored" for e in errors), errors
        laptop.sync()
        assert laptop.read("notes/a.md") == b"a, the phone's version 3\n"
        again = phone.sync()
        assert again.returncode == 0, again.stdout + again.stderr
        assert phone.files() == laptop.files()
