"""Errors a relay client raises: all `RelayError`, itself a `CompanionError` (exit status 1).

Catch the specific ones first: `RelayUnreachable` (offline, or `RelayBusy`: the relay asks to
wait `retry_after` seconds; queue and retry later), `AuthError`
(the token or invite was refused: the device must join again), `ConflictError` (someone else
changed it first), `NotFoundError`, `MissingBlobsError`. Messages are for a person and never
contain the token.
"""

from __future__ import annotations

from companion.errors import CompanionError


class RelayError(CompanionError):
    """The relay refused a request, or answered something the client cannot use."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code


class RelayUnreachable(RelayError):
    """No usable answer: connection refused, timeout, TLS failure, a proxy saying the relay is
    down, or the relay asking to wait (`RelayBusy`). Queue the work and retry later."""


class RelayBusy(RelayUnreachable):
    """429 or 503: the relay (or a proxy in front of it) asks to wait `retry_after` seconds.

    Not fatal: the device keeps its work queued and tries again after that delay."""

    def __init__(self, message: str, *, retry_after: float, status: int | None = None,
                 code: str | None = None) -> None:  # fmt: skip
        super().__init__(message, status=status, code=code)
        self.retry_after = retry_after


class QuotaExceeded(RelayBusy):
    """429 `quota_exceeded`: this agent device has used its daily quota of records or bytes
    on the relay (docs/relay.md, "Agent quotas"); its writes stay queued until `retry_after`
    (the next UTC midnight, as the relay counts). Reads still work."""


class InvalidRelayUrl(RelayError):
    """A relay URL that is not http(s)://host[:port][/path]."""

    exit_code = 2


class InsecureRelayUrl(RelayError):
    """A plain http:// URL to a host other than this machine: the token would travel in clear."""

    exit_code = 2


class AuthError(RelayError):
    """The token or invite was refused: wrong, expired, used, revoked, other vault, rate limit."""


class ConflictError(RelayError):
    """A compare-and-swap lost: the state changed since it was read."""


class NotFoundError(RelayError):
    """No such file, revision, blob, vault key or vault."""


class MissingBlobsError(RelayError):
    """A commit named blobs the relay does not have; upload them and commit again."""

    def __init__(self, message: str, missing: list[str], **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.missing = missing
