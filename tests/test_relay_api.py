"""The relay's HTTP API in-process: bad input is a clear 4xx, commits, changes, blobs, leases."""

from __future__ import annotations

import base64
import hashlib
import struct
import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from companion.relay.app import create_app
from companion.relay.auth import FailureLimiter, issue_invite
from companion.relay.blobframes import MEDIA_TYPE, encode_frames, frame_header
from companion.relay.limits import Limits
from tests.relaybackends import Backend, leftovers


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fid(n: int) -> str:
    return f"{n:032x}"


def rec(n: int, rev: int = 1, sealed: bytes = b"x", blobs: list[str] | None = None) -> dict:
    return {
        "file_id": fid(n),
        "rev": rev,
        "parent_rev": rev - 1,
        "sealed": b64(sealed),
        "blobs": blobs or [],
    }


class Relay:
    """The app over a store of `backend` (SQLite by default), through Starlette's TestClient."""

    def __init__(
        self,
        tmp_path,
        limits: Limits | None = None,
        backend: Backend | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.storage = (backend or Backend("sqlite")).storage(tmp_path / "relay")
        self.app = create_app(
            self.storage,
            limits=limits,
            limiter=FailureLimiter(capacity=10_000, rate=100),
            clock=clock,
        )
        self.http = TestClient(self.app)
        self.http.__enter__()

    def join(self, name: str = "laptop", kind: str = "human", vault_id: str | None = None):
        code = issue_invite(self.storage, vault_id=vault_id, kind=kind).code
        r = self.http.post("/v1/join", json={"invite": code, "device_name": name, "kind": kind})
        assert r.status_code == 201, r.text
        return r.json()

    def close(self):
        self.http.__exit__(None, None, None)
        self.storage.close()


@pytest.fixture
def relay(tmp_path, backend):
    r = Relay(tmp_path, backend=backend)
    yield r
    r.close()


@pytest.fixture
def dev(relay):
    j = relay.join()
    j["h"] = {"Authorization": f"Bearer {j['token']}"}
    j["base"] = f"/v1/vaults/{j['vault_id']}"
    return j


def commit(relay, dev, records):
    return relay.http.post(f"{dev['base']}/commit", json={"records": records}, headers=dev["h"])


def assert_error(resp, status: int, code: str | None = None):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) >= {"error", "message"} and body["message"]
    if code:
        assert body["error"] == code, body
    return body


# -- commits -------------------------------------------------------------------------------------


def test_commit_and_read_back(relay, dev):
    r = commit(relay, dev, [rec(1), rec(2)])
    assert r.status_code == 200
    body = r.json()
    assert body["committed"] and body["seq"] == 2
    assert [x["status"] for x in body["results"]] == ["committed", "committed"]
    head = relay.http.get(f"{dev['base']}/files/{fid(1)}", headers=dev["h"]).json()
    assert head["rev"] == 1 and base64.b64decode(head["sealed"]) == b"x"
    assert head["device_id"] == dev["device_id"]


def test_conflict_is_409_with_head_and_writes_nothing(relay, dev):
    commit(relay, dev, [rec(1, sealed=b"first")])
    r = commit(relay, dev, [rec(2), rec(1, sealed=b"second")])
    body = assert_error(r, 409, "conflict")
    assert body["committed"] is False
    by_file = {x["file_id"]: x for x in body["results"]}
    assert by_file[fid(2)]["status"] == "aborted"
    assert by_file[fid(1)]["status"] == "conflict"
    assert base64.b64decode(by_file[fid(1)]["head"]["sealed"]) == b"first"
    assert relay.http.get(f"{dev['base']}/files/{fid(2)}", headers=dev["h"]).status_code == 404


def test_replay_is_idempotent(relay, dev):
    first = commit(relay, dev, [rec(1)]).json()
    again = commit(relay, dev, [rec(1)])
    assert again.status_code == 200
    assert again.json()["results"][0] == {
        "file_id": fid(1),
        "rev": 1,
        "status": "duplicate",
        "seq": first["seq"],
        "head": None,
    }
    assert_error(commit(relay, dev, [rec(1, sealed=b"changed")]), 409, "conflict")


@pytest.mark.parametrize(
    "record, code",
    [
        ({**rec(1), "rev": 3}, "invalid_request"),  # rev != parent_rev + 1
        ({**rec(1), "file_id": "XYZ"}, "invalid_request"),
        ({**rec(1), "sealed": "not base64!"}, "invalid_request"),
        ({**rec(1), "rev": 0, "parent_rev": -1}, "invalid_request"),
        ({**rec(1), "extra": 1}, "invalid_request"),
        ({**rec(1), "blobs": ["nothex"]}, "invalid_request"),
    ],
)
def test_invalid_records_are_422(relay, dev, record, code):
    assert_error(commit(relay, dev, [record]), 422, code)
    assert relay.storage.get_vault(dev["vault_id"]).seq == 0


def test_same_file_twice_in_one_commit_is_refused(relay, dev):
    assert_error(commit(relay, dev, [rec(1), rec(1, sealed=b"y")]), 422, "invalid_request")


def test_commit_referencing_missing_blob(relay, dev):
    body = assert_error(commit(relay, dev, [rec(1, blobs=["ab" * 16])]), 422, "missing_blobs")
    assert body["missing"] == ["ab" * 16]


def test_malformed_json_wrong_type_and_oversize(tmp_path, backend):
    limits = Limits(max_json_body=4096, max_records_per_commit=3)
    relay = Relay(tmp_path, limits=limits, backend=backend)
    try:
        j = relay.join()
        h = {"Authorization": f"Bearer {j['token']}"}
        url = f"/v1/vaults/{j['vault_id']}/commit"
        r = relay.http.post(
            url, content=b"{not json", headers={**h, "Content-Type": "application/json"}
        )
        assert_error(r, 400, "malformed_json")
        r = relay.http.post(
            url, content=b'{"records": []}', headers={**h, "Content-Type": "text/plain"}
        )
        assert_error(r, 415, "unsupported_media_type")
        r = relay.http.post(url, content=b'{"records": []}', headers=h)  # no content type
        assert_error(r, 415, "unsupported_media_type")
        r = relay.http.post(url, json=[1, 2], headers=h)
        assert_error(r, 422, "invalid_request")
        r = relay.http.post(url, json={"records": []}, headers=h)
        assert_error(r, 422, "invalid_request")
        r = relay.http.post(url, json={"records": [rec(1, sealed=b"x" * 8000)]}, headers=h)
        assert_error(r, 413, "too_large")
        r = relay.http.post(url, json={"records": [rec(i) for i in range(4)]}, headers=h)
        assert_error(r, 413, "too_large")
        assert relay.storage.get_vault(j["vault_id"]).seq == 0
    finally:
        relay.close()


def test_unknown_routes_and_methods_are_json_errors(relay, dev):
    assert_error(relay.http.get("/v1/nowhere"), 404, "not_found")
    assert_error(relay.http.delete("/v1/health"), 405, "method_not_allowed")
    assert_error(relay.http.get("/v1/vaults/NOTHEX/changes", headers=dev["h"]), 422)


# -- changes and long-poll -----------------------------------------------------------------------


def test_changes_since_and_paging(relay, dev):
    for i in range(5):
        commit(relay, dev, [rec(i)])
    r = relay.http.get(f"{dev['base']}/changes", params={"since": 0, "limit": 2}, headers=dev["h"])
    body = r.json()
    assert [x["seq"] for x in body["records"]] == [1, 2] and body["more"] and body["seq"] == 2
    r = relay.http.get(f"{dev['base']}/changes", params={"since": 2}, headers=dev["h"])
    body = r.json()
    assert [x["seq"] for x in body["records"]] == [3, 4, 5] and not body["more"]
    assert body["seq"] == 5 == body["vault_seq"]


def test_changes_name_the_record_at_since(relay, dev):
    commit(relay, dev, [rec(1, sealed=b"one")])
    commit(relay, dev, [rec(2, sealed=b"two")])
    r = relay.http.get(f"{dev['base']}/changes", params={"since": 0}, headers=dev["h"])
    assert r.json()["at_since"] is None
    r = relay.http.get(f"{dev['base']}/changes", params={"since": 1}, headers=dev["h"])
    body = r.json()
    assert [x["seq"] for x in body["records"]] == [2]
    assert body["at_since"] == {
        "file_id": fid(1), "rev": 1, "sha256": hashlib.sha256(b"one").hexdigest()
    }  # fmt: skip


def test_changes_since_ahead_is_a_clear_conflict(relay, dev):
    commit(relay, dev, [rec(1)])
    r = relay.http.get(f"{dev['base']}/changes", params={"since": 7}, headers=dev["h"])
    assert_error(r, 409, "since_ahead")


def test_long_poll_times_out_empty(relay, dev):
    r = relay.http.get(f"{dev['base']}/changes", params={"since": 0, "wait": 0.2}, headers=dev["h"])
    assert r.status_code == 200 and r.json()["records"] == []


# -- blobs ---------------------------------------------------------------------------------------


def put_blob(relay, dev, blob_id, data, checksum=None, ctype="application/octet-stream"):
    return relay.http.put(
        f"{dev['base']}/blobs/{blob_id}",
        content=data,
        headers={**dev["h"], "Content-Type": ctype, "X-Content-SHA256": checksum or sha(data)},
    )


def test_blob_upload_download_dedup(relay, dev):
    b = "ab" * 16
    r = put_blob(relay, dev, b, b"hello")
    assert r.status_code == 201 and r.json()["created"] is True
    r = put_blob(relay, dev, b, b"hello")
    assert r.status_code == 200 and r.json()["created"] is False
    r = relay.http.get(f"{dev['base']}/blobs/{b}", headers=dev["h"])
    assert r.content == b"hello" and r.headers["X-Content-SHA256"] == sha(b"hello")
    assert r.headers["content-type"] == "application/octet-stream"
    assert_error(put_blob(relay, dev, b, b"other"), 409, "blob_id_taken")
    r = relay.http.post(
        f"{dev['base']}/blobs-missing", json={"ids": [b, "cd" * 16]}, headers=dev["h"]
    )
    assert r.json() == {"missing": ["cd" * 16]}


def test_blob_checksum_mismatch_and_bad_headers(relay, dev):
    b = "ab" * 16
    assert_error(put_blob(relay, dev, b, b"hello", checksum=sha(b"bye")), 422, "checksum_mismatch")
    assert_error(put_blob(relay, dev, b, b"hello", ctype="text/plain"), 415)
    r = relay.http.put(
        f"{dev['base']}/blobs/{b}",
        content=b"x",
        headers={**dev["h"], "Content-Type": "application/octet-stream"},
    )
    assert_error(r, 422, "invalid_request")  # no checksum header
    assert_error(relay.http.get(f"{dev['base']}/blobs/{b}", headers=dev["h"]), 404, "not_found")
    assert leftovers(relay.storage) == []


def test_blob_size_limit(tmp_path, backend):
    relay = Relay(tmp_path, limits=Limits(max_blob_bytes=1000), backend=backend)
    try:
        j = relay.join()
        d = {"h": {"Authorization": f"Bearer {j['token']}"}, "base": f"/v1/vaults/{j['vault_id']}"}
        assert put_blob(relay, d, "ab" * 16, b"x" * 1000).status_code == 201
        assert_error(put_blob(relay, d, "cd" * 16, b"x" * 1001), 413, "too_large")

        def chunks():  # no Content-Length: the limit still holds while streaming
            yield b"x" * 600
            yield b"x" * 600

        r = relay.http.put(
            f"{d['base']}/blobs/{'ef' * 16}",
            content=chunks(),
            headers={**d["h"], "Content-Type": "application/octet-stream",
                     "X-Content-SHA256": sha(b"x" * 1200)},
        )  # fmt: skip
        assert_error(r, 413, "too_large")
        assert relay.storage.missing_blobs(j["vault_id"], ["cd" * 16, "ef" * 16]) == [
            "cd" * 16,
            "ef" * 16,
        ]
        assert leftovers(relay.storage) == []
    finally:
        relay.close()


def post_frames(relay, dev, body: bytes):
    headers = {**dev["h"], "Content-Type": MEDIA_TYPE}
    return relay.http.post(f"{dev['base']}/blobs-upload", content=body, headers=headers)


def fetch(relay, dev, ids):
    return relay.http.post(f"{dev['base']}/blobs-download", json={"ids": ids}, headers=dev["h"])


def test_batched_blobs_roundtrip(relay, dev):
    blobs = [(f"{i:032x}", bytes([i]) * (1000 * i + 1)) for i in range(1, 6)]
    body = b"".join(encode_frames((b, sha(d), d) for b, d in blobs))
    r = relay.http.post(
        f"{dev['base']}/blobs-upload",
        content=body,
        headers={**dev["h"], "Content-Type": MEDIA_TYPE},
    )
    assert r.status_code == 200, r.text
    assert [x["created"] for x in r.json()["blobs"]] == [True] * 5
    r = relay.http.post(
        f"{dev['base']}/blobs-upload",
        content=body,
        headers={**dev["h"], "Content-Type": MEDIA_TYPE},
    )
    assert [x["created"] for x in r.json()["blobs"]] == [False] * 5  # dedup
    ids = [b for b, _ in blobs]
    r = fetch(relay, dev, ids)
    assert r.status_code == 200 and r.headers["content-type"] == MEDIA_TYPE
    assert r.content == body  # same framing both ways
    r = relay.http.post(
        f"{dev['base']}/blobs-download", json={"ids": ["99" * 16]}, headers=dev["h"]
    )
    assert assert_error(r, 404, "not_found")["missing"] == ["99" * 16]


@pytest.mark.parametrize(
    "body",
    [
        b"\x05short",  # id length out of range
        frame_header("ab" * 16, sha(b"abc"), 3) + b"ab",  # cut short
        bytes([32]) + b"Z" * 32 + b"\0" * 40,  # not hex
        frame_header("ab" * 16, sha(b""), 0)[:-8] + struct.pack(">Q", 2**40),  # too large
    ],
)
def test_malformed_batches_are_400(relay, dev, body):
    r = relay.http.post(
        f"{dev['base']}/blobs-upload",
        content=body,
        headers={**dev["h"], "Content-Type": MEDIA_TYPE},
    )
    assert_error(r, 400, "malformed_batch")
    assert leftovers(relay.storage) == []


def test_batch_with_a_bad_checksum_is_422(relay, dev):
    body = b"".join(
        encode_frames([("ab" * 16, sha(b"good"), b"good"), ("cd" * 16, sha(b"x"), b"y")])
    )
    r = relay.http.post(
        f"{dev['base']}/blobs-upload",
        content=body,
        headers={**dev["h"], "Content-Type": MEDIA_TYPE},
    )
    assert_error(r, 422, "checksum_mismatch")
    assert relay.storage.missing_blobs(dev["vault_id"], ["ab" * 16, "cd" * 16]) == ["cd" * 16]


@pytest.mark.parametrize("size", [5, 200_000])  # checked when published / looked up first
def test_batch_reusing_a_taken_id_is_409_and_keeps_the_stored_blob(relay, dev, backend, size):
    taken = "ab" * 16
    stored = b"s" * size
    assert post_frames(relay, dev, b"".join(encode_frames([(taken, sha(stored), stored)]))).json()
    other = b"o" * size
    body = b"".join(encode_frames([("cd" * 16, sha(b"new"), b"new"), (taken, sha(other), other)]))
    assert_error(post_frames(relay, dev, body), 409, "blob_id_taken")
    r = fetch(relay, dev, [taken])
    assert r.status_code == 200 and r.content.endswith(stored)
    if backend == "sqlite":  # PostgreSQL keeps sealed content until its age-based prune
        assert leftovers(relay.storage) == []


# -- key blob, leases, devices, health -------------------------------------------------------------


def wrapped_key(tag: int = 0) -> bytes:
    """89 bytes with a wrapped key's clear header (version 1, 8 MiB, 1 pass, 1 lane)."""
    return struct.pack(">BIII", 1, 8192, 1, 1) + bytes([tag]) * 76


def test_key_blob_lifecycle(relay, dev):
    url = f"{dev['base']}/key"
    wrapped, again, rewrapped = wrapped_key(1), wrapped_key(2), wrapped_key(3)
    assert_error(relay.http.get(url, headers=dev["h"]), 404, "key_not_set")
    r = relay.http.put(url, json={"key": b64(wrapped)}, headers=dev["h"])
    assert r.status_code == 200 and r.json()["sha256"] == sha(wrapped)
    assert_error(relay.http.put(url, json={"key": b64(again)}, headers=dev["h"]), 409)
    r = relay.http.put(
        url, json={"key": b64(rewrapped), "if_match": sha(wrapped)}, headers=dev["h"]
    )
    assert r.status_code == 200
    got = relay.http.get(url, headers=dev["h"]).json()
    assert base64.b64decode(got["key"]) == rewrapped and got["sha256"] == sha(rewrapped)
    assert_error(relay.http.put(url, json={"key": ""}, headers=dev["h"]), 422)
    # a second device now joins an existing vault: not new
    second = relay.join("server", "agent")
    assert second["vault_id"] == dev["vault_id"] and second["new_vault"] is False
    assert dev["new_vault"] is True


def test_leases_between_two_devices(relay, dev):
    other = relay.join("server", "agent")
    oh = {"Authorization": f"Bearer {other['token']}"}
    url = f"{dev['base']}/leases/dream-2026-11-29"
    a = relay.http.post(url, json={"ttl": 60}, headers=dev["h"]).json()
    assert a["acquired"] and a["holder"] == dev["device_id"]
    b = relay.http.post(url, json={"ttl": 60}, headers=oh).json()
    assert not b["acquired"] and b["holder"] == dev["device_id"]
    assert relay.http.delete(url, headers=oh).json() == {"released": False}
    assert relay.http.delete(url, headers=dev["h"]).json() == {"released": True}
    assert relay.http.post(url, json={"ttl": 60}, headers=oh).json()["acquired"]
    assert_error(relay.http.post(url, json={"ttl": 0}, headers=dev["h"]), 422)
    assert_error(relay.http.post(url, json={"ttl": 1e9}, headers=dev["h"]), 422)
    bad = f"{dev['base']}/leases/..bad"
    assert_error(relay.http.post(bad, json={"ttl": 5}, headers=dev["h"]), 422)


def test_devices_and_health(relay, dev):
    relay.join("server", "agent")
    devs = relay.http.get(f"{dev['base']}/devices", headers=dev["h"]).json()["devices"]
    assert [(d["name"], d["kind"]) for d in devs] == [("laptop", "human"), ("server", "agent")]
    h = relay.http.get("/v1/health").json()
    assert h["status"] == "ok" and h["limits"]["max_blob_bytes"] > 0


def test_openapi_describes_every_route(relay):
    spec = relay.http.get("/openapi.json").json()
    paths = spec["paths"]
    assert {"/v1/join", "/v1/vaults/{vault_id}/commit", "/v1/vaults/{vault_id}/changes"} <= set(
        paths
    )
    assert "bearer" in str(spec["components"]["securitySchemes"]).lower()
    assert "409" in paths["/v1/vaults/{vault_id}/commit"]["post"]["responses"]


def test_device_names_must_be_printable(relay):
    code = issue_invite(relay.storage, kind="human").code
    r = relay.http.post(
        "/v1/join", json={"invite": code, "device_name": "evil\x1b[2J", "kind": "human"}
    )
    assert_error(r, 422, "invalid_request")
    assert relay.storage.list_devices() == []


def test_the_schema_states_the_whole_device_name_rule():
    """What the published pattern allows the relay accepts, and what it refuses the relay
    refuses, for every character of the BMP between two letters (#39: U+0082 matched the
    schema and was answered 422, so the schema-driven fuzz test failed deterministically)."""
    import re
    import unicodedata

    from pydantic import ValidationError

    from companion.relay.models import DEVICE_NAME_PATTERN, JoinIn

    pattern = re.compile(DEVICE_NAME_PATTERN)  # how a schema-driven client reads it
    disagree, let_through = [], []
    for cp in range(0x10000):
        if 0xD800 <= cp <= 0xDFFF:
            continue  # no text holds a lone surrogate
        name = f"a{chr(cp)}b"
        try:
            JoinIn(invite="x", device_name=name)
            accepted = True
        except ValidationError:
            accepted = False
        if accepted != bool(pattern.match(name)):
            disagree.append(f"U+{cp:04X}")
        if accepted and unicodedata.category(chr(cp)) in {"Cc", "Cf", "Zl", "Zp", "Co"}:
            let_through.append(f"U+{cp:04X}")
    assert disagree == []
    assert let_through == []  # every control, format, separator and private-use character


def test_a_c1_control_in_a_device_name_is_refused_as_the_schema_says(relay):
    code = issue_invite(relay.storage, kind="human").code
    r = relay.http.post(
        "/v1/join", json={"invite": code, "device_name": "a\u0082b", "kind": "human"}
    )
    assert_error(r, 422, "invalid_request")
    assert "U+0082" in r.json()["message"]  # the rule in words, not the regex
    spec = relay.http.get("/openapi.json").json()
    join = spec["components"]["schemas"]["JoinIn"]["properties"]["device_name"]
    from companion.relay.models import DEVICE_NAME_PATTERN

    assert join["pattern"] == DEVICE_NAME_PATTERN
