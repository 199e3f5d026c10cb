"""A relay restored from a backup (#12.11): devices resynchronise, re-offer what it lost, and
lose nothing. The relay is a real `companion relay serve` process whose data folder is put
back to an earlier copy while the devices keep their newer state."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from companion.crypto import RolledBack
from tests.syncharness import Device, Exchange, SyncCluster, WireProxy


def test_devices_resynchronise_after_the_relay_is_restored(tmp_path: Path) -> None:
    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        laptop.write("knowledge/a.md", "a, version 1\n")
        laptop.write("knowledge/b.md", "b stays\n")
        laptop.write("knowledge/gone.md", "deleted after the backup\n")
        laptop.sync()
        server.sync()
        relay = cluster.relay
        relay.stop()
        backup = tmp_path / "relay-backup"
        shutil.copytree(relay.data_dir, backup)
        relay.restart()
        # work the backup does not hold
        laptop.write("knowledge/a.md", "a, version 2 (after the backup)\n")
        laptop.write("knowledge/c.md", "c, new after the backup\n")
        laptop.delete("knowledge/gone.md")
        laptop.sync()
        server.write("projects/d.md", "d, the agent's, after the backup\n")
        server.sync()
        laptop.sync()
        before = cluster.assert_converged()
        # the admin restores last night's backup
        relay.stop()
        shutil.rmtree(relay.data_dir)
        shutil.copytree(backup, relay.data_dir)
        relay.restart()
        first = laptop.sync()
        assert first.relay_restored
        server.sync()
        cluster.sync_all()
        after = cluster.assert_converged()
        assert after == before  # nothing lost, nothing resurrected
        assert after["knowledge/a.md"] == b"a, version 2 (after the backup)\n"
        assert "knowledge/gone.md" not in after
        errors = laptop.engine().core.status.read().errors
        assert any(e.kind == "relay_restored" for e in errors)
        # and a device that joins now gets everything
        desk = cluster.add_device("desk", "human")
        desk.sync()
        assert desk.files() == after


def test_a_restore_is_noticed_after_others_commit_past_the_cursor(tmp_path: Path) -> None:
    """The laptop's cursor is not ahead of the restored relay (the server committed past it
    first), so no `since_ahead`: the record the relay now holds at the laptop's cursor is
    another one (`at_since`), and that is the restore noticed all the same."""
    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        laptop.write("notes/a.md", "a\n")
        laptop.sync()
        server.sync()
        relay = cluster.relay
        relay.stop()
        backup = tmp_path / "relay-backup"
        shutil.copytree(relay.data_dir, backup)
        relay.restart()
        laptop.write("notes/L.md", "the laptop's, after the backup\n")
        laptop.sync()  # its cursor: its own commit, which the backup lacks
        relay.stop()
        shutil.rmtree(relay.data_dir)
        shutil.copytree(backup, relay.data_dir)
        relay.restart()
        # the server, which had synced before the backup, commits past the laptop's cursor
        server.write("projects/s1.md", "s1, the server's\n")
        server.write("projects/s2.md", "s2, the server's\n")
        server.sync()
        first = laptop.sync()
        assert first.relay_restored
        assert laptop.read("projects/s1.md") == b"s1, the server's\n"
        server.sync()
        assert server.read("notes/L.md") == b"the laptop's, after the backup\n"
        laptop.write("notes/L.md", "the laptop's, edited again\n")
        laptop.sync()  # no RolledBack: the relay holds L.md again
        cluster.sync_all()
        after = cluster.assert_converged()
        assert after["notes/L.md"] == b"the laptop's, edited again\n"
        assert set(after) == {"notes/a.md", "notes/L.md", "projects/s1.md", "projects/s2.md"}


def test_a_restore_is_noticed_when_another_record_took_the_cursors_seq(tmp_path: Path) -> None:
    """The relay's sequence is back exactly at the laptop's cursor, held by another device's
    commit of the same file at the same revision: only the record's bytes tell them apart.

    Both edits survive (R3, R20): the laptop's edit was lost by the restore and the server's
    was made on the restored relay at the same revision, so neither derives from the other and
    the resync reconciles them like any two-sided change (`plan.Diverged`). The common version
    is not known for certain (R25: never guessed), so the conflict rules decide: the person's
    version keeps the note, the agent's goes to a conflict copy that every device lists."""
    from companion.sync.commands.statusview import collect_status

    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        laptop.write("notes/a.md", "a, version 1\n")
        laptop.sync()
        server.sync()
        relay = cluster.relay
        relay.stop()
        backup = tmp_path / "relay-backup"
        shutil.copytree(relay.data_dir, backup)
        relay.restart()
        laptop.write("notes/a.md", "a, the laptop's version 2\n")
        laptop.sync()
        relay.stop()
        shutil.rmtree(relay.data_dir)
        shutil.copytree(backup, relay.data_dir)
        relay.restart()
        server.write("notes/a.md", "a, the server's version 2\n")
        server.sync()  # the same file, the same revision, the same seq as the laptop's
        first = laptop.sync()
        assert first.relay_restored
        cluster.sync_all()
        after = cluster.assert_converged()
        assert after["notes/a.md"] == b"a, the laptop's version 2\n"
        copies = [p for p in after if p.startswith("notes/a (conflict server ")]
        assert len(copies) == 1, sorted(after)
        assert after[copies[0]] == b"a, the server's version 2\n"
        assert set(after) == {"notes/a.md", copies[0]}
        for dev in (laptop, server):
            status = collect_status(dev.paths, dev.config, dev.vault, probe=False)
            assert [c["copy"] for c in status["conflicts"]] == copies, dev.name


def test_an_edit_made_on_the_restored_relay_beats_a_deletion_it_lost(tmp_path: Path) -> None:
    """The laptop deleted a note, the restore lost the deletion, and the server edited the note
    on the restored relay at the revision the laptop's tombstone had: deleted against edited
    keeps the edit (R18, R20), on every device, where the resync used to delete it again."""
    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        laptop.write("notes/a.md", "a, version 1\n")
        laptop.write("notes/b.md", "b\n")  # one deletion of three files is no mass deletion
        laptop.write("notes/c.md", "c\n")
        laptop.sync()
        server.sync()
        relay = cluster.relay
        relay.stop()
        backup = tmp_path / "relay-backup"
        shutil.copytree(relay.data_dir, backup)
        relay.restart()
        laptop.delete("notes/a.md")
        laptop.sync()
        relay.stop()
        shutil.rmtree(relay.data_dir)
        shutil.copytree(backup, relay.data_dir)
        relay.restart()
        server.write("notes/a.md", "a, the server's version 2\n")
        server.sync()
        assert laptop.sync().relay_restored
        cluster.sync_all()
        after = cluster.assert_converged()
        assert after["notes/a.md"] == b"a, the server's version 2\n"
        assert set(after) == {"notes/a.md", "notes/b.md", "notes/c.md"}


def test_a_version_lost_under_newer_edits_on_the_restored_relay_is_kept(tmp_path: Path) -> None:
    """The restore lost the laptop's edit (revision 2), and the server edited the note twice on
    the restored relay (revisions 2 and 3). The relay's head is newer than the laptop's
    revision, but its record at that revision is not the laptop's: the head does not descend
    from the laptop's version, so it is reconciled, never applied over it (the laptop's
    version was nowhere else: it used to be replaced and lost)."""
    from companion.sync.commands.statusview import collect_status

    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        laptop.write("notes/a.md", "a, version 1\n")
        laptop.sync()
        server.sync()
        relay = cluster.relay
        relay.stop()
        backup = tmp_path / "relay-backup"
        shutil.copytree(relay.data_dir, backup)
        relay.restart()
        laptop.write("notes/a.md", "a, the laptop's version 2\n")
        laptop.sync()
        relay.stop()
        shutil.rmtree(relay.data_dir)
        shutil.copytree(backup, relay.data_dir)
        relay.restart()
        server.write("notes/a.md", "a, the server's version 2\n")
        server.sync()
        server.write("notes/a.md", "a, the server's version 3\n")
        server.sync()
        assert laptop.sync().relay_restored
        cluster.sync_all()
        after = cluster.assert_converged()
        assert after["notes/a.md"] == b"a, the laptop's version 2\n"
        copies = [p for p in after if p.startswith("notes/a (conflict server ")]
        assert len(copies) == 1, sorted(after)
        assert after[copies[0]] == b"a, the server's version 3\n"
        for dev in (laptop, server):
            status = collect_status(dev.paths, dev.config, dev.vault, probe=False)
            assert [c["copy"] for c in status["conflicts"]] == copies, dev.name


def test_a_note_both_created_across_the_restore_keeps_both(tmp_path: Path) -> None:
    """The laptop created a note after the backup, and the server created one of the same name
    on the restored relay: both are revision 1, neither derives from the other, and the
    resync reconciles them from revision 0 (a conflict copy; nothing at revision 0 is asked of
    the relay)."""
    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        laptop.write("notes/a.md", "a\n")
        laptop.sync()
        server.sync()
        relay = cluster.relay
        relay.stop()
        backup = tmp_path / "relay-backup"
        shutil.copytree(relay.data_dir, backup)
        relay.restart()
        laptop.write("notes/new.md", "the laptop's new note\n")
        laptop.sync()
        relay.stop()
        shutil.rmtree(relay.data_dir)
        shutil.copytree(backup, relay.data_dir)
        relay.restart()
        server.write("notes/new.md", "the server's new note\n")
        server.sync()
        assert laptop.sync().relay_restored
        cluster.sync_all()
        after = cluster.assert_converged()
        assert after["notes/new.md"] == b"the laptop's new note\n"
        copies = [p for p in after if p.startswith("notes/new (conflict server ")]
        assert len(copies) == 1, sorted(after)
        assert after[copies[0]] == b"the server's new note\n"


def _stuck_behind_own_commit(cluster: SyncCluster, tmp_path: Path, laptop: Device) -> Device:
    """The laptop's round stops after its commit of `notes/a.md` (version 2) and before it
    pulls it back: its cursor stays behind its own commit, the server's record lying in
    between. The relay is then restored from a backup that lacks the commit, while the record
    at the laptop's cursor is the same: no `since_ahead`, no `at_since` mismatch. Returns the
    server."""
    server = cluster.add_device("server", "agent")
    laptop.write("notes/a.md", "a, version 1\n")
    laptop.sync()
    server.sync()
    relay = cluster.relay
    relay.stop()
    backup = tmp_path / "relay-backup"
    shutil.copytree(relay.data_dir, backup)
    relay.restart()
    laptop.write("notes/a.md", "a, the laptop's version 2\n")
    engine = laptop.engine()

    def window(phase: str) -> None:
        if phase == "applied":  # after the laptop's pull: a record it will not have seen
            server.write("projects/s.md", "s, the server's\n")
            server.sync()
        elif phase == "pushed":  # committed, not pulled back: the round stops here
            engine.core.on_phase = None
            engine.core.stop_event.set()

    engine.core.on_phase = window
    stopped = laptop.sync()
    assert stopped.stopped and stopped.uploaded == ["notes/a.md"]
    laptop.restart()
    relay.stop()
    shutil.rmtree(relay.data_dir)
    shutil.copytree(backup, relay.data_dir)
    relay.restart()
    return server


def test_a_push_the_restored_relay_cannot_place_resyncs_instead_of_stopping(
    tmp_path: Path,
) -> None:
    """The laptop's next edit of the note the restore lost is refused by the relay, which has
    no revision at or after the one the laptop synced: that is the restore, resynchronised like
    one, and the edit reaches the relay instead of `RolledBack` round after round (R3)."""
    with SyncCluster(tmp_path, relay="process") as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = _stuck_behind_own_commit(cluster, tmp_path, laptop)
        laptop.write("notes/a.md", "a, the laptop's version 3\n")
        first = laptop.sync()  # was: RolledBack, and again every round
        assert first.relay_restored
        errors = laptop.engine().core.status.read().errors
        assert any(e.kind == "relay_restored" for e in errors)
        server.sync()
        cluster.sync_all()
        after = cluster.assert_converged()
        assert after == {
            "notes/a.md": b"a, the laptop's version 3\n",
            "projects/s.md": b"s, the server's\n",
        }


def test_a_relay_that_refuses_again_after_the_resync_stops_the_round(tmp_path: Path) -> None:
    """One resync per round: a relay that answers the re-offer with the same refusal (here a
    proxy turns its genuine commit into "no revision of that file") does not loop the device;
    the round stops with `RolledBack`, and the next one, told the truth, converges."""
    with SyncCluster(tmp_path, relay="process") as cluster:
        proxy = WireProxy(cluster.relay.url)
        try:
            laptop = cluster.add_device("laptop", "human", relay_url=proxy.url)
            server = _stuck_behind_own_commit(cluster, tmp_path, laptop)
            laptop.write("notes/a.md", "a, the laptop's version 3\n")
            lies: list[str] = []

            def refuse(ex: Exchange) -> Exchange:
                if ex.method == "POST" and ex.path.endswith("/commit") and ex.status == 200:
                    body = json.loads(ex.response_body)
                    lies.append(ex.path)  # the genuine refusal is a 409: left alone
                    body.update(committed=False, error="conflict", message="lost")
                    for r in body["results"]:
                        r.update(status="conflict", seq=None, head=None)
                    ex.status = 409
                    ex.response_body = json.dumps(body).encode()
                return ex

            proxy.tamper = refuse
            with pytest.raises(RolledBack, match="no revision"):
                laptop.sync()
            assert lies  # the re-offer after the resync was the one refused
            proxy.tamper = None
            laptop.sync()
            server.sync()
            cluster.sync_all()
            after = cluster.assert_converged()
            assert after["notes/a.md"] == b"a, the laptop's version 3\n"
        finally:
            proxy.close()
