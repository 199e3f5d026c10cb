"""Fuzz the relay's HTTP API from its own OpenAPI description (schemathesis).

The relay runs for real (uvicorn on 127.0.0.1, SQLite on disk). Thousands of generated
requests, valid and invalid, hit every operation: none may get a 5xx, and every response must
match the documented status codes, content types, headers and schemas. The app's catch-all
handler answers 500 (never a 4xx), so a bug cannot hide behind it.

The default run makes about 2,000 requests; for a long run set RELAY_FUZZ_EXAMPLES (examples
per operation and phase), e.g. `RELAY_FUZZ_EXAMPLES=1000 pytest tests/test_relay_fuzz.py`.

Hooks aim the generator at the interesting paths: most requests use the real vault and a
valid token (negative cases stay negative), and blob uploads usually carry the body's true
checksum and valid framing so the storage paths run, not just the refusals.
"""

from __future__ import annotations

from tests.relayfuzz import make

_fuzz = make("sqlite")
test_api_never_fails = _fuzz.test_api_never_fails
test_fuzz_volume_and_no_server_errors = _fuzz.test_fuzz_volume_and_no_server_errors


def teardown_module():
    _fuzz.teardown()
