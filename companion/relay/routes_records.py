"""Routes for records: the all-or-nothing commit, changes with long-poll, heads and history."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from companion.relay import models as m
from companion.relay.api import (
    AUTH_ERRORS,
    ApiError,
    AuthedDevice,
    FileId,
    VaultId,
    error_responses,
    json_body_doc,
    json_response,
    read_json,
    record_out,
    run_sync,
    state_of,
)
from companion.relay.storage import NewRecord

router = APIRouter()


@router.post(
    "/v1/vaults/{vault_id}/commit",
    response_model=m.CommitOut,
    responses=error_responses(
        *AUTH_ERRORS, 400, 413, 415, special={409: m.CommitConflictOut, 422: m.MissingBlobsOut}
    ),  # 429 (in AUTH_ERRORS) also when an agent device is past its daily quota
    openapi_extra=json_body_doc(m.CommitIn),
    tags=["records"],
)
async def commit(request: Request, vault_id: VaultId, device: AuthedDevice) -> Response:
    """Commit a batch of records, all or nothing.

    Each record is a compare-and-swap on its file's head: `parent_rev` must be the current
    head revision (0 for a new file) and `rev` must be `parent_rev + 1`. If any record
    conflicts, nothing is written and the 409 lists each conflict with the current head.
    Resubmitting a record already stored with identical bytes is a `duplicate` (success).
    Every blob a record names must have been uploaded first (422 missing_blobs).
    """
    state_of(request).check_quota(device)  # an agent already past its quota: body unread
    body = await read_json(request, m.CommitIn)  # up to 32 MiB: parsed in a worker thread
    limits = state_of(request).limits
    recs = body.records
    if len(recs) > limits.max_records_per_commit:
        raise ApiError(
            413, "too_large", f"at most {limits.max_records_per_commit} records per commit"
        )
    seen: set[str] = set()
    new: list[NewRecord] = []
    for i, r in enumerate(recs):
        if r.rev != r.parent_rev + 1:
            raise ApiError(422, "invalid_request", f"records.{i}: rev must be parent_rev + 1")
        if r.file_id in seen:
            raise ApiError(
                422, "invalid_request", f"records.{i}: file_id appears twice in one commit"
            )
        if len(r.sealed) > limits.max_sealed_bytes:
            raise ApiError(
                413, "too_large", f"records.{i}: sealed exceeds {limits.max_sealed_bytes} bytes"
            )
        if len(r.blobs) > limits.max_blobs_per_record:
            raise ApiError(
                413, "too_large", f"records.{i}: more than {limits.max_blobs_per_record} blobs"
            )
        seen.add(r.file_id)
        new.append(NewRecord(r.file_id, r.rev, r.parent_rev, r.sealed, tuple(r.blobs)))
    st = state_of(request)
    st.check_quota(device, len(new))
    outcome = await run_sync(st.storage.commit, vault_id, device.device_id, new, st.clock())
    results = [
        m.RecordResultOut(
            file_id=x.file_id,
            rev=x.rev,
            status=x.status,
            seq=x.seq,
            head=record_out(x.head) if x.head else None,
        )
        for x in outcome.results
    ]
    conflicts = sum(1 for x in outcome.results if x.status == "conflict")
    if conflicts:
        return json_response(
            m.CommitConflictOut(
                error="conflict",
                message=f"{conflicts} record(s) conflict with the current head; "
                "nothing was written",
                committed=False,
                seq=outcome.seq,
                results=results,
            ),
            409,
        )
    if outcome.missing_blobs:
        return json_response(
            m.MissingBlobsOut(
                error="missing_blobs",
                message=f"{len(outcome.missing_blobs)} referenced blob(s) are not on the "
                "relay; upload them first. Nothing was written",
                missing=outcome.missing_blobs,
            ),
            422,
        )
    if any(x.status == "committed" for x in outcome.results):
        st.notifier.notify(vault_id)
        done = {x.file_id for x in outcome.results if x.status == "committed"}
        st.quota.add(
            device,
            records=len(done),
            size=sum(len(r.sealed) for r in new if r.file_id in done),
        )
    return json_response(m.CommitOut(committed=True, seq=outcome.seq, results=results))


@router.get(
    "/v1/vaults/{vault_id}/changes",
    response_model=m.ChangesOut,
    responses=error_responses(*AUTH_ERRORS, 409),
    tags=["records"],
)
async def changes(
    request: Request,
    vault_id: VaultId,
    device: AuthedDevice,
    since: Annotated[int, Query(ge=0, le=2**62, description="Last seq seen (0: all).")] = 0,
    wait: Annotated[
        float, Query(ge=0, le=3600, description="Long-poll: seconds to wait for a commit.")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=1_000_000)] = 1000,
) -> Response:
    """Records committed after `since`, in seq order. With `wait`, an empty answer is held
    until a commit lands (then returned at once) or `wait` seconds pass."""
    limits = state_of(request).limits
    st = state_of(request)
    limit = min(limit, limits.max_changes_per_page)
    wait = min(wait, limits.max_wait_s)
    event = st.notifier.current(vault_id)  # before reading: no lost wake-up
    page = await run_sync(st.storage.changes, vault_id, since, limit, limits.max_changes_bytes)
    if since > page.vault_seq:
        raise ApiError(
            409,
            "since_ahead",
            f"since={since} is ahead of this vault's last seq {page.vault_seq}: the relay "
            "was reset or restored from a backup",
        )
    if not page.records and wait > 0:
        woken = await st.notifier.wait(event, wait)
        # The device may have been revoked while it waited: nothing committed after that
        # reaches it (its token was checked when the request came in, not now).
        now = await run_sync(st.storage.get_device, device.device_id)
        if now is None or now.revoked is not None:
            raise ApiError(
                401,
                "unauthorized",
                "this device was revoked; join again with a new invite",
                headers={"WWW-Authenticate": "Bearer"},
            )
        if woken:
            page = await run_sync(
                st.storage.changes, vault_id, since, limit, limits.max_changes_bytes
            )
    return json_response(
        m.ChangesOut(
            records=[record_out(r) for r in page.records],
            seq=page.seq,
            vault_seq=page.vault_seq,
            more=page.more,
            at_since=None
            if page.at_since is None
            else m.SeqMarkOut(
                file_id=page.at_since.file_id, rev=page.at_since.rev, sha256=page.at_since.sha256
            ),
        )
    )


@router.get(
    "/v1/vaults/{vault_id}/files/{file_id}",
    response_model=m.RecordOut,
    responses=error_responses(*AUTH_ERRORS),
    tags=["records"],
)
async def head(
    request: Request, vault_id: VaultId, file_id: FileId, device: AuthedDevice
) -> Response:
    """The file's current head record."""
    rec = await run_sync(state_of(request).storage.head, vault_id, file_id)
    if rec is None:
        raise ApiError(404, "not_found", "no such file")
    return json_response(record_out(rec))


@router.get(
    "/v1/vaults/{vault_id}/files/{file_id}/history",
    response_model=m.HistoryOut,
    responses=error_responses(*AUTH_ERRORS),
    tags=["records"],
)
async def history(
    request: Request,
    vault_id: VaultId,
    file_id: FileId,
    device: AuthedDevice,
    limit: Annotated[int, Query(ge=1, le=1_000_000)] = 100,
) -> Response:
    """The file's retained revisions, newest first."""
    limits = state_of(request).limits
    limit = min(limit, limits.max_history)
    recs = await run_sync(state_of(request).storage.history, vault_id, file_id, limit)
    if not recs:
        raise ApiError(404, "not_found", "no such file")
    return json_response(m.HistoryOut(records=[record_out(r) for r in recs]))


@router.get(
    "/v1/vaults/{vault_id}/files/{file_id}/revs/{rev}",
    response_model=m.RecordOut,
    responses=error_responses(*AUTH_ERRORS),
    tags=["records"],
)
async def record(
    request: Request,
    vault_id: VaultId,
    file_id: FileId,
    rev: Annotated[int, Path(ge=1, le=2**62)],
    device: AuthedDevice,
) -> Response:
    """One revision of a file (for restore), while retention keeps it."""
    rec = await run_sync(state_of(request).storage.get_record, vault_id, file_id, rev)
    if rec is None:
        raise ApiError(404, "not_found", "no such revision (never committed, or pruned)")
    return json_response(record_out(rec))
