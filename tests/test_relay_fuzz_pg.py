"""The same schemathesis fuzz as test_relay_fuzz.py, against a relay on PostgreSQL (a real
server, see tests/pgcluster.py)."""

from __future__ import annotations

from tests.relayfuzz import make

_fuzz = make("postgres")
test_api_never_fails = _fuzz.test_api_never_fails
test_fuzz_volume_and_no_server_errors = _fuzz.test_fuzz_volume_and_no_server_errors


def teardown_module():
    _fuzz.teardown()
