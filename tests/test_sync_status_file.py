"""`status.json`, the typed and versioned contract between the engine and its readers
(`companion/sync/state/status.py`, docs/sync.md §1): round trip, a file written before the
version existed, a corrupt file, a file from a newer companion."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from companion.sync.state.status import (
    MAX_ERRORS,
    STATUS_VERSION,
    ConflictEntry,
    ErrorEntry,
    HeldEntry,
    NotSyncedEntry,
    Pending,
    ProblemEntry,
    QuarantinedEntry,
    Status,
    StatusStore,
    StatusVersionError,
)
from tests.syncharness import SyncCluster

# What the engine wrote after a round before the file had a version (HEAD dddf296's
# `StatusStore`: `_empty()` updated by `SyncEngine._finished`, `add_conflicts`, `add_error`).
UNVERSIONED: dict[str, Any] = {
    "conflicts": [
        {
            "copy": "plan (conflict desk 2026-12-01 0759).md",
            "kept": "laptop",
            "message": "plan.md: both changed",
            "moved": "desk",
            "outcome": "local_wins",
            "path": "plan.md",
            "time": 1764575998.1,
        },
    ],  # fmt: skip
    "daemon": None,  # never set by any writer; who owns the copy is the lock's holder file
    "errors": [
        {"kind": "offline", "message": "cannot reach the relay", "time": 1764570000.0},
        {"kind": "quarantine", "message": "1 file(s) quarantined", "time": 1764575990},
    ],
    "held": [
        {
            "author": "server",
            "decision": "",
            "path": ".obsidian/app.json",
            "reason": "changes Obsidian's settings",
            "rev": 4,
            "since": 1764575300.0,
        },
    ],  # fmt: skip
    "last_attempt": 1764576000.5,
    "last_round": {"converged": True, "downloaded": ["a.md"], "passes": 2, "uploaded": []},
    "last_sync": 1764576001.25,
    "not_synced": [
        {"detail": "5,000 bytes is over the limit", "path": "big.bin", "reason": "too_large"}
    ],  # fmt: skip
    "not_synced_count": 3,
    "online": True,
    "pending": {"download": 1, "upload": 2},
    "problems": [{"path": "link/n.md", "reason": "goes through a symbolic link"}],
    "quarantined": [
        {
            "author": "server",
            "decision": "",
            "file_id": "3b1f00",
            "path": "",
            "rev": 9,
            "reason": "cannot be opened",
            "since": 1764575301.0,
        },
    ],  # fmt: skip
    "state": "pending",
}


def _write(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")


def test_a_file_written_before_the_version_reads_identically(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    _write(path, UNVERSIONED)
    s = StatusStore(path).read()
    assert s == Status(
        state="pending",
        online=True,
        last_sync=1764576001.25,
        last_attempt=1764576000.5,
        last_round=UNVERSIONED["last_round"],
        pending=Pending(upload=2, download=1),
        conflicts=(
            ConflictEntry(
                "plan.md",
                "plan (conflict desk 2026-12-01 0759).md",
                "laptop",
                "desk",
                "local_wins",
                "plan.md: both changed",
                1764575998.1,
            ),
        ),  # fmt: skip
        errors=(
            ErrorEntry(1764570000.0, "offline", "cannot reach the relay"),
            ErrorEntry(1764575990, "quarantine", "1 file(s) quarantined"),
        ),
        held=(
            HeldEntry(
                ".obsidian/app.json", 4, "changes Obsidian's settings", "server", 1764575300.0, ""
            ),
        ),  # fmt: skip
        quarantined=(
            QuarantinedEntry("", "3b1f00", 9, "cannot be opened", "server", 1764575301.0, ""),
        ),
        problems=(ProblemEntry("link/n.md", "goes through a symbolic link"),),
        not_synced=(NotSyncedEntry("big.bin", "too_large", "5,000 bytes is over the limit"),),
        not_synced_count=3,
    )
    # written back: every value as it was (an int time stays an int), plus the version
    expected = {k: v for k, v in UNVERSIONED.items() if k != "daemon"}
    assert s.to_json() == {**expected, "version": STATUS_VERSION}


def test_round_trip_through_the_store(tmp_path: Path) -> None:
    store = StatusStore(tmp_path / "state" / "status.json")
    assert store.read() == Status()  # no file yet: never synced
    store.update(lambda s: replace(s, state="syncing", last_attempt=10.0))
    store.add_conflicts([ConflictEntry("a.md", "a (conflict x 2026-01-01 0000).md", "me",
                                       "x", "local_wins", "both changed", 11.0)])  # fmt: skip
    for i in range(MAX_ERRORS + 3):
        store.add_error("offline", f"try {i}")
    done = store.update(
        lambda s: replace(
            s, state="synced", online=True, pending=Pending(0, 4), last_round={"passes": 1},
            not_synced=(NotSyncedEntry("x.bin", "too_large", "big"),), not_synced_count=1,
        )
    )  # fmt: skip
    again = store.read()
    assert again == done
    assert again.last_attempt == 10.0 and again.conflicts[0].copy.endswith("0000).md")
    assert [e.message for e in again.errors] == [f"try {i}" for i in range(3, MAX_ERRORS + 3)]
    on_disk = json.loads(store.path.read_text(encoding="utf-8"))
    assert on_disk["version"] == STATUS_VERSION
    assert on_disk["pending"] == {"upload": 0, "download": 4}
    assert again.last_error is not None and again.last_error.message == f"try {MAX_ERRORS + 2}"


def test_an_error_older_than_the_latest_round_is_not_the_last_error() -> None:
    s = Status(last_attempt=100.0, errors=(ErrorEntry(99.0, "offline", "down"),))
    assert s.last_error is None and s.errors  # history only
    assert replace(s, last_attempt=98.0).last_error == ErrorEntry(99.0, "offline", "down")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[1, 2]",
        '"synced"',
        "null",
        "\x00\x01",
        '{"state": 7, "pending": "lots", '
        '"errors": [1, {"kind": 3}], "online": "yes", "not_synced_count": true}',
    ],
    ids=["empty", "truncated", "list", "string", "null", "binary", "wrong-types"],
)
def test_a_corrupt_file_reads_as_defaults_never_a_key_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "status.json"
    path.write_text(text, encoding="utf-8")
    s = StatusStore(path).read()
    assert s.state == "never_synced" and s.pending == Pending() and s.online is None
    assert all(isinstance(e, ErrorEntry) for e in s.errors)
    assert s.not_synced_count == 0
    StatusStore(path).add_error("offline", "down")  # a writer replaces it whole
    assert StatusStore(path).read().errors[-1].kind == "offline"


def test_a_newer_version_is_refused_by_readers_and_replaced_by_writers(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    _write(path, {"version": STATUS_VERSION + 1, "state": {"phase": "synced"}, "errors": "x"})
    with pytest.raises(StatusVersionError) as err:
        StatusStore(path).read()
    assert f"status version {STATUS_VERSION + 1}" in str(err.value)
    assert "newer companion" in str(err.value)
    # the engine owning the copy now writes its own version (the file is the latest round's)
    StatusStore(path).update(lambda s: replace(s, state="synced"))
    s = StatusStore(path).read()
    assert s.state == "synced" and s.version == STATUS_VERSION and s.errors == ()


def test_status_says_when_a_newer_companion_wrote_the_file(tmp_path: Path) -> None:
    """`companion status` and the desktop app read the file of a copy an engine owns; one a
    newer companion wrote is named in `last_error`, not a traceback, and the next round of
    this engine writes it afresh."""
    from companion.sync.commands.statusview import collect_status
    from companion.sync.state.device import status_file

    with SyncCluster(tmp_path) as cluster:
        a = cluster.add_device("laptop", "human")
        a.write("n.md", "x\n")
        a.sync()
        path = status_file(a.paths, a.vault)
        _write(path, {"version": 99, "state": "synced"})
        info = collect_status(a.paths, a.config, a.vault, probe=False)
        assert info["state"] == "never_synced"
        assert info["last_error"]["kind"] == "status_version"
        assert "status version 99" in info["last_error"]["message"]
        out = a.cli("status", str(a.vault), "--offline")
        assert out.returncode == 0, out.stderr
        assert "newer companion" in out.stdout
        assert "last error: never" not in out.stdout  # no time: it was read just now
        a.sync()
        assert a.engine().core.status.read().state == "synced"
        info = collect_status(a.paths, a.config, a.vault, probe=False)
        assert info["state"] == "synced" and info["last_error"] is None
