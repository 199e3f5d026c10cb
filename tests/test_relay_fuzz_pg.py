"""The same schemathesis fuzz as test_relay_fuzz.py, against a relay on PostgreSQL (a real
server, see tests/pgcluster.py)."""

from __future__ import annotations

import pytest

from tests.relayfuzz import make

# the volume test counts the requests of the parametrized one: both on one xdist worker
pytestmark = pytest.mark.xdist_group("relay_fuzz_postgres")

_fuzz = make("postgres")
test_api_never_fails = _fuzz.test_api_never_fails
test_fuzz_volume_and_no_server_errors = _fuzz.test_fuzz_volume_and_no_server_errors


def teardown_module():
    _fuzz.teardown()
