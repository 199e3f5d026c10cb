"""Routes for the relay itself, devices, the wrapped vault key and leases."""

from __future__ import annotations

import hashlib
from dataclasses import asdict

from fastapi import APIRouter, Request
from fastapi.responses import Response

from companion import __version__
from companion.crypto.errors import TamperedWrappedKey, UnsafeKdfParams, UnsupportedVersion
from companion.crypto.wrap import WRAPPED_SIZE, read_kdf_params
from companion.logs import get_logger
from companion.relay import models as m
from companion.relay.api import (
    AUTH_ERRORS,
    JSON_BODY,
    ApiError,
    AuthedDevice,
    LeaseName,
    VaultId,
    error_responses,
    json_response,
    refuse_failure,
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


def _a(kind: str | None) -> str:
    return f"an {kind}" if kind == "agent" else f"a {kind}"


@router.post(
    "/v1/join",
    response_model=m.JoinOut,
    status_code=201,
    dependencies=JSON_BODY,
    responses=error_responses(400, 401, 409, 410, 413, 415, 422, 429),
    tags=["devices"],
)
async def join(request: Request, body: m.JoinIn) -> Response:
    """Redeem a one-time invite: a new device and its bearer token (shown once). The device's
    kind is the invite's."""
    st = state_of(request)
    parsed = parse_invite(body.invite)
    if parsed is None:
        raise await refuse_failure(request, 401, "invalid_invite", "that invite code is not valid")
    vault_id, code_hash = parsed
    device_id = new_id()
    token, token_hash = make_token(device_id)
    now = st.clock()
    # the kind is the invite's; a kind in the request is only checked against it
    wanted = Device(device_id, vault_id, body.device_name, body.kind or "", token_hash, now)
    try:
        vault, device = await run_sync(st.storage.redeem_invite, vault_id, code_hash, wanted, now)
    except InviteRefused as exc:
        if exc.reason == "kind_mismatch":
            raise ApiError(
                409,
                "kind_mismatch",
                f"this invite admits {_a(exc.invite_kind)} device, not {_a(body.kind)} one: "
                f"join as {exc.invite_kind}, or ask the relay's admin for {_a(body.kind)} invite",
            ) from None
        if exc.reason == "used":
            raise await refuse_failure(
                request, 410, "invite_used", "that invite code was already used"
            ) from None
        if exc.reason == "expired":
            raise await refuse_failure(
                request, 410, "invite_expired", "that invite code has expired"
            ) from None
        raise await refuse_failure(
            request, 401, "invalid_invite", "that invite code is not valid"
        ) from None
    log.info("device %s (%s) joined vault %s", device_id, device.kind, vault_id)
    out = m.JoinOut(
        token=token,
        device_id=device_id,
        vault_id=vault_id,
        kind="human" if device.kind == "human" else "agent",
        new_vault=not vault.has_key,
    )
    return json_response(out, 201)


@router.get(
    "/v1/vaults/{vault_id}/devices",
    response_model=m.DevicesOut,
    responses=error_responses(*AUTH_ERRORS),
    tags=["devices"],
)
async def devices(request: Request, vault_id: VaultId, device: AuthedDevice) -> Response:
    """The vault's devices (including revoked ones), with each agent device's usage of its
    daily quota."""
    st = state_of(request)
    rows = await run_sync(st.storage.list_devices, vault_id)

    def quota(d: Device) -> m.DeviceQuotaOut | None:
        usage = st.quota.usage(d)
        return None if usage is None else m.DeviceQuotaOut(**asdict(usage))

    return json_response(
        m.DevicesOut(
            devices=[
                m.DeviceOut(
                    device_id=d.device_id,
                    name=d.name,
                    kind=d.kind,
                    created=d.created,
                    revoked=d.revoked,
                    quota=quota(d),
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


def check_wrapped_key(blob: bytes) -> None:
    """Refuse (422 invalid_key) a blob whose clear header is not a wrapped key's: the relay
    cannot open it, but it can tell garbage from a wrap, so no token holder can brick the
    vault with random bytes. The header rules are the crypto layer's own reader's."""
    try:
        read_kdf_params(blob)
    except UnsupportedVersion:
        msg = f"key: version {blob[0]} is not a wrapped-key format this relay knows (1)"
        raise ApiError(422, "invalid_key", msg) from None
    except TamperedWrappedKey:
        msg = f"key: a version-1 wrapped key is exactly {WRAPPED_SIZE} bytes, not {len(blob)}"
        raise ApiError(422, "invalid_key", msg) from None
    except UnsafeKdfParams as exc:
        raise ApiError(422, "invalid_key", f"key: {exc}") from None


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
    """Set the wrapped vault key once (`if_match` null: any device of the vault), or replace
    it (a rewrap after a passphrase change: human devices only) by naming the sha256 of the
    blob being replaced. The blob must have a wrapped key's header (else 422 invalid_key);
    every wrap is kept (`GET .../key/history`)."""
    limits = state_of(request).limits
    if len(body.key) > limits.max_key_blob_bytes:
        raise ApiError(413, "too_large", f"the key blob exceeds {limits.max_key_blob_bytes} bytes")
    if not body.key:
        raise ApiError(422, "invalid_request", "key: must not be empty")
    check_wrapped_key(body.key)
    if body.if_match is not None and device.kind != "human":
        raise ApiError(403, "forbidden", "only a human device may replace the vault key")
    st = state_of(request)
    try:
        await run_sync(
            st.storage.put_key_blob, vault_id, body.key, body.if_match, st.clock(), device.device_id
        )
    except KeyBlobConflict as exc:
        raise ApiError(409, "key_conflict", str(exc)) from None
    log.info("vault %s key set by device %s", vault_id, device.device_id)
    return json_response(m.KeyPutOut(sha256=hashlib.sha256(body.key).hexdigest()))


@router.get(
    "/v1/vaults/{vault_id}/key/history",
    response_model=m.KeyHistoryOut,
    responses=error_responses(*AUTH_ERRORS),
    tags=["vault key"],
)
async def key_history(request: Request, vault_id: VaultId, device: AuthedDevice) -> Response:
    """Every wrapped key the vault has had, newest (the current one) first, with who set it
    and when: a wrap replaced by mistake (or by a hostile device) is never lost."""
    wraps = await run_sync(state_of(request).storage.key_history, vault_id)
    return json_response(
        m.KeyHistoryOut(
            wraps=[
                m.KeyWrapOut(key=w.key, sha256=w.sha256, set_at=w.set_at, device_id=w.device_id)
                for w in wraps
            ]
        )
    )


@router.post(
    "/v1/vaults/{vault_id}/leave",
    response_model=m.LeaveOut,
    responses=error_responses(*AUTH_ERRORS),
    tags=["devices"],
)
async def leave(request: Request, vault_id: VaultId, device: AuthedDevice) -> Response:
    """Revoke the calling device's own token (a device that joined with the wrong passphrase
    gives up its access). It can come back only with a new invite."""
    st = state_of(request)
    done = await run_sync(st.storage.revoke_device, device.device_id, st.clock())
    log.info("device %s left vault %s", device.device_id, vault_id)
    return json_response(m.LeaveOut(device_id=done.device_id, revoked=done.revoked is not None))


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
