"""What every relay route shares: the refusal type, the app state, authentication of the
bearer token against the vault in the path, content-type checks and response helpers."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from companion.relay import models as m
from companion.relay.auth import FailureLimiter
from companion.relay.limits import Limits
from companion.relay.longpoll import VaultNotifier
from companion.relay.quota import AgentQuota
from companion.relay.storage import Device, RelayStorage, RetentionPolicy, StoredRecord

T = TypeVar("T")

BINARY = "application/octet-stream"


class ApiError(Exception):
    """A refusal with its status, stable code, message and optional extra JSON fields."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra or {}
        self.headers = headers


@dataclass
class RelayState:
    storage: RelayStorage
    limits: Limits
    limiter: FailureLimiter
    notifier: VaultNotifier = field(default_factory=VaultNotifier)
    clock: Callable[[], float] = time.time
    retention: RetentionPolicy | None = None
    prune_interval: float | None = None
    quota: AgentQuota = field(init=False)

    def __post_init__(self) -> None:
        self.quota = AgentQuota(self.limits, self.clock)

    def check_quota(self, device: Device, records: int = 0) -> None:
        """429 `quota_exceeded` when an agent device may not add `records` records or any
        bytes today (`companion.relay.quota`)."""
        refused = self.quota.refusal(device, records)
        if refused is not None:
            message, wait, usage = refused
            raise ApiError(
                429,
                "quota_exceeded",
                message,
                extra={"quota": asdict(usage)},
                headers={"Retry-After": str(wait), "Connection": "close"},
            )


def state_of(request: Request) -> RelayState:
    return request.app.state.relay


async def run_sync(fn: Callable[..., T], *args: Any) -> T:
    return await run_in_threadpool(fn, *args)


def json_response(
    model: BaseModel, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """Serialise once, without FastAPI re-validating what we just built."""
    return Response(
        model.model_dump_json(), status_code=status, media_type="application/json", headers=headers
    )


def record_out(r: StoredRecord) -> m.RecordOut:
    return m.RecordOut(
        file_id=r.file_id,
        rev=r.rev,
        parent_rev=r.parent_rev,
        sealed=r.sealed,
        blobs=list(r.blobs),
        seq=r.seq,
        device_id=r.device_id,
        device_kind="human" if r.device_kind == "human" else "agent",
        device_name=r.device_name,
        committed_at=r.committed_at,
    )


def error_responses(
    *codes: int, special: dict[int, type[BaseModel]] | None = None
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for the listed error statuses (ErrorOut unless `special` says)."""
    out: dict[int | str, dict[str, Any]] = {c: {"model": m.ErrorOut} for c in codes}
    for status, model in (special or {}).items():
        out[status] = {"model": model}
    return out


AUTH_ERRORS = (401, 403, 404, 422, 429)

# -- dependencies ------------------------------------------------------------------------------

bearer_scheme = HTTPBearer(auto_error=False, description="A device token from POST /v1/join.")

VaultId = Annotated[str, Path(pattern=m.SHORT_ID_PATTERN, description="The vault's id.")]
FileId = Annotated[str, Path(pattern=m.HEX_ID_PATTERN)]
BlobId = Annotated[str, Path(pattern=m.HEX_ID_PATTERN)]
LeaseName = Annotated[str, Path(pattern=m.LEASE_NAME_PATTERN)]


def _client_key(request: Request) -> str:
    return request.client.host if request.client else "unknown"


async def refuse_failure(request: Request, status: int, code: str, message: str) -> ApiError:
    """A failed authentication outside the gate (a bad invite): counted against the client's
    address, or 429 when that address is over its limit (a valid invite is never refused)."""
    limiter = state_of(request).limiter
    key = _client_key(request)
    wait = await run_sync(limiter.retry_after, key)
    if wait > 0:
        return ApiError(
            429,
            "rate_limited",
            "too many failed authentications from this address; try again later",
            headers={"Retry-After": str(max(1, math.ceil(wait)))},
        )
    await run_sync(limiter.failure, key)
    return ApiError(status, code, message)


async def authed_device(
    request: Request,
    vault_id: VaultId,
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> Device:
    """The device behind the bearer token, which belongs to the vault in the path.

    `gate.AuthGate` authenticated the request from its headers before any body was read; this
    dependency hands its answer to the route (and declares the bearer scheme in OpenAPI)."""
    device = request.scope.get("state", {}).get("relay_device")
    if not isinstance(device, Device) or device.vault_id != vault_id:
        raise ApiError(
            401,
            "unauthorized",
            "send the device token as 'Authorization: Bearer <token>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return device


AuthedDevice = Annotated[Device, Depends(authed_device)]


def media_type_of(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def require_json(request: Request) -> None:
    mt = media_type_of(request)
    if mt != "application/json" and not mt.endswith("+json"):
        raise ApiError(
            415, "unsupported_media_type", "send the body as JSON (Content-Type: application/json)"
        )


def require_media_type(request: Request, media_type: str) -> None:
    if media_type_of(request) != media_type:
        raise ApiError(
            415, "unsupported_media_type", f"send the body as {media_type} (Content-Type header)"
        )


JSON_BODY = [Depends(require_json)]

M = TypeVar("M", bound=BaseModel)
INLINE_PARSE_BYTES = 64 * 1024  # larger bodies are parsed in a worker thread
MANUAL_BODIES: list[type[BaseModel]] = []  # models of bodies routes read themselves (OpenAPI)


def _validate(model: type[M], raw: bytes) -> M:
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False)) from None


async def read_json(request: Request, model: type[M]) -> M:
    """The request's JSON body as `model`, read only now (after authentication, within the
    route's body limit) and, when large, parsed and validated off the event loop."""
    require_json(request)
    raw = await request.body()
    if len(raw) > INLINE_PARSE_BYTES:
        return await run_sync(_validate, model, raw)
    return _validate(model, raw)


def json_body_doc(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` describing a JSON body that the route reads with `read_json`."""
    MANUAL_BODIES.append(model)
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}
