"""Request body size limits that answer with the relay's JSON 413.

Each route has its own limit (`Limits.body_limit`): large for commits and blobs, a few KiB
everywhere else. Starlette's own body-limit middleware answers in plain text and replaces any
response the app sends once Content-Length is over the limit; this one keeps the relay's error
format. A declared Content-Length over the limit is refused before the app runs, and the
connection is closed rather than the body drained; a chunked body that grows past it raises
`BodyTooLarge` from `receive`, which the app's HTTPException handler turns into the same JSON
413 (an upload in progress is aborted, leaving nothing behind).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MESSAGE = "the request body is larger than this relay accepts"


class BodyTooLarge(HTTPException):
    def __init__(self) -> None:
        super().__init__(status_code=413, detail=MESSAGE)


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, limit_for: Callable[[str, str], int]) -> None:
        self.app = app
        self.limit_for = limit_for  # (method, path) -> bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["method"], scope["path"])
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            resp = JSONResponse(
                {"error": "too_large", "message": MESSAGE},
                status_code=413,
                headers={"Connection": "close"},
            )
            await resp(scope, receive, send)
            return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge()
            return message

        await self.app(scope, limited_receive, send)
