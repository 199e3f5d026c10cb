"""The relay's HTTP API: a FastAPI app over a `RelayStorage`.

The routes live in `routes_vault.py`, `routes_records.py` and `routes_blobs.py` (shared pieces
in `api.py`), all under `/v1/`; the OpenAPI description is served at `/openapi.json` (and browsable
at `/docs`). Every refusal is a JSON `{"error": code, "message": text}` with a 4xx status; a
5xx means a bug in the relay, is logged as an error with its traceback, and is never used to
paper over bad input.

The app never logs request bodies, and everything it stores is ciphertext under opaque ids.
Storage calls run in worker threads so that long-polls, uploads and downloads share the event
loop without waiting on SQLite or the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from companion import __version__
from companion.logs import get_logger
from companion.relay import logdedup, routes_blobs, routes_records, routes_vault
from companion.relay.api import MANUAL_BODIES, ApiError, RelayState, run_sync
from companion.relay.auth import FailureLimiter
from companion.relay.bodylimit import BodyLimitMiddleware
from companion.relay.gate import AuthGate
from companion.relay.limits import Limits
from companion.relay.storage import RelayStorage, RetentionPolicy
from companion.textsafe import display_name_problem

log = get_logger("relay.app")

# Obsidian's app origins (desktop, iOS/Android Capacitor, Android's http://localhost). The
# plugin sends bounded requests through `requestUrl` (no CORS); only its held long-poll uses the
# webview's native fetch, which needs these. Bearer tokens, never cookies: no credentials mode.
OBSIDIAN_ORIGINS = ("app://obsidian.md", "capacitor://localhost", "http://localhost")


def create_app(
    storage: RelayStorage,
    *,
    limits: Limits | None = None,
    limiter: FailureLimiter | None = None,
    retention: RetentionPolicy | None = None,
    prune_interval: float | None = None,
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """The relay app over `storage`.

    `retention` with `prune_interval` (seconds) prunes history and unreferenced blobs in the
    background; without them, pruning is left to `companion relay prune`.
    """
    limits = limits or Limits()
    state = RelayState(
        storage=storage,
        limits=limits,
        limiter=limiter or FailureLimiter(),
        clock=clock,
        retention=retention,
        prune_interval=prune_interval,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()

        def on_commit(vault_id: str | None) -> None:  # from the store's listener thread
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(state.notifier.notify_any, vault_id)

        storage.subscribe(on_commit)
        tasks = [asyncio.create_task(_flush_logs_loop())]
        if retention is not None and prune_interval:
            tasks.append(asyncio.create_task(_prune_loop(state)))
        try:
            yield
        finally:
            state.notifier.close()
            for task in tasks:
                task.cancel()
            logdedup.flush_all(force=True)

    app = FastAPI(
        title="Vault Companion relay",
        version=__version__,
        description=(
            "Stores end-to-end encrypted vault records and blobs for Vault Companion devices. "
            "The relay sees only ciphertext under opaque hex ids. See docs/relay.md."
        ),
        lifespan=lifespan,
    )
    app.state.relay = state
    # outermost last: the gate authenticates from the headers, then the body limit applies;
    # CORS outside both, so refusals (401, 413, 429) carry its headers too
    app.add_middleware(BodyLimitMiddleware, limit_for=limits.body_limit)
    app.add_middleware(AuthGate, state=state)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=list(OBSIDIAN_ORIGINS),
        allow_methods=["GET", "POST", "PUT", "DELETE"],
        allow_headers=["Authorization", "Content-Type", "X-Content-SHA256"],
        expose_headers=["Retry-After", "X-Content-SHA256"],
        max_age=600,
    )
    _install_error_handlers(app)
    for router in (routes_vault.router, routes_records.router, routes_blobs.router):
        app.include_router(router)
    _document_manual_bodies(app)
    return app


def _document_manual_bodies(app: FastAPI) -> None:
    """Add the schemas of bodies that routes read themselves (`api.read_json`) to OpenAPI."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            comps = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in MANUAL_BODIES:
                js = model.model_json_schema(ref_template="#/components/schemas/{model}")
                comps.update(js.pop("$defs", {}))
                comps[model.__name__] = js
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


async def _flush_logs_loop() -> None:
    """Say how many repeats of a log storm were left out, a few seconds after they were."""
    while True:
        await asyncio.sleep(5)
        logdedup.flush_all()


async def _prune_loop(state: RelayState) -> None:
    assert state.retention is not None and state.prune_interval
    while True:
        try:
            stats = await run_sync(state.storage.prune, state.retention, state.clock())
            log.info(
                "pruned %d revisions, %d blobs (%d bytes)",
                stats.records,
                stats.blobs,
                stats.blob_bytes,
            )
        except Exception:
            log.exception("background prune failed")
        await asyncio.sleep(state.prune_interval)


_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limited",
}


def _error_response(status: int, code: str, message: str, **extra: Any) -> Response:
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status)


def _friendly(error: dict[str, Any]) -> str | None:
    """The device-name rule in words, where the schema's pattern refused the name."""
    value = error.get("input")
    if (
        error.get("type") == "string_pattern_mismatch"
        and error.get("loc", ())[-1:] == ("device_name",)
        and isinstance(value, str)
    ):
        return display_name_problem(value) or "the device name contains a control character"
    return None


def _describe_validation(exc: RequestValidationError) -> tuple[int, str, str]:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return 400, "malformed_json", "the body is not valid JSON"
    parts = []
    for e in errors[:3]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
        parts.append(f"{loc}: {_friendly(e) or e.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return 422, "invalid_request", "; ".join(parts) + more


def _allowed_methods(request: Request) -> str:
    """Every method some route serves at this path (Starlette names only the first route's)."""
    path = request.scope["path"]
    methods: set[str] = set()
    for route in request.app.routes:
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(path):
            methods |= set(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        resp = _error_response(exc.status, exc.code, exc.message, **exc.extra)
        if exc.headers:
            resp.headers.update(exc.headers)
        return resp

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        status, code, message = _describe_validation(exc)
        return _error_response(status, code, message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        code = _STATUS_CODES.get(exc.status_code, "error")
        if exc.status_code == 413:
            message = "the request body is larger than this relay accepts"
            exc.headers = {**(exc.headers or {}), "Connection": "close"}  # do not drain it
        elif exc.status_code == 404:
            message = "no such endpoint"
        elif exc.status_code == 405:
            message = "this endpoint does not accept that method"
            exc.headers = {**(exc.headers or {}), "Allow": _allowed_methods(request)}
        else:
            message = str(exc.detail)
        resp = _error_response(exc.status_code, code, message)
        if exc.headers:
            resp.headers.update(exc.headers)
        return resp

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, exc: ClientDisconnect) -> Response:
        # not a bug: the client went away (or was cut for idling) mid-request; nothing is sent
        log.debug("client disconnected during %s %s", request.method, request.url.path)
        return Response(status_code=400, headers={"Connection": "close"})

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Response:
        # A bug, not bad input: say so and log it loudly (bad input never gets here).
        log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
        return _error_response(500, "internal_error", "the relay hit an internal error")
