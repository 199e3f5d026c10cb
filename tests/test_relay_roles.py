"""Device roles on the relay (issue #12, items 1 and 5): the kind is fixed by the invite and
reported with every record; the wrapped key is checked, only a human device replaces it, and
every wrap is kept; a device can give up its own token (`leave`)."""

from __future__ import annotations

import base64
import hashlib
import os
import sqlite3
import struct

import pytest

from companion.relay.auth import issue_invite
from companion.relay.sqlite_storage import SqliteStorage
from tests.test_relay_api import Relay, assert_error, b64, commit, fid, rec, sha


def wrapped_key(memory_kib: int = 8192, iterations: int = 1, lanes: int = 1, version: int = 1,
                size: int = 89) -> bytes:  # fmt: skip
    """A blob with the wrapped key's clear header (the rest is random, as the relay sees it)."""
    head = struct.pack(">BIII", version, memory_kib, iterations, lanes)
    return (head + os.urandom(max(0, size - len(head))))[:size]


@pytest.fixture
def relay(tmp_path, backend):
    r = Relay(tmp_path, backend=backend)
    yield r
    r.close()


def join(relay, name="laptop", kind=None, invite_kind="human", vault_id=None):
    code = issue_invite(relay.storage, vault_id=vault_id, kind=invite_kind).code
    body = {"invite": code, "device_name": name}
    if kind is not None:
        body["kind"] = kind
    r = relay.http.post("/v1/join", json=body)
    return code, r


def device(relay, name="laptop", invite_kind="human"):
    _, r = join(relay, name, invite_kind=invite_kind, vault_id=_vault(relay))
    assert r.status_code == 201, r.text
    j = r.json()
    j["h"] = {"Authorization": f"Bearer {j['token']}"}
    j["base"] = f"/v1/vaults/{j['vault_id']}"
    return j


def _vault(relay):
    vaults = relay.storage.list_vaults()
    return vaults[0].vault_id if vaults else None


# -- item 1: the kind comes from the invite ------------------------------------------------------


def test_the_invite_fixes_the_kind_and_join_reports_it(relay):
    _, r = join(relay, "laptop", invite_kind="human")
    assert r.status_code == 201 and r.json()["kind"] == "human"
    _, r = join(relay, "server", kind="agent", invite_kind="agent", vault_id=_vault(relay))
    assert r.status_code == 201 and r.json()["kind"] == "agent"
    kinds = {d.name: d.kind for d in relay.storage.list_devices()}
    assert kinds == {"laptop": "human", "server": "agent"}


def test_invites_default_to_agent(relay):
    code = issue_invite(relay.storage).code
    r = relay.http.post("/v1/join", json={"invite": code, "device_name": "something"})
    assert r.status_code == 201 and r.json()["kind"] == "agent"


def test_claiming_another_kind_is_refused_and_keeps_the_invite(relay):
    code, r = join(relay, "sneaky", kind="human", invite_kind="agent")
    body = assert_error(r, 409, "kind_mismatch")
    assert "agent" in body["message"] and "\n" not in body["message"]
    assert relay.storage.list_devices() == []
    r = relay.http.post("/v1/join", json={"invite": code, "device_name": "server", "kind": "agent"})
    assert r.status_code == 201 and r.json()["kind"] == "agent"


def test_every_record_carries_the_committers_kind_and_name(relay):
    laptop = device(relay, "laptop", "human")
    server = device(relay, "server", "agent")
    assert commit(relay, laptop, [rec(1)]).status_code == 200
    assert commit(relay, server, [rec(2)]).status_code == 200
    assert commit(relay, server, [rec(1, rev=2, sealed=b"agent edit")]).status_code == 200
    want = {"device_kind", "device_name", "device_id"}

    def who(r):
        assert want <= set(r)
        return (r["device_kind"], r["device_name"])

    page = relay.http.get(f"{laptop['base']}/changes", headers=laptop["h"]).json()
    assert [who(r) for r in page["records"]] == [
        ("human", "laptop"), ("agent", "server"), ("agent", "server")
    ]  # fmt: skip
    head = relay.http.get(f"{laptop['base']}/files/{fid(1)}", headers=laptop["h"]).json()
    assert who(head) == ("agent", "server")
    hist = relay.http.get(f"{laptop['base']}/files/{fid(1)}/history", headers=laptop["h"]).json()
    assert [who(r) for r in hist["records"]] == [("agent", "server"), ("human", "laptop")]
    one = relay.http.get(f"{laptop['base']}/files/{fid(1)}/revs/1", headers=laptop["h"]).json()
    assert who(one) == ("human", "laptop")
    conflict = commit(relay, laptop, [rec(1, rev=2, sealed=b"stale")]).json()
    assert who(conflict["results"][0]["head"]) == ("agent", "server")


_V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE vaults (vault_id TEXT PRIMARY KEY, created REAL NOT NULL,
    seq INTEGER NOT NULL DEFAULT 0, key_blob BLOB, key_updated REAL);
CREATE TABLE invites (code_hash BLOB PRIMARY KEY, vault_id TEXT NOT NULL, created REAL NOT NULL,
    expires REAL NOT NULL, used REAL, used_by TEXT);
CREATE TABLE devices (device_id TEXT PRIMARY KEY, vault_id TEXT NOT NULL, name TEXT NOT NULL,
    kind TEXT NOT NULL, token_hash BLOB NOT NULL, created REAL NOT NULL, revoked REAL);
CREATE INDEX devices_vault ON devices (vault_id);
CREATE TABLE records (vault_id TEXT NOT NULL, seq INTEGER NOT NULL, file_id TEXT NOT NULL,
    rev INTEGER NOT NULL, parent_rev INTEGER NOT NULL, sealed BLOB NOT NULL,
    blobs TEXT NOT NULL, device_id TEXT NOT NULL, committed_at REAL NOT NULL,
    PRIMARY KEY (vault_id, seq), UNIQUE (vault_id, file_id, rev));
CREATE TABLE blobs (vault_id TEXT NOT NULL, blob_id TEXT NOT NULL, size INTEGER NOT NULL,
    sha256 TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (vault_id, blob_id)) WITHOUT ROWID;
CREATE TABLE leases (vault_id TEXT NOT NULL, name TEXT NOT NULL, holder TEXT NOT NULL,
    expires REAL NOT NULL, PRIMARY KEY (vault_id, name)) WITHOUT ROWID;
INSERT INTO meta VALUES ('schema_version', '1');
"""


def test_existing_sqlite_data_is_migrated_and_devices_keep_their_kind(tmp_path):
    data = tmp_path / "relay"
    data.mkdir()
    v, laptop, server = "00000000000000aa", "d0000000000000d1", "d0000000000000d2"
    key = wrapped_key()
    db = sqlite3.connect(data / "relay.db")
    db.executescript(_V1_SCHEMA)
    db.execute("INSERT INTO vaults VALUES (?, 1.0, 2, ?, 5.0)", (v, key))
    db.execute("INSERT INTO devices VALUES (?, ?, 'laptop', 'human', ?, 1.0, NULL)",
               (laptop, v, b"t" * 32))  # fmt: skip
    db.execute("INSERT INTO devices VALUES (?, ?, 'server', 'agent', ?, 1.0, NULL)",
               (server, v, b"u" * 32))  # fmt: skip
    db.execute("INSERT INTO invites VALUES (?, ?, 1.0, 1e12, NULL, NULL)",
               (hashlib.sha256(b"pending").digest(), v))  # fmt: skip
    for seq, (dev, f) in enumerate([(laptop, 1), (server, 2)], start=1):
        db.execute("INSERT INTO records VALUES (?, ?, ?, 1, 0, ?, '', ?, 2.0)",
                   (v, seq, fid(f), b"sealed", dev))  # fmt: skip
    db.commit()
    db.close()

    store = SqliteStorage(data)
    try:
        assert {d.name: d.kind for d in store.list_devices()} == {
            "laptop": "human", "server": "agent"
        }  # fmt: skip
        page = store.changes(v, 0, 10, 1 << 20)
        assert [(r.device_kind, r.device_name) for r in page.records] == [
            ("human", "laptop"), ("agent", "server")
        ]  # fmt: skip
        assert store.get_key_blob(v) == key
        (wrap,) = store.key_history(v)
        assert wrap.key == key and wrap.set_at == 5.0
    finally:
        store.close()


# -- item 5: the wrapped key -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "blob",
    [
        bytes([2]) + wrapped_key()[1:],  # not version 1
        wrapped_key(size=88),
        wrapped_key(size=90),
        wrapped_key(memory_kib=8191),  # under 8 MiB
        wrapped_key(memory_kib=4 * 1024 * 1024 + 1),  # over 4 GiB
        wrapped_key(iterations=0),
        wrapped_key(iterations=33),
        wrapped_key(lanes=0),
        wrapped_key(lanes=17),
        b"\x01",
    ],
    ids=[
        "version",
        "short",
        "long",
        "mem-low",
        "mem-high",
        "it-0",
        "it-33",
        "lanes-0",
        "lanes-17",
        "tiny",
    ],  # fmt: skip
)
def test_a_key_blob_that_is_not_a_wrapped_key_is_refused(relay, blob):
    dev = device(relay)
    r = relay.http.put(f"{dev['base']}/key", json={"key": b64(blob)}, headers=dev["h"])
    body = assert_error(r, 422, "invalid_key")
    assert "\n" not in body["message"]
    assert relay.storage.get_key_blob(dev["vault_id"]) is None


def test_a_real_wrapped_key_is_accepted(relay):
    from companion.crypto import KdfParams, VaultKey, wrap_vault_key

    dev = device(relay)
    params = KdfParams(memory_kib=8192, iterations=1, lanes=1)
    blob = wrap_vault_key(VaultKey.generate(), "a long passphrase", vault_id=dev["vault_id"],
                          params=params)  # fmt: skip
    r = relay.http.put(f"{dev['base']}/key", json={"key": b64(blob)}, headers=dev["h"])
    assert r.status_code == 200 and r.json()["sha256"] == sha(blob)


def test_any_device_sets_an_absent_key_but_only_a_human_replaces_it(relay):
    agent = device(relay, "server", "agent")
    human = device(relay, "laptop", "human")
    first, second, third = wrapped_key(), wrapped_key(), wrapped_key()
    url = f"{agent['base']}/key"
    assert relay.http.put(url, json={"key": b64(first)}, headers=agent["h"]).status_code == 200
    r = relay.http.put(url, json={"key": b64(second), "if_match": sha(first)}, headers=agent["h"])
    body = assert_error(r, 403, "forbidden")
    assert body["message"] == "only a human device may replace the vault key"
    assert relay.storage.get_key_blob(agent["vault_id"]) == first
    assert_error(relay.http.put(url, json={"key": b64(second)}, headers=agent["h"]), 409)
    r = relay.http.put(url, json={"key": b64(second), "if_match": sha(first)}, headers=human["h"])
    assert r.status_code == 200
    r = relay.http.put(url, json={"key": b64(third), "if_match": sha(second)}, headers=human["h"])
    assert r.status_code == 200

    hist = relay.http.get(f"{url}/history", headers=agent["h"])
    assert hist.status_code == 200, hist.text
    wraps = hist.json()["wraps"]
    assert [w["sha256"] for w in wraps] == [sha(third), sha(second), sha(first)]
    assert [w["device_id"] for w in wraps] == [human["device_id"], human["device_id"],
                                               agent["device_id"]]  # fmt: skip
    assert [base64.b64decode(w["key"]) for w in wraps] == [third, second, first]
    assert wraps[0]["set_at"] >= wraps[1]["set_at"] >= wraps[2]["set_at"]


def test_key_history_is_empty_before_the_first_wrap(relay):
    dev = device(relay)
    r = relay.http.get(f"{dev['base']}/key/history", headers=dev["h"])
    assert r.status_code == 200 and r.json() == {"wraps": []}


def test_leave_revokes_the_callers_own_token(relay):
    dev = device(relay, "wrong-passphrase", "agent")
    other = device(relay, "laptop", "human")
    r = relay.http.post(f"{dev['base']}/leave", headers=dev["h"])
    assert r.status_code == 200 and r.json()["revoked"] is True
    r = relay.http.get(f"{dev['base']}/changes", headers=dev["h"])
    assert_error(r, 401, "unauthorized")
    assert "revoked" in r.json()["message"]
    assert relay.http.get(f"{other['base']}/changes", headers=other["h"]).status_code == 200
    states = {d.name: d.revoked is not None for d in relay.storage.list_devices()}
    assert states == {"wrong-passphrase": True, "laptop": False}


def test_the_published_schema_states_the_device_name_rule_on_spaces():
    """The OpenAPI schema refuses the names the relay refuses for spaces at either end, so a
    client generated from it (and the API fuzzer) never sends one it believes valid."""
    import re

    from companion.relay.models import JoinIn

    pattern = JoinIn.model_json_schema()["properties"]["device_name"]["pattern"]
    for name in (" laptop", "laptop ", "lap\u00a0", "\u3000x", "x\t"):
        assert not re.search(pattern, name), name
    for name in ("laptop", "a", "Lucía's phone", "a b", "名前"):
        assert re.search(pattern, name), name


def test_a_name_refused_by_the_pattern_is_explained_in_words(relay):
    _, r = join(relay, " laptop", invite_kind="human")
    assert r.status_code == 422
    assert r.json()["message"] == "device_name: the device name starts or ends with spaces"
    _, r = join(relay, "lap\x07top", invite_kind="human")
    assert r.status_code == 422 and "U+0007" in r.json()["message"]
