"""Routes for blobs: single and batched (streamed frames) upload and download, checksummed,
size-limited and deduplicated."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import Response, StreamingResponse

from companion.relay import models as m
from companion.relay.api import (
    AUTH_ERRORS,
    BINARY,
    JSON_BODY,
    ApiError,
    AuthedDevice,
    BlobId,
    VaultId,
    error_responses,
    json_response,
    require_media_type,
    run_sync,
    state_of,
)
from companion.relay.blobframes import MEDIA_TYPE as FRAMES_TYPE
from companion.relay.blobframes import FrameError, FrameHeader, FrameParser, frame_header
from companion.relay.storage import (
    BlobCorrupt,
    BlobIdTaken,
    BlobSink,
    ChecksumMismatch,
    NotFound,
    RelayStorage,
)

log = logging.getLogger(__name__)
router = APIRouter()

# A batched download reads blobs in groups (one worker-thread call each, the next group read
# while this one is sent), so thousands of small blobs do not cost a thread hop apiece.
READ_GROUP_BLOBS = 64
READ_GROUP_BYTES = 4 * 1024 * 1024
SMALL_FRAME = 64 * 1024  # a blob up to this size goes out in the same piece as its header
LOOKUP_OVER = 64 * 1024  # an uploaded blob larger than this is looked up before it is stored


@router.post(
    "/v1/vaults/{vault_id}/blobs-missing",
    response_model=m.MissingOut,
    dependencies=JSON_BODY,
    responses=error_responses(*AUTH_ERRORS, 400, 413, 415),
    tags=["blobs"],
)
async def missing_blobs(
    request: Request, vault_id: VaultId, device: AuthedDevice, body: m.BlobIdsIn
) -> Response:
    """Which of these blob ids the relay does not have (upload only those)."""
    limits = state_of(request).limits
    if len(body.ids) > limits.max_blobs_per_batch:
        raise ApiError(413, "too_large", f"at most {limits.max_blobs_per_batch} ids at once")
    missing = await run_sync(state_of(request).storage.missing_blobs, vault_id, body.ids)
    return json_response(m.MissingOut(missing=missing))


BLOB_BODY = {
    "requestBody": {
        "required": True,
        "content": {BINARY: {"schema": {"type": "string", "format": "binary"}}},
    }
}


@router.put(
    "/v1/vaults/{vault_id}/blobs/{blob_id}",
    response_model=m.BlobPutOut,
    status_code=201,
    responses={
        200: {"model": m.BlobPutOut, "description": "Already stored (deduplicated)."},
        **error_responses(*AUTH_ERRORS, 409, 413, 415),
    },
    openapi_extra=BLOB_BODY,
    tags=["blobs"],
)
async def put_blob(
    request: Request,
    vault_id: VaultId,
    blob_id: BlobId,
    device: AuthedDevice,
    x_content_sha256: Annotated[
        str, Header(pattern=m.SHA256_PATTERN, description="SHA-256 hex of the body.")
    ],
) -> Response:
    """Upload one blob (streamed, at most `max_blob_bytes`). The body must hash to
    X-Content-SHA256 (else 422 checksum_mismatch); an id already stored with the same
    checksum is deduplicated (200), with another checksum refused (409)."""
    require_media_type(request, BINARY)
    st = state_of(request)
    st.check_quota(device)
    info = await run_sync(st.storage.blob_info, vault_id, blob_id)
    if info is not None:
        async for _ in request.stream():  # drain, so the connection stays usable
            pass
        if info.sha256 != x_content_sha256:
            raise ApiError(409, "blob_id_taken", "a different blob is stored under this id")
        out = m.BlobPutOut(blob_id=blob_id, size=info.size, sha256=info.sha256, created=False)
        return json_response(out, 200)
    sink = st.storage.blob_sink(vault_id, blob_id, x_content_sha256, st.clock())
    try:
        async for chunk in request.stream():
            sink.write(chunk)
    except BaseException:
        sink.abort()
        raise
    await _seal(sink)
    (pub,) = await _publish(st.storage, vault_id, [sink])
    if pub.created:
        st.quota.add(device, size=pub.info.size)
    out = m.BlobPutOut(
        blob_id=blob_id, size=pub.info.size, sha256=pub.info.sha256, created=pub.created
    )
    return json_response(out, 201 if pub.created else 200)


@router.get(
    "/v1/vaults/{vault_id}/blobs/{blob_id}",
    responses={
        200: {
            "content": {BINARY: {"schema": {"type": "string", "format": "binary"}}},
            "description": "The blob; its SHA-256 hex is in X-Content-SHA256.",
        },
        **error_responses(*AUTH_ERRORS),
    },
    response_class=Response,
    tags=["blobs"],
)
async def get_blob(
    request: Request, vault_id: VaultId, blob_id: BlobId, device: AuthedDevice
) -> Response:
    """Download one blob, verified against its checksum before it is sent."""
    info, data = await _read_blob(state_of(request).storage, vault_id, blob_id)
    return Response(data, media_type=BINARY, headers={"X-Content-SHA256": info.sha256})


BATCH_BODY = {
    "requestBody": {
        "required": True,
        "content": {FRAMES_TYPE: {"schema": {"type": "string", "format": "binary"}}},
    }
}


@router.post(
    "/v1/vaults/{vault_id}/blobs-upload",
    response_model=m.BatchPutOut,
    responses=error_responses(*AUTH_ERRORS, 400, 409, 413, 415),
    openapi_extra=BATCH_BODY,
    tags=["blobs"],
)
async def put_blobs(request: Request, vault_id: VaultId, device: AuthedDevice) -> Response:
    """Upload several blobs in one streamed body of frames (see docs/relay.md). Each blob
    stands alone: one that fails its checksum is refused (422) without undoing the others,
    which are content-addressed and harmless."""
    limits = state_of(request).limits
    require_media_type(request, FRAMES_TYPE)
    st = state_of(request)
    st.check_quota(device)
    parser = FrameParser(limits.max_blob_bytes)
    headers: list[FrameHeader] = []
    seals: list[tuple[BlobSink, asyncio.Future[Any]]] = []
    sink: BlobSink | None = None
    try:
        async for chunk in request.stream():
            for ev in parser.feed(chunk):
                if isinstance(ev, FrameHeader):
                    if len(headers) >= limits.max_blobs_per_batch:
                        raise ApiError(
                            413, "too_large", f"at most {limits.max_blobs_per_batch} blobs"
                        )
                    # a large blob already stored is not written again; for a small one the
                    # lookup (a hop to a worker thread) costs more than keeping its bytes, and
                    # publishing checks every blob in one transaction anyway
                    info = (
                        await run_sync(st.storage.blob_info, vault_id, ev.blob_id)
                        if ev.size > LOOKUP_OVER
                        else None
                    )
                    if info is not None and info.sha256 != ev.sha256:
                        raise ApiError(
                            409, "blob_id_taken", f"a different blob is stored as {ev.blob_id}"
                        )
                    headers.append(ev)
                    if info is None:  # else: already stored, skip its bytes
                        sink = st.storage.blob_sink(vault_id, ev.blob_id, ev.sha256, st.clock())
                elif ev is None:
                    if sink is not None:
                        seals.append((sink, _sealed_now(sink)))
                        sink = None
                elif sink is not None:
                    sink.write(ev)
        parser.close()
    except BaseException as exc:
        if sink is not None:
            sink.abort()
        for s, fut in seals:
            with contextlib.suppress(BaseException):
                await fut
            s.abort()
        if isinstance(exc, FrameError):
            raise ApiError(400, "malformed_batch", str(exc)) from None
        raise
    results = await asyncio.gather(*(f for _, f in seals), return_exceptions=True)
    good = [s for (s, _), r in zip(seals, results, strict=True) if not isinstance(r, BaseException)]
    published = {p.info.blob_id: p for p in await _publish(st.storage, vault_id, good)}
    st.quota.add(device, size=sum(p.info.size for p in published.values() if p.created))
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise errors[0]
    out = []
    for hdr in headers:
        pub = published.get(hdr.blob_id)
        out.append(
            m.BlobPutOut(
                blob_id=hdr.blob_id,
                size=hdr.size,
                sha256=hdr.sha256,
                created=pub.created if pub is not None else False,
            )
        )
    return json_response(m.BatchPutOut(blobs=out))


@router.post(
    "/v1/vaults/{vault_id}/blobs-download",
    dependencies=JSON_BODY,
    responses={
        200: {
            "content": {FRAMES_TYPE: {"schema": {"type": "string", "format": "binary"}}},
            "description": "The blobs as a stream of frames, in the order asked.",
        },
        **error_responses(*AUTH_ERRORS, 400, 413, 415, special={404: m.MissingBlobsOut}),
    },
    response_class=Response,
    tags=["blobs"],
)
async def fetch_blobs(
    request: Request, vault_id: VaultId, device: AuthedDevice, body: m.BlobIdsIn
) -> Response:
    """Download several blobs as one streamed body of frames (each with its checksum)."""
    limits = state_of(request).limits
    ids = list(dict.fromkeys(body.ids))
    if len(ids) > limits.max_blobs_per_batch:
        raise ApiError(413, "too_large", f"at most {limits.max_blobs_per_batch} ids at once")
    storage = state_of(request).storage
    missing = await run_sync(storage.missing_blobs, vault_id, ids)
    if missing:
        return json_response(
            m.MissingBlobsOut(
                error="not_found",
                message=f"{len(missing)} blob(s) are not on the relay",
                missing=missing,
            ),
            404,
        )

    def read_group(start: int) -> asyncio.Future[Any]:
        group = ids[start : start + READ_GROUP_BLOBS]
        return asyncio.ensure_future(
            run_sync(storage.read_blobs, vault_id, group, READ_GROUP_BYTES)
        )

    async def frames() -> AsyncIterator[bytes]:
        sent = 0
        nxt = read_group(0)
        while sent < len(ids):
            group = await nxt
            if sent + len(group) < len(ids):  # read ahead while this group is sent
                nxt = read_group(sent + len(group))
            for item in group:
                if isinstance(item, Exception):
                    # Damaged (and now set aside) or pruned since the check above. The status
                    # is already sent, so end the body at this frame boundary: the client sees
                    # a short batch, and asking again gets a 404 that names the blob.
                    log.warning("batched download of %s ended early: %s", ids[sent], item)
                    nxt.cancel()
                    return
                info, data = item
                header = frame_header(info.blob_id, info.sha256, info.size)
                if len(data) <= SMALL_FRAME:
                    yield header + data  # one send per small blob
                else:
                    yield header
                    yield data
                sent += 1

    return StreamingResponse(frames(), media_type=FRAMES_TYPE)


def _sealed_now(sink: BlobSink) -> asyncio.Future[Any]:
    """Seal a blob of a batch on the spot: comparing its digest and closing its file is quick
    (its bytes reach the disk with the whole batch, when published), much quicker than a hop
    to a worker thread per blob."""
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    try:
        fut.set_result(sink.seal())
    except ChecksumMismatch as exc:
        fut.set_exception(
            ApiError(422, "checksum_mismatch", f"blob {exc} does not match its X-Content-SHA256")
        )
    except Exception as exc:  # reported like the others, after the batch
        fut.set_exception(exc)
    return fut


async def _seal(sink: BlobSink) -> Any:
    try:
        return await run_sync(sink.seal)
    except ChecksumMismatch as exc:
        raise ApiError(
            422, "checksum_mismatch", f"blob {exc} does not match its X-Content-SHA256"
        ) from None


async def _publish(storage: RelayStorage, vault_id: str, sinks: list[BlobSink]) -> Any:
    if not sinks:
        return []
    try:
        return await run_sync(storage.publish_blobs, vault_id, sinks)
    except BlobIdTaken as exc:
        raise ApiError(409, "blob_id_taken", f"a different blob is stored as {exc}") from None


async def _read_blob(storage: RelayStorage, vault_id: str, blob_id: str) -> Any:
    try:
        return await run_sync(storage.read_blob, vault_id, blob_id)
    except NotFound:
        raise ApiError(404, "not_found", "no such blob") from None
    except BlobCorrupt:
        raise ApiError(
            404,
            "blob_corrupt",
            "the relay's copy of this blob was damaged and has been discarded; upload it again",
        ) from None
