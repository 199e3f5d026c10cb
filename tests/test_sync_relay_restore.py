"""A relay restored from a backup (#12.11): devices resynchronise, re-offer what it lost, and
lose nothing. The relay is a real `companion relay serve` process whose data folder is put
back to an earlier copy while the devices keep their newer state."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.syncharness import SyncCluster


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
