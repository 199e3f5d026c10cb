"""Routes for the relay itself, devices, the wrapped vault key and leases."""

from __future__ import annotations

import hashlib

from fastapi import APIRouter, Request
from fastapi.responses import Response

from companion import __version__
from companion.logs import get_logger
from companion.relay import models as m
from companion.relay.api import (
    AUTH_ERRORS,
    JSON_BODY,
    ApiError,
    AuthedDevice,
    LeaseName,
    VaultId,
    check_rate,
    count_failure,
    error_responses,
    json_response,
    run_sync,
    state_of,
)
from companion.relay.auth import make_token, new_id, parse_invite
from companion.relay.storage import Device, InviteRefused, KeyBlobConflict

log = get_logger("relay.app")
router = APIRouter()


@router.get("/v1/health", response_model=m.HealthOut, tags=["relay"])
async def health(request: Request) -> Response:
    """Liveness and the relay's limits (no authentication)."""
    limits = state_of(request).limits
    return json_response(
        m.HealthOut(
            status="ok",
            version=__version__,
            time=state_of(request).clock(),
            limits={k: float(v) for k, v in limits.as_dict().items()},
        )
    )


@router.post(
    "/v1/join",
    response_model=m.JoinOut,
    status_code=201,
    dependencies=JSON_BODY,
    responses=error_responses(400, 401, 410, 413, 415, 422, 429),
    tags=["devices"],
)
async def join(request: Request, body: m.JoinIn) -> Response:
    """Redeem a one-time invite: a new device and its bearer token (shown once)."""
    check_rate(request)
    st = state_of(request)
    parsed = parse_invite(body.invite)
    if parsed is None:
        count_failure(request)
        raise ApiError(401, "invalid_invite", "that invite code is not valid")
    vault_id, code_hash = parsed
    device_id = new_id()
    token, token_hash = make_token(device_id)
    now = st.clock()
    device = Device(device_id, vault_id, body.device_name, body.kind, token_hash, now)
    try:
        vault = await run_sync(st.storage.redeem_invite, vault_id, code_hash, device, now)
    except InviteRefused as exc:
        count_failure(request)
        if exc.reason == "used":
            raise ApiError(410, "invite_used", "that invite code was already used") from None
        if exc.reason == "expired":
            raise ApiError(410, "invite_expired", "that invite code has expired") from None
        raise ApiError(401, "invalid_invite", "that invite code is not valid") from None
    log.info("device %s (%s) joined vault %s", device_id, body.kind, vault_id)
    out = m.JoinOut(
        token=token, device_id=device_id, vault_id=vault_id, new_vault=not vault.has_key
    )
    return json_response(out, 201)


@router.get(
    "/v1/vaults/{vault_id}/devices",
    response_model=m.DevicesOut,
    responses=error_responses(*AUTH_ERRORS),
    tags=["devices"],
)
async def devices(request: Request, vault_id: VaultId, device: AuthedDevice) -> Response:
    """The vault's devices (including revoked ones)."""
    rows = await run_sync(state_of(request).storage.list_devices, vault_id)
    return json_response(
        m.DevicesOut(
            devices=[
                m.DeviceOut(
                    device_id=d.device_id,
                    name=d.name,
                    kind=d.kind,
                    created=d.created,
                    revoked=d.revoked,
                )
                for d in rows
            ]
        )
    )


# -- the wrapped vault key --------------------------------------------------------------
@router.get(
    "/v1/vaults/{vault_id}/key",
    response_model=m.KeyOut,
    responses=error_responses(*AUTH_ERRORS),
    tags=["vault key"],
)
async def get_key(request: Request, vault_id: VaultId, device: AuthedDevice) -> Response:
    """The wrapped vault key (opaque to the relay); 404 key_not_set until the first device
    sets it."""
    data = await run_sync(state_of(request).storage.get_key_blob, vault_id)
    if data is None:
        raise ApiError(404, "key_not_set", "this vault's key has not been set yet")
    return json_response(m.KeyOut(key=data, sha256=hashlib.sha256(data).hexdigest()))


@router.put(
    "/v1/vaults/{vault_id}/key",
    response_model=m.KeyPutOut,
    dependencies=JSON_BODY,
    responses=error_responses(*AUTH_ERRORS, 400, 409, 413, 415),
    tags=["vault key"],
)
async def put_key(
    request: Request, vault_id: VaultId, device: AuthedDevice, body: m.KeyIn
) -> Response:
    """Set the wrapped vault key once (`if_match` null), or replace it (a rewrap after a
    passphrase change) by naming the sha256 of the blob being replaced."""
    limits = state_of(request).limits
    if len(body.key) > limits.max_key_blob_bytes:
        raise ApiError(413, "too_large", f"the key blob exceeds {limits.max_key_blob_bytes} bytes")
    if not body.key:
        raise ApiError(422, "invalid_request", "key: must not be empty")
    st = state_of(request)
    try:
        await run_sync(st.storage.put_key_blob, vault_id, body.key, body.if_match, st.clock())
    except KeyBlobConflict as exc:
        raise ApiError(409, "key_conflict", str(exc)) from None
    log.info("vault %s key set by device %s", vault_id, device.device_id)
    return json_response(m.KeyPutOut(sha256=hashlib.sha256(body.key).hexdigest()))


# -- leases -----------------------------------------------------------------------------
@router.post(
    "/v1/vaults/{vault_id}/leases/{name}",
    response_model=m.LeaseOut,
    dependencies=JSON_BODY,
    responses=error_responses(*AUTH_ERRORS, 400, 415),
    tags=["leases"],
)
async def acquire_lease(
    request: Request, vault_id: VaultId, name: LeaseName, device: AuthedDevice, body: m.LeaseIn
) -> Response:
    """Take (or renew) a named lease for `ttl` seconds. Always answers with the holder:
    `acquired` tells whether that is the caller."""
    st = state_of(request)
    lease = await run_sync(
        st.storage.acquire_lease, vault_id, name, device.device_id, body.ttl, st.clock()
    )
    return json_response(
        m.LeaseOut(
            name=lease.name,
            holder=lease.holder,
            expires=lease.expires,
            acquired=lease.holder == device.device_id,
        )
    )


@router.delete(
    "/v1/vaults/{vault_id}/leases/{name}",
    response_model=m.ReleaseOut,
    responses=error_responses(*AUTH_ERRORS),
    tags=["leases"],
)
async def release_lease(
    request: Request, vault_id: VaultId, name: LeaseName, device: AuthedDevice
) -> Response:
    """Release a lease the caller holds (`released` false when it did not hold it)."""
    released = await run_sync(
        state_of(request).storage.release_lease, vault_id, name, device.device_id
    )
    return json_response(m.ReleaseOut(released=released))
