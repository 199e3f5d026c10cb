"""Reading the relay's JSON answers: strict and typed, with the standard library only.

The one description of the wire format is `relay/models.py`: the relay validates requests
with those pydantic models and builds `/openapi.json` from them. A device only reads a dozen
small answers, and importing pydantic and building the models took a one-shot
`companion sync` about 100 ms, more than half of what a quiet round may cost. So the client
reads answers with the shapes below, and `tests/test_relay_replies.py` holds each shape to
its model: the same fields, and, on generated answers valid and invalid, the same answers
accepted (by the model in strict mode) with the same values.

The relay is not trusted (see docs/security.md): an answer that does not have its shape is
`ReplyError`, never a half-read value. JSON's `NaN` and `Infinity`, and strings that are not
Unicode text (lone surrogates), are refused too.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any


class ReplyError(ValueError):
    """An answer that does not have the shape of the relay's model for it."""


def b64encode(data: bytes) -> str:
    """Binary fields travel as standard base64 with padding."""
    return base64.b64encode(data).decode("ascii")


def b64decode(value: str) -> bytes:
    """The inverse of `b64encode`; anything else (wrong alphabet, padding) is ValueError."""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("is not valid base64") from None


class Kind:
    """How one JSON value is read: `read` returns the Python value or raises ReplyError."""

    label = "value"

    def read(self, value: Any) -> Any:
        raise NotImplementedError

    def _refuse(self, value: Any) -> ReplyError:
        return ReplyError(f"expected {self.label}, got {type(value).__name__}")


class Text(Kind):
    label = "a string"

    def read(self, value: Any) -> str:
        if not isinstance(value, str):
            raise self._refuse(value)
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ReplyError("a string that is not Unicode text") from None
        return value


class Integer(Kind):
    label = "an integer"

    def read(self, value: Any) -> int:
        if type(value) is not int:  # bool is an int to Python, not to JSON
            raise self._refuse(value)
        return value


class Number(Kind):
    label = "a number"

    def read(self, value: Any) -> float:
        if type(value) is float:
            return value
        if type(value) is int:
            return float(value)
        raise self._refuse(value)


class Boolean(Kind):
    label = "true or false"

    def read(self, value: Any) -> bool:
        if type(value) is not bool:
            raise self._refuse(value)
        return value


class Base64(Kind):
    label = "base64 text"

    def read(self, value: Any) -> bytes:
        if not isinstance(value, str):
            raise self._refuse(value)
        try:
            return b64decode(value)
        except ValueError:
            raise ReplyError("text that is not valid base64") from None


class OneOf(Kind):
    def __init__(self, *choices: str) -> None:
        self.choices = choices
        self.label = " or ".join(repr(c) for c in choices)

    def read(self, value: Any) -> str:
        if not isinstance(value, str) or value not in self.choices:
            raise ReplyError(f"expected {self.label}")
        return value


class ListOf(Kind):
    def __init__(self, item: Kind) -> None:
        self.item = item
        self.label = f"a list of {item.label}"

    def read(self, value: Any) -> list[Any]:
        if type(value) is not list:
            raise self._refuse(value)
        read = self.item.read
        return [read(v) for v in value]


class MapOf(Kind):
    """An object with any keys, each holding the same kind of value."""

    def __init__(self, item: Kind) -> None:
        self.item = item
        self.label = f"an object of {item.label}"

    def read(self, value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise self._refuse(value)
        read = self.item.read
        return {k: read(v) for k, v in value.items()}


class Nullable(Kind):
    def __init__(self, item: Kind) -> None:
        self.item = item
        self.label = f"{item.label} or null"

    def read(self, value: Any) -> Any:
        return None if value is None else self.item.read(value)


class Shape(Kind):
    """A JSON object: `required` fields must be there; an `optional` field that is missing
    takes its default. Fields the shape does not name are ignored, as the models ignore them,
    so a newer relay may add some."""

    def __init__(
        self,
        model: str,
        required: dict[str, Kind],
        optional: dict[str, tuple[Kind, Any]] | None = None,
    ) -> None:
        self.model = model  # the name of its model in relay/models.py
        self.required = required
        self.optional = optional or {}
        self.label = f"a {model} object"

    @property
    def fields(self) -> list[str]:
        return [*self.required, *self.optional]

    def read(self, value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise self._refuse(value)
        out: dict[str, Any] = {}
        for name, kind in self.required.items():
            if name not in value:
                raise ReplyError(f"{self.model} without {name!r}")
            out[name] = self._field(name, kind, value[name])
        for name, (kind, default) in self.optional.items():
            out[name] = self._field(name, kind, value[name]) if name in value else default
        return out

    def _field(self, name: str, kind: Kind, value: Any) -> Any:
        try:
            return kind.read(value)
        except ReplyError as exc:
            raise ReplyError(f"{self.model}.{name}: {exc}") from None


def _no_constant(name: str) -> Any:
    raise ReplyError(f"{name} is not JSON")


def read_reply(shape: Shape, body: bytes | str) -> dict[str, Any]:
    """Parse one answer's body and read it as `shape` (ReplyError, a ValueError, if not)."""
    try:
        value = json.loads(body, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and bad UTF-8 are ValueErrors
        raise ReplyError(f"not JSON: {type(exc).__name__}") from None
    return shape.read(value)


# ---------------------------------------------------------------------------------- the shapes
TEXT, INTEGER, NUMBER, BOOLEAN, BASE64 = Text(), Integer(), Number(), Boolean(), Base64()
DEVICE_KIND = OneOf("human", "agent")

HEALTH = Shape(
    "HealthOut",
    {"status": OneOf("ok"), "version": TEXT, "time": NUMBER, "limits": MapOf(NUMBER)},
)
JOIN = Shape(
    "JoinOut",
    {
        "token": TEXT,
        "device_id": TEXT,
        "vault_id": TEXT,
        "kind": DEVICE_KIND,
        "new_vault": BOOLEAN,
    },
)
DEVICE_QUOTA = Shape(
    "DeviceQuotaOut",
    {
        "records": INTEGER,
        "bytes": INTEGER,
        "records_limit": INTEGER,
        "bytes_limit": INTEGER,
        "throttled_until": Nullable(NUMBER),
    },
)
DEVICE = Shape(
    "DeviceOut",
    {
        "device_id": TEXT,
        "name": TEXT,
        "kind": TEXT,
        "created": NUMBER,
        "revoked": Nullable(NUMBER),
    },
    {"quota": (Nullable(DEVICE_QUOTA), None)},
)
DEVICES = Shape("DevicesOut", {"devices": ListOf(DEVICE)})
KEY = Shape("KeyOut", {"key": BASE64, "sha256": TEXT})
KEY_WRAP = Shape("KeyWrapOut", {"key": BASE64, "sha256": TEXT, "set_at": NUMBER, "device_id": TEXT})
KEY_HISTORY = Shape("KeyHistoryOut", {"wraps": ListOf(KEY_WRAP)})
RECORD = Shape(
    "RecordOut",
    {
        "file_id": TEXT,
        "rev": INTEGER,
        "parent_rev": INTEGER,
        "sealed": BASE64,
        "blobs": ListOf(TEXT),
        "seq": INTEGER,
        "device_id": TEXT,
        "device_kind": DEVICE_KIND,
        "device_name": TEXT,
        "committed_at": NUMBER,
    },
)
RECORD_RESULT = Shape(
    "RecordResultOut",
    {
        "file_id": TEXT,
        "rev": INTEGER,
        "status": OneOf("committed", "duplicate", "conflict", "aborted"),
    },
    {"seq": (Nullable(INTEGER), None), "head": (Nullable(RECORD), None)},
)
_COMMIT_FIELDS: dict[str, Kind] = {
    "committed": BOOLEAN,
    "seq": INTEGER,
    "results": ListOf(RECORD_RESULT),
}
COMMIT = Shape("CommitOut", _COMMIT_FIELDS)
COMMIT_CONFLICT = Shape("CommitConflictOut", {"error": TEXT, "message": TEXT, **_COMMIT_FIELDS})
SEQ_MARK = Shape("SeqMarkOut", {"file_id": TEXT, "rev": INTEGER, "sha256": TEXT})
CHANGES = Shape(
    "ChangesOut",
    {"records": ListOf(RECORD), "seq": INTEGER, "vault_seq": INTEGER, "more": BOOLEAN},
    {"at_since": (Nullable(SEQ_MARK), None)},  # an older relay does not send it
)
HISTORY = Shape("HistoryOut", {"records": ListOf(RECORD)})
MISSING = Shape("MissingOut", {"missing": ListOf(TEXT)})
BLOB_PUT = Shape(
    "BlobPutOut", {"blob_id": TEXT, "size": INTEGER, "sha256": TEXT, "created": BOOLEAN}
)
BATCH_PUT = Shape("BatchPutOut", {"blobs": ListOf(BLOB_PUT)})
LEASE = Shape("LeaseOut", {"name": TEXT, "holder": TEXT, "expires": NUMBER, "acquired": BOOLEAN})
RELEASE = Shape("ReleaseOut", {"released": BOOLEAN})

# Every answer the client reads, for the test that holds each to its model.
SHAPES: tuple[Shape, ...] = (
    HEALTH, JOIN, DEVICES, KEY, KEY_HISTORY, COMMIT, COMMIT_CONFLICT, CHANGES, HISTORY,
    RECORD, MISSING, BLOB_PUT, BATCH_PUT, LEASE, RELEASE,
)  # fmt: skip
