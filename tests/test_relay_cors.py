"""CORS on the relay for Obsidian's origins: the plugin's long-poll uses the webview's fetch.

Against a real relay on loopback: a preflight from each Obsidian origin is allowed (with the
headers the plugin sends), the long-poll answer carries the CORS headers and exposes
Retry-After, a refusal does too, and any other origin gets no CORS grant.
"""

from __future__ import annotations

import httpx
import pytest

from companion.relay.app import OBSIDIAN_ORIGINS
from companion.relay.testing import running_relay
from companion.relayclient.client import RelayClient


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with running_relay(tmp_path_factory.mktemp("relay")) as relay:
        client = RelayClient(relay.url)
        joined = client.join(relay.invite(kind="human"), "phone", "human")
        client.close()
        yield relay, joined


@pytest.mark.parametrize("origin", OBSIDIAN_ORIGINS)
def test_preflight_from_obsidian_origins_is_allowed(live, origin):
    relay, joined = live
    resp = httpx.options(
        f"{relay.url}/v1/vaults/{joined.vault_id}/changes?since=0&wait=25",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert resp.status_code == 200
    assert resp.headers["access-control-allow-origin"] == origin
    allowed = resp.headers["access-control-allow-headers"].lower()
    assert "authorization" in allowed and "content-type" in allowed
    assert "GET" in resp.headers["access-control-allow-methods"]


def test_long_poll_and_refusals_carry_cors_headers(live):
    relay, joined = live
    origin = "capacitor://localhost"
    ok = httpx.get(
        f"{relay.url}/v1/vaults/{joined.vault_id}/changes",
        params={"since": 0, "wait": 0},
        headers={"Origin": origin, "Authorization": f"Bearer {joined.token}"},
    )
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == origin
    assert "retry-after" in ok.headers["access-control-expose-headers"].lower()
    refused = httpx.get(
        f"{relay.url}/v1/vaults/{joined.vault_id}/changes",
        headers={"Origin": origin, "Authorization": "Bearer nope.nope"},
    )
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == origin


def test_other_origins_get_no_cors_grant(live):
    relay, joined = live
    pre = httpx.options(
        f"{relay.url}/v1/health",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
    )
    assert "access-control-allow-origin" not in pre.headers
    plain = httpx.get(f"{relay.url}/v1/health", headers={"Origin": "https://evil.example"})
    assert plain.status_code == 200
    assert "access-control-allow-origin" not in plain.headers
