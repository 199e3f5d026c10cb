"""Relay authentication: invites, tokens, revocation, cross-vault tokens and rate limiting."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from companion.relay.app import create_app
from companion.relay.auth import (
    FailureLimiter,
    InviteTargetError,
    check_token,
    hash_secret,
    issue_invite,
    make_invite,
    make_token,
    parse_invite,
)


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def env(tmp_path, backend):
    storage = backend.storage(tmp_path / "relay")
    clock = Clock()
    limiter = FailureLimiter(capacity=5, rate=1.0, clock=clock)
    app = create_app(storage, limiter=limiter, clock=clock)
    with TestClient(app) as http:
        yield storage, http, clock
    storage.close()


def join(http, code, name="laptop", kind=None):
    body = {"invite": code, "device_name": name}
    if kind is not None:
        body["kind"] = kind
    return http.post("/v1/join", json=body)


def invite(storage, clock, **kw):
    return issue_invite(storage, now=clock.t, **kw).code


def changes(http, vault_id, token):
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return http.get(f"/v1/vaults/{vault_id}/changes", headers=headers)


def stored_bytes(storage) -> bytes:
    """Everything the store holds, as bytes (its files, or a dump of its tables)."""
    from companion.relay.sqlite_storage import SqliteStorage

    if isinstance(storage, SqliteStorage):
        return storage.db_path.read_bytes() + storage.db_path.with_name("relay.db-wal").read_bytes()
    out = b""
    with storage.pool.connection() as c:
        for table in ("invites", "devices", "vaults", "key_wraps"):
            for row in c.execute(f"SELECT * FROM {table}"):
                out += repr(row).encode() + b"".join(bytes(v) for v in row if isinstance(v, bytes))
    return out


def test_secrets_are_stored_only_as_hashes(env):
    storage, http, clock = env
    code = invite(storage, clock)
    j = join(http, code).json()
    raw = stored_bytes(storage)
    secret = j["token"].split(".", 1)[1]
    assert secret.encode() not in raw
    assert code.split("-", 1)[1].encode() not in raw
    assert storage.get_device(j["device_id"]).token_hash == hash_secret(secret)


def test_invite_is_one_time(env):
    storage, http, clock = env
    code = invite(storage, clock)
    assert join(http, code).status_code == 201
    r = join(http, code, name="thief")
    assert r.status_code == 410 and r.json()["error"] == "invite_used"
    assert [d.name for d in storage.list_devices()] == ["laptop"]


def test_invite_expires(env):
    storage, http, clock = env
    code = issue_invite(storage, ttl=60, now=clock.t).code
    clock.t += 61
    r = join(http, code)
    assert r.status_code == 410 and r.json()["error"] == "invite_expired"


@pytest.mark.parametrize(
    "code",
    ["", "nonsense", "0123456789abcdef-" + "a" * 26, "0123456789abcdef-" + "!" * 26],
)
def test_wrong_invites_are_refused(env, code):
    storage, http, clock = env
    invite(storage, clock)
    r = join(http, code)
    assert r.status_code in (401, 422)
    assert r.json()["error"] in ("invalid_invite", "invalid_request")


def test_invite_names_its_vault(env):
    storage, http, clock = env
    first = invite(storage, clock)
    second = invite(storage, clock)  # one vault: joins it
    assert first.split("-")[0] == second.split("-")[0]
    other = invite(storage, clock, new_vault=True)
    assert other.split("-")[0] != first.split("-")[0]
    with pytest.raises(InviteTargetError, match="2 vaults"):
        invite(storage, clock)  # several vaults: must choose
    a = join(http, first).json()
    b = join(http, other).json()
    assert a["vault_id"] != b["vault_id"] and a["new_vault"] and b["new_vault"]
    # a code whose vault part is swapped for another vault is refused
    forged = b["vault_id"] + "-" + second.split("-")[1]
    assert join(http, forged).status_code == 401


def test_tokens_wrong_revoked_and_cross_vault(env):
    storage, http, clock = env
    a = join(http, invite(storage, clock)).json()
    b = join(http, invite(storage, clock, new_vault=True), name="other").json()
    va, vb = a["vault_id"], b["vault_id"]
    assert changes(http, va, a["token"]).status_code == 200

    r = changes(http, va, None)
    assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Bearer"
    assert changes(http, va, "garbage").status_code == 401
    wrong = a["device_id"] + "." + "A" * 43
    r = changes(http, va, wrong)
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"
    unknown = "ffffffffffffffff." + a["token"].split(".")[1]
    assert changes(http, va, unknown).status_code == 401

    clock.t += 100  # refill the failure bucket (tested on its own below)
    r = changes(http, vb, a["token"])  # a's token on b's vault
    assert r.status_code == 403 and r.json()["error"] == "wrong_vault"
    r = changes(http, "0123456789abcdef", a["token"])
    assert r.status_code == 404 and r.json()["error"] == "unknown_vault"

    clock.t += 100
    storage.revoke_device(a["device_id"], clock.t)
    r = changes(http, va, a["token"])
    assert r.status_code == 401 and "revoked" in r.json()["message"]
    assert changes(http, vb, b["token"]).status_code == 200


def test_no_error_ever_echoes_the_token(env):
    storage, http, clock = env
    a = join(http, invite(storage, clock)).json()
    storage.revoke_device(a["device_id"], clock.t)
    secret = a["token"].split(".")[1]
    for path in ("changes", "devices", "key"):
        r = http.get(
            f"/v1/vaults/{a['vault_id']}/{path}", headers={"Authorization": f"Bearer {a['token']}"}
        )
        assert r.status_code == 401 and secret not in r.text


def test_failed_auth_is_rate_limited_per_address_but_never_a_valid_token(env):
    storage, http, clock = env
    a = join(http, invite(storage, clock)).json()
    va = a["vault_id"]
    for _ in range(5):
        assert changes(http, va, "x" * 20).status_code == 401
    r = changes(http, va, "x" * 20)
    assert r.status_code == 429 and r.json()["error"] == "rate_limited"
    assert int(r.headers["Retry-After"]) >= 1
    assert join(http, "0123456789abcdef-" + "a" * 26).status_code == 429  # a bad invite too
    # a valid token or invite from the same address (a NAT, a proxy) is served regardless
    assert changes(http, va, a["token"]).status_code == 200
    assert join(http, invite(storage, clock), name="phone").status_code == 201
    clock.t += 1.0  # one token refilled: the next failure is a 401 again, then 429
    assert changes(http, va, "x" * 20).status_code == 401
    assert changes(http, va, "x" * 20).status_code == 429
    # successes never drain the bucket
    for _ in range(20):
        assert changes(http, va, a["token"]).status_code == 200


def test_limiter_token_bucket():
    clock = Clock(0.0)
    lim = FailureLimiter(capacity=3, rate=0.5, clock=clock, max_keys=2)
    assert lim.retry_after("a") == 0
    for _ in range(3):
        lim.failure("a")
    assert lim.retry_after("a") == pytest.approx(2.0)
    assert lim.retry_after("b") == 0  # per address
    clock.t = 2.0
    assert lim.retry_after("a") == 0
    lim.failure("b")
    lim.failure("c")  # evicts the longest-quiet key ("a") beyond max_keys
    assert lim.retry_after("a") == 0 and len(lim._buckets) == 2


def test_token_and_invite_formats(tmp_path, backend):
    code, h = make_invite("0123456789abcdef")
    assert parse_invite(code) == ("0123456789abcdef", h)
    assert parse_invite(code.upper()) == ("0123456789abcdef", h)  # typed in capitals
    assert parse_invite(code + "x") is None
    token, th = make_token("fedcba9876543210")
    assert token.startswith("fedcba9876543210.") and len(th) == 32
    storage = backend.storage(tmp_path / "r")
    assert check_token(storage, None).reason == "missing"
    assert check_token(storage, "a.b").reason == "malformed"
    assert check_token(storage, token).reason == "invalid"
    storage.close()


def test_the_failed_auth_limit_is_shared_by_every_relay_process(tmp_path):
    """Two relay processes (two apps, each with its own store connection) on one PostgreSQL
    database count one address's failures together, and both still serve a valid token."""
    from companion.relay.auth import SharedFailureLimiter
    from tests.relaybackends import Backend

    url = Backend("postgres").database()
    from companion.relay.pg_storage import PgStorage

    stores = [PgStorage(url), PgStorage(url)]
    clock = Clock()
    apps = [
        create_app(s, limiter=SharedFailureLimiter(s, capacity=4, rate=1.0, clock=clock),
                   clock=clock)
        for s in stores
    ]  # fmt: skip
    try:
        with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
            a = join(one, invite(stores[0], clock)).json()
            va = a["vault_id"]
            for http in (one, two, one, two):
                assert changes(http, va, "x" * 20).status_code == 401
            assert changes(one, va, "x" * 20).status_code == 429  # 4 failures across both
            assert changes(two, va, "x" * 20).status_code == 429
            assert changes(two, va, a["token"]).status_code == 200
            clock.t += 1.0
            assert changes(two, va, "x" * 20).status_code == 401
            assert changes(one, va, "x" * 20).status_code == 429
    finally:
        for s in stores:
            s.close()
        from tests.pgcluster import release

        release(url)
