"""Who last wrote a file: the sync index's device kinds, own writes, the local device's kind."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from companion.dream.state import DreamState, MtimeEditors, edited_recently
from companion.sync.state.editors import SyncEditors
from companion.sync.state.index import SyncIndex, SyncIndexError
from tests.syncharness import SyncCluster


def _editors(dev, kind: str, state: DreamState) -> tuple[SyncEditors, SyncIndex]:
    index = SyncIndex(dev.engine().core.index.path, readonly=True)
    eds = SyncEditors(
        dev.vault, MtimeEditors(dev.vault, state), index=index, device_kind=kind,
        device_name=dev.name,
    )  # fmt: skip
    return eds, index


def test_kinds_come_from_the_index_and_the_disk(tmp_path: Path) -> None:
    with SyncCluster(tmp_path / "c") as cluster:
        laptop = cluster.add_device("laptop", "human")
        server = cluster.add_device("server", "agent")
        laptop.write("knowledge/person.md", "written by the person\n")
        laptop.sync()
        server.sync()
        state = DreamState(tmp_path / "state.json")
        data = b"written by the agent\n"
        server.write("knowledge/agent.md", data)
        state.record_write("knowledge/agent.md", data)
        eds, index = _editors(server, "agent", state)
        try:
            now = dt.datetime.now(dt.UTC)
            window = dt.timedelta(hours=1)
            person = eds.last_writer("knowledge/person.md")
            assert (person.kind, person.device, person.synced) == ("human", "laptop", True)
            assert edited_recently(eds, "knowledge/person.md", now, window)
            # not pushed yet: the own-writes record says it is the agent's
            assert eds.last_writer("knowledge/agent.md").kind == "agent"
            server.sync()
            pushed = eds.last_writer("knowledge/agent.md")
            assert (pushed.kind, pushed.synced) == ("agent", True)
            assert not edited_recently(eds, "knowledge/agent.md", now, window)
            # someone on the server changed a synced file outside the companion: unknown,
            # which counts as a person's edit
            server.write("knowledge/agent.md", "changed over ssh\n")  # the ctime moves
            assert eds.last_writer("knowledge/agent.md").kind == "unknown"
            assert edited_recently(eds, "knowledge/agent.md", dt.datetime.now(dt.UTC), window)
            # a deletion synced from the laptop is a tombstone written by the person
            laptop.sync()
            laptop.delete("knowledge/person.md")
            laptop.sync()
            server.sync()
            gone = eds.last_writer("knowledge/person.md")
            assert gone.deleted and gone.kind == "human"
            assert eds.last_human_edit("knowledge/person.md") is None
            recent = index.files.entries_since(0)
            assert {e.path for e in recent} >= {"knowledge/person.md", "knowledge/agent.md"}
        finally:
            index.close()


def test_on_a_human_device_a_local_change_is_the_person(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("typed here\n")
    eds = SyncEditors(tmp_path, MtimeEditors(tmp_path, DreamState(tmp_path / "s.json")))
    assert eds.last_writer("n.md").kind == "human"
    assert eds.last_writer("nothing.md").kind == "unknown"


def test_readonly_index_never_creates_or_writes(tmp_path: Path) -> None:
    missing = tmp_path / "sync" / "index.sqlite"
    with pytest.raises(SyncIndexError, match="has not synced"):
        SyncIndex(missing, readonly=True)
    assert not missing.parent.exists()
    rw = SyncIndex(missing)
    rw.close()
    ro = SyncIndex(missing, readonly=True)
    try:
        import sqlite3

        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            ro.db.conn.execute("CREATE TABLE x(a)")
        assert ro.files.get("a.md") is None
    finally:
        ro.close()
