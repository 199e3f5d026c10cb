"""The schemathesis fuzz of the relay's API, built once per store (see test_relay_fuzz.py and
test_relay_fuzz_pg.py, which only pick the store)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from types import SimpleNamespace

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.meta import negated_parameters
from schemathesis.specs.openapi.checks import positive_data_acceptance

from companion.relay.auth import FailureLimiter
from companion.relay.blobframes import MEDIA_TYPE as FRAMES_TYPE
from companion.relay.blobframes import frame_header
from companion.relay.limits import Limits
from companion.relay.testing import running_relay
from companion.relayclient.client import RelayClient
from tests.relaybackends import Backend

EXAMPLES = int(os.environ.get("RELAY_FUZZ_EXAMPLES", "90"))  # per operation and phase

# Operations whose schema-valid requests can still be refused on meaning, not shape: a commit
# whose rev is not parent_rev + 1 or names a blob never uploaded, an upload whose bytes do not
# hash to the announced checksum, a key blob without a wrapped key's header. Those answers
# are 4xx by design; every other check applies.
SEMANTIC = {"/v1/vaults/{vault_id}/commit", "/v1/vaults/{vault_id}/blobs/{blob_id}",
            "/v1/vaults/{vault_id}/blobs-upload", "/v1/vaults/{vault_id}/key"}  # fmt: skip


FRAMING = {"content-length", "transfer-encoding", "host", "connection"}

# A body over its route's byte limit is refused unread (413), which schemathesis does not count
# as a rejection by default; the rest of its default list, unchanged.
CONFIG = SchemathesisConfig.from_str(
    """
[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422",
                     "428", "429"]
"""
)


def _negated(case, name: str, where: ParameterLocation) -> bool:
    return (name, where) in negated_parameters(case.meta)


def make(backend_name: str) -> SimpleNamespace:
    tmp = tempfile.TemporaryDirectory(prefix="relay-fuzz-")
    stack = contextlib.ExitStack()
    # failed auth is fuzzed too; a limiter that never trips keeps the answers about the input
    relay = stack.enter_context(
        running_relay(
            tmp.name,
            limiter=FailureLimiter(capacity=1e12, rate=1e12),
            storage=Backend(backend_name).storage(tmp.name),
            # a generated `wait` (up to the documented 3600 s) is held at most this long: the
            # relay's own cap, well under the fuzzer's 10 s read timeout (wait=14 timed out)
            limits=Limits(max_wait_s=2.0),
        )
    )
    joined = RelayClient(relay.url).join(relay.invite(kind="human"), "fuzzer")
    state = {"token": joined.token}
    vault = joined.vault_id
    calls = {"n": 0, "5xx": 0}
    fuzzed: set[str] = set()  # the operations test_api_never_fails ran in this process

    schema = schemathesis.openapi.from_url(relay.url + "/openapi.json", config=CONFIG)
    schemathesis.serializer.alias(FRAMES_TYPE, "application/octet-stream")  # batched blobs

    @schema.auth()
    class Bearer:
        def get(self, case, context):
            return state["token"]

        def set(self, case, data, context):
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}

    @schema.hook
    def map_case(context, case):
        if case.headers:  # framing headers the HTTP client computes: a made-up one is not an
            # API input but malformed HTTP, answered by the HTTP server before the relay
            case.headers = {k: v for k, v in case.headers.items() if k.lower() not in FRAMING}
        pp = case.path_parameters
        if (
            isinstance(pp, dict)
            and isinstance(pp.get("vault_id"), str)
            and not _negated(case, "vault_id", ParameterLocation.PATH)
            and int(hashlib.sha256(pp["vault_id"].encode()).hexdigest()[0], 16) < 12
        ):
            pp["vault_id"] = vault  # 3 in 4: the real vault, so the handlers run
        body = case.body if isinstance(case.body, bytes) else None
        path = case.operation.path
        if body is not None and case.method == "PUT" and path.endswith("/blobs/{blob_id}"):
            headers = case.headers or {}
            if (
                isinstance(headers.get("x-content-sha256"), str)
                and not _negated(case, "x-content-sha256", ParameterLocation.HEADER)
                and len(body) % 4 != 0
            ):
                headers["x-content-sha256"] = hashlib.sha256(body).hexdigest()
        if body is not None and path.endswith("/blobs-upload") and len(body) % 3 != 0:
            blob_id = hashlib.sha256(b"id" + body).hexdigest()[:32]
            case.body = frame_header(blob_id, hashlib.sha256(body).hexdigest(), len(body)) + body
        return case

    @schema.hook
    def after_call(context, case, response):
        calls["n"] += 1
        if response.status_code >= 500:
            calls["5xx"] += 1
        if case.operation.path.endswith("/leave") and response.status_code == 200:
            # the fuzzer's device just revoked itself: join again so the next cases stay valid
            again = RelayClient(relay.url).join(relay.invite(vault_id=vault, kind="human"), "f")
            state["token"] = again.token

    @schema.parametrize()
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def test_api_never_fails(case):
        _check(case)

    def _check(case) -> None:
        fuzzed.add(f"{case.method} {case.operation.path}")
        excluded = [positive_data_acceptance] if case.operation.path in SEMANTIC else []
        case.call_and_validate(excluded_checks=excluded)

    def test_fuzz_volume_and_no_server_errors():
        """Thousands of requests and none was a 5xx. After the parametrized test above, its
        requests are counted; run alone, this test makes its own over every operation."""
        operations = sum(1 for _ in schema.get_all_operations())
        # Not every operation fuzzed here (run alone, or under pytest-xdist, whose workers
        # take schemathesis's cases, which share one test id, as one test): fuzz them all now.
        if len(fuzzed) < operations:
            calls["n"] = 0

            @settings(
                max_examples=EXAMPLES * operations,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=schema.as_strategy())
            def run(case) -> None:
                _check(case)

            # hypothesis may stop short of max_examples (fewer distinct cases): draw again,
            # fresh cases, until the volume is there (at most 3 draws)
            for _ in range(3):
                run()
                if calls["n"] >= min(2000, EXAMPLES * 20):
                    break
        assert calls["5xx"] == 0
        print(f"\nrelay fuzz ({backend_name}): {calls['n']} requests, no 5xx")
        assert calls["n"] >= min(2000, EXAMPLES * 20), calls

    def teardown() -> None:
        stack.close()
        tmp.cleanup()

    return SimpleNamespace(
        test_api_never_fails=test_api_never_fails,
        test_fuzz_volume_and_no_server_errors=test_fuzz_volume_and_no_server_errors,
        teardown=teardown,
    )
