"""Authentication at the door: every `/v1/vaults/...` request is authenticated from its
headers before the app (or FastAPI's body parsing) reads a byte of its body.

FastAPI reads and parses a JSON body before it runs a route's dependencies, so a token checked
in a dependency comes too late: a stranger could make the relay read and parse 32 MiB first.
`AuthGate` sits in front of the app as ASGI middleware. It checks the bearer token (in a
worker thread: the store may be SQLite or a database across the network), and either puts the
device in `scope["state"]` for the routes or answers the refusal itself, with
`Connection: close`, so an unread body is never read or parsed.

The failed-authentication limiter (`FailureLimiter`, per client address) only ever refuses
*failing* requests: a request with a valid token, or a valid invite at `/v1/join`, is served
even while its address is over the limit, so a neighbour behind the same NAT or proxy cannot
lock a device out (see docs/relay.md for what that leaves an attacker).
"""

from __future__ import annotations

import math
import re
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from companion.relay.api import RelayState, run_sync
from companion.relay.auth import check_token
from companion.relay.models import SHORT_ID_PATTERN

DEVICE_KEY = "relay_device"  # where the authenticated Device goes in scope["state"]

_VAULT_PATH = re.compile(r"^/v1/vaults/([^/]*)(?:/|$)")
_SHORT_ID = re.compile(SHORT_ID_PATTERN)


def client_key(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def bearer_token(headers: Headers) -> str | None:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def refusal(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Any:
    """A JSON refusal that closes the connection (the request's body, if any, stays unread)."""
    return JSONResponse(
        {"error": code, "message": message},
        status_code=status,
        headers={"Connection": "close", **(headers or {})},
    )


def rate_limited(wait: float) -> Any:
    return refusal(
        429,
        "rate_limited",
        "too many failed authentications from this address; try again later",
        {"Retry-After": str(max(1, math.ceil(wait)))},
    )


class AuthGate:
    def __init__(self, app: ASGIApp, state: RelayState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        m = _VAULT_PATH.match(scope["path"])
        if m is None:  # health, join (checked by its route, tiny body), openapi, unknown paths
            await self.app(scope, receive, send)
            return
        response = await self._check(scope, m.group(1))
        if response is not None:
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _check(self, scope: Scope, vault_id: str) -> Any:
        st = self.state
        token = bearer_token(Headers(scope=scope))
        if token is None:
            return refusal(
                401,
                "unauthorized",
                "send the device token as 'Authorization: Bearer <token>'",
                {"WWW-Authenticate": "Bearer"},
            )
        key = client_key(scope)
        result = await run_sync(check_token, st.storage, token)
        device = result.device
        if device is None:
            wait = await run_sync(st.limiter.retry_after, key)
            if wait > 0:
                return rate_limited(wait)
            await run_sync(st.limiter.failure, key)
            message = (
                "this device was revoked; join again with a new invite"
                if result.reason == "revoked"
                else "the device token is not valid"
            )
            return refusal(401, "unauthorized", message, {"WWW-Authenticate": "Bearer"})
        if device.vault_id != vault_id and _SHORT_ID.match(vault_id):
            wait = await run_sync(st.limiter.retry_after, key)
            if wait > 0:
                return rate_limited(wait)
            await run_sync(st.limiter.failure, key)
            if await run_sync(st.storage.get_vault, vault_id) is None:
                return refusal(404, "unknown_vault", f"there is no vault {vault_id} on this relay")
            return refusal(403, "wrong_vault", "this device's token belongs to another vault")
        # a malformed vault id with a valid token: the route's own validation answers 422
        scope.setdefault("state", {})[DEVICE_KEY] = device
        return None
