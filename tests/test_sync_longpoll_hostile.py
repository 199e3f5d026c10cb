"""A relay that answers the long-poll with a record it was not asked for.

The stand-in is the adversary itself: a small HTTP server on loopback that answers the change
feed, as a hostile or broken relay could, with a record at or before the cursor the device
asked from. A correct relay never does. The poller used to take any answer for news; after
the own-commit rule (a record behind the cursor wakes nothing and the poll is repeated at
once), such an answer must be an error, which the poller meets with its backoff, not a loop.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from companion.crypto.keys import VaultKey
from companion.relayclient.client import RelayClient
from companion.relayclient.errors import RelayError
from companion.sync.remote.vault import RemoteVault

VAULT = "0123456789abcdef"


def _record(seq: int) -> dict[str, object]:
    return {
        "file_id": "ab" * 16, "rev": 1, "parent_rev": 0,
        "sealed": base64.b64encode(b"sealed bytes").decode(), "blobs": [], "seq": seq,
        "device_id": "cd" * 8, "device_kind": "agent", "device_name": "server",
        "committed_at": 1.0,
    }  # fmt: skip


@pytest.fixture
def replaying_relay() -> Iterator[tuple[str, list[str]]]:
    """Answers every change feed request with the record of seq 3, whatever `since` is."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            asked.append(self.path)
            body = json.dumps(
                {"records": [_record(3)], "seq": 3, "vault_seq": 3, "more": False}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_a_record_past_the_cursor_is_news(replaying_relay) -> None:
    url, _ = replaying_relay
    token = "0123456789abcdef." + "a" * 43
    with RelayClient(url, token, VAULT, timeout=5) as client:
        assert RemoteVault(client, VaultKey.generate(), VAULT).first_change_after(2, 0) == 3


@pytest.mark.parametrize("cursor", [3, 7])
def test_an_answer_at_or_before_the_cursor_is_a_relay_error(replaying_relay, cursor) -> None:
    url, asked = replaying_relay
    token = "0123456789abcdef." + "a" * 43
    with RelayClient(url, token, VAULT, timeout=5) as client:
        remote = RemoteVault(client, VaultKey.generate(), VAULT)
        with pytest.raises(RelayError, match="older record"):
            remote.first_change_after(cursor, 30)
    assert len(asked) == 1 and f"since={cursor}" in asked[0]
