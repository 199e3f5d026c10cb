"""Everything the relay writes is owner-only (issue #12, item 13), even in a data folder the
admin created with loose modes under a permissive umask: the database and its -wal and -shm
(the WAL holds the wrapped key), blob files, and every folder. `companion doctor` checks a
relay data folder's modes."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from companion.relay.sqlite_storage import SqliteStorage
from companion.relay.storage import NewRecord
from tests.conftest import run_companion
from tests.relaybackends import damage

V = "00000000000000aa"


@pytest.fixture
def loose_umask():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def loose_entries(root: Path) -> list[str]:
    out = []
    for p in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(p.lstat().st_mode)
        if mode & 0o077:
            out.append(f"{p.relative_to(root.parent)} {oct(mode)}")
    return out


def use(store: SqliteStorage) -> None:
    store.create_vault(V, 1.0)
    store.put_key_blob(V, b"k" * 89, None, 1.0)
    store.put_blob(V, "ab" * 16, b"ciphertext", 1.0)
    store.commit(V, "d" * 16, [NewRecord("cd" * 16, 1, 0, b"sealed", ("ab" * 16,))], 1.0)
    store.put_blob(V, "ef" * 16, b"to be damaged", 1.0)
    damage(store, V, "ef" * 16, b"damaged bytes")
    with pytest.raises(Exception):  # noqa: B017 - BlobCorrupt: moved to quarantine/
        store.read_blob(V, "ef" * 16)


def test_everything_the_relay_writes_is_owner_only(tmp_path, loose_umask):
    data = tmp_path / "relay"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)  # as `sudo mkdir /var/lib/companion-relay` leaves it
    store = SqliteStorage(data)
    try:
        use(store)
        assert (data / "relay.db-wal").exists() and (data / "relay.db-shm").exists()
        assert any((data / "quarantine").iterdir())
        assert loose_entries(data) == []
    finally:
        store.close()


def test_loose_modes_left_by_an_older_relay_are_tightened_on_open(tmp_path, loose_umask):
    data = tmp_path / "relay"
    store = SqliteStorage(data)
    use(store)
    store.close()

    def loosen() -> None:  # what an older relay (or a careless copy) left behind
        for p in [data, *data.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)

    loosen()
    SqliteStorage(data).close()  # every open: the database files and every folder
    left = loose_entries(data)
    assert all(e.startswith("relay/blobs/") and (data.parent / e.split()[0]).is_file()
               for e in left), left  # fmt: skip
    loosen()
    db = sqlite3.connect(data / "relay.db")
    db.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    db.commit()
    db.close()
    SqliteStorage(data).close()  # the upgrade from schema 1 also tightens every blob file
    assert loose_entries(data) == []


def test_doctor_checks_a_relay_data_folder(tmp_path, loose_umask):
    data = tmp_path / "relay"
    store = SqliteStorage(data)
    use(store)
    store.close()
    os.chmod(data / "relay.db", 0o644)

    def doctor() -> dict:
        res = run_companion("doctor", "--relay-data", str(data), "--json")
        return {c["name"]: c for c in json.loads(res.stdout)["checks"]}

    check = doctor()["relay data"]
    assert check["status"] == "FAIL" and "relay.db" in check["detail"]
    assert "chmod" in check["fix"] and str(data) in check["fix"]
    os.chmod(data / "relay.db", 0o600)
    assert doctor()["relay data"]["status"] == "ok"
