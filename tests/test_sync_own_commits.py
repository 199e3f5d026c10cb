"""A device does not download its own commits back: when the relay's sequence numbers it was
given fill the whole gap after its cursor, the cursor moves past them without a pull; any
record of another device in between keeps the gap open and is pulled as usual."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from companion.relayclient.client import ChangesPage
from tests.syncharness import Device, SyncCluster


@pytest.fixture(params=["thread", "pg2"])
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[SyncCluster]:
    with SyncCluster(tmp_path, relay=request.param) as c:
        yield c


class ListedRecords:
    """Counts the records the relay lists to one engine (an observer on the real client)."""

    def __init__(self, device: Device) -> None:
        self.count = 0
        client = device.engine().core.remote.client
        real = client.changes_page

        def changes_page(*args: Any, **kw: Any) -> ChangesPage:
            page = real(*args, **kw)
            self.count += len(page.records)
            return page

        client.changes_page = changes_page  # type: ignore[method-assign]
        self.vault_seq = lambda: real(0, limit=1).vault_seq  # unobserved


def relay_seq(device: Device) -> int:
    return device.engine().core.remote.client.changes_page(0, limit=1).vault_seq


def test_own_commits_are_not_listed_back(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    for i in range(40):
        a.write(f"knowledge/n{i:02d}.md", f"note {i}\n")
    listed = ListedRecords(a)
    report = a.sync()
    assert len(report.uploaded) == 40 and report.converged
    assert listed.count == 0  # the second pass found nothing new: it did not list ours back
    assert a.engine().puller.cursor == listed.vault_seq()
    a.write("knowledge/n00.md", "note 0, edited\n")
    a.sync()
    assert listed.count == 0 and a.engine().puller.cursor == listed.vault_seq()


def test_a_commit_between_pull_and_push_is_still_pulled(cluster: SyncCluster) -> None:
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    for i in range(10):
        a.write(f"knowledge/n{i}.md", f"note {i}\n")
    core = a.engine().core
    fired: list[str] = []

    def between(phase: str) -> None:  # after a's pull, before its push
        if phase == "applied" and not fired:
            fired.append(phase)
            b.write("journal/today.md", "# Today\nfrom the server\n")
            assert b.sync().uploaded == ["journal/today.md"]

    core.on_phase = between
    report = a.sync()
    core.on_phase = None
    assert fired and report.converged
    assert a.read("journal/today.md") == b"# Today\nfrom the server\n"
    assert a.engine().puller.cursor == relay_seq(a)
    b.sync()
    cluster.assert_converged()


def test_a_gap_left_by_a_refused_commit_is_pulled(cluster: SyncCluster) -> None:
    """Both devices edit one note: the loser's commit is refused, so its own sequence numbers
    do not cover the winner's record; the winner's edit still arrives."""
    a = cluster.add_device("laptop", "human")
    b = cluster.add_device("server", "agent")
    a.write("Home.md", "# Home\n")
    a.sync()
    b.sync()
    a.write("Home.md", "# Home\nfrom the laptop\n")
    a.write("knowledge/new.md", "new\n")
    core = a.engine().core

    def race(phase: str) -> None:
        if phase == "applied":
            core.on_phase = None
            b.write("Home.md", "# Home\nfrom the server\n")
            b.sync()

    core.on_phase = race
    a.sync()
    assert b"from the laptop" in (a.read("Home.md") or b"")  # the person's edit wins
    assert any(b"from the server" in data for data in a.files().values())  # a conflict copy
    b.sync()
    a.sync()
    cluster.assert_converged()
