"""The relay's wire format: pydantic models that validate requests and document the API.

They are the single description of the JSON the relay speaks: FastAPI validates bodies with
them and builds `/openapi.json` from them. The client reads the answers with the lighter
shapes of `replies.py`, which a test holds to these models. Binary fields travel as standard
base64 with padding (`replies.b64encode`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    WithJsonSchema,
)

from companion.relay.replies import b64decode, b64encode

HEX_ID_PATTERN = r"^[0-9a-f]{16,128}$"
SHORT_ID_PATTERN = r"^[0-9a-f]{16}$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
LEASE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
B64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"

HexId = Annotated[str, StringConstraints(pattern=HEX_ID_PATTERN)]
ShortId = Annotated[str, StringConstraints(pattern=SHORT_ID_PATTERN)]
Sha256Hex = Annotated[str, StringConstraints(pattern=SHA256_PATTERN)]


def _b64decode(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if not isinstance(value, str):
        raise ValueError("must be a base64 string")
    return b64decode(value)


B64Bytes = Annotated[
    bytes,
    BeforeValidator(_b64decode),
    PlainSerializer(b64encode, return_type=str),
    WithJsonSchema({"type": "string", "pattern": B64_PATTERN, "description": "base64"}),
]


def _non_empty(value: bytes) -> bytes:
    if not value:
        raise ValueError("must not be empty")
    return value


NonEmptyB64Bytes = Annotated[
    bytes,
    BeforeValidator(_b64decode),
    AfterValidator(_non_empty),
    PlainSerializer(b64encode, return_type=str),
    WithJsonSchema(
        {"type": "string", "pattern": B64_PATTERN, "minLength": 4, "description": "base64"}
    ),
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorOut(BaseModel):
    """Every refusal: a stable machine code and a sentence for a person."""

    error: str
    message: str


class MissingBlobsOut(ErrorOut):
    missing: list[str] = Field(default_factory=list)


class HealthOut(BaseModel):
    status: Literal["ok"]
    version: str
    time: float
    limits: dict[str, float]


# What the relay refuses in a device name, as a regex class that JSON Schema (ECMA-262),
# Python and pydantic's Rust regex read alike (\\uXXXX escapes): C0 and C1 controls and DEL,
# the BMP's format characters (soft hyphen, Arabic number marks, bidi marks, embeddings,
# overrides and isolates, zero-width characters, word joiner, BOM, interlinear annotation), the
# line and paragraph separators and the BMP's private-use area (a lone surrogate is no text:
# refused before any pattern). This pattern is the whole rule: the published schema states
# exactly what is refused (#39: a name with U+0082 matched the schema and was answered 422).
# Names end up on an admin's terminal and in every device's history, where `textsafe.shown`
# escapes anything else invisible (unassigned or astral format code points); a device checks
# its own name with the stricter `textsafe.display_name_problem` at join.
_UNSAFE_IN_NAME = (
    r"\u0000-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    r"\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ue000-\uf8ff"
    r"\ufeff\ufff9-\ufffb"
)
DEVICE_NAME_PATTERN = rf"^[^{_UNSAFE_IN_NAME}\s](?:[^{_UNSAFE_IN_NAME}]*[^{_UNSAFE_IN_NAME}\s])?$"


class JoinIn(_Model):
    invite: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    # visible characters only, no space at either end: DEVICE_NAME_PATTERN is the whole rule
    device_name: Annotated[
        str, StringConstraints(min_length=1, max_length=100, pattern=DEVICE_NAME_PATTERN)
    ]
    kind: Literal["human", "agent"] | None = Field(
        None,
        description="Optional: the invite fixes the kind. When given and different from the "
        "invite's kind, the join is refused (409 kind_mismatch) and the invite stays unused.",
    )


class JoinOut(BaseModel):
    token: str
    device_id: str
    vault_id: str
    kind: Literal["human", "agent"] = Field(description="This device's kind (the invite's).")
    new_vault: bool = Field(description="True when the vault key is not set yet: set it.")


class KeyOut(BaseModel):
    key: B64Bytes
    sha256: str = Field(description="SHA-256 hex of the key blob: pass it as if_match to rewrap.")


class KeyIn(_Model):
    key: NonEmptyB64Bytes
    if_match: Sha256Hex | None = Field(
        None,
        description="Null: set the key only if absent. The current key's sha256: replace it.",
    )


class KeyPutOut(BaseModel):
    sha256: str


class KeyWrapOut(BaseModel):
    key: B64Bytes
    sha256: str
    set_at: float
    device_id: str = Field(description="The device that set it ('' before the relay kept track).")


class KeyHistoryOut(BaseModel):
    wraps: list[KeyWrapOut] = Field(description="Every wrapped key the vault had, newest first.")


class LeaveOut(BaseModel):
    device_id: str
    revoked: bool


class RecordIn(_Model):
    file_id: HexId
    rev: int = Field(ge=1, le=2**62, strict=True)
    parent_rev: int = Field(ge=0, le=2**62, strict=True)
    sealed: B64Bytes
    blobs: list[HexId] = Field(default_factory=list)


class RecordOut(BaseModel):
    file_id: str
    rev: int
    parent_rev: int
    sealed: B64Bytes
    blobs: list[str]
    seq: int
    device_id: str
    device_kind: Literal["human", "agent"] = Field(
        description="The committing device's kind, as the relay recorded it at join."
    )
    device_name: str = Field(description="The committing device's name, as given at join.")
    committed_at: float


class CommitIn(_Model):
    records: list[RecordIn] = Field(min_length=1)


class RecordResultOut(BaseModel):
    file_id: str
    rev: int
    status: Literal["committed", "duplicate", "conflict", "aborted"]
    seq: int | None = None
    head: RecordOut | None = None


class CommitOut(BaseModel):
    committed: bool
    seq: int
    results: list[RecordResultOut]


class CommitConflictOut(ErrorOut, CommitOut):
    pass


class SeqMarkOut(BaseModel):
    file_id: str
    rev: int
    sha256: str = Field(description="SHA-256 (hex) of the record's sealed bytes.")


class ChangesOut(BaseModel):
    records: list[RecordOut]
    seq: int = Field(description="Pass as `since` next time.")
    vault_seq: int
    more: bool
    at_since: SeqMarkOut | None = Field(
        default=None,
        description="The record at `seq == since` (null when `since` is 0 or none is there): "
        "a device that saw another one there knows the relay was restored from a backup.",
    )


class HistoryOut(BaseModel):
    records: list[RecordOut]


class BlobIdsIn(_Model):
    ids: list[HexId] = Field(min_length=1)


class MissingOut(BaseModel):
    missing: list[str]


class BlobPutOut(BaseModel):
    blob_id: str
    size: int
    sha256: str
    created: bool


class BatchPutOut(BaseModel):
    blobs: list[BlobPutOut]


MAX_LEASE_TTL_S = 7 * 24 * 3600


class LeaseIn(_Model):
    ttl: float = Field(
        gt=0, le=MAX_LEASE_TTL_S, strict=True, description="Seconds held unless renewed."
    )


class LeaseOut(BaseModel):
    name: str
    holder: str
    expires: float
    acquired: bool


class ReleaseOut(BaseModel):
    released: bool


class DeviceQuotaOut(BaseModel):
    """An agent device's usage of its daily quota (UTC day); a limit of 0 is no limit."""

    records: int
    bytes: int
    records_limit: int
    bytes_limit: int
    throttled_until: float | None  # the next midnight (Unix time) while a limit is used up


class DeviceOut(BaseModel):
    device_id: str
    name: str
    kind: str
    created: float
    revoked: float | None
    quota: DeviceQuotaOut | None = None  # agent devices only


class DevicesOut(BaseModel):
    devices: list[DeviceOut]
