"""True conflicts between devices: human precedence, three-way merge, delete-vs-edit, copies.

Each test makes both devices change the same file before either syncs, then checks the
resolution rule *and* that no version was lost (note, conflict copy or relay history).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.syncharness import Device, SyncCluster


@pytest.fixture(params=["thread", "pg2"])
def cluster(tmp_path: Path, request: pytest.FixtureRequest):
    """The relay in a thread (SQLite), and two relay processes on PostgreSQL with requests
    alternating between them."""
    with SyncCluster(tmp_path, relay=request.param) as c:
        yield c


def _copies(files: dict[str, bytes], stem: str) -> dict[str, bytes]:
    return {p: d for p, d in files.items() if p.startswith(f"{stem} (conflict ")}


def _history_contents(dev: Device, rel: str) -> set[bytes]:
    eng = dev.engine()
    return {eng.core.remote.fetch_one(ch.meta) for ch in eng.history(rel) if not ch.deleted}


def _start(cluster: SyncCluster, *kinds: tuple[str, str]) -> list[Device]:
    devs = [cluster.add_device(name, kind) for name, kind in kinds]
    devs[0].write("projects/plan.md", "# Plan\nstatus: open\n")
    devs[0].sync()
    for d in devs[1:]:
        d.sync()
    return devs


@pytest.mark.parametrize("agent_first", [True, False])
def test_human_edit_beats_agent_edit(cluster: SyncCluster, agent_first: bool) -> None:
    human, agent = _start(cluster, ("laptop", "human"), ("server", "agent"))
    human.write("projects/plan.md", "# Plan\nstatus: shipped by me\n")
    agent.write("projects/plan.md", "# Plan\nstatus: agent thinks blocked\n")
    order = [agent, human] if agent_first else [human, agent]
    reports = [d.sync() for d in order]
    cluster.sync_all()
    files = cluster.assert_converged()
    assert files["projects/plan.md"] == b"# Plan\nstatus: shipped by me\n"
    copies = _copies(files, "projects/plan")
    assert list(copies.values()) == [b"# Plan\nstatus: agent thinks blocked\n"]
    (copy_name,) = copies
    assert "conflict server" in copy_name  # named after the device whose version moved
    conflicts = [c for r in reports for c in r.conflicts]
    assert len(conflicts) == 1 and conflicts[0].moved == "server"
    assert "a person's edit wins" in conflicts[0].message
    # reported in the status the desktop app reads
    detector = order[1]
    assert detector.engine().core.status.read().conflicts[-1].copy == copy_name


def test_between_two_people_the_first_to_sync_wins(cluster: SyncCluster) -> None:
    a, b = _start(cluster, ("laptop", "human"), ("desktop", "human"))
    a.write("projects/plan.md", "# Plan\nstatus: A\n")
    b.write("projects/plan.md", "# Plan\nstatus: B\n")
    a.sync()
    b.sync()  # b detects the conflict: a's head is on the relay first
    cluster.sync_all()
    files = cluster.assert_converged()
    assert files["projects/plan.md"] == b"# Plan\nstatus: A\n"
    assert list(_copies(files, "projects/plan").values()) == [b"# Plan\nstatus: B\n"]


def test_edits_to_different_lines_are_merged(cluster: SyncCluster) -> None:
    a, b = _start(cluster, ("laptop", "human"), ("server", "agent"))
    base = "".join(f"line {i}\n" for i in range(10))
    a.write("projects/plan.md", base)
    a.sync()
    b.sync()
    a.write("projects/plan.md", base.replace("line 1\n", "line 1 (edited by a person)\n"))
    b.write("projects/plan.md", base.replace("line 8\n", "line 8 (edited by the agent)\n"))
    a.sync()
    report = b.sync()
    assert report.merged == ["projects/plan.md"] and not report.conflicts
    cluster.sync_all()
    files = cluster.assert_converged()
    merged = files["projects/plan.md"].decode()
    assert "line 1 (edited by a person)" in merged and "line 8 (edited by the agent)" in merged
    assert not _copies(files, "projects/plan")


@pytest.mark.parametrize("deleter_first", [True, False])
def test_delete_against_edit_keeps_the_edit(cluster: SyncCluster, deleter_first: bool) -> None:
    a, b = _start(cluster, ("laptop", "human"), ("server", "agent"))
    a.write("Home.md", "# Home\n")  # not the vault's last file: that would ask first
    a.sync()
    b.sync()
    a.delete("projects/plan.md")  # the person deletes
    b.write("projects/plan.md", "# Plan\nstatus: agent added a note\n")  # the agent edits
    order = [a, b] if deleter_first else [b, a]
    reports = [d.sync() for d in order]
    cluster.sync_all()
    files = cluster.assert_converged()
    assert files["projects/plan.md"] == b"# Plan\nstatus: agent added a note\n"
    assert any(r.kept_edits for r in reports)


def test_binary_conflict_keeps_both_versions(cluster: SyncCluster) -> None:
    a, b = _start(cluster, ("laptop", "human"), ("desktop", "human"))
    a.write("assets/img.png", b"\x89PNG\x00base")
    a.sync()
    b.sync()
    a.write("assets/img.png", b"\x89PNG\x00from a")
    b.write("assets/img.png", b"\x89PNG\x00from b")
    a.sync()
    report = b.sync()
    assert report.conflicts and report.conflicts[0].outcome == "remote_wins"
    cluster.sync_all()
    files = cluster.assert_converged()
    assert files["assets/img.png"] == b"\x89PNG\x00from a"
    assert list(_copies(files, "assets/img").values()) == [b"\x89PNG\x00from b"]


def test_both_create_the_same_new_file(cluster: SyncCluster) -> None:
    a, b = _start(cluster, ("laptop", "human"), ("server", "agent"))
    a.write("journal/2024-06-01.md", "# Done\n- same\n")
    b.write("journal/2024-06-01.md", "# Done\n- same\n")
    a.write("knowledge/git.md", "person's git notes\n")
    b.write("knowledge/git.md", "agent's git notes\n")
    b.sync()
    report = a.sync()
    assert [c.path for c in report.conflicts] == ["knowledge/git.md"]  # identical: no conflict
    cluster.sync_all()
    files = cluster.assert_converged()
    assert files["knowledge/git.md"] == b"person's git notes\n"
    assert list(_copies(files, "knowledge/git").values()) == [b"agent's git notes\n"]


def test_no_version_is_lost_in_a_conflict_chain(cluster: SyncCluster) -> None:
    """Every version each device synced is in the note, a copy or the relay history."""
    a, b, c = _start(cluster, ("laptop", "human"), ("desktop", "human"), ("server", "agent"))
    synced: set[bytes] = {b"# Plan\nstatus: open\n"}
    for i in range(3):
        for d in (a, b, c):
            text = f"# Plan\nstatus: {d.name} round {i}\n".encode()
            d.write("projects/plan.md", text)
            d.sync()
            synced.add(text)
    cluster.sync_all()
    files = cluster.assert_converged()
    kept = set(files.values()) | _history_contents(a, "projects/plan.md")
    for p in files:
        if p.startswith("projects/plan (conflict"):
            kept |= _history_contents(a, p)
    assert synced <= kept
